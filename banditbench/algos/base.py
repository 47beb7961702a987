"""The Policy contract (docs/architecture.md, "Policy") and the registry behind ``--algos`` and ``banditbench list``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from banditbench.algos.domains import Domain
from banditbench.algos.state import Stateful
from banditbench.envs.round import Budget, RoundView, RoundViews
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

    #: The values each hyper-parameter may take (banditbench/algos/domains.py), beside the constructor's defaults.
    domains: dict[str, Domain] = {}

    #: Hyper-parameters whose values may differ between the members of a lockstep group (``Policy.lockstep``): the
    #: group keeps them per member, so the grid cells that differ only in them run together with their seeds.
    lockstep_params: tuple[str, ...] = ()

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

    @classmethod
    def lockstep(cls, policies: list[Policy]) -> Lockstep:
        """The seeds' policies of one unit configuration, advanced round by round together (``--engine lockstep``).
        A policy that declares the ``lockstep`` capability returns a :class:`Lockstep` that batches across seeds."""
        return Lockstep(policies)

    @classmethod
    def state_bytes(cls, *, n_users: int, n_arms: int, dim: int, block: int | None = None, **params: Any) -> int:
        """The bytes of the statistics the policy allocates (a lower bound for state that grows), for ``plan`` to
        refuse a unit that cannot fit before anything is written; 0 when small or unknown. ``block``: the block
        width the rounds declare (``RoundView.block``), for statistics kept per block."""
        return 0


class Lockstep:
    """Policies of one algorithm and one configuration, one per seed, taking their rounds together: ``select``
    gets every seed's view of round t and returns every seed's choice, ``update`` their feedback. Each policy
    keeps its own state (so checkpoints stay per unit). This default steps them one after the other."""

    def __init__(self, policies: list[Policy]):
        self.policies = policies

    def select(self, views: list[RoundView], budgets: list[Budget]) -> list:
        return [policy.select(view, budget) for policy, view, budget in zip(self.policies, views, budgets)]

    def update(self, views: list[RoundView], chosen: list, rewards: list) -> None:
        for policy, view, arm, reward in zip(self.policies, views, chosen, rewards):
            policy.update(view, arm, reward)

    # Helpers for groups that batch numpy statistics across their members.
    def stack_members(self, *names: str) -> None:
        """Stack these array attributes of the members on a leading member axis, as the group's own attributes of
        the same names; each member's array becomes a view of its row, so the member's own methods and its
        checkpoints read and write what the group's batched steps write."""
        for name in names:
            stacked = np.stack([getattr(policy, name) for policy in self.policies])
            setattr(self, name, stacked)
            for policy, row in zip(self.policies, stacked):
                setattr(policy, name, row)

    def read_arms(self, views: list[RoundView]) -> tuple[np.ndarray, np.ndarray]:
        """Every member's arms [S, K, d] and served user [S] for ``select``, kept for ``played``: each arm pool is
        read (and its budget spent) once."""
        if isinstance(views, RoundViews):  # the runner's views of blocks of rounds: one read for the whole group
            self._arms, self._served = views.read_arms()
        else:
            self._arms = np.array([view.arms[:] for view in views])  # np.array copies a list faster than np.stack
            self._served = np.array([view.user for view in views])
        return self._arms, self._served

    def played(self, chosen: list, rewards: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """After ``read_arms``: the served users [S], the chosen arms' contexts [S, d] and their rewards [S]."""
        return self._served, self._arms[np.arange(len(chosen)), chosen], np.asarray(rewards, dtype=float)

    def per_member(self, name: str) -> np.ndarray:
        """A hyper-parameter that may differ between members (``Policy.lockstep_params``), one value per member."""
        return np.array([getattr(policy, name) for policy in self.policies])


@dataclass(frozen=True)
class Capabilities:
    """What an algorithm needs from a run and offers to it, declared once where it is registered, so that the
    runner and ``plan`` read these flags instead of knowing algorithm names or special settings."""

    #: recommends a slate of m items per round (slate protocols) instead of one arm
    slate: bool = False
    #: picks topics first, then one item per topic group (two-stage selection); implies ``slate``
    two_stage: bool = False
    #: chooses what to score within a per-round scoring budget; without it, every arm of the pool is scored and
    #: the budget must cover the pool
    budget: bool = False
    #: keeps state per user, so the round's user id matters
    user_id: bool = True
    #: reads the round's user features (needs a protocol that gives them)
    user_features: bool = False
    #: has a ``device`` hyper-parameter (cpu, cuda or auto) that ``--device`` sets
    device: bool = False
    #: has a ``sigma`` hyper-parameter, the noise's sub-Gaussian scale in its confidence radius, that a run sets to
    #: the σ the prepared data records (its ``noise`` parameter) unless the run sets it
    noise_sigma: bool = False
    #: batches its seeds' work when they run in lockstep (``Policy.lockstep``); ``--engine lockstep`` groups the seeds
    #: of such an algorithm, and runs the others unit by unit
    lockstep: bool = False
    #: gives its state as plain data (``state_dict``), so a long unit can be checkpointed and resumed
    checkpoint: bool = True


@dataclass(frozen=True)
class Parameter:
    """A hyper-parameter a user may set: its default and the values it may take."""

    default: Any
    domain: Domain | None  # None only for a plug-in that declares none (its values are cast to the default's type)


@dataclass(frozen=True)
class AlgorithmSpec:
    """The one declaration of an algorithm: its name, policy class, paper (author, year), description, role,
    the hyper-parameters fixed by the name and its capabilities. Its settable hyper-parameters, with defaults
    and domains, are read from the class (``parameters()``). Plugins declare theirs the same way (``register``).
    """

    name: str
    source: type[Policy] | str  # the class, or ".module:Class" imported when first needed (banditbench/lazy.py)
    paper: str
    description: str
    fixed: dict[str, Any] = field(default_factory=dict)
    #: "baseline" or "proposed": the report states each proposed method's improvement over the best baseline.
    role: str = "proposed"
    capabilities: Capabilities = field(default_factory=Capabilities)

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

    def domains(self) -> dict[str, Domain]:
        """The domain of every settable hyper-parameter, from the classes' ``domains`` (a subclass's wins)."""
        declared: dict[str, Domain] = {}
        for kind in reversed(self.policy.__mro__):
            declared.update(vars(kind).get("domains", {}))
        return {name: declared[name] for name in self.defaults() if name in declared}

    def parameters(self) -> dict[str, Parameter]:
        """Every settable hyper-parameter with its default and domain."""
        domains = self.domains()
        return {name: Parameter(default, domains.get(name)) for name, default in self.defaults().items()}

    def needs(self) -> list[str]:
        """The capabilities that are set, by name (for ``banditbench list``)."""
        return [name.replace("_", " ") for name, value in vars(self.capabilities).items() if value]

    def state_bytes(
        self, *, n_users: int, n_arms: int, dim: int, params: dict[str, Any], block: int | None = None
    ) -> int:
        """What the policy's statistics need for this problem and these hyper-parameters (``Policy.state_bytes``)."""
        every = {**self.defaults(), **self.fixed, **params}
        return self.policy.state_bytes(n_users=n_users, n_arms=n_arms, dim=dim, block=block, **every)

    def build(self, *, n_users: int, n_arms: int, dim: int, seed, params: dict[str, Any]) -> Policy:
        return self.policy(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed, **self.fixed, **params)


ALGORITHMS: dict[str, AlgorithmSpec] = {}


ROLES = ("baseline", "proposed")


def register(
    name: str,
    policy: type[Policy] | str,
    *,
    paper: str,
    description: str,
    role: str = "proposed",
    capabilities: Capabilities | None = None,
    **fixed: Any,
) -> AlgorithmSpec:
    """``policy``: the class, or where to import it from when first used (``".linucb:LinUCB"``, relative
    to banditbench.algos, or ``"package.module:Class"``). ``capabilities`` defaults to a per-user one-arm
    policy; the ``two_stage`` and ``user_features`` settings fixed by the name are reflected in it."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} registered twice")
    if role not in ROLES:
        raise ValueError(f"algorithm {name!r}: role must be one of {ROLES}, got {role!r}")
    capabilities = replace(
        capabilities or Capabilities(),
        **{key: bool(fixed[key]) for key in ("two_stage", "user_features") if key in fixed},
    )
    spec = ALGORITHMS[name] = AlgorithmSpec(name, policy, paper, description, dict(fixed), role, capabilities)
    return spec
