"""Parity with the authors' code: their published implementation and ours on the same instance and draws, with
negative controls that show the instance can tell implementations apart.

    .venv/bin/python benchmarks/parity.py --reference-dir REF --pools DIR --algos club --rounds 3000 --runs 10 \\
        [--set alpha2=2] [--variant code,default] [--margin 0.05] [--out FILE.json]
    .venv/bin/python benchmarks/parity.py --reference-dir REF ... --measure speed [--runs 3] [--lockstep S]
    .venv/bin/python benchmarks/parity.py --table FILE.json ... [--write-docs | --check-docs docs/parity.md]

Four families of the authors' code, each with its own instance:

- the Ban-family repository (``parity_ban.py``; REF = banyikun/MCNB at cf79294 for CLUB, SCLUB, LOCB, COFIBA,
  NeuUCB-ONE, NeuUCB-IND, M-CNB, or at 104f710 for Meta-Ban) on arm pools in their format (DIR: the authors' own,
  or a clustered instance written by ``parity_pools.py``); ``--groups`` is the number of K-means groups their M-CNB
  loader forms (their run.py: 100); Meta-Ban's loader fixes 50;
- bandpy (``parity_bandpy.py``; REF = hcherkaoui/bandpy at 0c404b6, ``--reference-deps`` the packages it needs
  beyond ours) for BASS, DynUCB and CMLB, on a synthetic instance built by their generator from ``--instance
  users=18,clusters=2,arms=10,dim=5,noise=1,omega=0.785,seed=0`` or read from a prepared ``synthetic`` dataset
  (``--instance-dir``, never overwritten);
- EE-Net (``parity_eenet.py``; REF = banyikun/EE-Net-ICLR-2022 at 08d6ed7) on their MNIST protocol (DIR: the MNIST
  IDX files);
- the Deep Bayesian Bandits Showdown (``parity_showdown.py``; REF = the deep_contextual_bandits directory, e.g.
  mlisicki/deep_contextual_bandits at cdb5bd1) for BLR (their LinFullPost) and Uniform, on ``--problem wheel``,
  ``statlog`` or ``mushroom`` as their samplers draw them (DIR: the folder of UCI's shuttle.trn for statlog, of
  agaricus-lepiota.data for mushroom).

**Same draws.** Run i of theirs is a fresh process seeded with i. It records what it drew; ours replays exactly
that: the Ban family's rounds (served user, ten contexts, rewards), bandpy's agents and noisy rewards (our
environment's stream, which their environment is fed), EE-Net's image order, the Showdown's sampled rows. Every
variant and control of ours then faces the draws of run i of theirs, so differences are paired run by run, and the
share of rounds in which ours chose the arm theirs chose (``agreement``) is reported: 100 % is the strongest
evidence there is.

**Settings on both sides.** ``--set NAME=VALUE`` (repeatable; NAME one of our hyper-parameters) goes to every variant
of ours and to their code wherever their code keeps it (a constructor argument, an attribute, a constant in one of
their methods: the families' KNOBS); a setting their code does not have is refused with one line, as is a horizon
beyond a limit of their code. ``--ours-params JSON`` changes ours only, in every variant. Variants of ours
(``--variant``): ``code``, our named switches that reproduce their code (CODE below), and ``default``, the
paper's behaviour.

**The verdict** (``parity_verdict.py``): ours − theirs in final cumulative regret, with its 90 % interval, against
the declared margin ``--margin`` (a share of their mean, default 5 %): **parity** when ours is equivalent (TOST)
*and* every control is shown beyond the margin; **not discriminating** when ours is equivalent but some control is
not; **differs** when ours is shown beyond the margin; **inconclusive** otherwise. The controls (CONTROLS below)
are learners that should not match theirs: for the clustering algorithms the same index without clustering (one
pool, or every user alone), for the neural learners the learner untrained and without exploration, for M-CNB and
Meta-Ban NeuUCB-ONE and NeuUCB-IND (one network, or one per user), for BLR uniform play, one model for every action
and a wrong prior. Where both sides cluster users, the final number of clusters and the pair F1 against the
instance's clusters are reported beside.

``--measure speed``: ``--runs`` alternating pairs (theirs, ours, …); per side the median rounds/s of the round loop's
second half ("steady", data loaded), of the whole fresh process ("cold"), CPU-seconds per 1000 rounds, and the
ratios. By default ours runs the ``code`` variant, their loops: the same work; ``--variant default`` times the
paper's algorithm, different work, and the table says so. ``--lockstep S`` runs S seeds of ours as one lockstep
group, rates per seed-round.

``--table FILE…`` prints the parity table from ``--out`` files; ``--write-docs PAGE`` puts it between the markers
``<!-- parity-table -->`` and ``<!-- /parity-table -->`` of PAGE, ``--check-docs PAGE`` fails unless PAGE holds it.
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import parity_table  # noqa: E402
import parity_verdict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

FAMILY = {
    **dict.fromkeys(("club", "locb", "sclub", "cofiba", "neuucb-one", "neuucb-ind", "mcnb", "metaban"), "ban"),
    **dict.fromkeys(("bass", "dynucb", "cmlb"), "bandpy"),
    "eenet": "eenet",
    **dict.fromkeys(("blr-one", "random"), "showdown"),
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
    "sclub": {"reference_ucb": True, "reset_checks": False},
    # Ban's copy: their UCB term and threshold, pull counts never incremented, an item graph over the K positions
    "cofiba": {"reference_ucb": True, "reference_threshold": True, "frozen_counts": True, "item_nodes": "slots"},
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
    # their LinFullPost's ContextualDataset(intercept=True): a constant 1 appended to every context (BLR's default)
    "blr-one": {"intercept": True},
}
# Settings of the instance that every variant and control of ours gets: f2 of EE-Net reads the gradient of f1
# block-averaged in 50s as their code does (15 685 inputs instead of 784 201, which would give f2 78 M weights).
BASE = {"eenet": {"pool": 50}}


@dataclass(frozen=True)
class Control:
    """A learner of ours that should not match theirs: ``algorithm`` with ``params`` on top of its code switches;
    ``inherits``: it also takes the run's settings (the same algorithm, or the same meaning of the names)."""

    label: str
    algorithm: str
    params: dict = field(default_factory=dict)
    inherits: bool = True


# CLUB, SCLUB and LOCB share their code's UCB index: the controls are that index with no clustering, one pool for
# every user (α₂ so large that no edge is ever cut) or every user alone (α₂ = 0 cuts every edge tested).
POOLED = Control("pooled LinUCB", "club", {"alpha2": 1e9}, inherits=False)
ALONE = Control("independent LinUCB", "club", {"alpha2": 0.0, "served_pairs_only": False}, inherits=False)
UNTRAINED, GREEDY = {"lr": 1e-7}, {"nu": 0.0}
ONE_NETWORK = Control("NeuUCB-ONE", "neuucb-one", inherits=False)
NETWORK_EACH = Control("NeuUCB-IND", "neuucb-ind", inherits=False)
CONTROLS = {
    "club": (POOLED, ALONE),
    "sclub": (POOLED, ALONE),
    "locb": (POOLED, ALONE),
    # COFIBA's own index and threshold with every edge kept (one pool) or cut (every user alone)
    "cofiba": (
        Control("pooled LinUCB", "cofiba", {"alpha2": 1e9}),
        Control("independent LinUCB", "cofiba", {"alpha2": 0.0}),
    ),
    "neuucb-one": (Control("untrained", "neuucb-one", UNTRAINED), Control("no exploration", "neuucb-one", GREEDY)),
    "neuucb-ind": (Control("untrained", "neuucb-ind", UNTRAINED), Control("no exploration", "neuucb-ind", GREEDY)),
    "mcnb": (ONE_NETWORK, NETWORK_EACH),
    "metaban": (ONE_NETWORK, NETWORK_EACH),
    # EE-Net: both networks untrained; f2, its exploration, untrained (their f1 + 0.1·(f2 − 1) is then f1 shifted)
    "eenet": (
        Control("untrained", "eenet", {"lr": 1e-7, "explore_lr": 1e-7}),
        Control("no exploration", "eenet", {"explore_lr": 1e-7}),
    ),
    # bandpy: the same α-LinUCB with no sharing, and one pool for all agents
    "bass": (Control("LinUCB-Ind", "linucb-ind"), Control("pooled LinUCB", "linucb-one")),
    "dynucb": (Control("LinUCB-Ind", "linucb-ind"), Control("pooled LinUCB", "linucb-one")),
    "cmlb": (Control("LinUCB-Ind", "linucb-ind"), Control("pooled LinUCB", "linucb-one")),
    # the Showdown: uniform play; BLR with one model (and one noise variance) for every action; a prior 100 times
    # as tight on the weights (λ = 25 instead of 0.25)
    "blr-one": (
        Control("uniform", "random", inherits=False),
        Control("one model", "blr-one", {"per_action": False}),
        Control("wrong prior", "blr-one", {"ridge": 25.0}, inherits=False),
        Control("no intercept", "blr-one", {"intercept": False}),
    ),
    "random": (Control("BLR", "blr-one", inherits=False),),
}


# ----------------------------------------------------------------------------------------------- settings
def defaults(algorithm: str) -> dict:
    sys.path.insert(0, str(ROOT))
    from banditbench.algos import ALGORITHMS

    return ALGORITHMS[algorithm].defaults()


def instance_settings(algorithm: str, instance: dict) -> dict:
    """What every run of ours gets on this instance (bandpy: the setting both sides share)."""
    if FAMILY[algorithm] == "bandpy":
        return bandpy_side().our_settings(algorithm, instance)
    return BASE.get(algorithm, {})


def variant_params(algorithm: str, variant: str, instance: dict, settings: dict, ours_params: dict) -> dict:
    """Our hyper-parameters of one variant: the instance's, the code switches (``code``), the settings, ours."""
    switches = CODE.get(algorithm, {}) if variant == "code" else {}
    return {**instance_settings(algorithm, instance), **switches, **settings, **ours_params}


def control_params(algorithm: str, control: Control, instance: dict, settings: dict) -> dict:
    """A control's hyper-parameters: its code switches, the settings it inherits, then its own."""
    inherited = {}
    if control.inherits:
        inherited = {k: v for k, v in settings.items() if k in defaults(control.algorithm)}
    if FAMILY[algorithm] == "bandpy":  # bandpy's α is the controls' α-LinUCB scale
        ours = {**instance_settings(algorithm, instance), **settings}
        alpha = ours[bandpy_side().OUR_ALPHA[algorithm]]
        return {"alpha": alpha, "ridge": ours["ridge"]}
    base = (
        instance_settings(control.algorithm, instance)
        if control.algorithm == algorithm
        else BASE.get(control.algorithm, {})
    )
    return {**base, **CODE.get(control.algorithm, {}), **inherited, **control.params}


def parse_settings(pairs: list[str]) -> dict:
    settings = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--set takes NAME=VALUE, got {pair!r}")
        try:
            settings[name] = json.loads(text)
        except json.JSONDecodeError:
            settings[name] = text
    return settings


def check_settings(algorithm: str, settings: dict, rounds: int, groups: int | None, problem: str = "wheel") -> None:
    """Refuse with one line what cannot run on both sides: a setting ours lacks or theirs cannot take, a horizon
    beyond their code's limits, a group count their loader fixes."""
    unknown = [name for name in settings if name not in defaults(algorithm)]
    if unknown:
        raise SystemExit(f"{algorithm} has no hyper-parameter {', '.join(unknown)}")
    family = FAMILY[algorithm]
    if family == "ban":
        parity_ban().check_settings(algorithm, settings, rounds)
        if algorithm == "metaban" and groups not in (None, parity_ban().METABAN_GROUPS):
            raise SystemExit(
                f"--groups {groups}: their Meta-Ban loader always forms {parity_ban().METABAN_GROUPS} groups"
            )
    elif family == "bandpy":
        bandpy_side().check_settings(algorithm, settings)
    elif family == "showdown":
        showdown_side().check_settings(algorithm, settings, rounds, problem)
    else:
        eenet_side().check_settings(settings)


# ----------------------------------------------------------------------------------------------- our side
def replay(algorithm: str, params: dict, rounds: dict, seed: int, truth=None) -> dict:
    """One run of ours on recorded draws: ``rounds`` holds users [T], arms [T, K, d] (or [K, d] for every round),
    rewards and expected rewards [T, K], and ``block`` when the arms are block-encoded. The policy's seed is the one
    the runner gives seed index ``seed``."""
    sys.path.insert(0, str(ROOT))
    from banditbench.algos import ALGORITHMS
    from banditbench.envs import Budget
    from banditbench.envs.round import Round
    from banditbench.runner.executors import limit_threads
    from banditbench.runner.seeds import unit_streams
    from banditbench.runner.unit import group_of_one

    limit_threads()
    users, arms, rewards, expected = (rounds[key] for key in ("users", "arms", "rewards", "expected"))
    T, K = rewards.shape
    policy = ALGORITHMS[algorithm].build(
        n_users=int(rounds["n_users"]),
        n_arms=K,
        dim=arms.shape[-1],
        seed=unit_streams(0, seed)[1],
        params={**ALGORITHMS[algorithm].defaults(), **params},
    )
    group = group_of_one(policy)
    chosen = np.zeros(T, np.int64)
    start = time.perf_counter()
    for t in range(T):
        budget = Budget()
        shown = arms[t] if arms.ndim == 3 else arms
        view = Round(t, int(users[t]), shown, rewards[t], expected[t], block=rounds.get("block")).view(budget)
        chosen[t] = group.select([view], [budget])[0]
        budget.close()
        group.update([view], [int(chosen[t])], [float(rewards[t, chosen[t]])])
    seconds = time.perf_counter() - start
    regret = np.cumsum(expected.max(1) - expected[np.arange(T), chosen])
    return {
        "regret": regret.tolist(),
        "chosen": chosen.tolist(),
        "loop_seconds": seconds,
        **our_clusters(policy, group, truth),
    }


def our_clusters(policy, group, truth) -> dict:
    """Our final clusters (``group``'s only member's), scored as theirs are: the count and the pair F1 on the sharing
    graph, else the labels."""
    labels = group.clusters(0)
    if labels is None or type(policy).__name__ not in ("CLUB", "SCLUB", "BASS", "DynUCB", "CMLB"):
        return {}
    found = {"clusters": len(np.unique(labels))}
    if truth is not None and len(truth):
        graph = group.sharing_graph(0)
        found["f1"] = parity_verdict.pair_f1(labels if graph is None else np.asarray(graph), truth)
    return found


def run_ours(data_dir: Path, name: str, algorithm: str, params: dict, rounds: int, seed: int, protocol: str, members=1):
    """One unit of ours through the runner (the speed measure and EE-Net's replayed MNIST), or with ``members`` > 1
    that many seeds (seed, seed + 1, …) as one lockstep group, whose times are then given per seed (the regret is
    the first seed's)."""
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
        "chosen": result.outcome.column("chosen").to_numpy().tolist(),
        "members": members,
        "loop_seconds": result.wall_seconds / members,
        "cpu_seconds": cpu / members,
        "steady_seconds": steady,
        "process_seconds": end - start,
    }


# ----------------------------------------------------------------------------------------------- workers
def their_worker(job: dict) -> dict:
    """One run of their code, in this fresh process."""
    algorithm, family, seed = job["algorithm"], FAMILY[job["algorithm"]], job["seed"]
    reference, pools = Path(job["reference"]), Path(job["pools"]) if job["pools"] else None
    if family == "ban":
        return parity_ban().run(
            reference,
            pools,
            algorithm,
            job["rounds"],
            seed,
            job["groups"],
            job["ours"],
            job["settings"],
            Path(job["record"]),
        )
    if family == "bandpy":
        deps = Path(job["deps"]) if job["deps"] else None
        return bandpy_side().run_bandpy(
            reference, deps, Path(job["data_dir"]), algorithm, job["rounds"], seed, job["ours"]
        )
    if family == "showdown":
        return showdown_side().run_reference(
            reference, pools, algorithm, job["problem"], job["rounds"], seed, job["ours"], Path(job["record"])
        )
    return eenet_side().run_reference(reference, pools, job["rounds"], seed, job["ours"], job["settings"])


def our_worker(job: dict) -> dict:
    """Every variant and control of ours on the draws of one run of theirs, in this fresh process: label → result."""
    family, seed = FAMILY[job["algorithm"]], job["seed"]
    answers = {}
    if family == "eenet":
        with tempfile.TemporaryDirectory(prefix="parity-eenet-") as folder:
            name = eenet_side().replay_dataset(Path(job["pools"]), job["order"], Path(folder))
            for label, (learner, params) in job["learners"].items():
                answers[label] = run_ours(Path(folder), name, learner, params, job["rounds"], seed, "classification")
        return {"learners": answers}
    if family == "showdown":
        record = dict(np.load(job["record"]))
        for label, (learner, params) in job["learners"].items():
            rounds, own = showdown_side().shown(record, params)
            answers[label] = replay(learner, own, rounds, seed)
            answers[label]["agreement"] = agreement(rounds["arms"], answers[label]["chosen"], job["their_chosen"])
        return {"learners": answers}
    rounds, truth = recorded_rounds(job)
    for label, (learner, params) in job["learners"].items():
        answers[label] = replay(learner, params, rounds, seed, truth)
        answers[label]["agreement"] = agreement(rounds["arms"], answers[label]["chosen"], job["their_chosen"])
    return {"learners": answers}


def agreement(arms: np.ndarray, ours: list[int], theirs: list[int]) -> float:
    """The share of rounds in which ours played the arm theirs played, or one with the same context (the Ban pools
    draw entries with replacement, so two arms of a round can be the same entry: a tie either side may break)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if arms.ndim == 2:
        return float(np.mean(ours == theirs))
    rows = np.arange(len(ours))
    return float(np.mean((arms[rows, ours] == arms[rows, theirs]).all(axis=1)))


def recorded_rounds(job: dict) -> tuple[dict, np.ndarray | None]:
    """The draws of run ``seed`` of theirs as arrays, and the true cluster of every user (None when unknown)."""
    if FAMILY[job["algorithm"]] == "ban":
        record = np.load(job["record"])
        rewards = record["rewards"]
        rounds = {"users": record["users"], "arms": record["contexts"], "rewards": rewards, "expected": rewards}
        truth = record["truth"] if len(record["truth"]) else None
        rounds["n_users"] = job["n_users"]
        return rounds, truth
    side = bandpy_side()
    data_dir = Path(job["data_dir"])
    instance = side.instance_arrays(data_dir)
    users, rewards, expected = side.draws(data_dir, job["seed"], job["rounds"])
    rounds = {"users": users, "arms": instance["arms"], "rewards": rewards, "expected": expected}
    rounds["n_users"] = len(instance["labels"])
    return rounds, instance["labels"]


def speed_worker(job: dict) -> dict:
    """One timed run of ours through the runner, on the prepared instance."""
    family = FAMILY[job["algorithm"]]
    ((learner, params),) = job["learners"].values()
    if family == "eenet":
        with tempfile.TemporaryDirectory(prefix="parity-eenet-") as folder:
            name = eenet_side().replay_dataset(Path(job["pools"]), job["order"], Path(folder))
            return run_ours(
                Path(folder), name, learner, params, job["rounds"], job["seed"], "classification", job["lockstep"]
            )
    protocol = "linear" if family == "bandpy" else "recommendation"
    name = "synthetic" if family == "bandpy" else job["dataset"]
    return run_ours(Path(job["data_dir"]), name, learner, params, job["rounds"], job["seed"], protocol, job["lockstep"])


def spawn(side: str, job: dict) -> dict:
    """Run one side in a fresh process (cold start, own memory) and read its JSON answer."""
    with tempfile.TemporaryDirectory(prefix="parity-job-") as folder:
        (Path(folder) / "job.json").write_text(json.dumps(job))
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, __file__, "--worker", side, "--job", str(Path(folder) / "job.json")],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},  # nothing into their checkout
        )
        if done.returncode:
            last = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
            if done.returncode == 1 and last[0] and not last[0].startswith("Traceback"):
                raise SystemExit(last[0])  # a refusal of the worker: its one line
            raise SystemExit(f"{side} run {job['seed']} of {job['algorithm']} failed:\n{done.stderr[-3000:]}")
        result = json.loads((Path(folder) / "answer.json").read_text())
    result["cold_seconds"] = time.perf_counter() - started
    return result


def worker_main(side: str, job_file: Path) -> None:
    job = json.loads(job_file.read_text())
    if side == "theirs":
        result = their_worker(job)
    elif side == "ours":
        result = our_worker(job)
    else:
        result = speed_worker(job)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (job_file.parent / "answer.json").write_text(json.dumps(result))


def parity_ban():
    import parity_ban

    return parity_ban


def eenet_side():
    import parity_eenet

    return parity_eenet


def showdown_side():
    import parity_showdown

    return parity_showdown


def bandpy_side():
    """benchmarks/parity_bandpy.py: the instance, their controllers' runner and the settings of both sides."""
    import parity_bandpy

    return parity_bandpy


# ----------------------------------------------------------------------------------------------- driver
def learners(algorithm: str, variants: list[str], instance: dict, settings: dict, ours_params: dict) -> dict:
    """label → (algorithm, parameters) of every variant of ours and every control."""
    every = {v: (algorithm, variant_params(algorithm, v, instance, settings, ours_params)) for v in variants}
    for control in CONTROLS[algorithm]:
        every[f"control: {control.label}"] = (control.algorithm, control_params(algorithm, control, instance, settings))
    return every


def regret_entry(algorithm: str, args, job: dict, instance: dict, settings: dict, ours_params: dict) -> dict:
    """Run ``--runs`` runs of theirs, each followed by ours on its draws; their figures, ours and the verdicts."""
    variants = [v.strip() for v in args.variant.split(",") if v.strip()]
    every = learners(algorithm, variants, instance, settings, ours_params)

    def pair(run: int) -> tuple[dict, dict]:
        with tempfile.TemporaryDirectory(prefix="parity-record-") as folder:
            mine_job = {**job, "seed": run, "record": str(Path(folder) / "record.npz")}
            theirs = spawn("theirs", mine_job)
            ours_job = {**mine_job, "learners": every, "order": theirs.get("order"), "their_chosen": theirs["chosen"]}
            ours = spawn("ours", ours_job)["learners"]
        line = f"{algorithm} run {run}: theirs {theirs['regret'][-1]:.0f} ({theirs['loop_seconds']:.1f} s)"
        for label, answer in ours.items():
            line += f"  {label} {answer['regret'][-1]:.0f}"
        print(line, flush=True)
        return theirs, ours

    with ThreadPoolExecutor(args.jobs) as pool:
        pairs = list(pool.map(pair, range(args.runs)))
    theirs = [mine for mine, _ in pairs]
    entry = {
        "algorithm": algorithm,
        "instance": describe_instance(algorithm, args, instance),
        "rounds": args.rounds,
        "runs": args.runs,
        "margin": args.margin,
        "same_draws": True,
        "settings": settings,
        "ours_params": ours_params,
        "theirs": figures(theirs, args.rounds),
        "variants": {},
        "controls": {},
    }
    theirs_final = entry["theirs"]["final"]
    for label, (learner, params) in every.items():
        runs = [answers[label] for _, answers in pairs]
        item = {"algorithm": learner, "params": params, **figures(runs, args.rounds)}
        item["agreement"] = [
            r["agreement"] if "agreement" in r else float(np.mean(np.array(r["chosen"]) == np.array(mine["chosen"])))
            for r, mine in zip(runs, theirs)
        ]
        item["compare"] = parity_verdict.compare(item["final"], theirs_final, args.margin, paired=True)
        if label.startswith("control: "):
            entry["controls"][label[len("control: ") :]] = item
        else:
            entry["variants"][label] = item
    for item in entry["variants"].values():
        controls = {name: c["compare"] for name, c in entry["controls"].items()}
        item["verdict"], item["reason"] = parity_verdict.verdict(item["compare"], controls)
    return entry


def figures(runs: list[dict], rounds: int) -> dict:
    """Per run: the final regret and the final clusters (what the verdict and the table read); over the runs: the
    mean per-round regret in 10 windows of the horizon (where in the run two sides part)."""
    edges = np.linspace(0, rounds, 11).astype(int)
    cumulative = np.array([[0.0, *r["regret"]] for r in runs]).mean(0)
    found = {
        "final": [r["regret"][-1] for r in runs],
        "windows": [
            round(float((cumulative[b] - cumulative[a]) / max(b - a, 1)), 4) for a, b in zip(edges[:-1], edges[1:])
        ],
    }
    for key in ("clusters", "f1"):
        if all(key in r for r in runs):
            found[key] = [r[key] for r in runs]
    return found


def describe_instance(algorithm: str, args, instance: dict) -> str:
    family = FAMILY[algorithm]
    if family == "bandpy":
        if args.instance_dir:
            return f"prepared synthetic dataset {args.instance_dir}"
        return "bandpy generator " + ", ".join(f"{k} = {v:g}" for k, v in instance.items())
    if family == "eenet":
        return "MNIST, their images replayed"
    if family == "showdown":
        return showdown_side().describe(args.problem, args.pools)
    spec = args.pools / "instance.json"
    pools = json.loads(spec.read_text()) if spec.is_file() else {"pools": args.pools.name}
    text = ", ".join(f"{k} = {v}" for k, v in pools.items())
    groups = args.groups or parity_ban().RUN_PY_GROUPS
    return text + (f", their loader's groups = {groups}" if algorithm != "metaban" else "")


def speed_entry(algorithm: str, args, job: dict, instance: dict, settings: dict, ours_params: dict) -> dict:
    """``--runs`` alternating pairs, one at a time: their run, then one timed run of ours."""
    variant = args.variant if args.variant_given else "code"
    if "," in variant:
        raise SystemExit("--measure speed times one variant of ours: --variant code or --variant default")
    learner = {variant: (algorithm, variant_params(algorithm, variant, instance, settings, ours_params))}
    theirs, ours = [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="parity-record-") as folder:
            mine = spawn("theirs", {**job, "seed": run, "record": str(Path(folder) / "record.npz")})
        theirs.append(mine)
        ours.append(
            spawn(
                "speed",
                {**job, "seed": run, "learners": learner, "order": mine.get("order"), "lockstep": args.lockstep},
            )
        )
    return {
        "algorithm": algorithm,
        "rounds": args.rounds,
        "runs": args.runs,
        "variant": variant,
        "work": "the same work (their loops)" if variant == "code" else "different work (the paper's algorithm)",
        "lockstep": args.lockstep,
        **summarise_speed(ours, theirs, args.rounds),
    }


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


def prepare_instance(algorithm: str, args, folder: Path) -> tuple[dict, dict]:
    """(the job fields every run of ``algorithm`` shares, the instance's description): builds what ours needs in
    ``folder`` (a fresh temporary folder: nothing prepared elsewhere is overwritten)."""
    family = FAMILY[algorithm]
    job = {
        "algorithm": algorithm,
        "reference": str(args.reference_dir.resolve()),
        "pools": str(args.pools.resolve()) if args.pools else None,
        "rounds": args.rounds,
        "deps": str(args.reference_deps.resolve()) if args.reference_deps else None,
    }
    if family == "bandpy":
        if args.instance_dir:
            data_dir = args.instance_dir.resolve()
            instance = dict(bandpy_side().INSTANCE)
            instance.update({k: v for k, v in instance_of_dataset(data_dir).items()})
        else:
            instance = {**bandpy_side().INSTANCE, **args.instance}
            data_dir = folder / "instance"
            bandpy_side().prepare_instance(data_dir, instance)
        return {**job, "data_dir": str(data_dir)}, instance
    if family == "eenet":
        return job, {}
    if family == "showdown":
        return {**job, "problem": args.problem}, {}
    groups = parity_ban().METABAN_GROUPS if algorithm == "metaban" else args.groups or parity_ban().RUN_PY_GROUPS
    job.update(groups=groups, n_users=groups)  # their models' users are the loader's groups
    if args.measure == "speed":
        sys.path.insert(0, str(ROOT))
        from banditbench.data import authors

        mode = "metaban-code" if algorithm == "metaban" else "mcnb-code"
        prepared = authors.prepare(folder / mode, source=args.pools, mode=mode, groups=groups)
        job.update(data_dir=str(folder / mode), dataset=prepared.name)
    return job, {}


def instance_of_dataset(data_dir: Path) -> dict:
    """The instance settings a prepared ``synthetic`` dataset records (read only)."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data import load_dataset

    parameters = load_dataset(data_dir, "synthetic").parameters
    return {k: parameters[k] for k in ("users", "clusters", "dim", "arms", "noise", "omega", "seed") if k in parameters}


def settings_for_theirs(algorithm: str, settings: dict, instance: dict) -> dict:
    """Our resolved code-variant parameters, from which their settings are derived."""
    return {**defaults(algorithm), **variant_params(algorithm, "code", instance, settings, {})}


def parse_instance(text: str | None) -> dict:
    instance = {}
    for pair in (text or "").split(","):
        if pair.strip():
            name, _, value = pair.partition("=")
            if name.strip() not in ("users", "clusters", "dim", "arms", "noise", "omega", "seed"):
                raise SystemExit(f"--instance takes users, clusters, dim, arms, noise, omega, seed; got {name!r}")
            instance[name.strip()] = (
                int(value) if name.strip() in ("users", "clusters", "dim", "arms", "seed") else float(value)
            )
    return instance


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference-dir", type=Path, help="local checkout of the authors' repository")
    p.add_argument("--pools", type=Path, help="folder of the pool arrays (Ban family) or MNIST IDX files (EE-Net)")
    p.add_argument("--groups", type=int, help="Ban family: K-means groups of their M-CNB loader [their run.py's 100]")
    p.add_argument(
        "--reference-deps", type=Path, help="bandpy: folder of the packages their code imports and ours lacks"
    )
    p.add_argument("--instance", help="bandpy: users=18,clusters=2,arms=10,dim=5,noise=1,omega=0.785,seed=0 (any of)")
    p.add_argument("--instance-dir", type=Path, help="bandpy: a --data-dir holding a prepared synthetic dataset")
    p.add_argument("--problem", choices=showdown_side().PROBLEMS, default="wheel", help="the Showdown: its problem")
    p.add_argument("--measure", choices=("regret", "speed"), default="regret")
    p.add_argument("--algos", default="club", help=f"comma list of {', '.join(FAMILY)}")
    p.add_argument("--rounds", type=int, default=3000)
    p.add_argument("--runs", type=int, default=10, help="runs a side (regret) or alternating pairs (speed)")
    p.add_argument("--jobs", type=int, default=1, help="regret: runs of theirs (each with ours after it) at once")
    p.add_argument("--variant", default="code", help="comma list of code (their code's switches) and default (paper)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of both sides")
    p.add_argument("--ours-params", default="{}", help="JSON hyper-parameters of every variant of ours (ours only)")
    p.add_argument("--margin", type=float, default=0.05, help="equivalence margin, a share of their mean (0.05)")
    p.add_argument("--out", type=Path, help="write every run's figures, the comparisons and verdicts as JSON")
    p.add_argument("--lockstep", type=int, default=1, help="speed: ours runs this many seeds as one lockstep group")
    p.add_argument("--table", type=Path, nargs="+", help="print the parity table of these --out files")
    docs = p.add_mutually_exclusive_group()
    docs.add_argument("--write-docs", type=Path, help="with --table: put it between the parity-table markers of a page")
    docs.add_argument("--check-docs", type=Path, help="with --table: fail unless a page already holds this table")
    p.add_argument("--worker", choices=("ours", "theirs", "speed"), help=argparse.SUPPRESS)
    p.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    return p


def main() -> None:
    p = parser()
    args = p.parse_args()
    if args.worker:
        return worker_main(args.worker, args.job)
    if args.table:
        return parity_table.main(args.table, args.write_docs or args.check_docs, check=args.check_docs is not None)
    args.variant_given = any(a.startswith("--variant") for a in sys.argv[1:])
    if args.reference_dir is None or not args.reference_dir.is_dir():
        p.error("--reference-dir must be a local checkout of the authors' code")
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    unknown = [a for a in algos if a not in FAMILY]
    for wrong, message in (
        (unknown, f"unknown --algos {', '.join(unknown)} (choose from {', '.join(FAMILY)})"),
        (args.rounds < 10, "--rounds must be at least 10"),
        (args.runs < 1 or args.jobs < 1, "--runs and --jobs must be at least 1"),
        (not 0 < args.margin < 1, "--margin is a share of their mean, between 0 and 1"),
    ):
        if wrong:
            p.error(message)
    if args.measure == "speed" and any(FAMILY[a] == "showdown" for a in algos):
        p.error("--measure speed: the Showdown family is timed by benchmarks/thompson.py")
    if args.measure == "speed" and args.jobs != 1:
        p.error("--measure speed times one pair at a time; drop --jobs")
    if args.lockstep < 1 or (args.lockstep > 1 and args.measure != "speed"):
        p.error("--lockstep takes a positive number of seeds, and only with --measure speed")
    variants = [v.strip() for v in args.variant.split(",") if v.strip()]
    if not variants or any(v not in ("default", "code") for v in variants):
        p.error("--variant takes a comma list of code, default")
    settings, ours_params = parse_settings(args.set), json.loads(args.ours_params)
    args.instance = parse_instance(args.instance)
    for algorithm in algos:
        check_reference(p, args, algorithm)
        check_settings(algorithm, settings, args.rounds, args.groups, args.problem)
    report = {"reference": str(args.reference_dir), "measure": args.measure, "algorithms": {}}
    for algorithm in algos:
        with tempfile.TemporaryDirectory(prefix="parity-instance-") as folder:
            job, instance = prepare_instance(algorithm, args, Path(folder))
            job.update(settings=settings, ours=settings_for_theirs(algorithm, settings, instance))
            measure = regret_entry if args.measure == "regret" else speed_entry
            entry = measure(algorithm, args, job, instance, settings, ours_params)
        print(parity_table.summary(entry))
        report["algorithms"][algorithm] = entry
        if args.out:
            args.out.write_text(json.dumps(report, default=float) + "\n")


def check_reference(p: argparse.ArgumentParser, args, algorithm: str) -> None:
    family = FAMILY[algorithm]
    if family == "showdown":
        reason = showdown_side().check_reference(args.reference_dir, args.problem, args.pools)
        if reason:
            p.error(reason)
        return
    if family == "bandpy":
        if not (args.reference_dir / "bandpy" / "controllers").is_dir():
            p.error(f"{args.reference_dir} is not a bandpy checkout (no bandpy/controllers) for {algorithm}")
        if args.instance and args.instance_dir:
            p.error("--instance builds an instance and --instance-dir reads one: give one of them")
        return
    if args.pools is None or not args.pools.is_dir():
        p.error(f"--pools must be a folder of {'MNIST IDX files' if family == 'eenet' else 'pool arrays'}")
    expected = "EENet.py" if family == "eenet" else f"{parity_ban().METHODS[algorithm][0]}.py"
    if not (args.reference_dir / expected).is_file():
        p.error(f"{args.reference_dir} has no {expected} for {algorithm}")
    if family == "ban":
        parity_ban().check_pools(algorithm, args.pools)


if __name__ == "__main__":
    main()
