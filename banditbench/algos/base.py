"""The Policy contract (DESIGN.md, "Policy") and the registry behind ``--algos`` and ``banditbench list``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditbench.envs.round import Budget, RoundView
from banditbench.algos.state import Stateful
from banditbench.lazy import resolve


class Policy(Stateful):
    """A bandit policy.

    Constructed with its hyper-parameters (keyword arguments with the paper's defaults) plus the
    problem's dimensions and a seed; then ``select`` picks an arm and ``update`` learns from the
    observed reward. All learned state lives inside the policy, and ``state_dict`` / ``load_state_dict``
    (banditbench/algos/state.py) give it as plain data for checkpoints.
    """

    #: A privileged policy (only the oracle) is handed the full Round, hidden fields included.
    privileged = False

    #: Names of per-round time components the policy measures itself (e.g. M-CNB's clustering, meta adaptation
    #: and user training); after every round the runner copies ``self.last_timings[name]`` into the column
    #: ``<name>_seconds`` of the timing sidecar (never the outcome shard, which must stay bit-identical).
    timing_columns: tuple[str, ...] = ()

    def __init__(self, *, n_users: int, n_arms: int, dim: int, seed: np.random.SeedSequence):
        self.n_users = n_users
        self.n_arms = n_arms
        self.dim = dim
        self.rng = np.random.default_rng(seed)

    def select(self, view: RoundView, budget: Budget) -> int:
        raise NotImplementedError

    def update(self, view: RoundView, chosen: int, reward: float) -> None:
        raise NotImplementedError

    # Optional diagnostics, sampled by the runner every few rounds into ``diag_*`` shard columns.
    def clusters(self) -> np.ndarray | None:
        """The current cluster label of every user, if the policy clusters users."""
        return None

    def sharing_graph(self):
        """The current "shares samples with" user graph [N, N] (dense or scipy.sparse), if it has one.
        Pair F1 is scored on it; without it, on the same-label graph of ``clusters()``."""
        return None

    def diagnostics(self) -> dict[str, float]:
        """Any other deterministic per-round figures worth keeping (timings belong in the timing sidecar)."""
        return {}


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm: a policy class, its paper, and hyper-parameters fixed by the name."""

    name: str
    source: type[Policy] | str  # the class, or ".module:Class" imported when first needed (banditbench/lazy.py)
    paper: str
    description: str
    fixed: dict[str, Any] = field(default_factory=dict)
    #: "baseline" or "proposed": the report states each proposed method's improvement over the best baseline.
    role: str = "proposed"

    @property
    def policy(self) -> type[Policy]:
        return resolve(self.source, "banditbench.algos")

    def defaults(self) -> dict[str, Any]:
        """Hyper-parameters a user may set, with their defaults, read from the constructor."""
        problem = {"self", "n_users", "n_arms", "dim", "seed"}
        found: dict[str, Any] = {}
        for kind in self.policy.__mro__:  # a constructor taking **kwargs passes the rest on to its parent's
            if "__init__" not in vars(kind):
                continue
            params = inspect.signature(kind.__init__).parameters.values()
            for p in params:
                if p.name not in problem and p.name not in self.fixed and p.kind is p.KEYWORD_ONLY:
                    found.setdefault(p.name, p.default)
            if not any(p.kind is p.VAR_KEYWORD for p in params):
                break
        return found

    def build(self, *, n_users: int, n_arms: int, dim: int, seed, params: dict[str, Any]) -> Policy:
        return self.policy(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed, **self.fixed, **params)


ALGORITHMS: dict[str, AlgorithmSpec] = {}


ROLES = ("baseline", "proposed")


def register(name: str, policy: type[Policy] | str, *, paper: str, description: str, role: str = "proposed",
             **fixed: Any) -> None:
    """``policy``: the class, or where to import it from when first used (``".linucb:LinUCB"``, relative
    to banditbench.algos, or ``"package.module:Class"``)."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} registered twice")
    if role not in ROLES:
        raise ValueError(f"algorithm {name!r}: role must be one of {ROLES}, got {role!r}")
    ALGORITHMS[name] = AlgorithmSpec(name, policy, paper, description, dict(fixed), role)
