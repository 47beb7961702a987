"""One unit of a slate protocol (seed 004's ``twostage``): the round loop when a policy recommends m items.

Outcome shard, per iteration: ``t, user, slate`` (the m item ids), ``clicked`` (m clicks), ``slate_size`` (m),
``clicks`` (y_t = Σ clicks, the Round's reward), ``ctr`` (y_t / m), ``expected_reward`` (the slate's expected CTR
under the simulator), ``best_expected_reward`` (the optimum 1 − flip = 0.9), ``regret`` (their difference) and
``budget_spent``; the metadata key ``ctr_optimum`` (1 − flip) tells the report the CTR optimum. Timing sidecar:
``select_seconds`` (Table 6's "Time": the recommendation step) and ``update_seconds``.
"""

from __future__ import annotations

import itertools
import time
from typing import Callable

import numpy as np
import pyarrow as pa

from banditbench.algos import ALGORITHMS
from banditbench.data import PreparedDataset
from banditbench.envs import PROTOCOLS, Budget
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.seeds import unit_streams
from banditbench.runner.unit import PROGRESS_EVERY, Unit, UnitResult


def check_slate(slate, m: int, n_items: int, algorithm: str) -> np.ndarray:
    slate = np.asarray(slate, dtype=np.int64)
    if slate.shape != (m,) or len(np.unique(slate)) != m or slate.min() < 1 or slate.max() > n_items:
        raise RuntimeError(f"{algorithm} returned {slate.tolist()}; a slate is {m} distinct item ids in 1..{n_items}")
    return slate


def run_slate_unit(unit: Unit, dataset: PreparedDataset, progress: Callable[[int], None] | None = None,
                   checkpoints: Checkpoints | None = None) -> UnitResult:
    env_seed, policy_seed = unit_streams(unit.master_seed, unit.seed_index, unit.tuning)
    env = PROTOCOLS[unit.protocol].environment(dataset, env_seed, unit.env, unit.budget)
    T, m = unit.rounds, env.slate_size
    policy = ALGORITHMS[unit.algorithm].build(n_users=env.n_users, n_arms=env.n_arms, dim=env.dim,
                                              seed=policy_seed, params=unit.params)
    policy.start(env.problem)
    state = checkpoints.load(unit) if checkpoints is not None else None  # after the build: torch's RNG
    if state is None:
        columns = {"user": np.empty(T, np.int64), "slate": np.empty((T, m), np.int64),
                   "clicked": np.empty((T, m), np.int8), "expected_reward": np.empty(T),
                   "budget_spent": np.empty(T, np.int64), "select_seconds": np.empty(T),
                   "update_seconds": np.empty(T), **{f"{name}_seconds": np.zeros(T) for name in policy.timing_columns}}
        start, wall_before = 0, 0.0
    else:
        policy.load_state_dict(state["policy"])
        columns = state["columns"]
        start, wall_before = state["t"], state["wall_seconds"]
        if progress is not None:
            progress(start - start % PROGRESS_EVERY)
    users, slates, clicked, expected, budget_spent, select_seconds, update_seconds = (
        columns[name] for name in ("user", "slate", "clicked", "expected_reward", "budget_spent", "select_seconds",
                                   "update_seconds"))
    components = {name: columns[f"{name}_seconds"] for name in policy.timing_columns}
    checkpoint_every = checkpoints.every if checkpoints is not None else 0
    clock = time.perf_counter
    started = clock()
    for rnd in itertools.islice(env.rounds(T), start, None):
        t = rnd.t
        budget = Budget(unit.budget)
        view = rnd.view(env.catalogue, budget)
        t0 = clock()
        slate = check_slate(policy.select(view, budget), m, env.n_arms, unit.algorithm)
        t1 = clock()
        budget.close()
        clicks, expected_clicks = env.feedback(rnd, slate)
        policy.update(view, slate, clicks)
        update_seconds[t] = clock() - t1
        select_seconds[t] = t1 - t0
        for name, seconds in components.items():
            seconds[t] = policy.last_timings[name]
        users[t], slates[t], clicked[t] = rnd.user, slate, clicks
        expected[t] = expected_clicks.mean()
        budget_spent[t] = budget.spent
        if progress is not None and (t + 1) % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
        if checkpoint_every and (t + 1) % checkpoint_every == 0 and t + 1 < T:
            checkpoints.save(unit, {"t": t + 1, "policy": policy.state_dict(), "columns": columns,
                                    "wall_seconds": wall_before + clock() - started})
    wall = wall_before + clock() - started
    if progress is not None:
        progress(T % PROGRESS_EVERY)
    optimum = 1.0 - env.flip
    clicks = clicked.sum(axis=1).astype(np.int64)
    outcome = pa.table({
        "t": np.arange(T, dtype=np.int64), "user": users,
        "slate": pa.FixedSizeListArray.from_arrays(slates.ravel(), m),
        "clicked": pa.FixedSizeListArray.from_arrays(clicked.ravel(), m),
        "slate_size": np.full(T, m, np.int64), "clicks": clicks, "ctr": clicks / m,
        "expected_reward": expected, "best_expected_reward": np.full(T, optimum),
        "regret": optimum - expected, "budget_spent": budget_spent,
    })
    timing = pa.table({"t": outcome["t"], "select_seconds": select_seconds, "update_seconds": update_seconds,
                       **{f"{name}_seconds": seconds for name, seconds in components.items()}})
    return UnitResult(outcome, timing, wall, metadata={"ctr_optimum": optimum})
