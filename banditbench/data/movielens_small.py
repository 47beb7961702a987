"""MovieLens ml-latest-small as a dense agent × arm reward table for the matrix protocol (``envs/matrix.py``).

BASS (Cherkaoui, Barlier & Colin, Sec. 7 and App. R) evaluates on a full reward table: users are the agents,
K movies the arms, and "since the users did not rate all the movies systematically, we fill the missing values
with a matrix-factorization approach (Rendle & Schmidt-Thieme 2008)". The authors' loader reads ml-latest-small
(610 users), keeps K ≤ 30 movies, describes each movie by the one-hot vector of its genres (the 20 labels in
order of first appearance in movies.csv) truncated to the first d entries, and rounds the factorisation's
predictions to integers.

Here the table is filled by :func:`~banditbench.data.completion.als`, a ridge alternating-least-squares
factorisation of the centred ratings (rank, λ and iterations are prepare options; the start is drawn from
``--seed``, so the table is a deterministic function of the raw files and the options). Observed ratings are
kept; every missing (user, arm) entry is the prediction, clipped to the rating scale [0.5, 5] (then rounded
under ``--compat bandpy``).

Arms are the first K movies by id. ``--compat none`` (default) takes an arm's features and its rewards from the
same movie. ``--compat bandpy`` reproduces the authors' loader: the rewards of arm k are those of movie id k
(ids start at 1, so arm 0 is entirely imputed) while its features are those of the k-th movie in movies.csv
(id k + 1 in ml-latest-small), and the filled entries are rounded to integers.

``--variant 100k`` reads the MovieLens-100K files (u.data, u.item; 943 users) the same way: a stand-in with the
same rating scale when ml-latest-small is not at hand. ml-latest-small has no published checksum; the sha256 of
the files read is recorded in the manifest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import completion, movielens
from banditbench.data.fetch import Download, RawSpec, raw_files
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

NAME = "movielens-small"
SMALL = Download(movielens.BASE + "ml-latest-small.zip", "ml-latest-small.zip")  # no published checksum
VARIANTS = ("small", "100k")
FEATURES = ("genres", "factors")
COMPAT = ("none", "bandpy")
RATING_RANGE = (0.5, 5.0)


def spec(variant: str = "small") -> RawSpec:
    if variant == "100k":
        return movielens.spec("100k", NAME)
    return RawSpec("movielens-small", (SMALL,), {"ratings": ("ratings.csv",), "movies": ("movies.csv",)})


def genre_vectors(genres: pd.Series) -> np.ndarray:
    """One-hot genres, the labels of the '|'-joined lists in order of first appearance (the authors' columns)."""
    labels: dict[str, int] = {}
    lists = [g.split("|") if isinstance(g, str) and g else [] for g in genres]
    for names in lists:
        for name in names:
            labels.setdefault(name, len(labels))
    onehot = np.zeros((len(lists), len(labels)))
    for row, names in enumerate(lists):
        onehot[row, [labels[n] for n in names]] = 1.0
    return onehot


def build(
    ratings: pd.DataFrame,
    movies: pd.DataFrame,
    *,
    arms: int,
    dim: int,
    features: str,
    compat: str,
    rank: int,
    ridge: float,
    iterations: int,
    seed: int,
) -> tuple[dict[str, pd.DataFrame], dict[str, float]]:
    """The reward table [users × arms] and the arm features [arms × dim] (see the module docstring)."""
    movies = movies.sort_values("raw_item", kind="stable").reset_index(drop=True)
    if arms > len(movies):
        raise UserError(f"--arms {arms}: the movies file lists only {len(movies)} movies")
    user_ids, users = np.unique(ratings["raw_user"].to_numpy(), return_inverse=True)
    item_ids = np.union1d(ratings["raw_item"].to_numpy(), movies["raw_item"].to_numpy())
    items = np.searchsorted(item_ids, ratings["raw_item"].to_numpy())

    if compat == "bandpy":  # rewards of movie id k (k = 0 … K−1), features of the k-th movie of the file
        reward_movies, feature_rows = np.arange(arms), np.arange(arms)
    else:  # the first K movies: features and rewards of the same movie
        reward_movies, feature_rows = movies["raw_item"].to_numpy()[:arms], np.arange(arms)
    known = np.isin(reward_movies, item_ids)  # a movie id absent from the files gets the mean rating
    completed = completion.complete(
        users,
        items,
        ratings["rating"].to_numpy(np.float64),
        len(user_ids),
        len(item_ids),
        np.where(known, np.searchsorted(item_ids, reward_movies), -1),
        value_range=RATING_RANGE,
        rounded=compat == "bandpy",  # predictions clipped to the rating scale, then rounded (0.5 rounds to 0)
        rank=rank,
        ridge=ridge,
        iterations=iterations,
        seed=seed,
    )

    if features == "genres":
        x = genre_vectors(movies["genres"])[feature_rows]
    else:
        x = completed.item_factors[np.searchsorted(item_ids, movies["raw_item"].to_numpy()[feature_rows])]
    if dim > x.shape[1]:
        raise UserError(f"--dim {dim}: the {features} features have only {x.shape[1]} dimensions")
    arm_table = completion.arm_frame(x[:, :dim], completed.observed_per_arm)
    arm_table["reward_movie"] = reward_movies
    arm_table["feature_movie"] = movies["raw_item"].to_numpy()[feature_rows]
    arm_table["title"] = movies["title"].to_numpy()[feature_rows]
    reward_table = completion.reward_frame(completed.table, user_ids)
    return {"rewards": reward_table, "arms": arm_table}, completed.fit


def prepare(
    data_dir: Path,
    *,
    variant: str = "small",
    agents: int = 20,
    arms: int = 30,
    dim: int = 10,
    features: str = "genres",
    compat: str = "none",
    rank: int = 10,
    ridge: float = 1.0,
    iterations: int = 15,
    seed: int = 0,
    noise: float = 1.0,
    pulling: str = "async",
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    verify: bool = True,
) -> Path:
    parameters = {
        "variant": variant,
        "agents": agents,
        "arms": arms,
        "dim": dim,
        "features": features,
        "compat": compat,
        "rank": rank,
        "ridge": ridge,
        "iterations": iterations,
        "seed": seed,
        "noise": noise,
        "pulling": pulling,
    }
    if features == "factors" and dim > rank:
        raise UserError(f"--dim {dim} exceeds --rank {rank}: the factor features have only {rank} dimensions")
    folder = Path(data_dir) / NAME
    if up_to_date(folder, parameters, force):
        return folder
    reader = "100k" if variant == "100k" else "25m"  # ml-latest-small has the CSV layout of ml-20m/25m
    with raw_files(spec(variant), source, offline, cache, verify) as raw:
        ratings = movielens.read_ratings(raw["ratings"], reader)
        movies = movielens.read_movies(raw["movies"], reader)
    tables, fit = build(
        ratings,
        movies,
        arms=arms,
        dim=dim,
        features=features,
        compat=compat,
        rank=rank,
        ridge=ridge,
        iterations=iterations,
        seed=seed,
    )
    n_users = len(tables["rewards"])
    if agents > n_users:
        raise UserError(f"--agents {agents}: the ratings hold only {n_users} users")
    tables["fit"] = pd.DataFrame([fit])  # the factorisation's fit, beside the tables it filled
    counts = {"users": n_users, "arms": arms}
    rows = {"read": len(ratings), "kept": len(ratings)}
    return write_dataset(
        folder,
        NAME,
        tables,
        parameters,
        protocol="matrix",
        raw_files=raw.records,
        counts=counts,
        force=force,
        rows=rows,
        verification=raw.verification,
    )


register(
    Dataset(
        NAME,
        "MovieLens ml-latest-small (or --variant 100k as a stand-in): users × the first K movies, missing "
        "ratings filled by ridge ALS, genre (or factor) arm features",
        "Harper & Konstan 2015; BASS Sec. 7, App. R",
        "matrix",
        prepare,
        (
            Option(
                "variant",
                str,
                "small",
                "small (ml-latest-small, the authors' data) | 100k (MovieLens-100K stand-in).",
                choices=VARIANTS,
            ),
            Option("agents", int, 20, "N agents drawn (without replacement) from the users in every run.", minimum=1),
            Option("arms", int, 30, "K arms: the first K movies (the authors' loader allows K ≤ 30).", minimum=2),
            Option("dim", int, 10, "d: arm features truncated to their first d entries.", minimum=1),
            Option(
                "features",
                str,
                "genres",
                "genres (one-hot, the authors' choice) | factors (the ALS item factors).",
                choices=FEATURES,
            ),
            Option(
                "compat",
                str,
                "none",
                "none (features and rewards of the same movie) | bandpy (the authors' "
                "off-by-one between features and rewards, rounded predictions).",
                choices=COMPAT,
            ),
            *completion.FACTORISATION_OPTIONS,
            Option("seed", int, 0, "seed of the ALS starting factors.", minimum=0),
            *completion.PROTOCOL_OPTIONS,
        ),
        raw=lambda variant="small": spec(variant),
        files="ml-latest-small.zip or its folder: ratings.csv + movies.csv; --variant 100k: ml-100k.zip or u.data + "
        "u.item",
    )
)
