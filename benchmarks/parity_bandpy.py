"""The bandpy side of ``parity.py``: BASS, DynUCB and CMLB against hcherkaoui/bandpy on one synthetic instance.

    .venv/bin/python benchmarks/parity.py --reference-dir BANDPY --reference-deps DEPS --algos bass,dynucb,cmlb \\
        [--instance users=18,clusters=2,arms=10,dim=5,noise=1,omega=0.785,seed=0 | --instance-dir DATA] [--set …]

BANDPY is a checkout of hcherkaoui/bandpy (commit 0c404b6: the folder that holds ``bandpy/controllers``); DEPS a
folder with the packages its import chain needs and our environment lacks (numba, llvmlite, wget,
matrix_factorization: ``pip install --target DEPS --no-deps numba llvmlite wget matrix_factorization``). Both go
on ``sys.path`` of their runs only; nothing of theirs is edited or installed beside our code.

The instance is ours, fed to their environment. ``prepare synthetic --centres bass --arm-set fixed`` builds
BASS's synthetic problem with bandpy's own generator (θ_m = e_m or cos ω e_(m−1) + sin ω e_m, K/M fixed arms
x = θ_m + 0.5‖θ_m‖ξ around each centre); ``--instance`` sets its shape (default BASS's setting: N = 18 agents,
M = 2 equal clusters, K = 10, d = 5, σ = 1, ω = π/4), built in a fresh temporary folder, or ``--instance-dir``
reads an instance already prepared there (never rewritten). Their ``ClusteredGaussianLinearBandit`` takes its
centres, cluster labels and arms as constructor arguments (``thetas``, ``theta_idx``, ``arms``, no label
shuffling). For run i both sides face the same draws: our environment's stream of seed index i gives the acting
agent of every round and the noisy reward of every (round, arm); their controller draws its agents from that list
(its ``rng`` is replaced by an object whose ``integers`` returns the next listed agent, so their selection code runs
as written) and their environment's ``compute_reward`` returns the listed reward. Regret is their ``no_noise_R_t``
(the pseudo-regret of the acting agent), the same quantity as ours. Round 1 plays arm 0 on their side by default
(``default_act``); ours plays the argmax of an all-zero index there, which is arm 0 too. DynUCB's random initial
clusters are a draw as well: their controller is given the labels our DynUCB draws for the same run.

Settings (KNOBS) are their controllers' constructor arguments, named as ours: α, λ, σ (their R), S and δ for LBC;
α, λ and the number of clusters for DynUCB; the α-LinUCB scale, λ, Te, γ and the small-cluster ratio for CMLB. Both
sides get BASS's values (``our_settings``) unless ``--set`` says otherwise; their values are read from our code
variant's parameters, so the two sides always run one setting.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from loop_clock import LoopClock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# our algorithm → their controller class in bandpy.controllers
CONTROLLERS = {"bass": "LBC", "dynucb": "DynUCB", "cmlb": "CMLB"}
# BASS's synthetic setting (§7, App. R; N, K, d and T from bandpy's clustering example, the paper's lost)
INSTANCE = {"users": 18, "clusters": 2, "dim": 5, "arms": 10, "noise": 1.0, "omega": float(np.pi / 4), "seed": 0}
# our setting → their controller's constructor argument of the same meaning
KNOBS = {
    "bass": {"alpha": "alpha", "ridge": "lbda", "sigma": "R", "S": "S", "delta": "delta"},
    "dynucb": {"alpha": "alpha", "ridge": "lbda", "n_clusters": "n_clusters"},
    "cmlb": {
        "ucb_alpha": "alpha",
        "ridge": "lbda",
        "explore_rounds": "Te",
        "cluster_threshold": "gamma",
        "p_star": "len_cluster_ratio",
    },
}
# the setting of ours that bandpy's α is: BASS's and DynUCB's α, CMLB's α-LinUCB scale (its bandpy schedule)
OUR_ALPHA = {"bass": "alpha", "dynucb": "alpha", "cmlb": "ucb_alpha"}


def our_settings(algorithm: str, instance: dict) -> dict:
    """The settings both sides get unless told otherwise (BASS's: α = 1, λ = 1, σ = R = the data's noise, S = 1,
    δ = 1e-3, DynUCB with the true number of clusters, CMLB with Te = 1000 and γ = 1), in our names."""
    return {
        "bass": {"alpha": 1.0, "ridge": 1.0, "sigma": instance["noise"], "S": 1.0, "delta": 1e-3},
        "dynucb": {"alpha": 1.0, "ridge": 1.0, "n_clusters": instance["clusters"]},
        "cmlb": {"ucb_alpha": 1.0, "ridge": 1.0, "sigma": instance["noise"], "explore_rounds": 1000},
    }[algorithm]


def their_settings(algorithm: str, ours: dict) -> dict:
    """Their constructor arguments from our resolved settings (the code variant's): every knob they have."""
    return {theirs: ours[name] for name, theirs in KNOBS[algorithm].items() if name in ours}


def check_settings(algorithm: str, settings: dict) -> None:
    """Refuse, with one line, a setting their controller does not take."""
    missing = [name for name in settings if name not in KNOBS[algorithm]]
    if missing:
        raise SystemExit(
            f"their {CONTROLLERS[algorithm]} (bandpy) has no setting for {', '.join(missing)}: it cannot be passed "
            f"to their code (settings it has, in our names: {', '.join(KNOBS[algorithm])})"
        )


def prepare_instance(data_dir: Path, instance: dict) -> Path:
    """Our prepared dataset ``synthetic`` of the instance (bandpy's generator) under ``data_dir``, a fresh folder."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data import synthetic

    shape = {key: instance[key] for key in ("users", "clusters", "dim", "arms", "noise")}
    return synthetic.prepare(
        data_dir, **shape, z=0.0, seed=instance["seed"], centres="bass", omega=instance["omega"], arm_set="fixed"
    )


def instance_arrays(data_dir: Path) -> dict:
    """The prepared instance as bandpy's environment takes it: M centres, each agent's cluster, the K arms."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data import load_dataset

    dataset = load_dataset(data_dir, "synthetic")
    users = dataset.table("users").sort_values("user")
    theta = users.filter(like="theta_").to_numpy()
    labels = users["cluster"].to_numpy()
    centres = np.array([theta[np.flatnonzero(labels == m)[0]] for m in range(labels.max() + 1)])
    arms = dataset.table("arms").sort_values("arm").filter(like="x_").to_numpy()
    return {"centres": centres, "labels": labels, "arms": arms, "noise": float(dataset.parameters["noise"])}


def draws(data_dir: Path, seed: int, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Agent, noisy and noise-free rewards of every round, as our environment serves seed index ``seed``."""
    sys.path.insert(0, str(ROOT))
    from banditbench.data import load_dataset
    from banditbench.envs import PROTOCOLS
    from banditbench.runner.seeds import unit_streams

    env = PROTOCOLS["linear"].environment(load_dataset(data_dir, "synthetic"), unit_streams(0, seed)[0])
    agents, rewards, expected = np.empty(rounds, dtype=np.int64), [], []
    for rnd in env.rounds(rounds):
        agents[rnd.t] = rnd.user
        rewards.append(rnd.rewards)
        expected.append(rnd.expected)
    return agents, np.array(rewards), np.array(expected)


class ListedAgents:
    """Stands in for a controller's ``rng``: ``integers(N)`` returns the next agent of a given list."""

    def __init__(self, agents: np.ndarray):
        self.agents, self.next = agents.tolist(), 0

    def integers(self, *args, **kwargs) -> int:
        agent = self.agents[self.next]
        self.next += 1
        return agent


def their_environment(bandpy_env, instance: dict, rounds: int, rewards: np.ndarray, expected: np.ndarray):
    """Their ``ClusteredGaussianLinearBandit`` on our instance, returning the listed rewards of each round."""

    class ListedRewards(bandpy_env.ClusteredGaussianLinearBandit):
        def compute_reward(self, agent_name, k_or_arm):
            return float(rewards[self.t - 1, k_or_arm]), float(expected[self.t - 1, k_or_arm])

    d = instance["arms"].shape[1]
    return ListedRewards(
        N=len(instance["labels"]),
        T=rounds,
        d=d,
        arms=[np.array(x, dtype=float).reshape(d, 1) for x in instance["arms"]],
        thetas=[np.array(c, dtype=float).reshape(d, 1) for c in instance["centres"]],
        theta_idx=instance["labels"].tolist(),
        sigma=instance["noise"],
        shuffle_labels=False,
    )


def initial_labels(data_dir: Path, seed: int, params: dict) -> np.ndarray:
    """The initial clusters our DynUCB draws for seed index ``seed`` (the first draw of its policy stream)."""
    sys.path.insert(0, str(ROOT))
    from banditbench.algos import ALGORITHMS
    from banditbench.runner.seeds import unit_streams

    instance = instance_arrays(data_dir)
    n_arms, dim = instance["arms"].shape
    params = {**ALGORITHMS["dynucb"].defaults(), **params}
    policy = ALGORITHMS["dynucb"].build(
        n_users=len(instance["labels"]), n_arms=n_arms, dim=dim, seed=unit_streams(0, seed)[1], params=params
    )
    return policy.label.copy()


def give_labels(controller, labels: np.ndarray) -> None:
    """Their DynUCB's initial clusters set to ``labels`` (no agent has data yet: every cluster's statistics stay
    A = λI, b = 0, so only the membership changes)."""
    controller.agent_labels = {f"agent_{i}": int(label) for i, label in enumerate(labels)}
    controller.comps = {m: [i for i, label in enumerate(labels) if label == m] for m in range(controller.n_clusters)}


def their_controller(controllers, name: str, arms: list, n_agents: int, seed: int, settings: dict):
    return getattr(controllers, name)(arms=arms, N=n_agents, seed=seed, **settings)


def run_bandpy(reference: Path, deps: Path | None, data_dir: Path, algorithm: str, rounds: int, seed: int, ours: dict):
    """One run of their controller in this (fresh) process on our instance and draws of seed index ``seed``, with
    the settings derived from ours (our resolved code-variant parameters ``ours``)."""
    start = time.perf_counter()
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[variable] = "1"
    sys.path[:0] = [str(reference)] + ([str(deps)] if deps else [])
    import warnings

    warnings.filterwarnings("ignore")  # numba's performance hints on their non-contiguous arrays
    from bandpy import controllers
    from bandpy import env as bandpy_env

    instance = instance_arrays(data_dir)
    agents, rewards, expected = draws(data_dir, seed, rounds)
    env = their_environment(bandpy_env, instance, rounds, rewards, expected)
    settings = their_settings(algorithm, ours)
    controller = their_controller(
        controllers, CONTROLLERS[algorithm], env.arms, len(instance["labels"]), seed, settings
    )
    if algorithm == "dynucb":
        give_labels(controller, initial_labels(data_dir, seed, ours))
    # their run_one_trial, with the agent list in place of the controller's draws
    env.reset(seed=seed)
    controller.reset(seed=seed)
    controller.rng = ListedAgents(agents)
    clock = LoopClock(start)
    chosen = np.zeros(rounds, np.int64)
    action = controller.default_act()
    while True:
        chosen[env.t - 1] = next(iter(action.values()))
        if env.t == rounds // 2 + 1:
            clock.half()
        observation, reward, done, info = env.step(action)
        if done:
            break
        action = controller.act(observation, reward, info)
    times = clock.seconds()
    served = controller.rng.next
    if served != rounds or not np.array_equal(
        np.asarray(controller.T_i), np.bincount(agents, minlength=len(controller.T_i))
    ):
        raise SystemExit(f"their controller drew {served} agents for {rounds} rounds: not the listed order")
    return {
        "regret": np.asarray(env.no_noise_R_t, dtype=float).tolist(),
        "chosen": chosen.tolist(),
        **times,
        **their_clusters(controller, instance["labels"]),
    }


def their_clusters(controller, truth: np.ndarray) -> dict:
    """Their final clusters: the count and the pair F1 against the instance's clusters, on LBC's sharing graph or
    the same-label pairs (their own score, with the true graph they are not given here)."""
    from parity_verdict import pair_f1

    labels = np.array([controller.agent_labels[f"agent_{i}"] for i in range(len(truth))])
    shown = np.asarray(controller.graph_A) if type(controller).__name__ == "LBC" else labels
    return {"clusters": len(np.unique(labels)), "f1": pair_f1(shown, truth)}
