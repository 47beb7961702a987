"""A dense agent × arm reward table completed by matrix factorisation, for the matrix protocol (``envs/matrix.py``).

BASS (Cherkaoui, Barlier & Colin, Sec. 7 and App. R) evaluates on full reward tables: "since the users did not
rate all the [items] systematically, we fill the missing values with a matrix-factorization approach (Rendle &
Schmidt-Thieme 2008)", for MovieLens and for Yahoo! alike. Both loaders (``movielens_small.py``, ``yahoo.py``)
fill their table here with :func:`als`, a ridge alternating-least-squares factorisation of the centred ratings
whose start is drawn from a seed, so a table is a deterministic function of the raw files and the options.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from banditbench.data.registry import Option

# The options every reward-table dataset declares alike: the factorisation's, then the matrix protocol's.
FACTORISATION_OPTIONS = (
    Option("rank", int, 10, "ALS rank r.", minimum=1),
    Option("ridge", float, 1.0, "ALS ridge λ.", minimum=1e-6),
    Option("iterations", int, 15, "ALS alternations.", minimum=1),
)
PROTOCOL_OPTIONS = (
    Option("noise", float, 1.0, "σ: observation = table value + σ·N(0, 1).", minimum=0),
    Option(
        "pulling",
        str,
        "async",
        "async (one uniform agent a round) | sync (every agent each step).",
        choices=("async", "sync"),
    ),
)


def als(
    users: np.ndarray,
    items: np.ndarray,
    values: np.ndarray,
    n_users: int,
    n_items: int,
    *,
    rank: int,
    ridge: float,
    iterations: int,
    seed: int,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Ridge alternating least squares on the observed entries (Hu, Koren & Volinsky 2008 without confidence
    weights): minimise Σ_obs (r_ui − μ − p_u·q_i)² + λ(Σ‖p_u‖² + Σ‖q_i‖²), μ the mean rating.

    Each half-step solves, for every user u, (Σ_{i∈I_u} q_i q_iᵀ + λI) p_u = Σ_{i∈I_u} q_i (r_ui − μ), then the
    same for every item. Factors start at N(0, 0.1²) from ``seed``. A row with no entry gets the zero vector
    (its prediction is μ). Returns (μ, P [n_users, rank], Q [n_items, rank])."""
    mean = float(values.mean())
    centred = values - mean
    rng = np.random.default_rng(seed)
    P = 0.1 * rng.standard_normal((n_users, rank))
    Q = 0.1 * rng.standard_normal((n_items, rank))
    for _ in range(iterations):
        P = _ridge_rows(users, items, centred, Q, n_users, ridge)
        Q = _ridge_rows(items, users, centred, P, n_items, ridge)
    return mean, P, Q


def _ridge_rows(
    rows: np.ndarray, cols: np.ndarray, values: np.ndarray, other: np.ndarray, n_rows: int, ridge: float
) -> np.ndarray:
    rank = other.shape[1]
    X = other[cols]  # [n_obs, rank]
    gram = np.zeros((n_rows, rank * rank))
    np.add.at(gram, rows, (X[:, :, None] * X[:, None, :]).reshape(len(rows), -1))
    target = np.zeros((n_rows, rank))
    np.add.at(target, rows, X * values[:, None])
    gram = gram.reshape(n_rows, rank, rank) + ridge * np.eye(rank)
    return np.linalg.solve(gram, target[:, :, None])[:, :, 0]


@dataclass(frozen=True)
class Completed:
    """A completed table [users × arms], the item factors Q it was filled from, the observed entries of each arm
    (the rest of its column is predicted) and the fit's figures."""

    table: np.ndarray
    item_factors: np.ndarray
    observed_per_arm: np.ndarray
    fit: dict[str, float]


def complete(
    users: np.ndarray,
    items: np.ndarray,
    values: np.ndarray,
    n_users: int,
    n_items: int,
    arm_items: np.ndarray,
    *,
    value_range: tuple[float, float],
    rounded: bool,
    rank: int,
    ridge: float,
    iterations: int,
    seed: int,
) -> Completed:
    """The reward table of the arms whose items are ``arm_items`` (an item index per arm, −1 for an item nobody
    rated), from the observed (user, item, value) entries.

    :func:`als` is fitted on every entry, all items included. An arm's column is the prediction μ + p_u·q_i (μ
    for an unrated item), clipped to ``value_range`` and, with ``rounded``, rounded to integers as the authors'
    loaders do; observed entries then overwrite their predictions (the last one wins for an entry seen twice)."""
    mean, P, Q = als(users, items, values, n_users, n_items, rank=rank, ridge=ridge, iterations=iterations, seed=seed)
    rmse = float(np.sqrt(np.mean((mean + np.einsum("nr,nr->n", P[users], Q[items]) - values) ** 2)))
    known = arm_items >= 0
    table = mean + P @ Q[np.where(known, arm_items, 0)].T  # [n_users, K]
    table[:, ~known] = mean
    table = np.clip(table, *value_range)
    if rounded:
        table = np.rint(table)
    arm_of = np.full(n_items, -1)
    arm_of[arm_items[known]] = np.flatnonzero(known)
    on_arm = arm_of[items] >= 0
    observed = pd.DataFrame({"user": users[on_arm], "arm": arm_of[items[on_arm]], "value": values[on_arm]})
    observed = observed.drop_duplicates(["user", "arm"], keep="last")
    table[observed["user"].to_numpy(), observed["arm"].to_numpy()] = observed["value"].to_numpy()
    fit = {
        "mean_rating": mean,
        "train_rmse": rmse,
        "observed_entries": len(observed),
        "filled_entries": int(table.size - len(observed)),
    }
    return Completed(table, Q, np.bincount(observed["arm"].to_numpy(), minlength=len(arm_items)), fit)


def reward_frame(table: np.ndarray, raw_users: np.ndarray) -> pd.DataFrame:
    """The ``rewards`` table the matrix protocol reads: ``user`` (row), the raw id, and one ``r_k`` per arm."""
    frame = pd.DataFrame(table, columns=[f"r_{k}" for k in range(table.shape[1])])
    frame.insert(0, "user", np.arange(len(raw_users)))
    frame.insert(1, "raw_user", raw_users)
    return frame


def arm_frame(features: np.ndarray, observed_per_arm: np.ndarray) -> pd.DataFrame:
    """The ``arms`` table the matrix protocol reads: ``arm``, one ``x_j`` per feature, and ``observed``, the
    entries of the arm's column that were observed rather than filled (the sanity report reads it)."""
    frame = pd.DataFrame(features, columns=[f"x_{j}" for j in range(features.shape[1])])
    frame.insert(0, "arm", np.arange(len(features)))
    frame["observed"] = observed_per_arm
    return frame
