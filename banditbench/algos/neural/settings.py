"""The settings every neural policy shares: devices and torch generators, the training schedule, the network's
hyper-parameters and their domains."""

from __future__ import annotations

import os

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.errors import UserError

DEVICES = ("cpu", "cuda", "auto")
SCHEDULES = ("paper", "every-round", "code")
TRAIN_CHUNK = 64  # networks per Adam call: larger stacks leave the CPU caches and cost more per network
INITS = ("paper", "torch")
GRADIENTS = ("closed", "batched", "vmap")

# The network and training hyper-parameters every neural policy shares, with their domains.
NETWORK_DOMAINS = {
    "width": d.COUNT,
    "depth": d.COUNT,
    "bias": d.FLAG,
    "init": d.Choice(INITS),
    "lr": d.POSITIVE,
    "train_steps": d.STEPS,
    "batch_size": d.COUNT,
    "schedule": d.Choice(SCHEDULES),
    "gradients": d.Choice(GRADIENTS),
    "device": d.Choice(DEVICES),
    "threads": d.COUNT,
}

# The switches to the authors' code every neural policy shares (Policy.authors_code).
NETWORK_CODE = {
    "bias": (True, "biases in every layer, as the authors' networks have"),
    "init": ("torch", "nn.Linear's default U(±1/sqrt(fan_in)) instead of W_l ~ N(0, 2/m)"),
    "schedule": (
        "code",
        "the Ban-family runners' training test on the 0-based t: t % 10 == 0 below 1000, then t % 100 == 0",
    ),
}


def resolve_device(name: str) -> torch.device:
    check_choice("device", name, DEVICES)
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("device 'cuda' asked for, but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(name)


def torch_generator(seed: np.random.SeedSequence, device: torch.device, threads: int = 1) -> torch.Generator:
    """A torch generator seeded from the policy's own stream: initialisations and draws repeat exactly.

    ``threads`` sets torch's intra-op threads: these networks are tiny, so one thread is faster (no
    synchronisation per op) and a fixed count keeps float reductions in the same order run after run."""
    if threads < 1:
        raise UserError(f"threads must be at least 1, got {threads}")
    if device.type == "cuda":  # CPU kernels are deterministic already (and the switch costs a 3 s import)
        # cuBLAS is deterministic only with a fixed workspace, set before its first call; without it torch's
        # deterministic mode refuses every CUDA matmul
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    return torch.Generator(device=device).manual_seed(  # manual_seed returns the generator
        int(np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (7,)).generate_state(1, np.uint64)[0] >> 1)
    )


def is_training_round(t: int, schedule: str = "paper") -> bool:
    """Whether the networks train after round t (0-based, as the runner counts).

    "paper": "every 10 rounds in the first 1000 rounds and every 100 rounds afterwards" (M-CNB §6), i.e.
    after rounds 10, 20, …, 1000, 1100, 1200, … counting from 1. "every-round": after every round. "code": the
    Ban-family runners' test on the 0-based t, after t = 0, 10, …, 990, 1000, 1100, …
    """
    if schedule == "every-round":
        return True
    if schedule == "code":
        return t % 10 == 0 if t < 1000 else t % 100 == 0
    n = t + 1
    return n % 10 == 0 if n <= 1000 else n % 100 == 0


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UserError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value
