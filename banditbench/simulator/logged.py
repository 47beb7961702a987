"""A prepared logged dataset (``prepare mind`` / ``prepare movielens-logged``) as integer arrays, shared by the
IPS simulator and the two-stage learners (Zhang et al. 2022, §4–§5).

``load_logged(dataset)`` reads the ``news`` and ``behaviors`` tables once (Arrow, vectorised; MIND-large has
2.2 M training impressions) into a :class:`LoggedData`:

- items: news ids get indices 1..n in the order of the ``news`` table; index 0 is padding / unknown.
  ``titles`` [n+1, L] int32 are word indices of the lower-cased title tokens (regex ``[\\w]+|[.,!?;|]``, the
  tokenizer of the authors' preprocessing, first L ≤ 30 tokens; 0 = padding). The vocabulary holds every title
  word (min count 1), most frequent first (ties alphabetical), so index 0 stays free for padding; there is no
  out-of-vocabulary word among the titles themselves. ``topic`` [n+1] (padding: -1), ``topic_names`` [q].
- users: user ids sorted; ``user`` of an impression indexes ``user_ids``.
- impressions (``Impressions``): per impression ``user``, ``time``, ``split`` (a string per impression),
  ``valid`` (validation impression), ``train`` (split == "train"); its history, shown items and click labels
  as flat arrays with offsets (``history[history_offsets[i]:history_offsets[i+1]]``).

On top of that:

- ``initial_histories(data, length)``: each user's logged history, the history field of the user's earliest
  training impression (the learners' initial state and the personalised simulator's user).
- ``known_split(data, fraction, exclude_users)``: the "known" pre-training clicks S_known (first ε = 20 % of
  training clicks by time, stable, so file order among equal or missing times), minus a trial's users, and
  ``candidate_users`` (the users of the remaining 80 %, from which trials draw U_τ).
- ``click_rows(...)``: training rows of the click models, one per click: the positive followed by ``npratio``
  negatives drawn without replacement from the same impression (padding 0 when there are fewer).
- ``last_items(offsets, flat, rows, length)``: the last ``length`` items of ragged lists as a padded matrix.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from banditbench.data import PreparedDataset
from banditbench.errors import UserError

TOKEN = re.compile(r"[\w]+|[.,!?;|]")
MAX_TITLE = 30
HISTORY = 50
KNOWN_FRACTION = 0.2
NPRATIO = 4
PROTOCOL = "ips-simulator"


@dataclass(frozen=True)
class Impressions:
    """The logged impressions, flat: impression i's lists are ``x[x_offsets[i]:x_offsets[i + 1]]``."""

    user: np.ndarray  # [I] int64, index into LoggedData.user_ids
    time: np.ndarray  # [I] float64 unix seconds (NaN when absent)
    split: np.ndarray  # [I] str: "train" / "dev" (MIND), "train" / "test" (MovieLens)
    valid: np.ndarray  # [I] bool, validation impression
    history_offsets: np.ndarray  # [I+1] int64
    history: np.ndarray  # [H] int32 item indices (0 = unknown id)
    shown_offsets: np.ndarray  # [I+1] int64
    shown: np.ndarray  # [S] int32 item indices
    clicked: np.ndarray  # [S] int8 labels aligned with shown

    def __len__(self) -> int:
        return len(self.user)

    @property
    def train(self) -> np.ndarray:
        return self.split == "train"

    @property
    def shown_impression(self) -> np.ndarray:
        """[S] the impression of every shown entry."""
        return np.repeat(np.arange(len(self.user)), np.diff(self.shown_offsets))


@dataclass(frozen=True)
class LoggedData:
    news_ids: np.ndarray  # [n+1] str, news_ids[0] = "" (padding)
    titles: np.ndarray  # [n+1, L] int32 word indices, 0 = padding
    vocabulary: list[str]  # vocabulary[0] = "<pad>"
    topic: np.ndarray  # [n+1] int64, -1 for padding
    topic_names: list[str]  # [q]
    user_ids: np.ndarray  # [U] str, sorted
    impressions: Impressions
    manifest_sha256: str

    @property
    def n_items(self) -> int:
        """Real items (indices 1..n_items)."""
        return len(self.news_ids) - 1

    @property
    def n_topics(self) -> int:
        return len(self.topic_names)

    @property
    def n_users(self) -> int:
        return len(self.user_ids)


def tokenize(titles: pd.Series, max_len: int = MAX_TITLE) -> tuple[np.ndarray, list[str]]:
    """Word indices [len(titles), max_len] (0 = padding) and the vocabulary, most frequent word first."""
    tokens = [TOKEN.findall(t.lower())[:max_len] for t in titles]
    counts = Counter(w for row in tokens for w in row)
    vocabulary = ["<pad>"] + sorted(counts, key=lambda w: (-counts[w], w))
    index = {w: i for i, w in enumerate(vocabulary)}
    matrix = np.zeros((len(tokens), max_len), np.int32)
    for row, words in enumerate(tokens):
        matrix[row, : len(words)] = [index[w] for w in words]
    return matrix, vocabulary


def item_index(ids: pa.ChunkedArray | pa.Array, news_ids: pa.Array) -> np.ndarray:
    """1-based position of every id in ``news_ids``; 0 for an id the news table lacks."""
    position = pc.index_in(ids, value_set=news_ids)
    return (pc.fill_null(position, -1).to_numpy(zero_copy_only=False) + 1).astype(np.int32)


def flat_lists(column: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """Values and offsets [rows+1] of a list column (nulls count as empty lists)."""
    column = (
        pc.fill_null(column.combine_chunks(), pa.scalar([], column.type))
        if column.null_count
        else column.combine_chunks()
    )
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False).astype(np.int64)
    return pc.list_flatten(column), np.concatenate([[0], np.cumsum(lengths)])


def load_logged(dataset: PreparedDataset, max_title: int = MAX_TITLE) -> LoggedData:
    """Read a prepared MIND / MovieLens-logged dataset into integer arrays (see the module docstring)."""
    if dataset.manifest.get("protocol") != PROTOCOL:
        raise UserError(
            f"dataset {dataset.name!r} is prepared for the {dataset.manifest.get('protocol')!r} "
            f"protocol; the simulator needs logged impressions (`banditbench prepare mind` or "
            f"`prepare movielens-logged`)"
        )
    news = dataset.table("news")
    titles, vocabulary = tokenize(news["title"].fillna(""), max_title)
    n_topics = int(news["topic"].max()) + 1 if len(news) else 0
    names = news.drop_duplicates("topic").set_index("topic")["subcategory"]
    topic_names = [str(names.get(t, "")) for t in range(n_topics)]
    news_ids = pa.array(news["news_id"].astype(str).to_numpy())

    behaviors = dataset.arrow("behaviors")
    users, user_ids = pd.factorize(behaviors.column("user_id").to_numpy(), sort=True)
    history, history_offsets = flat_lists(behaviors.column("history"))
    shown, shown_offsets = flat_lists(behaviors.column("shown"))
    clicked, _ = flat_lists(behaviors.column("clicked"))
    time = behaviors.column("time").to_numpy().astype(np.float64)
    impressions = Impressions(
        user=users.astype(np.int64),
        time=time,
        split=behaviors.column("split").to_numpy(zero_copy_only=False).astype(str),
        valid=behaviors.column("valid").to_numpy(zero_copy_only=False).astype(bool),
        history_offsets=history_offsets,
        history=item_index(history, news_ids),
        shown_offsets=shown_offsets,
        shown=item_index(shown, news_ids),
        clicked=clicked.to_numpy(zero_copy_only=False).astype(np.int8),
    )
    return LoggedData(
        news_ids=np.concatenate([[""], news["news_id"].astype(str).to_numpy()]).astype(object),
        titles=np.vstack([np.zeros((1, max_title), np.int32), titles]),
        vocabulary=vocabulary,
        topic=np.concatenate([[-1], news["topic"].to_numpy(np.int64)]),
        topic_names=topic_names,
        user_ids=np.asarray(user_ids, dtype=object),
        impressions=impressions,
        manifest_sha256=dataset.manifest_sha256,
    )


def last_items(offsets: np.ndarray, flat: np.ndarray, rows: np.ndarray, length: int = HISTORY) -> np.ndarray:
    """[len(rows), length] int32: the last ``length`` entries of each ragged row, in order, padded with 0 at
    the end (the encoders mask index 0)."""
    rows = np.asarray(rows)
    end = offsets[rows + 1]
    start = np.maximum(offsets[rows], end - length)
    position = start[:, None] + np.arange(length)
    inside = position < end[:, None]
    return np.where(inside, flat[np.minimum(position, max(len(flat) - 1, 0))] if len(flat) else 0, 0).astype(np.int32)


def by_time(time: np.ndarray) -> np.ndarray:
    """The order of ``time`` ascending, stable (file order among ties; missing times last, or all in file order)."""
    if np.isnan(time).all():
        return np.arange(len(time))
    return np.argsort(np.nan_to_num(time, nan=np.inf), kind="stable")


def time_order(impressions: Impressions, chosen: np.ndarray) -> np.ndarray:
    """Indices of ``chosen`` impressions sorted by time (``by_time``)."""
    chosen = np.flatnonzero(chosen)
    return chosen[by_time(impressions.time[chosen])]


def first_train_impression(data: LoggedData) -> np.ndarray:
    """[U] each user's earliest training impression (by time, then file order); -1 when the user has none,
    in which case ``initial_histories`` falls back to the user's earliest impression of any split."""
    imp = data.impressions
    first = np.full(data.n_users, -1, np.int64)
    for chosen in (np.ones(len(imp), bool), imp.train):  # any split first, then overwritten by train
        order = time_order(imp, chosen)
        users, where = np.unique(imp.user[order], return_index=True)
        first[users] = order[where]
    return first


def initial_histories(data: LoggedData, length: int = HISTORY) -> np.ndarray:
    """[U, length] int32: every user's logged history, the history field of their earliest training
    impression, last ``length`` items, padded with 0 (the authors' ``train_clicked_history``)."""
    imp = data.impressions
    first = first_train_impression(data)
    histories = np.zeros((data.n_users, length), np.int32)
    has = first >= 0
    histories[has] = last_items(imp.history_offsets, imp.history, first[has], length)
    return histories


@dataclass(frozen=True)
class KnownSplit:
    """The known split S_known (Zhang et al. 2022, §5): one row per click of the first ``fraction`` of
    training clicks."""

    impression: np.ndarray  # [R] int64 impression of the click
    item: np.ndarray  # [R] int32 clicked item
    candidate_users: np.ndarray  # users of the remaining clicks (sorted), from which trials draw U_τ


def training_clicks(data: LoggedData) -> tuple[np.ndarray, np.ndarray]:
    """(impression, item) of every click in a training impression, in time order (stable)."""
    imp = data.impressions
    entry = np.flatnonzero(imp.clicked == 1)
    impression = imp.shown_impression[entry]
    keep = imp.train[impression]
    entry, impression = entry[keep], impression[keep]
    order = by_time(imp.time[impression])
    return impression[order], imp.shown[entry[order]]


def known_split(
    data: LoggedData, fraction: float = KNOWN_FRACTION, exclude_users: np.ndarray | None = None
) -> KnownSplit:
    """The first ``fraction`` of training clicks by time (authors' ``cb_train``), without the clicks of
    ``exclude_users`` (a trial's U_τ); ``candidate_users`` are the users of the other clicks."""
    if not 0 <= fraction <= 1:
        raise UserError(f"the known fraction must be in [0, 1], got {fraction}")
    impression, item = training_clicks(data)
    cut = int(fraction * len(impression))
    candidates = np.unique(data.impressions.user[impression[cut:]])
    impression, item = impression[:cut], item[:cut]
    if exclude_users is not None and len(exclude_users):
        keep = ~np.isin(data.impressions.user[impression], exclude_users)
        impression, item = impression[keep], item[keep]
    return KnownSplit(impression, item, candidates)


def negatives_of(impressions: Impressions) -> tuple[np.ndarray, np.ndarray]:
    """Flat non-clicked shown items and their offsets per impression."""
    negative = impressions.clicked == 0
    counts = np.bincount(impressions.shown_impression[negative], minlength=len(impressions))
    return impressions.shown[negative], np.concatenate([[0], np.cumsum(counts)])


def sample_without_replacement(n: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """[len(n), k] positions: a uniform k-subset of range(n_r) per row (Floyd's algorithm, vectorised over
    rows); where n_r < k the row holds 0..n_r-1 then -1."""
    rows = len(n)
    chosen = np.full((rows, k), -1, np.int64)
    full = n >= k
    for j in range(k):
        top = n - k + j  # Floyd: draw from [0, top]; a repeat is replaced by top itself
        draw = (rng.random(rows) * (np.maximum(top, 0) + 1)).astype(np.int64)
        repeat = (chosen[:, :j] == draw[:, None]).any(axis=1)
        chosen[:, j] = np.where(full, np.where(repeat, top, draw), np.where(j < n, j, -1))
    return chosen


@dataclass(frozen=True)
class ClickRows:
    """Training rows of a click model: candidates[:, 0] is the clicked item, the rest negatives (0 = pad)."""

    impression: np.ndarray  # [R] int64
    candidates: np.ndarray  # [R, 1 + npratio] int32
    labels: np.ndarray  # [R, 1 + npratio] float32, 1 in column 0

    def __len__(self) -> int:
        return len(self.impression)


def click_rows(
    data: LoggedData, impression: np.ndarray, item: np.ndarray, rng: np.random.Generator, npratio: int = NPRATIO
) -> ClickRows:
    """One row per (impression, clicked item): the click plus ``npratio`` of the impression's non-clicked
    items drawn without replacement (all of them, padded with item 0, when there are fewer)."""
    negatives, offsets = negatives_of(data.impressions)
    counts = offsets[impression + 1] - offsets[impression]
    position = sample_without_replacement(counts, npratio, rng)
    picked = np.where(
        position >= 0,
        negatives[np.minimum(offsets[impression][:, None] + np.maximum(position, 0), max(len(negatives) - 1, 0))]
        if len(negatives)
        else 0,
        0,
    )
    candidates = np.column_stack([item, picked]).astype(np.int32)
    labels = np.zeros(candidates.shape, np.float32)
    labels[:, 0] = 1
    return ClickRows(np.asarray(impression, np.int64), candidates, labels)
