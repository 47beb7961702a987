"""Built-in synthetic clustered linear users, as in the multi-agent papers (seeds 002 and 003).

Following Ghosh, Sankararaman & Ramchandran (2021, §6.1, after Gentile et al. 2014): N users fall
into M clusters whose sizes are proportional to i^(−z) (z = 0: balanced); each cluster's parameter
θ is drawn uniformly from the unit sphere; every user of a cluster shares its θ. Per round the
"linear" protocol draws K contexts from N(0, I/d) and rewards ⟨θ, x⟩ + N(0, σ²).
The paper gives K = 25 and d = 15 and leaves the noise unstated; σ = 0.1 is our default.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data.prepared import existing_parameters, write_dataset
from banditbench.errors import UserError

DEFAULTS = {"users": 100, "clusters": 5, "dim": 15, "arms": 25, "noise": 0.1, "z": 0.0, "seed": 0}


def cluster_sizes(n_users: int, n_clusters: int, z: float) -> np.ndarray:
    """n_i ∝ i^(−z), rounded by largest remainder so that the sizes sum to ``n_users``."""
    weights = np.arange(1, n_clusters + 1, dtype=float) ** -z
    exact = n_users * weights / weights.sum()
    sizes = np.floor(exact).astype(int)
    short = n_users - sizes.sum()
    sizes[np.argsort(-(exact - sizes), kind="stable")[:short]] += 1
    return sizes


def generate(users: int, clusters: int, dim: int, z: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((clusters, dim))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)  # uniform on the unit sphere
    cluster_of = rng.permutation(np.repeat(np.arange(clusters), cluster_sizes(users, clusters, z)))
    frame = pd.DataFrame({"user": np.arange(users), "cluster": cluster_of})
    for j in range(dim):
        frame[f"theta_{j}"] = theta[cluster_of, j]
    return frame


PROTOCOLS = ("linear", "cosine")  # "cosine" is prepared as its own dataset, synthetic-cosine


def dataset_name(protocol: str) -> str:
    return "synthetic" if protocol == "linear" else f"synthetic-{protocol}"


def prepare(data_dir: Path, *, users: int, clusters: int, dim: int, arms: int, noise: float,
            z: float, seed: int, force: bool = False, protocol: str = "linear") -> Path:
    for label, value in (("--users", users), ("--clusters", clusters), ("--dim", dim), ("--arms", arms)):
        if value < 1:
            raise UserError(f"{label} must be at least 1, got {value}")
    if clusters > users:
        raise UserError(f"--clusters ({clusters}) cannot exceed --users ({users})")
    if protocol not in PROTOCOLS:
        raise UserError(f"--protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if noise < 0:
        raise UserError(f"--noise must be non-negative, got {noise}")
    if z < 0:
        raise UserError(f"--z must be non-negative, got {z}")
    parameters = {"users": users, "clusters": clusters, "dim": dim, "arms": arms, "noise": noise, "z": z, "seed": seed}
    name = dataset_name(protocol)
    folder = Path(data_dir) / name
    if not force and existing_parameters(folder) == parameters:
        return folder  # already prepared with these parameters: nothing to do
    table = generate(users, clusters, dim, z, seed)
    return write_dataset(folder, name, {"users": table}, parameters, protocol=protocol, force=force)
