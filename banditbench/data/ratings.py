"""The rating-matrix pipeline of the recommendation papers (M-CNB §5.2, Meta-Ban §4.1; their code §15.A).

ratings (user, item, rating) → keep the top users and items by rating count → binarise → SVD features
of dimension d for users and items → K-means user groups. Written as three tables:

- ``users``: user, raw_user, group, f_0..f_{d−1}
- ``items``: item, raw_item, f_0..f_{d−1}
- ``interactions``: user, item, rating, label (+1 positive, −1 negative)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from banditbench.data.registry import Option
from banditbench.data.sanity import USERS_PER_GROUP, rows_report
from banditbench.errors import UserError

DENSE_SVD_CELLS = 250_000  # below this many matrix cells an exact dense SVD is cheap enough
MODES = ("paper", "metaban-code", "mcnb-code")  # how the recommendation protocol forms a round
SERVE = ("groups", "users")  # who a round serves
DEFAULT_GROUPS = 50  # M-CNB's n = 50 user pools


def check_protocol(mode: str, serve: str) -> None:
    """The recommendation protocol's --mode and --serve, checked when a dataset is prepared for it."""
    if mode not in MODES:
        raise UserError(f"unknown --mode {mode!r}; choose from: {', '.join(MODES)}")
    if serve not in SERVE:
        raise UserError(f"unknown --serve {serve!r}; choose from: {', '.join(SERVE)}")


@dataclass(frozen=True)
class RatingOptions:
    """Preprocessing parameters; defaults follow M-CNB (10000 × 10000, rating > 4, d = 10, 50 groups)."""

    top_users: int = 10_000
    top_items: int = 10_000
    positive_above: float = 4.0  # "If the user's rating is more than 4 stars … reward is 1"
    negative_below: float | None = None  # None: every other rating is a 0-reward arm (paper); 2.0: code's −1 set
    positive_below: float | None = None  # Meta-Ban §4.1: "If the user's rating is less than 2 stars … reward is 1"
    dim: int = 10
    groups: int | None = 50  # None: DEFAULT_GROUPS, or users / USERS_PER_GROUP when that is fewer
    seed: int = 0  # K-means random_state (the authors use 0)

    def as_dict(self) -> dict:
        return {
            "top_users": self.top_users,
            "top_items": self.top_items,
            "positive_above": self.positive_above,
            "negative_below": self.negative_below,
            "dim": self.dim,
            "groups": self.groups,
            "seed": self.seed,
            # recorded only when set, so that datasets prepared before the option keep their parameters
            **({"positive_below": self.positive_below} if self.positive_below is not None else {}),
        }

    def rule(self) -> str:
        """The positive's rule, in words."""
        if self.positive_below is not None:
            return f"positive = rating < {self.positive_below}"
        return f"positive = rating > {self.positive_above}"

    def validate(self) -> None:
        for flag, value in (
            ("--top-users", self.top_users),
            ("--top-items", self.top_items),
            ("--groups", self.groups),
        ):
            if value is not None and value < 1:
                raise UserError(f"{flag} must be at least 1, got {value}")
        if self.dim < 2:
            raise UserError(f"--dim must be at least 2, got {self.dim}")
        if self.positive_below is not None and self.negative_below is not None:
            raise UserError(
                "--negative-below goes with --positive-above; --positive-below makes every other rating a negative"
            )
        if self.negative_below is not None and self.negative_below > self.positive_above:
            raise UserError(
                f"--negative-below ({self.negative_below}) cannot exceed the positive threshold ({self.positive_above})"
            )


RATING_OPTIONS = (
    Option("top_users", int, 10_000, "Users kept by rating count (M-CNB 10000; Meta-Ban 2000).", minimum=1),
    Option("top_items", int, 10_000, "Items kept by rating count (both papers: 10000).", minimum=1),
    Option("positive_above", float, 4.0, "A rating above this is a positive (reward 1)."),
    Option(
        "negative_below",
        float,
        None,
        "Only ratings below this are negatives, the middle is dropped (authors' "
        "code: 2) [default: every other rating is a negative, as the papers say].",
        optional=True,
    ),
    Option(
        "positive_below",
        float,
        None,
        "A rating below this is a positive and every other rating a negative, replacing --positive-above "
        "(Meta-Ban: 2) [default: unset].",
        optional=True,
    ),
    Option("dim", int, 10, "SVD feature dimension d of users and items.", minimum=2),
    Option("groups", int, 50, "K-means user groups (the bandit's users).", minimum=1),
    Option("seed", int, 0, "K-means random_state (the authors use 0).", minimum=0),
)
PROTOCOL_OPTIONS = (
    Option("mode", str, "paper", "recommendation protocol: paper | metaban-code | mcnb-code.", choices=MODES),
    Option("serve", str, "groups", "Who a round serves: groups (K-means pre-clusters) | users.", choices=SERVE),
)


def rating_options(*, without: tuple[str, ...] = (), **defaults) -> tuple[Option, ...]:
    """The rating-matrix options of a dataset: some left out (links have no rating), some defaults changed."""
    return tuple(replace(o, default=defaults.get(o.name, o.default)) for o in RATING_OPTIONS if o.name not in without)


def with_rating_options(prepare):
    """A prepare function taking ``options=RatingOptions(...)``, called with the options as separate keywords."""
    names = [o.name for o in RATING_OPTIONS]

    def declared(data_dir, **values):
        fields = {name: values.pop(name) for name in names if name in values}
        return prepare(data_dir, options=RatingOptions(**fields), **values)

    return declared


def binarise(ratings: pd.DataFrame, options: RatingOptions) -> pd.DataFrame:
    """label +1 for rating > positive_above (or < positive_below); −1 for the rest, or only below negative_below
    (the code drops the middle)."""
    rating = ratings["rating"].to_numpy()
    positive = (
        rating < options.positive_below if options.positive_below is not None else rating > options.positive_above
    )
    if options.negative_below is None:
        keep = np.ones(len(ratings), bool)
    else:
        keep = positive | (rating < options.negative_below)
    labelled = ratings.loc[keep].copy()
    labelled["label"] = np.where(positive[keep], 1, -1).astype(np.int8)
    return labelled


def top_by_count(ids: pd.Series, n: int) -> np.ndarray:
    """The n most frequent ids; ties broken by id so the choice is deterministic."""
    counts = ids.value_counts(sort=False)
    order = np.lexsort((counts.index.to_numpy(), -counts.to_numpy()))
    return counts.index.to_numpy()[order[:n]]


def select_top(labelled: pd.DataFrame, top_users: int, top_items: int) -> pd.DataFrame:
    """Top 3N users by count, then the top M items among them, then the top N users (read_movie.ipynb;
    the paper: "the top N users and top M items with the most rating records")."""
    kept = labelled[labelled["raw_user"].isin(top_by_count(labelled["raw_user"], 3 * top_users))]
    kept = kept[kept["raw_item"].isin(top_by_count(kept["raw_item"], top_items))]
    return kept[kept["raw_user"].isin(top_by_count(kept["raw_user"], top_users))]


def svd_features(matrix, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """[rownorm(U[:, :d−1]), 1]/√2 for users and the same from V for items: unit-norm rows whose last
    coordinate is 1/√2 (the authors' ExtractFeatures, verified on their shipped files)."""
    from scipy.sparse.linalg import svds
    from sklearn.utils.extmath import svd_flip

    k = dim - 1
    if min(matrix.shape) <= k or matrix.shape[0] * matrix.shape[1] <= DENSE_SVD_CELLS:
        u, s, vt = np.linalg.svd(matrix.toarray(), full_matrices=False)
    else:
        u, s, vt = svds(matrix.astype(np.float64), k=k, random_state=0)
        order = np.argsort(-s, kind="stable")
        u, s, vt = u[:, order], s[order], vt[order]
    u, vt = svd_flip(u[:, :k], vt[:k])  # fix the sign of each singular pair so the features are deterministic
    if u.shape[1] < k:  # fewer singular vectors than d − 1 (tiny matrices): pad with zeros
        u = np.pad(u, ((0, 0), (0, k - u.shape[1])))
        vt = np.pad(vt, ((0, k - vt.shape[0]), (0, 0)))
    return normalise(u), normalise(vt.T)


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return np.hstack([unit, np.ones((len(unit), 1))]) / np.sqrt(2.0)


def build(
    ratings: pd.DataFrame, options: RatingOptions, what: str
) -> tuple[dict[str, pd.DataFrame], dict[str, int], dict[str, object]]:
    """ratings with columns raw_user, raw_item, rating (+ any extra columns) → users, items, interactions tables,
    their counts, and the rows read / kept / dropped (by reason) for the sanity report."""
    import scipy.sparse as sp
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    options.validate()
    binary = binarise(ratings, options)
    labelled = select_top(binary, options.top_users, options.top_items)
    rows = rows_report(
        len(ratings),
        {
            f"rating between {options.negative_below} and {options.positive_above}": len(ratings) - len(binary),
            f"outside the top {options.top_users} users and {options.top_items} items": len(binary) - len(labelled),
        },
    )
    if labelled.empty or not (labelled["label"] > 0).any():
        raise UserError(
            f"{what}: no ratings left after keeping the top {options.top_users} users and "
            f"{options.top_items} items with {options.rule()}"
        )
    raw_users = np.sort(labelled["raw_user"].unique())
    raw_items = np.sort(labelled["raw_item"].unique())
    n_groups = options.groups or min(DEFAULT_GROUPS, max(1, len(raw_users) // USERS_PER_GROUP))
    if n_groups > len(raw_users):
        raise UserError(f"--groups ({n_groups}) exceeds the {len(raw_users)} users left in {what}")
    user = np.searchsorted(raw_users, labelled["raw_user"].to_numpy())
    item = np.searchsorted(raw_items, labelled["raw_item"].to_numpy())
    label = labelled["label"].to_numpy()
    matrix = sp.csr_matrix((label.astype(np.float64), (user, item)), shape=(len(raw_users), len(raw_items)))
    user_features, item_features = svd_features(matrix, options.dim)
    # One OpenMP thread: as fast on 2 cores (10× faster when they are shared) and the same on every machine.
    with threadpool_limits(1):
        groups = KMeans(n_clusters=n_groups, random_state=options.seed, n_init=10).fit_predict(user_features)

    features = [f"f_{j}" for j in range(options.dim)]
    users = pd.DataFrame({"user": np.arange(len(raw_users)), "raw_user": raw_users, "group": groups.astype(np.int64)})
    users[features] = user_features
    items = pd.DataFrame({"item": np.arange(len(raw_items)), "raw_item": raw_items})
    items[features] = item_features
    extra = [c for c in labelled.columns if c not in ("raw_user", "raw_item", "rating", "label")]
    interactions = pd.DataFrame(
        {
            "user": user.astype(np.int64),
            "item": item.astype(np.int64),
            "rating": labelled["rating"].to_numpy(np.float32),
            "label": label,
            **{c: labelled[c].to_numpy() for c in extra},
        }
    )
    interactions = interactions.sort_values(["user", "item"], kind="stable").reset_index(drop=True)
    counts = {
        "raw_ratings": len(ratings),
        "users": len(users),
        "items": len(items),
        "interactions": len(interactions),
        "positives": int((label > 0).sum()),
        "negatives": int((label < 0).sum()),
        "groups": n_groups,
    }
    return {"users": users, "items": items, "interactions": interactions}, counts, rows
