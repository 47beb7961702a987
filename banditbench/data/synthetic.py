"""Built-in synthetic clustered linear users, as in the multi-agent papers (seeds 002 and 003).

Following Ghosh, Sankararaman & Ramchandran (2021, §6.1, after Gentile et al. 2014): N users fall
into M clusters whose sizes are proportional to i^(−z) (z = 0: balanced); each cluster's parameter
θ is drawn uniformly from the unit sphere; every user of a cluster shares its θ. Per round the
"linear" protocol draws K contexts from N(0, I/d) and rewards ⟨θ, x⟩ + N(0, σ²).
The paper gives K = 25 and d = 15 and leaves the noise unstated; σ = 0.1 is our default.

``centres="bass"`` instead builds BASS's centres (Cherkaoui et al. 2025, App. R; seed 003): for m = 1 … M,
θ_m = e_m when m is odd and θ_m = cos ω e_{m−1} + sin ω e_m when m is even (unit norm, M ≤ d), so
consecutive pairs are Δ = 2 sin(ω/2) apart; ω = π/4 is our guess for the paper's "similar" scenario (lost).
``protocol="synchronous"`` makes the dataset run under Ghosh et al.'s synchronous rounds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data.prepared import existing_parameters, write_dataset
from banditbench.errors import UserError

DEFAULTS = {"users": 100, "clusters": 5, "dim": 15, "arms": 25, "noise": 0.1, "z": 0.0, "seed": 0}
# Options added after the first release: recorded in the manifest only when they differ from these,
# so datasets prepared before them keep their parameters.
EXTRA_DEFAULTS = {"centres": "sphere", "omega": float(np.pi / 4), "protocol": "linear"}
CENTRES = ("sphere", "bass")
# "cosine" (NeuralUCB's non-linear reward) is prepared as a dataset of its own, synthetic-cosine.
SYNTHETIC_PROTOCOLS = ("linear", "synchronous", "cosine")


def cluster_sizes(n_users: int, n_clusters: int, z: float) -> np.ndarray:
    """n_i ∝ i^(−z), rounded by largest remainder so that the sizes sum to ``n_users``."""
    weights = np.arange(1, n_clusters + 1, dtype=float) ** -z
    exact = n_users * weights / weights.sum()
    sizes = np.floor(exact).astype(int)
    short = n_users - sizes.sum()
    sizes[np.argsort(-(exact - sizes), kind="stable")[:short]] += 1
    return sizes


def bass_centres(clusters: int, dim: int, omega: float) -> np.ndarray:
    """θ_m = e_m (m odd), cos ω e_{m−1} + sin ω e_m (m even), m = 1 … M (BASS App. R)."""
    theta = np.zeros((clusters, dim))
    for m in range(clusters):  # 0-based m here: even index = odd 1-based m
        if m % 2 == 0:
            theta[m, m] = 1.0
        else:
            theta[m, m - 1], theta[m, m] = np.cos(omega), np.sin(omega)
    return theta


def generate(users: int, clusters: int, dim: int, z: float, seed: int, centres: str = "sphere",
             omega: float = EXTRA_DEFAULTS["omega"]) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((clusters, dim))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)  # uniform on the unit sphere
    if centres == "bass":
        theta = bass_centres(clusters, dim, omega)
    cluster_of = rng.permutation(np.repeat(np.arange(clusters), cluster_sizes(users, clusters, z)))
    frame = pd.DataFrame({"user": np.arange(users), "cluster": cluster_of})
    for j in range(dim):
        frame[f"theta_{j}"] = theta[cluster_of, j]
    return frame


def dataset_name(protocol: str) -> str:
    return "synthetic-cosine" if protocol == "cosine" else "synthetic"


def prepare(data_dir: Path, *, users: int, clusters: int, dim: int, arms: int, noise: float,
            z: float, seed: int, force: bool = False, centres: str = "sphere",
            omega: float = EXTRA_DEFAULTS["omega"], protocol: str = "linear") -> Path:
    for label, value in (("--users", users), ("--clusters", clusters), ("--dim", dim), ("--arms", arms)):
        if value < 1:
            raise UserError(f"{label} must be at least 1, got {value}")
    if clusters > users:
        raise UserError(f"--clusters ({clusters}) cannot exceed --users ({users})")
    if noise < 0:
        raise UserError(f"--noise must be non-negative, got {noise}")
    if z < 0:
        raise UserError(f"--z must be non-negative, got {z}")
    if centres not in CENTRES:
        raise UserError(f"--centres must be one of {', '.join(CENTRES)}, got {centres!r}")
    if protocol not in SYNTHETIC_PROTOCOLS:
        raise UserError(f"--protocol must be one of {', '.join(SYNTHETIC_PROTOCOLS)}, got {protocol!r}")
    if centres == "bass" and clusters > dim:
        raise UserError(f"--centres bass needs --clusters ({clusters}) at most --dim ({dim})")
    parameters = {"users": users, "clusters": clusters, "dim": dim, "arms": arms, "noise": noise, "z": z, "seed": seed}
    extra = {"centres": centres, "omega": float(omega), "protocol": protocol}
    if centres != "bass":
        extra.pop("omega")  # ω only shapes BASS's centres
    parameters.update({k: v for k, v in extra.items() if v != EXTRA_DEFAULTS[k]})
    name = dataset_name(protocol)
    folder = Path(data_dir) / name
    if not force and existing_parameters(folder) == parameters:
        return folder  # already prepared with these parameters: nothing to do
    table = generate(users, clusters, dim, z, seed, centres, omega)
    return write_dataset(folder, name, {"users": table}, parameters, protocol=protocol, force=force)
