"""The Policy contract (docs/architecture.md, "Policy") and the registry behind ``--algos`` and ``banditbench list``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from banditbench.algos.domains import Domain
from banditbench.algos.state import MemberStateful, Stateful
from banditbench.envs.round import Budget, RoundView, RoundViews
from banditbench.errors import UserError
from banditbench.lazy import resolve


class BasePolicy(Stateful):
    """What every policy declares on its class and is built with, whether it is written for one unit (``Policy``)
    or for the members of a group (``MemberPolicy``)."""

    #: A privileged policy (only the oracle, written for one unit) is handed the full Round, hidden fields included.
    privileged = False

    #: Names of per-round time components the policy measures itself (e.g. M-CNB's clustering, meta adaptation and
    #: user training); after every round the runner copies ``self.last_timings[name]`` (one value per member) into
    #: the column ``<name>_seconds`` of the timing sidecar (never the outcome shard, which must stay bit-identical).
    timing_columns: tuple[str, ...] = ()

    #: The values each hyper-parameter may take (banditbench/algos/domains.py), beside the constructor's defaults.
    domains: dict[str, Domain] = {}

    #: Switches to the authors' code: hyper-parameter → (the value that selects the authors' code over the paper's
    #: default, what it changes). The reference's card of the algorithm lists them.
    authors_code: dict[str, tuple[Any, str]] = {}

    def __init__(self, *, n_users: int, n_arms: int, dim: int):
        self.n_users = n_users
        self.n_arms = n_arms
        self.dim = dim

    @classmethod
    def state_bytes(cls, *, n_users: int, n_arms: int, dim: int, block: int | None = None, **params: Any) -> int:
        """The bytes of the statistics the policy allocates for one unit (a lower bound for state that grows), for
        ``plan`` to refuse a unit that cannot fit before anything is written; 0 when small or unknown. ``block``:
        the block width the rounds declare (``RoundView.block``), for statistics kept per block."""
        return 0


class Policy(BasePolicy):
    """A bandit policy written for one unit (plug-ins, slates, the random policy and the oracle): the runner steps one
    such object per member of a group (``runner/unit.py``).

    Constructed with its hyper-parameters (keyword arguments with the paper's defaults) plus the
    problem's dimensions and a seed; then ``select`` picks an arm and ``update`` learns from the
    observed reward. All learned state lives inside the policy, and ``state_dict`` / ``load_state_dict``
    (banditbench/algos/state.py) give it as plain data for checkpoints.
    """

    def __init__(self, *, n_users: int, n_arms: int, dim: int, seed: np.random.SeedSequence):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim)
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


def same_views(kept, views) -> bool:
    """Whether ``views`` are the members' views ``kept`` from this round's ``select`` (the same view objects)."""
    return kept is views or (len(kept) == len(views) and all(a is b for a, b in zip(kept, views)))


class MemberPolicy(MemberStateful, BasePolicy):
    """A bandit policy over the M ≥ 1 members of a group: its seeds, and the grid cells that differ only in the
    hyper-parameters it keeps per member (``member_params``). A unit is a group of one.

    Constructed with the problem's dimensions, ``seeds`` (one ``numpy.random.SeedSequence`` per member, M of them)
    and its hyper-parameters: those in ``member_params`` may be given one value per member (kept as arrays [M]), the
    others are shared. Every learned array has the member axis first (``A_inv[m, u]``, ``theta[m, u]``), and so does
    every list of per-member objects; ``select(views, budgets)`` returns every member's choice of round t and
    ``update(views, chosen, rewards)`` learns from every member's feedback, ``views[m]`` being member m's view.
    ``member_state_dict(m)`` / ``load_member_state_dict(m, state)`` (banditbench/algos/state.py) give one member's
    state, so a checkpoint stays per unit and loads into a group of any size.
    """

    #: Hyper-parameters that may take one value per member: the grid cells that differ only in them form one group.
    member_params: tuple[str, ...] = ()
    #: a member's place in its group (another grouping changes it), and this round's arms ``read_arms`` keeps
    transient = ("members", "_read")

    def __init__(self, *, n_users: int, n_arms: int, dim: int, seeds: list[np.random.SeedSequence]):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim)
        self.members = np.arange(len(seeds))
        self.rngs = [np.random.default_rng(seed) for seed in seeds]

    def at(self, index) -> tuple:
        """Member m's entry ``index[m]`` of the axis after the member axis, for every member m: ``array[self.at(i)]``
        is [M, …]. A group of one takes a view there (no gather; a write goes through, as with a basic index)."""
        if len(self.members) == 1:
            i = int(index[0])
            return 0, slice(i, i + 1)
        return self.members, np.asarray(index)  # a list converted once, not at every use

    def rows(self, members: np.ndarray):
        """The index of these members' rows of the member axis: a view of a single member's (a slice), else a gather."""
        return slice(members[0], members[0] + 1) if len(members) == 1 else members

    def per_member(self, value) -> np.ndarray:
        """A hyper-parameter of ``member_params`` as one value per member [M]: one value is every member's."""
        return np.broadcast_to(np.asarray(value, dtype=float), self.members.shape).copy()

    def select(self, views, budgets: list[Budget]) -> list:
        raise NotImplementedError

    def update(self, views, chosen: list, rewards: list) -> None:
        raise NotImplementedError

    def read_arms(self, views) -> tuple[np.ndarray, np.ndarray]:
        """Every member's arms [M, K, d] and served user [M], kept for ``played``: each arm pool is read (and its
        budget spent) once."""
        if type(views) is RoundViews:  # the runner's views of blocks of rounds: one read for the whole group
            arms, served = views.read_arms()
        elif len(views) == 1:  # a unit alone: its pool without a copy
            view = views[0]
            arms, served = view.arms[:][None], np.array([view.user])
        else:
            arms, served = np.array([view.arms[:] for view in views]), np.array([view.user for view in views])
        self._read = views, arms, served
        return arms, served

    def played(self, views, chosen: list, rewards: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The served users [M], the chosen arms' contexts [M, d] and their rewards [M]: from the arms this round's
        ``select`` read, or else (an update without it) from ``views``."""
        read = getattr(self, "_read", None)
        if read is not None and same_views(read[0], views):
            served, x = read[2], read[1][self.at(chosen)]
        else:
            served, x = np.array([view.user for view in views]), np.array([v.arms[c] for v, c in zip(views, chosen)])
        return served, x, np.asarray(rewards, dtype=float)

    # Optional diagnostics of member m, as ``Policy``'s.
    def clusters(self, m: int) -> np.ndarray | None:
        return None

    def sharing_graph(self, m: int):
        return None

    def diagnostics(self, m: int) -> dict[str, float]:
        return {}


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
    #: One of FAMILIES: the panel a regret plot by family draws it in.
    family: str = "other"

    @property
    def policy(self) -> type[Policy]:
        return resolve(self.source, "banditbench.algos")

    def defaults(self) -> dict[str, Any]:
        """Hyper-parameters a user may set, with their defaults, read from the constructor."""
        problem = {"self", "n_users", "n_arms", "dim", "seed", "seeds"}
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
        """The domain of every settable hyper-parameter, from the classes' ``domains``."""
        return self._declared("domains")

    def authors_code(self) -> dict[str, tuple[Any, str]]:
        """The switches to the authors' code, from the classes' ``authors_code``: each settable hyper-parameter whose
        value selects the authors' code over the paper's default, with that value and what it changes."""
        return self._declared("authors_code")

    def _declared(self, attribute: str) -> dict[str, Any]:
        """A per-hyper-parameter table the policy classes declare (a subclass's entry wins), settable ones only."""
        declared: dict[str, Any] = {}
        for kind in reversed(self.policy.__mro__):
            declared.update(vars(kind).get(attribute, {}))
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
        """What one unit's statistics need for this problem and these hyper-parameters (``Policy.state_bytes``)."""
        every = {**self.defaults(), **self.fixed, **params}
        return self.policy.state_bytes(n_users=n_users, n_arms=n_arms, dim=dim, block=block, **every)

    def build(self, *, n_users: int, n_arms: int, dim: int, seed, params: dict[str, Any]) -> Policy | MemberPolicy:
        """The policy of one unit: a ``Policy``, or a ``MemberPolicy`` of one member."""
        if self.takes_members:
            return self.build_members(n_users=n_users, n_arms=n_arms, dim=dim, seeds=[seed], params=[params])
        self.check(params)
        return self.policy(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed, **self.fixed, **params)

    def check(self, params: dict[str, Any]) -> None:
        """A hyper-parameter outside its domain is a ``UserError`` naming it, however the policy is built (the
        settings check ``--set`` values the same way before anything runs); constructors do not check them again."""
        domains = self.domains()
        for name, value in params.items():
            domain = domains.get(name)
            if domain is None:  # a plug-in's parameter without a domain
                continue
            try:
                domain.parse(value.item() if isinstance(value, np.generic) else value)
            except ValueError:
                raise UserError(f"{self.name}.{name}={value!r}: {name} must be {domain.describe()}") from None

    @property
    def takes_members(self) -> bool:
        """Whether one policy object holds every member of a group (``MemberPolicy``)."""
        return issubclass(self.policy, MemberPolicy)

    def build_members(self, *, n_users: int, n_arms: int, dim: int, seeds: list, params: list[dict[str, Any]]):
        """One ``MemberPolicy`` over the members whose seeds and hyper-parameters are given (one each): they may
        differ only in the policy's ``member_params``, which it then takes as one value per member."""
        for p in params:
            self.check(p)
        varying = self.policy.member_params
        shared = {name: value for name, value in params[0].items() if name not in varying}
        if any({name: value for name, value in p.items() if name not in varying} != shared for p in params):
            raise ValueError(f"{self.name}: the members of a group may differ only in {', '.join(varying) or 'seed'}")
        defaults = self.defaults()
        per_member = {
            name: [p.get(name, defaults[name]) for p in params] for name in varying if any(name in p for p in params)
        }
        return self.policy(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, **self.fixed, **shared, **per_member)


ALGORITHMS: dict[str, AlgorithmSpec] = {}


ROLES = ("baseline", "proposed")
# Families of algorithms, as the papers group them: clustering of bandits (CLUB and its successors, the multi-agent
# bandits of Ghosh et al.), one linear model per user or for all, neural models, and the reference policies; "other"
# for a plug-in that declares none.
FAMILIES = ("clustering", "linear", "neural", "baseline", "other")


def register(
    name: str,
    policy: type[Policy] | str,
    *,
    paper: str,
    description: str,
    role: str = "proposed",
    capabilities: Capabilities | None = None,
    family: str = "other",
    **fixed: Any,
) -> AlgorithmSpec:
    """``policy``: the class, or where to import it from when first used (``".linucb:LinUCB"``, relative
    to banditbench.algos, or ``"package.module:Class"``). ``capabilities`` defaults to a per-user one-arm
    policy; the ``two_stage`` and ``user_features`` settings fixed by the name are reflected in it. ``family``: one
    of FAMILIES."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} registered twice")
    if role not in ROLES:
        raise ValueError(f"algorithm {name!r}: role must be one of {ROLES}, got {role!r}")
    if family not in FAMILIES:
        raise ValueError(f"algorithm {name!r}: family must be one of {FAMILIES}, got {family!r}")
    capabilities = replace(
        capabilities or Capabilities(),
        **{key: bool(fixed[key]) for key in ("two_stage", "user_features") if key in fixed},
    )
    spec = ALGORITHMS[name] = AlgorithmSpec(name, policy, paper, description, dict(fixed), role, capabilities, family)
    return spec
