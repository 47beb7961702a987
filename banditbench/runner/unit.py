"""The round loop (DESIGN.md, "Unit of work"), for one-arm and slate rounds alike, of one unit or of a lockstep
group of units (runner/engines.py) taking each round together.

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
from banditbench.algos.base import Lockstep, Policy
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
    return run_group([unit], dataset, progress, checkpoints)[0]


class Lane:
    """One unit of a group: its environment and round kind, its policy and the columns it records."""

    def __init__(self, unit: Unit, dataset: PreparedDataset):
        env_seed, policy_seed = unit_streams(unit.master_seed, unit.seed_index, unit.tuning)
        self.unit = unit
        self.kind = (SlateRounds if PROTOCOLS[unit.protocol].slate else ArmRounds)(unit, dataset, env_seed)
        env = self.kind.env
        self.policy = ALGORITHMS[unit.algorithm].build(
            n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=policy_seed, params=unit.params
        )
        self.kind.begin(self.policy)

    def start(self, state: dict[str, Any] | None) -> None:
        """Fresh columns, or those of a checkpoint ``state`` (whose policy state is loaded)."""
        T, policy = self.unit.rounds, self.policy
        if state is None:
            self.columns = {
                **self.kind.new_columns(T),
                "budget_spent": np.empty(T, np.int64),
                "select_seconds": np.empty(T),
                "update_seconds": np.empty(T),
                **{f"{name}_seconds": np.zeros(T) for name in policy.timing_columns},
            }
            self.diagnostics: dict[str, np.ndarray] = {}
            self.wall_before = 0.0
        else:
            policy.load_state_dict(state["policy"])
            self.columns, self.diagnostics = state["columns"], state.get("diagnostics", {})
            self.wall_before = state["wall_seconds"]
        self.kind.use(self.columns, policy)
        self.budget_spent, self.select_seconds, self.update_seconds = (
            self.columns[name] for name in ("budget_spent", "select_seconds", "update_seconds")
        )
        self.components = {name: self.columns[f"{name}_seconds"] for name in policy.timing_columns}
        self.true_groups = getattr(self.kind.env, "true_groups", None)

    def share_times(self, select: np.ndarray, update: np.ndarray, S: int, start: int, stop: int) -> None:
        """This unit's share of the group's select and update seconds of rounds [start, stop)."""
        np.divide(select[start:stop], S, out=self.select_seconds[start:stop])
        np.divide(update[start:stop], S, out=self.update_seconds[start:stop])

    def result(self, wall: float) -> UnitResult:
        T, columns = self.unit.rounds, self.columns
        outcome, finite, metadata = self.kind.outcome(T)
        check_finite(self.unit, finite)
        outcome = pa.table(
            {
                "t": np.arange(T, dtype=np.int64),
                **outcome,
                "budget_spent": self.budget_spent,
                **{f"diag_{name}": values for name, values in sorted(self.diagnostics.items())},
            }
        )
        timing = pa.table(
            {
                "t": outcome["t"],
                "select_seconds": self.select_seconds,
                "update_seconds": self.update_seconds,
                **{f"{name}_seconds": columns[f"{name}_seconds"] for name in self.policy.timing_columns},
            }
        )
        return UnitResult(outcome, timing, self.wall_before + wall, metadata=metadata)


def resumed_states(lanes: list[Lane], checkpoints: Checkpoints | None) -> list[dict[str, Any] | None]:
    """Each lane's checkpoint, when all of them stopped at the same round; otherwise the group starts again."""
    if checkpoints is None:
        return [None] * len(lanes)
    states = [checkpoints.load(lane.unit) for lane in lanes]  # after the build: torch's RNG
    if len({None if state is None else state["t"] for state in states}) != 1:
        return [None] * len(lanes)
    return states


def run_group(
    units: list[Unit],
    dataset: PreparedDataset,
    progress: Callable[[int], None] | None = None,
    checkpoints: Checkpoints | None = None,
) -> list[UnitResult]:
    """Run a lockstep group's units together (runner/engines.py), round t of every unit before round t + 1 of any;
    a group of one is a unit run alone. Their policies act through the algorithm's
    ``Policy.lockstep`` group, which may batch their work; every unit keeps its own environment, columns and
    checkpoints. Select and update times are the group's, divided equally among its units."""
    lanes = [Lane(unit, dataset) for unit in units]
    states = resumed_states(lanes, checkpoints)
    for lane, state in zip(lanes, states):
        lane.start(state)
    start = 0 if states[0] is None else states[0]["t"]
    S, T = len(lanes), units[0].rounds
    if progress is not None and start:
        progress(S * (start - start % PROGRESS_EVERY))  # the loop reports the rest of this block
    policies = [lane.policy for lane in lanes]
    group = type(policies[0]).lockstep(policies) if S > 1 else Lockstep(policies)
    kinds = [lane.kind for lane in lanes]
    limit = units[0].budget
    diagnosed = any(kind.diagnosed for kind in kinds)
    checkpoint_every = checkpoints.every if checkpoints is not None else 0
    clock = time.perf_counter
    started = clock()
    # A resumed unit replays the environment's stream up to its checkpoint (rounds never depend on choices).
    streams = [itertools.islice(kind.env.rounds(T), start, None) for kind in kinds]
    # the group's select and update seconds, shared equally by its units (copied into their columns when saved)
    select_seconds, update_seconds = lanes[0].select_seconds.copy(), lanes[0].update_seconds.copy()
    components = [(seconds, lane.policy, name) for lane in lanes for name, seconds in lane.components.items()]
    for rounds in zip(*streams):  # one pass over the members per phase: the loop of a unit alone stays lean
        t = rounds[0].t
        budgets, views = [], []
        for kind, rnd in zip(kinds, rounds):
            budget = Budget(limit)
            budgets.append(budget)
            views.append(kind.view(rnd, budget))
        t0 = clock()
        selected = group.select(views, budgets)
        t1 = clock()
        chosen, observed = [], []
        for kind, rnd, budget, arm in zip(kinds, rounds, budgets, selected):
            budget.close()
            arm = kind.choice(arm)
            chosen.append(arm)
            observed.append(kind.feedback(rnd, arm))
        group.update(views, chosen, observed)
        update_seconds[t] = clock() - t1
        select_seconds[t] = t1 - t0
        for seconds, policy, name in components:
            seconds[t] = policy.last_timings[name]
        for lane, rnd, budget, arm, reward in zip(lanes, rounds, budgets, chosen, observed):
            lane.kind.record(t, rnd, arm, reward)
            lane.budget_spent[t] = budget.spent
        if diagnosed and ((t + 1) % DIAGNOSTICS_EVERY == 0 or t == T - 1):
            for lane in lanes:
                if lane.kind.diagnosed:
                    for name, value in sample_diagnostics(lane.policy, lane.true_groups).items():
                        lane.diagnostics.setdefault(name, np.full(T, np.nan))[t] = value
        if progress is not None and (t + 1) % PROGRESS_EVERY == 0:
            progress(S * PROGRESS_EVERY)
        if checkpoint_every and (t + 1) % checkpoint_every == 0 and t + 1 < T:
            wall = clock() - started
            for lane in lanes:
                lane.share_times(select_seconds, update_seconds, S, start, t + 1)
                state = {
                    "t": t + 1,
                    "policy": lane.policy.state_dict(),
                    "columns": lane.columns,
                    "diagnostics": lane.diagnostics,
                    "wall_seconds": lane.wall_before + wall,
                }
                checkpoints.save(lane.unit, state)
    for lane in lanes:
        lane.share_times(select_seconds, update_seconds, S, start, T)
    wall = clock() - started
    if progress is not None:
        progress(S * (T % PROGRESS_EVERY))
    return [lane.result(wall) for lane in lanes]


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
