"""One unit of work (DESIGN.md): (dataset, protocol, algorithm, hyper-parameters, seed, rounds, budget)."""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from banditbench.algos import ALGORITHMS
from banditbench.data import PreparedDataset
from banditbench.algos.base import Policy
from banditbench.envs import PROTOCOLS, Budget
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.diagnostics import clustering_scores
from banditbench.runner.seeds import unit_streams

PROGRESS_EVERY = 1000  # rounds between progress callbacks: keeps the hot loop free of UI work
DIAGNOSTICS_EVERY = 100  # rounds between samples of a policy's diagnostics (and the last round)


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
    tuning: bool = False  # a tuning seed (picks the best grid cell), never a reported one
    env: dict[str, Any] = field(default_factory=dict, hash=False)  # protocol settings (twostage: users, slate size…)

    @property
    def id(self) -> str:
        """``linucb-ind-seed3``; a non-default cell adds a short hash of its hyper-parameters
        (``linucb-ind-1f0c2a9e-seed3``) and a tuning seed reads ``tune3``: stable and readable."""
        stream = f"tune{self.seed_index}" if self.tuning else f"seed{self.seed_index}"
        spec = ALGORITHMS.get(self.algorithm)  # tests and plug-ins may run unregistered policies
        if self.params == (spec.defaults() if spec else {}):
            return f"{self.algorithm}-{stream}"
        return f"{self.algorithm}-{params_hash(self.params)}-{stream}"

    def config(self) -> dict[str, Any]:
        config = asdict(self)
        if not self.env:  # protocols without settings keep the config (and shard metadata) they always had
            del config["env"]
        return config


def params_hash(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]


@dataclass
class UnitResult:
    outcome: pa.Table  # deterministic per-round columns
    timing: pa.Table  # per-round seconds: machine-dependent, kept apart from the outcome
    wall_seconds: float
    peak_rss_mb: float | None = None  # set by an executor that ran the unit in another process
    metadata: dict[str, Any] | None = None  # extra outcome-shard metadata (slate protocols: ``ctr_optimum``)


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
    spec = ALGORITHMS[unit.algorithm]
    policy = spec.build(n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=policy_seed, params=unit.params)
    state = checkpoints.load(unit) if checkpoints is not None else None  # after the build: torch's RNG
    if state is None:
        columns = {**{name: np.empty(T, np.int64) for name in INT_COLUMNS},
                   **{name: np.empty(T) for name in FLOAT_COLUMNS},
                   **{f"{name}_seconds": np.zeros(T) for name in policy.timing_columns}}
        diagnostics: dict[str, np.ndarray] = {}
        start, wall_before = 0, 0.0
    else:
        policy.load_state_dict(state["policy"])
        columns, diagnostics = state["columns"], state["diagnostics"]
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
            checkpoints.save(unit, {"t": t + 1, "policy": policy.state_dict(), "columns": columns,
                                    "diagnostics": diagnostics, "wall_seconds": wall_before + clock() - started})
    wall = wall_before + clock() - started
    if progress is not None:
        progress(T % PROGRESS_EVERY)
    outcome = pa.table({
        "t": np.arange(T, dtype=np.int64), "user": users, "group": groups, "chosen": chosen_arms, "reward": rewards,
        "expected_reward": expected_rewards, "best_expected_reward": best_expected_rewards,
        # Regret of a round = max(expected) − expected[chosen] (DESIGN.md, "Round").
        "regret": best_expected_rewards - expected_rewards, "budget_spent": budget_spent,
        **{f"diag_{name}": values for name, values in sorted(diagnostics.items())},
    })
    timing = pa.table({"t": outcome["t"], "select_seconds": select_seconds, "update_seconds": update_seconds,
                       **{f"{name}_seconds": seconds for name, seconds in components.items()}})
    return UnitResult(outcome, timing, wall)


def has_diagnostics(policy: Policy) -> bool:
    kind = type(policy)
    return any(getattr(kind, name) is not getattr(Policy, name) for name in ("clusters", "sharing_graph", "diagnostics"))


def sample_diagnostics(policy: Policy, true_groups: np.ndarray | None) -> dict[str, float]:
    return {**clustering_scores(true_groups, policy.clusters(), policy.sharing_graph()), **policy.diagnostics()}
