"""Built-in synthetic clustered linear users, as in the multi-agent papers (Ghosh et al. 2021; Cherkaoui et al. 2025).

Following Ghosh, Sankararaman & Ramchandran (2021, §6.1, after Gentile et al. 2014): N users fall
into M clusters whose sizes are proportional to i^(−z) (z = 0: balanced); each cluster's parameter
θ is drawn uniformly from the unit sphere; every user of a cluster shares its θ. Per round the
"linear" protocol draws K contexts from N(0, I/d) and rewards ⟨θ, x⟩ + N(0, σ²).
The paper gives K = 25 and d = 15 and leaves N, M and the noise unstated. Our defaults, N = 50 users in M = 2
clusters and σ = 0.1, make the default benchmark's instance: each user gets T/N = 100 pulls of 5 000 rounds, too
few for a d = 15 model of its own, while a cluster pools 25 users' pulls, so sharing within clusters pays.

``centres="bass"`` instead builds BASS's centres (Cherkaoui et al. 2025, App. R): for m = 1 … M,
θ_m = e_m when m is odd and θ_m = cos ω e_{m−1} + sin ω e_m when m is even (unit norm, M ≤ d), so
consecutive pairs are Δ = 2 sin(ω/2) apart; ω = π/4 is our guess for the paper's "similar" scenario (lost).
BASS's arm set, one set of K arms served unchanged every round (table ``arms``), comes in two forms. Of the
paper's generator only "K arms of dimension d" and the bound ‖x‖ ≤ L of Assumption 4.1 survive; the authors'
bandpy library draws K/M arms around each centre, x = θ_m + 0.5 ‖θ_m‖ ξ with ξ ~ N(0, I_d), not normalised:
- ``arm_set="unit"`` (the preset's): those arms scaled to unit norm, so ‖x‖ ≤ L = S = 1 as for the centres.
  Unnormalised, a long arm pointing between two close centres is the best arm of both: at ω = π/4 one arm is
  best for every user in about a third of the draws (seed 0 among them), where clustering cannot matter;
  scaled, in about 6 %.
- ``arm_set="fixed"``: bandpy's arms as drawn.
When M ∤ K the K arms are split as evenly as possible (the first K mod M centres get one more): our choice.
``protocol="synchronous"`` makes the dataset run under Ghosh et al.'s synchronous rounds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data.prepared import existing_parameters, physical_memory, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

DEFAULTS = {"users": 50, "clusters": 2, "dim": 15, "arms": 25, "noise": 0.1, "z": 0.0, "seed": 0}
# Options added after the first release: recorded in the manifest only when they differ from these,
# so datasets prepared before them keep their parameters.
EXTRA_DEFAULTS = {"centres": "sphere", "omega": float(np.pi / 4), "protocol": "linear", "arm_set": "fresh"}
CENTRES = ("sphere", "bass")
ARM_SETS = ("fresh", "unit", "fixed")
ARM_SPREAD = 0.5  # bandpy's coef: x = θ_m + 0.5 ‖θ_m‖ ξ
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


def generate(
    users: int,
    clusters: int,
    dim: int,
    z: float,
    seed: int,
    centres: str = "sphere",
    omega: float = EXTRA_DEFAULTS["omega"],
    arms: int = 0,
    unit: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The users table, and with ``arms`` > 0 the fixed arm set (drawn after the users, so they are the same),
    scaled to unit norm with ``unit``."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((clusters, dim))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)  # uniform on the unit sphere
    if centres == "bass":
        theta = bass_centres(clusters, dim, omega)
    cluster_of = rng.permutation(np.repeat(np.arange(clusters), cluster_sizes(users, clusters, z)))
    frame = pd.DataFrame({"user": np.arange(users), "cluster": cluster_of})
    for j in range(dim):
        frame[f"theta_{j}"] = theta[cluster_of, j]
    if not arms:
        return frame, None
    centre_of = np.repeat(np.arange(clusters), cluster_sizes(arms, clusters, 0.0))  # K/M arms per centre
    spread = ARM_SPREAD * np.linalg.norm(theta[centre_of], axis=1, keepdims=True)
    x = theta[centre_of] + spread * rng.standard_normal((arms, dim))
    if unit:
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    arm_table = pd.DataFrame({"arm": np.arange(arms), "cluster": centre_of})
    for j in range(dim):
        arm_table[f"x_{j}"] = x[:, j]
    return frame, arm_table


# Building a table holds its columns about twice over (the draws, then the DataFrame and its Arrow copy).
COPIES = 2


def check_memory(users: int, dim: int, arms: int) -> None:
    """Refuse sizes whose tables (θ per user, the fixed arms) cannot be built in this machine's memory, before
    anything is drawn."""
    need = COPIES * 8 * (users + arms) * (dim + 2)  # float64 columns: the d coordinates, an id and a cluster
    memory = physical_memory()
    if memory and need > memory:
        raise UserError(
            f"--users {users:,} with --dim {dim:,} need about {need / 2**30:,.0f} GiB of memory to generate, more "
            f"than this machine's {memory / 2**30:.1f} GiB; choose fewer users or a smaller dimension"
        )


def parameters_of(users, clusters, dim, arms, noise, z, seed, centres, omega, protocol, arm_set) -> dict:
    """The parameters a manifest records: the options added after the first release only where they differ."""
    parameters = {"users": users, "clusters": clusters, "dim": dim, "arms": arms, "noise": noise, "z": z, "seed": seed}
    extra = {"centres": centres, "omega": float(omega), "protocol": protocol, "arm_set": arm_set}
    if centres != "bass":
        extra.pop("omega")  # ω only shapes BASS's centres
    parameters.update({k: v for k, v in extra.items() if v != EXTRA_DEFAULTS[k]})
    return parameters


def check_free(data_dir: Path, protocol: str, parameters: dict, force: bool) -> None:
    """Refuse a folder that holds this dataset prepared otherwise, unless ``force``."""
    folder = Path(data_dir) / dataset_name(protocol)
    if folder.exists() and not force and existing_parameters(folder) != parameters:
        raise UserError(f"{folder} already exists; pass --force to rebuild it or --data-dir to write elsewhere")


def dataset_name(protocol: str) -> str:
    return "synthetic-cosine" if protocol == "cosine" else "synthetic"


def prepare(
    data_dir: Path,
    *,
    users: int,
    clusters: int,
    dim: int,
    arms: int,
    noise: float,
    z: float,
    seed: int,
    force: bool = False,
    centres: str = "sphere",
    omega: float = EXTRA_DEFAULTS["omega"],
    protocol: str | None = "linear",
    arm_set: str = "fresh",
) -> Path:
    """Write ``synthetic`` (or ``synthetic-cosine`` under ``protocol="cosine"``) and return its folder. ``protocol``
    None (``prepare synthetic`` without ``--protocol``): the default benchmark's two datasets, the linear one and,
    with fresh contexts, ``synthetic-cosine`` from the same users; both are checked before either is written."""
    if protocol is None:
        pair = ("linear", "cosine") if arm_set == "fresh" else ("linear",)
        options = dict(users=users, clusters=clusters, dim=dim, arms=arms, noise=noise, z=z, seed=seed)
        options |= dict(centres=centres, omega=omega, arm_set=arm_set)
        for each in pair:  # a folder that holds other data is refused before anything is written
            check_free(data_dir, each, parameters_of(**options, protocol=each), force)
        return [prepare(data_dir, **options, protocol=each, force=force) for each in pair][0]
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
    if arm_set not in ARM_SETS:
        raise UserError(f"--arm-set must be one of {', '.join(ARM_SETS)}, got {arm_set!r}")
    if arm_set != "fresh" and protocol != "linear":
        raise UserError(f"--arm-set {arm_set} needs --protocol linear, got {protocol!r}")
    if arm_set != "fresh" and arms < clusters:
        raise UserError(f"--arm-set {arm_set} needs --arms ({arms}) at least --clusters ({clusters})")
    check_memory(users, dim, arms if arm_set != "fresh" else 0)
    parameters = parameters_of(users, clusters, dim, arms, noise, z, seed, centres, omega, protocol, arm_set)
    name = dataset_name(protocol)
    folder = Path(data_dir) / name
    if not force and existing_parameters(folder) == parameters:
        return folder  # already prepared with these parameters: nothing to do
    fixed = arm_set != "fresh"
    table, arm_table = generate(users, clusters, dim, z, seed, centres, omega, arms if fixed else 0, arm_set == "unit")
    tables = {"users": table} if arm_table is None else {"users": table, "arms": arm_table}
    return write_dataset(folder, name, tables, parameters, protocol=protocol, force=force)


register(
    Dataset(
        "synthetic",
        "clustered linear users, θ on the unit sphere, cluster sizes ∝ i^(−z); built in, no download",
        "Ghosh et al. 2021 §6.1; BASS (Cherkaoui et al. 2025)",
        "linear",
        prepare,
        (
            Option("users", int, 50, "Number of users N.", minimum=1),
            Option("clusters", int, 2, "Number of ground-truth clusters M.", minimum=1),
            Option("dim", int, 15, "Context dimension d (Ghosh et al.: 15).", minimum=1),
            Option("arms", int, 25, "Arms K per round (Ghosh et al.: 25).", minimum=1),
            Option("noise", float, 0.1, "Reward noise standard deviation σ.", minimum=0),
            Option("z", float, 0.0, "Cluster sizes ∝ i^(−z); 0 gives balanced clusters.", minimum=0),
            Option("seed", int, 0, "Seed of the users and their parameters.", minimum=0),
            Option(
                "centres",
                str,
                "sphere",
                "Cluster centres: sphere (Ghosh et al.) or bass (e_m / cos ω e_{m-1} + sin ω e_m).",
                choices=CENTRES,
            ),
            Option("omega", float, EXTRA_DEFAULTS["omega"], "Angle ω of --centres bass (default π/4)."),
            Option(
                "protocol",
                str,
                None,
                "linear (one random user per round), synchronous (all users each step) or "
                "cosine (reward cos(3⟨θ, x⟩), prepared as synthetic-cosine) [default: linear, and with fresh "
                "arms synthetic-cosine beside it from the same users: the default benchmark's two datasets].",
                choices=SYNTHETIC_PROTOCOLS,
                optional=True,
            ),
            Option(
                "arm_set",
                str,
                "fresh",
                "fresh (K new contexts x ~ N(0, I/d) each round, Ghosh et al.), unit (BASS: the same K arms every "
                "round, K/M around each centre, x ∝ θ_m + 0.5‖θ_m‖ξ scaled to unit norm) or fixed (the same arms "
                "not scaled, as the authors' bandpy code draws them).",
                choices=ARM_SETS,
            ),
        ),
        other_protocols=("synchronous",),
        reads_raw=False,
        files="none: generated",
    )
)

register(
    Dataset(
        "synthetic-cosine",
        "the same clustered users with the non-linear reward cos(3⟨θ, x⟩) (`prepare synthetic --protocol cosine`)",
        "NeuralUCB §7.1 reward (Zhou et al. 2020) on Ghosh et al.'s users",
        "cosine",
        reads_raw=False,
        files="none: generated",
    )
)
