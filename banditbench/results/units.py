"""A unit's identity (docs/architecture.md, "Unit of work"): (dataset, protocol, algorithm, hyper-parameters, seed,
rounds, budget), its stable id (the shard's file name) and what running it returns.

Results sit below the algorithms: a unit is told its algorithm's default hyper-parameters by whoever plans it
(``defaults``), so that naming its shard needs no algorithm registry."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa


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
    # the algorithm's default hyper-parameters when the unit was planned: they name its shard, never identify it
    defaults: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def id(self) -> str:
        """``linucb-ind-seed3``; a cell other than ``defaults`` adds a short hash of its hyper-parameters
        (``linucb-ind-1f0c2a9e-seed3``) and a tuning seed reads ``tune3``: stable and readable."""
        stream = f"tune{self.seed_index}" if self.tuning else f"seed{self.seed_index}"
        if self.params == self.defaults:
            return f"{self.algorithm}-{stream}"
        return f"{self.algorithm}-{params_hash(self.params)}-{stream}"

    def config(self) -> dict[str, Any]:
        config = asdict(self)
        del config["defaults"]  # how the shard is named, not what the unit is
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
