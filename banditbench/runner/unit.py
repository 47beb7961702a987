"""One unit of work (DESIGN.md): (dataset, protocol, algorithm, hyper-parameters, seed, rounds, budget)."""

from __future__ import annotations

import itertools
import time
from typing import Callable

import numpy as np
import pyarrow as pa

from banditbench.algos import ALGORITHMS
from banditbench.data import PreparedDataset
from banditbench.algos.base import Policy
from banditbench.envs import PROTOCOLS, Budget
from banditbench.errors import UserError
from banditbench.results.units import Unit, UnitResult
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.diagnostics import clustering_scores
from banditbench.runner.seeds import unit_streams

PROGRESS_EVERY = 1000  # rounds between progress callbacks: keeps the hot loop free of UI work
DIAGNOSTICS_EVERY = 100  # rounds between samples of a policy's diagnostics (and the last round)


INT_COLUMNS = ("users", "groups", "chosen_arms", "budget_spent")
FLOAT_COLUMNS = ("rewards", "expected_rewards", "best_expected_rewards", "select_seconds", "update_seconds")


def run_unit(unit: Unit, dataset: PreparedDataset, progress: Callable[[int], None] | None = None,
             checkpoints: Checkpoints | None = None) -> UnitResult:
    """Run one unit; with ``checkpoints``, save its state every ``checkpoints.every`` rounds and
    continue from a saved state if there is one (runner/checkpoint.py)."""
    if PROTOCOLS[unit.protocol].slate:
        from banditbench.runner.slate import run_slate_unit

        return run_slate_unit(unit, dataset, progress, checkpoints)
    env_seed, policy_seed = unit_streams(unit.master_seed, unit.seed_index, unit.tuning)
    env = PROTOCOLS[unit.protocol].environment(dataset, env_seed)
    T = unit.rounds
    state = checkpoints.load(unit) if checkpoints is not None else None
    if state is None:
        spec = ALGORITHMS[unit.algorithm]
        policy = spec.build(n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=policy_seed, params=unit.params)
        columns = {**{name: np.empty(T, np.int64) for name in INT_COLUMNS},
                   **{name: np.empty(T) for name in FLOAT_COLUMNS},
                   **{f"{name}_seconds": np.zeros(T) for name in policy.timing_columns}}
        diagnostics: dict[str, np.ndarray] = {}
        start, wall_before = 0, 0.0
    else:
        policy, columns, diagnostics = state["policy"], state["columns"], state["diagnostics"]
        start, wall_before = state["t"], state["wall_seconds"]
        if progress is not None:
            progress(start - start % PROGRESS_EVERY)  # the loop reports the rest of this block
    users, groups, chosen_arms, budget_spent = (columns[name] for name in INT_COLUMNS)
    rewards, expected_rewards, best_expected_rewards, select_seconds, update_seconds = (
        columns[name] for name in FLOAT_COLUMNS)
    components = {name: columns[f"{name}_seconds"] for name in policy.timing_columns}  # the policy's own time split
    diagnosed = has_diagnostics(policy)
    true_groups = getattr(env, "true_groups", None)
    checkpoint_every = checkpoints.every if checkpoints is not None else 0
    clock = time.perf_counter
    started = clock()
    # A resumed unit replays the environment's stream up to its checkpoint (rounds never depend on choices).
    for rnd in itertools.islice(env.rounds(T), start, None):
        t = rnd.t
        budget = Budget(unit.budget)
        view = rnd if policy.privileged else rnd.view(budget)
        t0 = clock()
        chosen = policy.select(view, budget)
        t1 = clock()
        budget.close()
        reward = float(rnd.rewards[chosen])
        policy.update(view, chosen, reward)
        update_seconds[t] = clock() - t1
        select_seconds[t] = t1 - t0
        for name, seconds in components.items():
            seconds[t] = policy.last_timings[name]
        users[t] = rnd.user
        groups[t] = rnd.group
        chosen_arms[t] = chosen
        rewards[t] = reward
        expected = rnd.expected.tolist()  # plain floats: cheaper than numpy calls on K values
        expected_rewards[t] = expected[chosen]
        best_expected_rewards[t] = max(expected)
        budget_spent[t] = budget.spent
        if diagnosed and ((t + 1) % DIAGNOSTICS_EVERY == 0 or t == T - 1):
            for name, value in sample_diagnostics(policy, true_groups).items():
                diagnostics.setdefault(name, np.full(T, np.nan))[t] = value
        if progress is not None and (t + 1) % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
        if checkpoint_every and (t + 1) % checkpoint_every == 0 and t + 1 < T:
            checkpoints.save(unit, {"t": t + 1, "policy": policy, "columns": columns, "diagnostics": diagnostics,
                                    "wall_seconds": wall_before + clock() - started})
    wall = wall_before + clock() - started
    if progress is not None:
        progress(T % PROGRESS_EVERY)
    regret = best_expected_rewards - expected_rewards  # max(expected) − expected[chosen] (DESIGN.md, "Round")
    check_finite(unit, {"reward": rewards, "expected_reward": expected_rewards,
                        "best_expected_reward": best_expected_rewards, "regret": regret})
    outcome = pa.table({
        "t": np.arange(T, dtype=np.int64), "user": users, "group": groups, "chosen": chosen_arms, "reward": rewards,
        "expected_reward": expected_rewards, "best_expected_reward": best_expected_rewards,
        "regret": regret, "budget_spent": budget_spent,
        **{f"diag_{name}": values for name, values in sorted(diagnostics.items())},
    })
    timing = pa.table({"t": outcome["t"], "select_seconds": select_seconds, "update_seconds": update_seconds,
                       **{f"{name}_seconds": seconds for name, seconds in components.items()}})
    return UnitResult(outcome, timing, wall)


def check_finite(unit: Unit, columns: dict[str, np.ndarray]) -> None:
    """A NaN or infinite reward, expected reward or regret makes every number of the unit meaningless:
    fail with the first such round, checked once per unit on whole columns (off the round loop)."""
    for name, values in columns.items():
        bad = ~np.isfinite(values)
        if bad.any():
            t = int(np.argmax(bad))
            raise UserError(f"{unit.algorithm} produced a non-finite {name} ({values[t]}) at round {t} of unit "
                            f"{unit.id}; check its hyper-parameters")


def has_diagnostics(policy: Policy) -> bool:
    kind = type(policy)
    return any(getattr(kind, name) is not getattr(Policy, name) for name in ("clusters", "sharing_graph", "diagnostics"))


def sample_diagnostics(policy: Policy, true_groups: np.ndarray | None) -> dict[str, float]:
    return {**clustering_scores(true_groups, policy.clusters(), policy.sharing_graph()), **policy.diagnostics()}
