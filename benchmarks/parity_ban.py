"""The Ban-family side of ``parity.py``: the authors' M-CNB repository (CLUB, SCLUB, LOCB, COFIBA, NeuUCB-ONE,
NeuUCB-IND, M-CNB at cf79294; Meta-Ban at 104f710) run unedited on arm pools in their format.

Each of their runs is a fresh process (``run``) whose working folder links the pools under the file names their
loader opens, with REF on ``sys.path`` and these shims: an empty ``torchvision`` module (imported by their loader,
never used), scikit-learn's K-means given its 0.24 default ``n_init = 10`` (the version the authors pin), one
thread, and numpy / torch / random seeded with the run index (their code seeds nothing). The round loop restates
their ``run.py``: the same constructor calls, the same calls in the same order and the same training schedule, with
the round count as an argument. The run records what it drew (the served user, the ten contexts and rewards of
every round) and what it chose, so that ours replays the very same rounds (``parity.py``).

Settings (``KNOBS``) are passed where their code keeps them, in our parameters' names:

- ``Argument``: a constructor argument of their class (their ``run.py`` passes the rest as it does);
- ``Attribute``: an attribute their constructor sets, overwritten on the instance after construction;
- ``Literal``: a constant written inside one of their methods (``alpha = 1`` in CLUB's edge test, ``lr=1e-3`` in
  NeuUCB-ONE's optimiser), replaced in memory in a copy of the method's bytecode (``replace_literal``); their files
  are never edited.

A setting their code does not have is refused with one line, as is a horizon their code cannot run (``LIMITS``).
"""

from __future__ import annotations

import dis
import os
import sys
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from loop_clock import LoopClock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# our algorithm → their module and class (or factory), and the loader their run.py uses
METHODS = {
    "club": ("club", "CLUB", "mcnb"),
    "locb": ("locb", "LOCB", "mcnb"),
    "sclub": ("sclub", "SCLUB", "mcnb"),
    "cofiba": ("cofiba", "COFIBA", "mcnb"),
    "neuucb-one": ("neuucb_one", "neuucb_one", "mcnb"),
    "neuucb-ind": ("neuucb_ind", "neuucb_ind", "mcnb"),
    "mcnb": ("mcnb", "MCNB", "mcnb"),
    "metaban": ("meta_ban", "meta_ban", "metaban"),
}
# the file names each loader opens (M-CNB's load_movielen_dif_user, Meta-Ban's load_yelp_new), whatever the sizes
LOADER_FILES = {
    "mcnb": {
        "entry": "movie_2000users_10000items_entry.npy",
        "users": "movie_2000users_10000items_features.npy",
        "items": "movie_10000items_2000users_features.npy",
    },
    "metaban": {
        "entry": "yelp_2000users_10000items_entry.npy",
        "users": "yelp_2000users_10000items_features.npy",
        "items": "yelp_10000items_2000users_features.npy",
    },
}
# M-CNB's run.py asks its loader for 100 groups; Meta-Ban's loader draws u from range(2000) and clusters into 50
RUN_PY_GROUPS, METABAN_USERS, METABAN_GROUPS = 100, 2000, 50
# their horizons: a log array of fixed length (SCLUB), or a behaviour that changes at a fixed round (LOCB)
LIMITS = {
    "sclub": (20_000, "their SCLUB logs cluster counts in an array of 20 000 rounds"),
    "locb": (40_000, "their LOCB stops using its clusters after round 40 000"),
}


def run_py_arguments(algorithm: str, n: int, d: int, rounds: int) -> dict:
    """The constructor arguments of their run.py (M-CNB at cf79294, Meta-Ban at 104f710), with the horizon where
    their constructor takes one (CLUB's cluster-count log, COFIBA's ``num_rounds``)."""
    return {
        "club": {"nu": n, "d": d, "T": rounds},
        "locb": {"nu": n, "d": d, "gamma": 0.2, "num_seeds": 20, "delta": 0.1, "detect_cluster": 0},
        "sclub": {"nu": n, "d": d},
        "cofiba": {"num_users": n, "d": d, "num_rounds": rounds, "L": 10},
        "neuucb-ind": {"dim": d, "n": n, "n_arm": 10, "lr": 0.001},
        "neuucb-one": {"dim": d, "lamdba": 0.001, "nu": 0.1},
        "mcnb": {"dim": d, "n": n, "n_arm": 10, "gamma": 0.4, "lr": 0.001, "nu": 1e-4},
        "metaban": {"dim": d, "n": n, "n_arm": 10, "gamma": 0.32, "lr": 0.0001},
    }[algorithm]


@dataclass(frozen=True)
class Argument:
    """A constructor argument of theirs; ``value(ours, dim)`` their value from our resolved settings."""

    name: str
    value: Callable[[dict, int], Any]


@dataclass(frozen=True)
class Attribute:
    """An attribute their constructor sets, overwritten after construction."""

    name: str
    value: Callable[[dict, int], Any]


@dataclass(frozen=True)
class Literal:
    """A constant in their method ``method`` of their class: the one assigned to the local ``store``, or passed as the
    keyword argument ``keyword``."""

    method: str
    old: Any
    value: Callable[[dict, int], Any]
    store: str | None = None
    keyword: str | None = None


def neural_lamdba(p: dict, d: int) -> float:
    """Their λ of the NeuralUCB bonus sqrt(λν·Σ g²/U), U = λ + Σ g²: ours is λ/m (m the width) and ours ν = √(λν)."""
    return p["lam"] * p["width"]


KNOBS: dict[str, dict[str, Argument | Attribute | Literal]] = {
    "club": {"alpha2": Literal("_if_split", 1, lambda p, d: p["alpha2"], store="alpha")},
    "sclub": {"alpha1": Literal("_split_or_merge", 1, lambda p, d: p["alpha1"], store="alpha")},
    "locb": {
        "gamma": Argument("gamma", lambda p, d: p["gamma"]),
        "num_seeds": Argument("num_seeds", lambda p, d: p["num_seeds"]),
    },
    "cofiba": {
        "alpha": Attribute("beta", lambda p, d: 0.1 * p["alpha"]),
        "alpha2": Attribute("alpha", lambda p, d: p["alpha2"] * 4 * np.sqrt(d)),
    },
    "neuucb-one": {
        "lam": Argument("lamdba", neural_lamdba),
        "nu": Argument("nu", lambda p, d: p["nu"] ** 2 / neural_lamdba(p, d)),
        "width": Argument("hidden", lambda p, d: p["width"]),
        "lr": Literal("train", 1e-3, lambda p, d: p["lr"], keyword="lr"),
    },
    "neuucb-ind": {
        "lam": Argument("lamdba", neural_lamdba),
        "nu": Argument("nu", lambda p, d: p["nu"] ** 2 / neural_lamdba(p, d)),
        "width": Argument("hidden", lambda p, d: p["width"]),
        "lr": Argument("lr", lambda p, d: p["lr"]),
    },
    "mcnb": {
        "gamma": Argument("gamma", lambda p, d: p["gamma"]),
        "code_nu": Argument("nu", lambda p, d: p["code_nu"]),
        "lr": Argument("lr", lambda p, d: p["lr"]),
        "width": Argument("hidden", lambda p, d: p["width"]),
    },
    "metaban": {
        # their test |Δ| < γ (run.py: 0.32) is ours |Δ| ≤ (ν − 1)γ/ν (0.8 · 0.4 at the paper's ν = 5)
        "gamma": Argument("gamma", lambda p, d: (p["nu"] - 1) / p["nu"] * p["gamma"]),
        "eta2": Argument("lr", lambda p, d: p["eta2"]),  # their lr is the meta network's (u_t's is a fixed 1e-3)
        "lr": Literal("train", 1e-3, lambda p, d: p["lr"], keyword="lr"),
        "code_lam_nu": Argument("nu", lambda p, d: p["code_lam_nu"] / 0.001),  # their λ = 0.001 times their ν
        "width": Argument("hidden", lambda p, d: p["width"]),
    },
}


def check_settings(algorithm: str, settings: dict, rounds: int) -> None:
    """Refuse, with one line, a setting their code does not keep or a horizon it cannot run."""
    knobs = KNOBS.get(algorithm, {})
    missing = [name for name in settings if name not in knobs]
    if missing:
        module, name, _ = METHODS[algorithm]
        have = ", ".join(knobs) or "none"
        raise SystemExit(
            f"their {name} ({module}.py) has no setting for {', '.join(missing)}: it cannot be passed to their code "
            f"(settings it has, in our names: {have})"
        )
    if algorithm in LIMITS and rounds > LIMITS[algorithm][0]:
        raise SystemExit(
            f"--rounds {rounds} is beyond their code's limit of {LIMITS[algorithm][0]}: {LIMITS[algorithm][1]}"
        )


def check_pools(algorithm: str, pools: Path) -> None:
    """Refuse, with one line, pools their loader cannot serve: Meta-Ban's draws users from range(2000)."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data.authors import find_family, load_array
    from banditbench.errors import UserError

    try:
        users = len(load_array(find_family(pools, None)[1]["users"]))
    except UserError as error:
        raise SystemExit(str(error)) from None
    if METHODS[algorithm][2] == "metaban" and users < METABAN_USERS:
        raise SystemExit(f"{pools} holds {users} users: their Meta-Ban loader draws users from range({METABAN_USERS})")


def replace_literal(function: types.FunctionType, old, new, store: str | None = None, keyword: str | None = None):
    """A copy of ``function`` in which one constant ``old`` reads ``new``: the constant assigned to the local
    ``store``, or passed as the keyword argument ``keyword``. Exactly one such constant must exist."""
    code = function.__code__
    instructions = list(dis.get_instructions(code))

    def is_old(load) -> bool:
        return load.opname == "LOAD_CONST" and type(load.argval) is type(old) and load.argval == old

    hits = []
    for j, after in enumerate(instructions):
        if store is not None and after.opname == "STORE_FAST" and after.argval == store and is_old(instructions[j - 1]):
            hits.append(instructions[j - 1])
        # a call's keyword values are the instructions just before the names of its keywords (each one load here)
        names = code.co_consts[after.arg] if after.opname == "KW_NAMES" else ()
        if keyword in names and is_old(instructions[j - len(names) + names.index(keyword)]):
            hits.append(instructions[j - len(names) + names.index(keyword)])
    where = f"{function.__qualname__}: {store or keyword} = {old!r}"
    if len(hits) != 1 or len(code.co_consts) >= 256:
        raise SystemExit(f"cannot set {where} in their code ({len(hits)} such constants, expected one)")
    raw = bytearray(code.co_code)
    raw[hits[0].offset + 1] = len(code.co_consts)  # the argument byte of that LOAD_CONST: the new constant's index
    patched = code.replace(co_code=bytes(raw), co_consts=code.co_consts + (new,))
    return types.FunctionType(
        patched, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )


def make_model(algorithm: str, env, rounds: int, ours: dict, settings: dict, seed: int):
    """Their model as their run.py builds it, with ``settings`` (names of ours) passed through KNOBS; ``ours``: our
    resolved parameters with those settings, from which their values are derived. torch, where their module uses
    it, is seeded with the run index before their networks are drawn (their loaders draw nothing from it)."""
    module_name, class_name, _ = METHODS[algorithm]
    module = __import__(module_name)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
        sys.modules["torch"].set_num_threads(1)
    cls = getattr(module, class_name)
    arguments = run_py_arguments(algorithm, env.num_user, env.dim, rounds)
    knobs = [KNOBS[algorithm][name] for name in settings]
    for knob in knobs:
        if isinstance(knob, Argument):
            arguments[knob.name] = knob.value(ours, env.dim)
        elif isinstance(knob, Literal):
            method = getattr(cls, knob.method)
            setattr(
                cls, knob.method, replace_literal(method, knob.old, knob.value(ours, env.dim), knob.store, knob.keyword)
            )
    model = cls(**arguments)
    for knob in knobs:
        if isinstance(knob, Attribute):
            setattr(model, knob.name, knob.value(ours, env.dim))
    return model


def link_pools(pools: Path, loader: str, work: Path) -> None:
    """Link the pool arrays of ``pools`` into ``work`` under the names their loader opens."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data.authors import find_family

    _, paths = find_family(pools, None)
    for key, name in LOADER_FILES[loader].items():
        (work / name).symlink_to(paths[key].resolve())


def truth_of_groups(pools: Path, groups: np.ndarray) -> np.ndarray | None:
    """The latent cluster of every group their loader formed (the majority of its users' clusters), from the truth
    file a generated instance carries (parity_pools.py); None for pools without one."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data.authors import find_family

    family, paths = find_family(pools, None)
    users = paths["users"].name.split("_")[1]
    truth_file = pools / f"{family}_{users}_truth.npy"
    if not truth_file.is_file():
        return None
    truth = np.load(truth_file)
    return np.array([np.bincount(truth[groups == g]).argmax() for g in range(groups.max() + 1)])


def install_shims() -> None:
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"
    sys.modules.setdefault("torchvision", types.ModuleType("torchvision"))  # imported by their loader, unused
    sys.modules["torchvision"].datasets = sys.modules["torchvision"].transforms = None
    import sklearn.cluster

    kmeans = sklearn.cluster.KMeans

    class KMeans024(kmeans):  # scikit-learn 0.24, which the authors pin, ran 10 restarts by default
        def __init__(self, n_clusters=8, **kwargs):
            kwargs.setdefault("n_init", 10)
            super().__init__(n_clusters=n_clusters, **kwargs)

    sklearn.cluster.KMeans = KMeans024


def load_environment(loader: str, groups: int):
    data = __import__("load_data")
    return data.load_movielen_dif_user(groups) if loader == "mcnb" else data.load_yelp_new()


def run(
    reference: Path,
    pools: Path,
    algorithm: str,
    rounds: int,
    seed: int,
    groups: int,
    ours: dict,
    settings: dict,
    record: Path,
) -> dict:
    """One run of their code in this (fresh) process. Writes the rounds it drew and the arms it chose to ``record``
    (.npz); returns the cumulative regret, timings and, for CLUB and SCLUB, their final clusters."""
    start = time.perf_counter()
    install_shims()
    import random

    loader, here = METHODS[algorithm][2], os.getcwd()
    with tempfile.TemporaryDirectory(prefix="parity-") as work:  # their loader reads the pools once, at its start
        link_pools(pools, loader, Path(work))
        os.chdir(work)
        sys.path.insert(0, str(reference))
        random.seed(seed)
        np.random.seed(seed)
        env = load_environment(loader, groups)
        os.chdir(here)
    model = make_model(algorithm, env, rounds, ours, settings, seed)
    users, chosen = np.zeros(rounds, np.int64), np.zeros(rounds, np.int64)
    contexts, rewards = np.zeros((rounds, env.n_arm, env.dim)), np.zeros((rounds, env.n_arm))
    clock = LoopClock(start)
    for t in range(rounds):
        if t == rounds // 2:
            clock.half()
        users[t], contexts[t], rewards[t] = env.step()
        chosen[t] = step(algorithm, model, int(users[t]), contexts[t], rewards[t], t)
    times = clock.seconds()
    truth = truth_of_groups(pools, np.asarray(env.groups))
    np.savez(
        record, users=users, contexts=contexts, rewards=rewards, chosen=chosen, truth=truth if truth is not None else []
    )
    regret = np.cumsum(rewards.max(1) - rewards[np.arange(rounds), chosen])
    return {"regret": regret.tolist(), "chosen": chosen.tolist(), **times, **their_clusters(algorithm, model, truth)}


def step(algorithm: str, model, user: int, contexts: np.ndarray, rewards: np.ndarray, t: int) -> int:
    """One round of their run.py: choose, then the updates and the training schedule of that method."""
    method = METHODS[algorithm][0]
    if method in ("neuucb_one", "neuucb_ind"):
        arm = model.recommend(user, contexts, t)[0]
    elif method == "mcnb":
        arm, group, _ = model.select(user, contexts, t)
    elif method == "meta_ban":
        arm, group, _, _ = model.recommend(user, contexts, t)
    else:
        arm = model.recommend(user, contexts, t)
    reward, x = rewards[arm], contexts[arm]
    if method in ("club", "locb"):
        model.store_info(i=user, x=x, y=reward, t=t)
        model.update(i=user, t=t)
    elif method == "cofiba":
        model.store_info(i=user, x=x, y=reward, t=t)
        model.update_cluster(i=user, kk=arm, t=t)
    elif method == "sclub":
        model.store_info(i=user, x=x, y=reward, t=t, r=reward, br=1.0)
        model.split(user, t)
        model.merge(t)
        model.num_clusters[t] = len(model.clusters)
    else:
        if method in ("mcnb", "meta_ban"):
            model.update(user, x, reward, group)
        else:
            model.update(user, x, reward)
        if (t < 1000 and t % 10 == 0) or t % 100 == 0:  # their schedule
            if method == "mcnb":
                model.train_meta(model.users, t, 1000, model.lr)
            model.train(user, t)
    return int(arm)


def their_clusters(algorithm: str, model, truth: np.ndarray | None) -> dict:
    """Their final user clusters (CLUB, SCLUB): the count and, with a truth, the pair F1 (CLUB on its edge graph)."""
    if algorithm not in ("club", "sclub"):
        return {}
    from parity_verdict import pair_f1

    labels = np.asarray(model.cluster_inds).astype(np.int64)
    found = {"clusters": len(np.unique(labels))}
    if truth is not None:
        import networkx as nx

        shown = nx.to_numpy_array(model.G, nodelist=range(len(labels))) if algorithm == "club" else labels
        found["f1"] = pair_f1(shown, truth)
    return found
