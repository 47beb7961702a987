"""The round loop of one unit (DESIGN.md, "Unit of work"), for one-arm and slate rounds alike.

What differs between them (the environment's construction, the policy's view, the feedback, the recorded
columns) is a round kind: :class:`ArmRounds` here, ``SlateRounds`` in runner/slate.py, chosen by the protocol's
``slate`` flag. The loop itself times select and update, keeps the budget, samples diagnostics, reports progress
and checkpoints the same way for both."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from banditbench.algos import ALGORITHMS
from banditbench.algos.base import Policy
from banditbench.data import PreparedDataset
from banditbench.envs import PROTOCOLS, Budget
from banditbench.errors import UserError
from banditbench.results.units import Unit, UnitResult
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.diagnostics import clustering_scores
from banditbench.runner.seeds import unit_streams
from banditbench.runner.slate import SlateRounds

PROGRESS_EVERY = 1000  # rounds between progress callbacks: keeps the hot loop free of UI work
DIAGNOSTICS_EVERY = 100  # rounds between samples of a policy's diagnostics (and the last round)


class ArmRounds:
    """A policy picks one arm of the round; its feedback is that arm's realised reward (DESIGN.md, "Round")."""

    def __init__(self, unit: Unit, dataset: PreparedDataset, env_seed):
        self.env = PROTOCOLS[unit.protocol].environment(dataset, env_seed)
        self.diagnosed = False

    def begin(self, policy: Policy) -> None:
        pass

    def new_columns(self, T: int) -> dict[str, np.ndarray]:
        return {
            **{name: np.empty(T, np.int64) for name in ("users", "groups", "chosen_arms")},
            **{name: np.empty(T) for name in ("rewards", "expected_rewards", "best_expected_rewards")},
        }

    def use(self, columns: dict[str, np.ndarray], policy: Policy) -> None:
        self.users, self.groups, self.chosen, self.rewards, self.expected, self.best = (
            columns[name]
            for name in ("users", "groups", "chosen_arms", "rewards", "expected_rewards", "best_expected_rewards")
        )
        self.privileged = policy.privileged  # the oracle sees the hidden expected rewards
        self.diagnosed = has_diagnostics(policy)

    def view(self, rnd, budget: Budget):
        return rnd if self.privileged else rnd.view(budget)

    def choice(self, selected):
        return selected

    def feedback(self, rnd, chosen) -> float:
        return float(rnd.rewards[chosen])

    def record(self, t: int, rnd, chosen, reward: float) -> None:
        self.users[t] = rnd.user
        self.groups[t] = rnd.group
        self.chosen[t] = chosen
        self.rewards[t] = reward
        expected = rnd.expected.tolist()  # plain floats: cheaper than numpy calls on K values
        self.expected[t] = expected[chosen]
        self.best[t] = max(expected)

    def outcome(self, T: int) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any] | None]:
        """The outcome columns, those that must be finite, and the shard's extra metadata."""
        regret = self.best - self.expected  # max(expected) − expected[chosen] (DESIGN.md, "Round")
        columns = {
            "user": self.users,
            "group": self.groups,
            "chosen": self.chosen,
            "reward": self.rewards,
            "expected_reward": self.expected,
            "best_expected_reward": self.best,
            "regret": regret,
        }
        finite = {
            "reward": self.rewards,
            "expected_reward": self.expected,
            "best_expected_reward": self.best,
            "regret": regret,
        }
        return columns, finite, None


def run_unit(
    unit: Unit,
    dataset: PreparedDataset,
    progress: Callable[[int], None] | None = None,
    checkpoints: Checkpoints | None = None,
) -> UnitResult:
    """Run one unit, one-arm or slate rounds alike; with ``checkpoints``, save its state every
    ``checkpoints.every`` rounds and continue from a saved state if there is one (runner/checkpoint.py)."""
    env_seed, policy_seed = unit_streams(unit.master_seed, unit.seed_index, unit.tuning)
    kind = (SlateRounds if PROTOCOLS[unit.protocol].slate else ArmRounds)(unit, dataset, env_seed)
    env = kind.env
    T = unit.rounds
    policy = ALGORITHMS[unit.algorithm].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=policy_seed, params=unit.params
    )
    kind.begin(policy)
    state = checkpoints.load(unit) if checkpoints is not None else None  # after the build: torch's RNG
    if state is None:
        columns = {
            **kind.new_columns(T),
            "budget_spent": np.empty(T, np.int64),
            "select_seconds": np.empty(T),
            "update_seconds": np.empty(T),
            **{f"{name}_seconds": np.zeros(T) for name in policy.timing_columns},
        }
        diagnostics: dict[str, np.ndarray] = {}
        start, wall_before = 0, 0.0
    else:
        policy.load_state_dict(state["policy"])
        columns, diagnostics = state["columns"], state.get("diagnostics", {})
        start, wall_before = state["t"], state["wall_seconds"]
        if progress is not None:
            progress(start - start % PROGRESS_EVERY)  # the loop reports the rest of this block
    kind.use(columns, policy)
    budget_spent, select_seconds, update_seconds = (
        columns[name] for name in ("budget_spent", "select_seconds", "update_seconds")
    )
    components = {name: columns[f"{name}_seconds"] for name in policy.timing_columns}  # the policy's own time split
    view_of, choice, feedback, record = kind.view, kind.choice, kind.feedback, kind.record
    diagnosed = kind.diagnosed
    true_groups = getattr(env, "true_groups", None)
    checkpoint_every = checkpoints.every if checkpoints is not None else 0
    clock = time.perf_counter
    started = clock()
    # A resumed unit replays the environment's stream up to its checkpoint (rounds never depend on choices).
    for rnd in itertools.islice(env.rounds(T), start, None):
        t = rnd.t
        budget = Budget(unit.budget)
        view = view_of(rnd, budget)
        t0 = clock()
        chosen = policy.select(view, budget)
        t1 = clock()
        budget.close()
        chosen = choice(chosen)
        observed = feedback(rnd, chosen)
        policy.update(view, chosen, observed)
        update_seconds[t] = clock() - t1
        select_seconds[t] = t1 - t0
        for name, seconds in components.items():
            seconds[t] = policy.last_timings[name]
        record(t, rnd, chosen, observed)
        budget_spent[t] = budget.spent
        if diagnosed and ((t + 1) % DIAGNOSTICS_EVERY == 0 or t == T - 1):
            for name, value in sample_diagnostics(policy, true_groups).items():
                diagnostics.setdefault(name, np.full(T, np.nan))[t] = value
        if progress is not None and (t + 1) % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
        if checkpoint_every and (t + 1) % checkpoint_every == 0 and t + 1 < T:
            checkpoints.save(
                unit,
                {
                    "t": t + 1,
                    "policy": policy.state_dict(),
                    "columns": columns,
                    "diagnostics": diagnostics,
                    "wall_seconds": wall_before + clock() - started,
                },
            )
    wall = wall_before + clock() - started
    if progress is not None:
        progress(T % PROGRESS_EVERY)
    outcome, finite, metadata = kind.outcome(T)
    check_finite(unit, finite)
    outcome = pa.table(
        {
            "t": np.arange(T, dtype=np.int64),
            **outcome,
            "budget_spent": budget_spent,
            **{f"diag_{name}": values for name, values in sorted(diagnostics.items())},
        }
    )
    timing = pa.table(
        {
            "t": outcome["t"],
            "select_seconds": select_seconds,
            "update_seconds": update_seconds,
            **{f"{name}_seconds": seconds for name, seconds in components.items()},
        }
    )
    return UnitResult(outcome, timing, wall, metadata=metadata)


def check_finite(unit: Unit, columns: dict[str, np.ndarray]) -> None:
    """A NaN or infinite reward, expected reward or regret makes every number of the unit meaningless:
    fail with the first such round, checked once per unit on whole columns (off the round loop)."""
    for name, values in columns.items():
        bad = ~np.isfinite(values)
        if bad.any():
            t = int(np.argmax(bad))
            raise UserError(
                f"{unit.algorithm} produced a non-finite {name} ({values[t]}) at round {t} of unit "
                f"{unit.id}; check its hyper-parameters"
            )


def has_diagnostics(policy: Policy) -> bool:
    kind = type(policy)
    return any(
        getattr(kind, name) is not getattr(Policy, name) for name in ("clusters", "sharing_graph", "diagnostics")
    )


def sample_diagnostics(policy: Policy, true_groups: np.ndarray | None) -> dict[str, float]:
    return {**clustering_scores(true_groups, policy.clusters(), policy.sharing_graph()), **policy.diagnostics()}
