"""One unit of work (DESIGN.md): (dataset, protocol, algorithm, hyper-parameters, seed, rounds, budget)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from banditbench.algos import ALGORITHMS
from banditbench.data import PreparedDataset
from banditbench.envs import PROTOCOLS, Budget
from banditbench.runner.seeds import unit_streams

PROGRESS_EVERY = 1000  # rounds between progress callbacks: keeps the hot loop free of UI work


@dataclass(frozen=True)
class Unit:
    dataset: str
    protocol: str
    algorithm: str
    params: dict[str, Any] = field(hash=False)
    master_seed: int
    seed_index: int
    rounds: int
    budget: int | None

    @property
    def id(self) -> str:
        return f"{self.algorithm}-seed{self.seed_index}"

    def config(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class UnitResult:
    outcome: pa.Table  # deterministic per-round columns
    timing: pa.Table  # per-round seconds: machine-dependent, kept apart from the outcome
    wall_seconds: float


def run_unit(unit: Unit, dataset: PreparedDataset, progress: Callable[[int], None] | None = None) -> UnitResult:
    env_seed, policy_seed = unit_streams(unit.master_seed, unit.seed_index)
    env = PROTOCOLS[unit.protocol].environment(dataset, env_seed)
    spec = ALGORITHMS[unit.algorithm]
    policy = spec.build(n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=policy_seed, params=unit.params)

    T = unit.rounds
    columns = {
        "t": np.arange(T, dtype=np.int64),
        "user": np.empty(T, np.int64),
        "group": np.empty(T, np.int64),
        "chosen": np.empty(T, np.int64),
        "reward": np.empty(T),
        "expected_reward": np.empty(T),
        "best_expected_reward": np.empty(T),
        "budget_spent": np.empty(T, np.int64),
    }
    select_seconds = np.empty(T)
    update_seconds = np.empty(T)
    clock = time.perf_counter
    started = clock()
    for rnd in env.rounds(T):
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
        columns["user"][t] = rnd.user
        columns["group"][t] = rnd.group
        columns["chosen"][t] = chosen
        columns["reward"][t] = reward
        columns["expected_reward"][t] = rnd.expected[chosen]
        columns["best_expected_reward"][t] = rnd.expected.max()
        columns["budget_spent"][t] = budget.spent
        if progress is not None and (t + 1) % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
    wall = clock() - started
    if progress is not None:
        progress(T % PROGRESS_EVERY)
    # Regret of a round = max(expected) − expected[chosen] (DESIGN.md, "Round").
    columns["regret"] = columns["best_expected_reward"] - columns["expected_reward"]
    timing = pa.table({"t": columns["t"], "select_seconds": select_seconds, "update_seconds": update_seconds})
    return UnitResult(pa.table(columns), timing, wall)
