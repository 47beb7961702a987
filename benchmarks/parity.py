"""Parity with the authors' code: their published implementation and ours on the same arm pools, side by side.

    .venv/bin/python benchmarks/parity.py --reference-dir REF --pools DIR --measure regret
        [--algos mcnb,neuucb-one,club] [--rounds 10000] [--runs 10] [--variant default,code,custom]
        [--ours-params '{"share_with_cluster": false}'] [--out FILE.json]
    .venv/bin/python benchmarks/parity.py --reference-dir REF --pools DIR --measure speed [--runs 3] [--lockstep S] ...

REF is a local checkout of the authors' repository: banyikun/MCNB at cf79294 (M-CNB, CLUB, LOCB, SCLUB, COFIBA,
NeuUCB-ONE, NeuUCB-IND; their ``load_movielen_dif_user`` loader: 100 K-means groups, [item, rater] contexts) or
at 104f710 (Meta-Ban, algorithm ``metaban``; the ``load_yelp_new`` loader: 50 groups, item contexts). DIR holds
the pools as the Ban-family repositories publish them (``<name>_<U>users_<I>items_entry.npy`` and the two feature
arrays; Yelp: banyikun/MCNB at 104f710); default REF itself. Nothing of theirs is edited: each of their runs is a
fresh process whose working folder links the pools under the file names their loader opens, with REF on
``sys.path``, an empty ``torchvision`` module (imported by their loader, never used), scikit-learn's K-means
given its 0.24 default ``n_init = 10`` (the version the authors pin), one thread, and numpy / torch / random
seeded with the run index (their code seeds nothing). The round loop calls their classes in the order of
their ``run.py``; the regret of a round is max(reward) − reward(chosen), as theirs.

EE-Net (``--algos eenet``, REF = banyikun/EE-Net-ICLR-2022 at 08d6ed7, DIR = a folder of the MNIST IDX files) runs
on their MNIST protocol instead: see parity_eenet.py for its shims and for how ours replays the images each of
their runs drew. Every variant of ours gets BASE below (f2 reads f1's gradient mean-pooled in blocks of 50).

Ours runs ``banditbench prepare authors-pools`` on DIR (mode ``mcnb-code`` or ``metaban-code`` to match the
loader, cached under ``--data-dir``) and then the registered algorithm, one unit per run (seed index = run).

``--measure regret``: ``--runs`` runs a side (≥ 10 for a verdict); mean ± sd of the final cumulative regret and of
the regret at T/10, the difference of means (ours − theirs) with its 95 % Welch CI, both also in % of their
mean, and Welch's t-test p-value (bandpy: run i of both sides faces the same draws, so the paired CI and
p-value of the run-by-run differences instead). Verdict "parity" when the difference is within ±3 % and its CI
inside ±6 %.

``--jobs N`` runs N pairs (their run and ours) at once, for regret only.

``--measure speed``: ``--runs`` alternating pairs (theirs, ours, theirs, ours…); per side the median rounds/s
"steady" (the round loop only, data loaded) and "cold" (the whole fresh process: imports, data, model set-up),
CPU-seconds per 1000 rounds of the loop, and the ratio ours / theirs. ``--lockstep S`` runs S seeds of ours as one
lockstep group (the ``lockstep`` engine's batched path) and gives its rates per seed-round.

``--variant`` names the configurations of ours to run against the same runs of theirs: ``default`` (the paper's
behaviour), ``code`` (the switches of ours that reproduce their code, CODE below), ``custom`` (the defaults updated
by ``--ours-params``). Results go to the terminal and, with ``--out``, to a JSON file (every run's final regret and
regret at T/10, the summaries, and the mean per-round regret in 10 windows of the horizon).

``--algos bass,dynucb,cmlb`` compares with hcherkaoui/bandpy (its ``LBC``, ``DynUCB`` and ``CMLB`` controllers)
on BASS's synthetic setting instead of the arm pools: REF is a bandpy checkout (commit 0c404b6), ``--reference-deps
DEPS`` a folder with the packages its imports need beyond ours (numba, llvmlite, wget, matrix_factorization; e.g.
``pip install --target DEPS --no-deps numba llvmlite wget matrix_factorization``), put on the path of their runs
only; ``--alpha`` sets both sides' exploration scale (default 1); ``--omega`` and ``--instance-seed`` choose the
instance (``prepare synthetic --centres bass --arm-set fixed``, N = 18, M = 2, K = 10, d = 5, σ = 1). Their
environment is fed our instance, and run i of both sides faces the same agent of every round and the same noisy
rewards (our environment's stream of seed index i); see ``benchmarks/parity_bandpy.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from loop_clock import LoopClock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# our algorithm → (their method name, their loader, our protocol mode)
REFERENCE = {
    "mcnb": ("mcnb", "mcnb", "mcnb-code"),
    "club": ("club", "mcnb", "mcnb-code"),
    "locb": ("locb", "mcnb", "mcnb-code"),
    "sclub": ("sclub", "mcnb", "mcnb-code"),
    "cofiba": ("cofiba", "mcnb", "mcnb-code"),
    "neuucb-one": ("neuucb_one", "mcnb", "mcnb-code"),
    "neuucb-ind": ("neuucb_ind", "mcnb", "mcnb-code"),
    "metaban": ("meta_ban", "metaban", "metaban-code"),
    # hcherkaoui/bandpy (benchmarks/parity_bandpy.py): their controller, our synthetic instance
    "bass": ("LBC", "bandpy", "bass-synthetic"),
    "dynucb": ("DynUCB", "bandpy", "bass-synthetic"),
    "cmlb": ("CMLB", "bandpy", "bass-synthetic"),
    "eenet": ("EENet", "mnist", "classification"),  # banyikun/EE-Net-ICLR-2022; see parity_eenet.py
}
NEURALUCB_TRAINING = {"code_training": True, "lr": 1e-3, "schedule": "code"}
# The switches of ours that reproduce the authors' code (each documented in its algorithm's docstring).
CODE = {
    "mcnb": {
        "meta_every_10th_in_place": True,
        "group_cap": True,
        "code_exploration": True,
        "meta_pooled_training": True,
        "code_threshold": True,
        "code_training": True,
        "share_with_cluster": False,
        "lr": 1e-3,
        "schedule": "code",
    },
    "club": {"reference_ucb": True, "served_pairs_only": True},
    "locb": {"reference_ucb": True},
    "sclub": {"reference_ucb": True},
    "cofiba": {"reference_ucb": True, "reference_threshold": True},
    # their bonus sqrt(λν·Σ g²/U), U = λ + Σ g² (no 1/m) is ours ν'·sqrt(Σ g²/(m λ' + Σ g²)) with λ' = λ/m, ν' = √(λν)
    # and their training loop: single-sample SGD at 1e-3 on the served user's network, tested at 0-based rounds
    "neuucb-one": {"lam": 1e-5, "nu": 0.01, "bias": True, "init": "torch", **NEURALUCB_TRAINING},
    "neuucb-ind": {
        "lam": 1e-2,
        "nu": 0.1,
        "bias": True,
        "init": "torch",
        "train_served_only": True,
        **NEURALUCB_TRAINING,
    },
    # their meta_ban(lr=1e-4): Θ trained every round at 1e-4, u_t's learner at their fixed 1e-3, at 0-based rounds
    "metaban": {
        "group_mode": "last_arm",
        "ucb": "grad_norm",
        "share_data_with_group": True,
        "user_start": "meta",
        "code_training": True,
        "eta2": 1e-4,
        "lr": 1e-3,
        "schedule": "code",
    },
    # bandpy's LBC builds the test ellipsoid with shape βV⁻¹ (radius sqrt(β)), the paper with β²V⁻¹
    # (bandpy_clock: their UCB index runs one round behind ours, log(t + 1) at 0-based round t)
    "bass": {"radius_convention": "bandpy", "bandpy_clock": True},
    # bandpy's DynUCB recomputes a cluster's statistics only when a member joins or leaves it
    "dynucb": {"refresh_on_move": True, "bandpy_clock": True},
    # bandpy's CMLB: α-LinUCB throughout, one clustering after Te = 1000 rounds at γ = 1, warm cluster pools
    "cmlb": {"bandpy_schedule": True, "p_star": 0.1, "bandpy_clock": True},
    # their EE_Net(pool_step_size=50, lr_1=0.01, lr_2=0.001, hidden=100) with torch's layers (biases, init), their
    # f2 network and training loop, tested at 0-based rounds
    "eenet": {
        "code_decision": True,
        "lr": 1e-2,
        "explore_lr": 1e-3,
        "width": 100,
        "bias": True,
        "init": "torch",
        "explore_conv": True,
        "code_training": True,
        "schedule": "code",
    },
}
# Settings of the instance that every variant of ours gets: f2 of EE-Net reads the gradient of f1 block-averaged
# in 50s as their code does (15 685 inputs instead of 784 201, which would give f2 78 M weights).
BASE = {"eenet": {"pool": 50}}
PARITY_MEAN, PARITY_CI = 0.03, 0.06


# ----------------------------------------------------------------------------------------------- their side
def pool_files(pools: Path) -> dict[str, Path]:
    """The pool arrays of DIR under the names the authors' loaders open (both loaders read 'movie' or 'yelp')."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data.authors import find_family

    family, paths = find_family(pools, None)
    entry = paths["entry"].name
    stem = entry[: -len("_entry.npy")]
    names = {"entry": entry, "users": f"{stem}_features.npy", "items": paths["items"].name}
    links = {}
    for alias in ("movie", "yelp"):
        for key, name in names.items():
            links[alias + name[len(family) :]] = paths[key].resolve()
    return links


def run_reference(reference: Path, pools: Path, method: str, loader: str, rounds: int, seed: int) -> dict:
    """One run of the authors' code in this (fresh) process; returns the cumulative regret and timings."""
    start = time.perf_counter()
    import types

    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"
    sys.modules.setdefault("torchvision", types.ModuleType("torchvision"))  # imported by their loader, unused
    sys.modules["torchvision"].datasets = sys.modules["torchvision"].transforms = None

    import sklearn.cluster
    import torch

    torch.set_num_threads(1)
    kmeans = sklearn.cluster.KMeans

    class KMeans024(kmeans):  # scikit-learn 0.24, which the authors pin, ran 10 restarts by default
        def __init__(self, n_clusters=8, **kwargs):
            kwargs.setdefault("n_init", 10)
            super().__init__(n_clusters=n_clusters, **kwargs)

    sklearn.cluster.KMeans = KMeans024
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="parity-") as work:  # their loaders read the pools from here
        for name, target in pool_files(pools).items():
            (Path(work) / name).symlink_to(target)
        os.chdir(work)
        try:
            return their_loop(reference, method, loader, rounds, seed, start)
        finally:
            os.chdir(here)


def their_loop(reference: Path, method: str, loader: str, rounds: int, seed: int, start: float) -> dict:
    """Their run.py's loop, in the folder of their pools."""
    import random

    import torch

    sys.path.insert(0, str(reference))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    data = __import__("load_data")
    if loader == "mcnb":
        env = data.load_movielen_dif_user(100)
    else:
        env = data.load_yelp_new()
    model = make_reference_model(method, env)
    regret = np.zeros(rounds)
    total = 0.0
    clock = LoopClock(start)
    for t in range(rounds):
        if t == rounds // 2:
            clock.half()
        user, contexts, rewards = env.step()
        if method in ("neuucb_one", "neuucb_ind"):
            arm = model.recommend(user, contexts, t)[0]
        elif method == "mcnb":
            arm, group, _ = model.select(user, contexts, t)
        elif method == "meta_ban":
            arm, group, _, _ = model.recommend(user, contexts, t)
        else:
            arm = model.recommend(user, contexts, t)
        reward = rewards[arm]
        total += np.max(rewards) - reward
        regret[t] = total
        x = contexts[arm]
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
    return {"regret": regret.tolist(), **clock.seconds()}


def make_reference_model(method: str, env):
    """The constructor calls of their run.py (M-CNB at cf79294, Meta-Ban at 104f710)."""
    n, d = env.num_user, env.dim
    if method == "club":
        return __import__("club").CLUB(nu=n, d=d)
    if method == "locb":
        return __import__("locb").LOCB(nu=n, d=d, gamma=0.2, num_seeds=20, delta=0.1, detect_cluster=0)
    if method == "sclub":
        return __import__("sclub").SCLUB(nu=n, d=d)
    if method == "cofiba":
        return __import__("cofiba").COFIBA(num_users=n, d=d, num_rounds=10000, L=10)
    if method == "neuucb_ind":
        return __import__("neuucb_ind").neuucb_ind(dim=d, n=n, n_arm=10, lr=0.001)
    if method == "neuucb_one":
        return __import__("neuucb_one").neuucb_one(d, lamdba=0.001, nu=0.1)
    if method == "mcnb":
        return __import__("mcnb").MCNB(dim=d, n=n, n_arm=10, gamma=0.4, lr=0.001, nu=1e-4)
    if method == "meta_ban":
        return __import__("meta_ban").meta_ban(dim=d, n=n, n_arm=10, gamma=0.32, lr=0.0001)
    raise SystemExit(f"no reference method {method!r}")


# ----------------------------------------------------------------------------------------------- our side
def prepare_pools(pools: Path, data_dir: Path, mode: str) -> str:
    sys.path.insert(0, str(ROOT))
    from banditbench.data import authors

    return authors.prepare(data_dir / mode, source=pools, mode=mode).name


def run_ours(
    data_dir: Path,
    name: str,
    algorithm: str,
    params: dict,
    rounds: int,
    seed: int,
    protocol: str = "recommendation",
    members: int = 1,
) -> dict:
    """One unit of ours, or with ``members`` > 1 that many seeds (seed, seed + 1, …) as one lockstep group, whose
    times are then given per seed (the regret is the first seed's)."""
    start = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from banditbench.algos import ALGORITHMS
    from banditbench.data import load_dataset
    from banditbench.runner import Unit
    from banditbench.runner.executors import limit_threads
    from banditbench.runner.unit import run_group

    limit_threads()
    dataset = load_dataset(data_dir, name)
    every = {**ALGORITHMS[algorithm].defaults(), **params}
    units = [Unit(name, protocol, algorithm, every, 0, seed + i, rounds, None) for i in range(members)]
    cpu_start = time.process_time()
    result = run_group(units, dataset)[0]
    cpu = time.process_time() - cpu_start
    end = time.perf_counter()
    regret = np.cumsum(result.outcome.column("regret").to_numpy())
    # a member's select and update seconds are its equal share of the group's
    seconds = result.timing.column("select_seconds").to_numpy() + result.timing.column("update_seconds").to_numpy()
    # the environment's share of the loop, spread evenly, so "steady" covers the same work as theirs
    env_per_round = max(result.wall_seconds / members - seconds.sum(), 0.0) / rounds
    steady = seconds[rounds // 2 :].sum() + env_per_round * (rounds - rounds // 2)
    return {
        "regret": regret.tolist(),
        "members": members,
        "loop_seconds": result.wall_seconds / members,
        "cpu_seconds": cpu / members,
        "steady_seconds": steady,
        "process_seconds": end - start,
    }


# ----------------------------------------------------------------------------------------------- driver
def spawn(args: list[str]) -> dict:
    """Run one side in a fresh process (cold start, own memory) and read its JSON answer."""
    with tempfile.NamedTemporaryFile(suffix=".json") as answer:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, __file__, *args, "--answer", answer.name],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if done.returncode:
            raise SystemExit(f"{' '.join(args[:4])} failed:\n{done.stderr[-3000:]}")
        result = json.loads(Path(answer.name).read_text())
        result["cold_seconds"] = time.perf_counter() - started
        return result


def welch(a: np.ndarray, b: np.ndarray) -> dict:
    from scipy import stats

    diff = a.mean() - b.mean()
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if se > 0 else np.inf
    half = stats.t.ppf(0.975, df) * se if se > 0 else 0.0
    p = stats.ttest_ind(a, b, equal_var=False).pvalue if se > 0 else (1.0 if diff == 0 else 0.0)
    return {"difference": diff, "ci": [diff - half, diff + half], "p": float(p)}


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    """Mean of the run-by-run differences a − b with its 95 % t interval and the paired t-test's p: the instrument
    when run i of both sides faced the same draws (the bandpy comparison), where Welch's would count the shared
    noise twice (ten identical runs a side give Welch an interval of ±17 % around 0)."""
    from scipy import stats

    diff = a - b
    diff[np.abs(diff) <= 1e-9 * np.abs(b).max()] = 0.0  # the same trajectory summed in another order
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    half = stats.t.ppf(0.975, len(diff) - 1) * se if se > 0 else 0.0
    p = stats.ttest_rel(a, b).pvalue if se > 0 else (1.0 if diff.mean() == 0 else 0.0)
    return {"difference": float(diff.mean()), "ci": [diff.mean() - half, diff.mean() + half], "p": float(p)}


def summarise_regret(ours: list[dict], theirs: list[dict], rounds: int, same_draws: bool = False) -> dict:
    """Welch's comparison; with ``same_draws`` (run i of both sides on the same draws) the paired one."""
    at = max(rounds // 10, 1) - 1
    summary = {}
    for label, index in (("final", rounds - 1), ("tenth", at)):
        a = np.array([r["regret"][index] for r in ours])
        b = np.array([r["regret"][index] for r in theirs])
        compare = paired if same_draws and len(a) == len(b) else welch
        test = (
            compare(a, b)
            if len(a) > 1 and len(b) > 1
            else {"difference": a.mean() - b.mean(), "ci": [np.nan] * 2, "p": np.nan}
        )
        scale = b.mean() if b.mean() else 1.0
        summary[label] = {
            "ours": [a.mean(), a.std(ddof=1) if len(a) > 1 else 0.0],
            "theirs": [b.mean(), b.std(ddof=1) if len(b) > 1 else 0.0],
            **test,
            "test": "paired" if compare is paired else "welch",
            "difference_pct": 100 * test["difference"] / scale,
            "ci_pct": [100 * c / scale for c in test["ci"]],
        }
    final = summary["final"]
    summary["verdict"] = (
        "parity"
        if abs(final["difference_pct"]) <= 100 * PARITY_MEAN and max(abs(c) for c in final["ci_pct"]) <= 100 * PARITY_CI
        else "differs"
    )
    return summary


def summarise_speed(ours: list[dict], theirs: list[dict], rounds: int) -> dict:
    def side(runs: list[dict]) -> dict:
        half = rounds - rounds // 2
        return {
            "steady_rounds_per_s": float(np.median([half / r["steady_seconds"] for r in runs])),
            "cold_rounds_per_s": float(np.median([rounds * r.get("members", 1) / r["cold_seconds"] for r in runs])),
            "cpu_s_per_1000": float(np.median([1000 * r["cpu_seconds"] / rounds for r in runs])),
        }

    a, b = side(ours), side(theirs)
    return {
        "ours": a,
        "theirs": b,
        "ratio_steady": a["steady_rounds_per_s"] / b["steady_rounds_per_s"],
        "ratio_cold": a["cold_rounds_per_s"] / b["cold_rounds_per_s"],
        "ratio_cpu": b["cpu_s_per_1000"] / a["cpu_s_per_1000"],
    }


def print_regret(algorithm: str, s: dict, runs: int, rounds: int) -> None:
    for label, at in (("final", rounds), ("T/10", max(rounds // 10, 1))):
        r = s["final" if label == "final" else "tenth"]
        print(
            f"{algorithm:11s} {label:5s} (t={at:>6d}, {runs} runs/side)  ours {r['ours'][0]:8.1f} ± {r['ours'][1]:6.1f}"
            f"  theirs {r['theirs'][0]:8.1f} ± {r['theirs'][1]:6.1f}  diff {r['difference']:+8.1f} "
            f"({r['difference_pct']:+.1f} %, 95 % CI {r['ci_pct'][0]:+.1f} … {r['ci_pct'][1]:+.1f} %)  "
            f"{'paired' if r.get('test') == 'paired' else 'Welch'} p = {r['p']:.3g}"
        )
    print(f"{algorithm:11s} verdict: {s['verdict']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-dir", type=Path, help="local checkout of the authors' repository")
    parser.add_argument("--pools", type=Path, help="folder of the pool arrays [default: --reference-dir]")
    parser.add_argument(
        "--reference-deps", type=Path, help="bandpy only: folder of the packages their code imports and ours lacks"
    )
    parser.add_argument(
        "--omega", type=float, default=float(np.pi / 4), help="bandpy only: the angle ω of the instance"
    )
    parser.add_argument("--instance-seed", type=int, default=0, help="bandpy only: seed of the instance's arms")
    parser.add_argument("--alpha", type=float, default=1.0, help="bandpy only: the exploration scale α of both sides")
    parser.add_argument("--measure", choices=("regret", "speed"), default="regret")
    parser.add_argument("--algos", default="mcnb,neuucb-one,club", help=f"comma list of {', '.join(REFERENCE)}")
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10, help="runs a side (regret) or alternating pairs (speed)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="pairs run at once (regret only: concurrent pairs share the machine, so keep 1 for --measure speed)",
    )
    parser.add_argument(
        "--variant",
        default="default",
        help="comma list of default (the paper's behaviour), code (the switches that reproduce "
        "their code) and custom (defaults + --ours-params); every variant of ours faces the "
        "same runs of theirs",
    )
    parser.add_argument("--ours-params", default="{}", help="JSON hyper-parameters of the custom variant")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "banditbench-parity",
        help="where ours keeps the prepared pools",
    )
    parser.add_argument("--out", type=Path, help="write every run's figures and the summaries as JSON")
    parser.add_argument(
        "--reuse-reference",
        type=Path,
        help="an --out file of an earlier regret run with the same "
        "--rounds: take their runs' figures from it instead of running their code again (runs beyond those it "
        "holds are run)",
    )
    parser.add_argument(
        "--lockstep",
        type=int,
        default=1,
        help="speed only: ours runs this many seeds as one lockstep group, and its rates are per seed-round",
    )
    parser.add_argument("--worker", choices=("ours", "theirs"), help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--answer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--order", type=Path, help=argparse.SUPPRESS)  # the images their EE-Net run drew
    args = parser.parse_args()

    if args.worker:
        algorithm = args.algos
        method, loader, mode = REFERENCE[algorithm]
        if loader == "bandpy":
            parity_bandpy = bandpy_side()
            if args.worker == "theirs":
                result = parity_bandpy.run_bandpy(
                    args.reference_dir.resolve(),
                    args.reference_deps,
                    args.data_dir / mode,
                    algorithm,
                    args.rounds,
                    args.seed,
                    {"alpha": args.alpha},
                )
            else:
                result = run_ours(
                    args.data_dir / mode,
                    "synthetic",
                    algorithm,
                    json.loads(args.params),
                    args.rounds,
                    args.seed,
                    "linear",
                    members=args.lockstep,
                )
        elif algorithm == "eenet":
            import parity_eenet

            if args.worker == "theirs":
                result = parity_eenet.run_reference(
                    args.reference_dir.resolve(), args.pools.resolve(), args.rounds, args.seed
                )
            else:
                with tempfile.TemporaryDirectory(prefix="parity-eenet-") as scratch:
                    order, folder = json.loads(args.order.read_text()), Path(scratch)
                    name = parity_eenet.replay_dataset(args.pools.resolve(), order, folder)
                    params = json.loads(args.params)
                    result = run_ours(
                        folder, name, algorithm, params, args.rounds, args.seed, "classification", members=args.lockstep
                    )
        elif args.worker == "theirs":
            result = run_reference(
                args.reference_dir.resolve(), args.pools.resolve(), method, loader, args.rounds, args.seed
            )
        else:
            result = run_ours(
                args.data_dir / mode,
                f"authors-{pool_family(args.pools)}",
                algorithm,
                json.loads(args.params),
                args.rounds,
                args.seed,
                members=args.lockstep,
            )
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        args.answer.write_text(json.dumps(result))
        return

    if args.reference_dir is None or not args.reference_dir.is_dir():
        parser.error("--reference-dir must be a local checkout of the authors' code")
    pools = (args.pools or args.reference_dir).resolve()
    parity_bandpy = bandpy_side()
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    unknown = [a for a in algos if a not in REFERENCE]
    if args.measure == "speed" and args.jobs != 1:
        parser.error("--measure speed times one pair at a time; drop --jobs")
    if args.lockstep < 1 or (args.lockstep > 1 and args.measure != "speed"):
        parser.error("--lockstep takes a positive number of seeds, and only with --measure speed")
    if unknown or args.rounds < 10 or args.runs < 1 or args.jobs < 1:
        parser.error(f"unknown --algos {unknown} (choose from {', '.join(REFERENCE)}), or --rounds < 10 or --runs < 1")
    for algorithm in algos:
        if REFERENCE[algorithm][1] == "bandpy":
            if not (args.reference_dir / "bandpy" / "controllers").is_dir():
                parser.error(f"{args.reference_dir} is not a bandpy checkout (no bandpy/controllers) for {algorithm}")
        elif not (args.reference_dir / f"{REFERENCE[algorithm][0]}.py").is_file():
            parser.error(f"{args.reference_dir} has no {REFERENCE[algorithm][0]}.py for {algorithm}")
    report = {
        "rounds": args.rounds,
        "runs": args.runs,
        "variant": args.variant,
        "reference": str(args.reference_dir),
        "pools": str(pools),
        "algorithms": {},
    }
    variants = [v.strip() for v in args.variant.split(",") if v.strip()]
    if not variants or any(v not in ("default", "code", "custom") for v in variants):
        parser.error("--variant takes a comma list of default, code, custom")
    for algorithm in algos:
        mode = REFERENCE[algorithm][2]
        setting = BASE.get(algorithm, {})
        if REFERENCE[algorithm][1] == "bandpy":
            parity_bandpy.prepare_instance(args.data_dir / mode, args.omega, args.instance_seed)
            setting = parity_bandpy.our_settings(algorithm, args.alpha)
        elif algorithm != "eenet":  # EE-Net's instance is the images their run drew, replayed per run
            prepare_pools(pools, args.data_dir, mode)
        params = {
            "default": setting,
            "code": {**setting, **CODE.get(algorithm, {})},
            "custom": {**setting, **json.loads(args.ours_params)},
        }
        common = [
            "--reference-dir",
            str(args.reference_dir.resolve()),
            "--pools",
            str(pools),
            "--algos",
            algorithm,
            "--rounds",
            str(args.rounds),
            "--data-dir",
            str(args.data_dir),
        ]
        if args.reference_deps:
            common += ["--reference-deps", str(args.reference_deps.resolve())]
        if REFERENCE[algorithm][1] == "bandpy":
            common += ["--alpha", str(args.alpha)]
        earlier = reused_runs(args.reuse_reference, algorithm, args.rounds) if args.reuse_reference else []

        def pair(run: int) -> tuple[dict, dict]:  # their run, then each variant of ours on the same instance
            mine = earlier[run] if run < len(earlier) else spawn(["--worker", "theirs", "--seed", str(run), *common])
            line = f"{algorithm} run {run}: theirs {mine['regret'][-1]:.0f} ({mine['loop_seconds']:.1f} s)"
            with tempfile.NamedTemporaryFile("w", prefix="parity-order-", suffix=".json") as order:
                json.dump(mine.get("order", []), order)
                order.flush()
                answers = {
                    v: spawn(
                        ["--worker", "ours", "--seed", str(run), *common, "--params", json.dumps(params[v])]
                        + ["--lockstep", str(args.lockstep)]
                        + (["--order", order.name] if algorithm == "eenet" else [])
                    )
                    for v in variants
                }
            for v in variants:
                line += f"  ours[{v}] {answers[v]['regret'][-1]:.0f} ({answers[v]['loop_seconds']:.1f} s)"
            print(line, flush=True)
            return mine, answers

        with ThreadPoolExecutor(args.jobs) as pool:  # alternating: theirs, ours, theirs, ours… (per job)
            pairs = list(pool.map(pair, range(args.runs)))
        theirs = [mine for mine, _ in pairs]
        ours = {v: [answers[v] for _, answers in pairs] for v in variants}
        tenth = max(args.rounds // 10, 1) - 1
        entry = {
            "theirs_final": [r["regret"][-1] for r in theirs],
            "theirs_tenth": [r["regret"][tenth] for r in theirs],
            "theirs_seconds": [r["loop_seconds"] for r in theirs],
            "variants": {},
            **({"theirs_orders": [r["order"] for r in theirs]} if algorithm == "eenet" else {}),
        }
        for v in variants:
            item = {
                "params": params[v],
                "ours_final": [r["regret"][-1] for r in ours[v]],
                "ours_tenth": [r["regret"][tenth] for r in ours[v]],
                "ours_seconds": [r["loop_seconds"] for r in ours[v]],
                # per-round regret of ours and theirs averaged over runs, in 10 windows (the curves' shape)
                "ours_windows": window_means(ours[v], args.rounds),
                "theirs_windows": window_means(theirs, args.rounds),
            }
            label = f"{algorithm}[{v}]"
            if args.measure == "regret":
                same_draws = REFERENCE[algorithm][1] == "bandpy" and not args.reuse_reference
                item["summary"] = summarise_regret(ours[v], theirs, args.rounds, same_draws)
                print_regret(label, item["summary"], args.runs, args.rounds)
            else:
                item["summary"] = s = summarise_speed(ours[v], theirs, args.rounds)
                for side in ("ours", "theirs"):
                    print(
                        f"{label:11s} {side:6s} steady {s[side]['steady_rounds_per_s']:9.1f} r/s  cold "
                        f"{s[side]['cold_rounds_per_s']:9.1f} r/s  CPU {s[side]['cpu_s_per_1000']:8.3f} s/1000 rounds"
                    )
                print(
                    f"{label:11s} ours / theirs: steady ×{s['ratio_steady']:.1f}, cold ×{s['ratio_cold']:.1f}, "
                    f"CPU ×{s['ratio_cpu']:.1f}"
                )
            entry["variants"][v] = item
        report["algorithms"][algorithm] = entry
        if args.out:
            args.out.write_text(json.dumps(report, indent=1, default=float))


def reused_runs(path: Path, algorithm: str, rounds: int) -> list[dict]:
    """Their runs as an earlier --out file recorded them: final regret, regret at T/10 and the window means."""
    earlier = json.loads(path.read_text())
    entry = earlier["algorithms"].get(algorithm)
    if entry is None or earlier["rounds"] != rounds:
        raise SystemExit(f"{path} has no {algorithm} runs of {rounds} rounds")
    windows = next(iter(entry["variants"].values()))["theirs_windows"]
    runs = []
    orders = entry.get("theirs_orders", [[]] * len(entry["theirs_final"]))  # EE-Net: the images each run drew
    for final, tenth, seconds, order in zip(
        entry["theirs_final"], entry["theirs_tenth"], entry["theirs_seconds"], orders
    ):
        regret = np.full(rounds, np.nan)  # only the figures the summaries read, and the windows' cumulative sums
        edges = np.linspace(0, rounds, 11).astype(int)
        regret[edges[1:] - 1] = np.cumsum(np.array(windows) * np.diff(edges))
        regret[max(rounds // 10, 1) - 1], regret[-1] = tenth, final
        runs.append({"regret": regret.tolist(), "loop_seconds": seconds, "order": order})
    return runs


def window_means(runs: list[dict], rounds: int) -> list[float]:
    """Mean per-round regret in 10 equal windows of the horizon, averaged over runs."""
    edges = np.linspace(0, rounds, 11).astype(int)
    cumulative = np.array([[0.0, *r["regret"]] for r in runs]).mean(0)
    return [float((cumulative[b] - cumulative[a]) / max(b - a, 1)) for a, b in zip(edges[:-1], edges[1:])]


def bandpy_side():
    """benchmarks/parity_bandpy.py: the instance, their controllers' runner and the settings of both sides."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import parity_bandpy

    return parity_bandpy


def pool_family(pools: Path) -> str:
    sys.path.insert(0, str(ROOT))
    from banditbench.data.authors import find_family

    return find_family(pools.resolve(), None)[0]


if __name__ == "__main__":
    main()
