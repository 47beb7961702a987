"""The user's own data: a table of interactions, or any labelled table, prepared under a name of their choice.

``prepare interactions --source FILE --name NAME`` reads a CSV or Parquet file with one row per
interaction (columns user, item, reward; optionally a timestamp and item-feature columns) and builds
the recommendation protocol's pools exactly as for MovieLens (M-CNB §5.2): top users × items by count,
positive = reward above ``--positive-above``, K-means user groups. Item contexts are the SVD features
of the interaction matrix, or, when ``--item-features`` names columns, those columns (from an item's first
row) scaled to unit norm; a user's features are then the mean of the items it rated positively, scaled the
same way. The K-means user groups come from the SVD of the interactions either way.

``prepare classification --source FILE --target COLUMN --name NAME`` turns any table into the
classification protocol (M-CNB §5.3: a class is a user, the arms are the classes): the target column
gives the classes, every other column is a feature (text columns one-hot encoded).

Several such datasets coexist, each in ``datasets/<NAME>/``; ``run --dataset NAME`` finds them by the
protocol their manifest names.
"""

from __future__ import annotations

import csv
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import classification as labelled
from banditbench.data import ratings as pipeline
from banditbench.data import rows, sanity
from banditbench.data.fetch import UNPUBLISHED, reading
from banditbench.data.prepared import sha256_of, up_to_date, write_dataset
from banditbench.data.registry import DATASETS, Dataset, Option, register
from banditbench.errors import UserError

MIN_INTERACTIONS = 20
MIN_SAMPLES = 10
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_name(name: str | None) -> str:
    if not name:
        raise UserError("--name is required: the folder under --data-dir, and the name `run --dataset` takes")
    if not NAME.match(name):
        raise UserError(f"--name {name!r} must be letters, digits, '.', '_' or '-' (it names a folder)")
    if name in DATASETS:
        raise UserError(f"--name {name!r} is a registered dataset; choose another name for your own data")
    return name


def read_table(source: str | None) -> tuple[pd.DataFrame, Path]:
    """A CSV (any delimiter pandas can sniff) or Parquet file, by its suffix."""
    if source is None:
        raise UserError("--source is required: the CSV or Parquet file with your data")
    path = Path(source).expanduser()
    if not path.is_file():
        raise UserError(f"--source {source} is not a file")
    if path.stat().st_size == 0:
        raise UserError(f"{path}: the file is empty")
    parquet = is_parquet(path)
    with reading(path, "a Parquet file" if parquet else "a CSV file with a header row"):
        try:
            frame = pd.read_parquet(path) if parquet else pd.read_csv(path, sep=None, engine="python")
        except csv.Error as e:  # the delimiter sniffer's, outside pandas' own errors
            raise ValueError(str(e)) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame, path


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def header_lines(path: Path) -> int | None:
    """Where a table's rows start: after the header line of a CSV; None for Parquet, whose rows have no line."""
    return None if is_parquet(path) else 1


def column(frame: pd.DataFrame, path: Path, name: str, flag: str) -> pd.Series:
    if name not in frame.columns:
        shown = ", ".join(frame.columns[:12]) + (", …" if len(frame.columns) > 12 else "")
        raise UserError(f"{path}: no column {name!r} (it has: {shown}); name yours with {flag}")
    values = frame[name]
    row = rows.first(values.isna())
    if row is not None:
        problem = f"column {name!r} has no value ({int(values.isna().sum())} empty values in all)"
        raise rows.at_row(path, row, problem, header_lines(path))
    return values


def numbers(values: pd.Series, path: Path, name: str) -> np.ndarray:
    return rows.numbers(values, path, f"column {name!r} value", header=header_lines(path))


def names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


# What common exports call the user, item and reward columns (MovieLens, Amazon, Yelp, click logs), compared with
# case, "_", "-" and spaces ignored; read in this order where the default name is absent and no flag names another.
COLUMN_NAMES = {
    "user": ("user", "userid", "uid", "customerid", "visitorid", "reviewerid"),
    "item": ("item", "itemid", "iid", "movieid", "productid", "businessid", "asin", "articleid", "newsid"),
    "reward": ("reward", "rating", "ratings", "stars", "overall", "score", "click", "clicked", "label"),
}


def recognised_columns(frame: pd.DataFrame, given: dict[str, str]) -> dict[str, str]:
    """The column each role reads: the name given, or, where the role's default name is given but absent, the first
    column whose name is a common one for the role (``COLUMN_NAMES``)."""
    plain = {str(c).lower().replace("_", "").replace("-", "").replace(" ", ""): c for c in frame.columns}
    found = {}
    for role, name in given.items():
        if name == role and name not in frame.columns:
            found[role] = next((plain[a] for a in COLUMN_NAMES[role] if a in plain), name)
        else:
            found[role] = name
    return found


def read_ratings(frame: pd.DataFrame, path: Path, user: str, item: str, reward: str, timestamp: str | None):
    """The user, item, reward (and timestamp) columns as the rating pipeline reads them, each checked."""
    ratings = pd.DataFrame(
        {
            "raw_user": column(frame, path, user, "--user").astype(str),
            "raw_item": column(frame, path, item, "--item").astype(str),
            "rating": numbers(column(frame, path, reward, "--reward"), path, reward),
        }
    )
    if timestamp is not None:
        ratings["timestamp"] = numbers(column(frame, path, timestamp, "--timestamp"), path, timestamp)
    return ratings


def add_item_features(tables: dict, frame: pd.DataFrame, item: str, feature_columns: list[str]) -> None:
    """The given item features as unit rows on the items, and on each user the unit sum of the items it liked."""
    given = frame.assign(raw_item=frame[item].astype(str)).drop_duplicates("raw_item").set_index("raw_item")
    items = tables["items"][["item", "raw_item"]].copy()
    x = unit_rows(given.loc[items["raw_item"], feature_columns].to_numpy(np.float64))
    items[[f"f_{j}" for j in range(x.shape[1])]] = x
    inter = tables["interactions"]
    liked = inter[inter["label"] > 0]
    sums = np.zeros((len(tables["users"]), x.shape[1]))
    np.add.at(sums, liked["user"].to_numpy(), x[liked["item"].to_numpy()])
    users = tables["users"][["user", "raw_user", "group"]].copy()
    users[[f"f_{j}" for j in range(x.shape[1])]] = unit_rows(sums)
    tables["items"], tables["users"] = items, users


def prepare_interactions(
    data_dir: Path,
    *,
    name: str | None = None,
    source: str | None = None,
    user: str = "user",
    item: str = "item",
    reward: str = "reward",
    timestamp: str | None = None,
    item_features: str | None = None,
    options: pipeline.RatingOptions | None = None,
    mode: str = "paper",
    serve: str = "groups",
    force: bool = False,
    **_,
) -> Path:
    name = check_name(name)
    options = options or pipeline.RatingOptions(positive_above=0.0, groups=None)
    options.validate()
    pipeline.check_protocol(mode, serve)
    frame, path = read_table(source)
    if timestamp is None and "timestamp" in frame.columns:
        timestamp = "timestamp"
    given = {"user": user, "item": item, "reward": reward}
    columns = recognised_columns(frame, given)
    user, item, reward = columns["user"], columns["item"], columns["reward"]
    ratings = read_ratings(frame, path, user, item, reward, timestamp)
    feature_columns = names(item_features)
    for c in feature_columns:
        numbers(column(frame, path, c, "--item-features"), path, c)
    if len(ratings) < MIN_INTERACTIONS:
        raise UserError(f"{path}: {len(ratings)} interactions, too few to learn from (at least {MIN_INTERACTIONS})")
    if (ratings["rating"] > options.positive_above).all():  # refused before the factorisation, with the fix
        raise UserError(f"{path}: {sanity.only_positives(ratings['rating'].to_numpy(), options.positive_above)}")
    duplicates = ratings.duplicated(["raw_user", "raw_item"], keep="last")
    ratings = ratings[~duplicates].reset_index(drop=True)
    source_sha256 = sha256_of(path)
    parameters = {
        "source_sha256": source_sha256,
        "user": user,
        "item": item,
        "reward": reward,
        "timestamp": timestamp,
        "item_features": feature_columns,
        **options.as_dict(),
        "mode": mode,
        "serve": serve,
        "arms": 10,
    }
    if columns != given:  # the names read for the defaults, which the prepare command prints
        parameters["recognised"] = {role: c for role, c in columns.items() if c != given[role]}
    folder = Path(data_dir) / name
    if up_to_date(folder, parameters, force):
        return folder
    tables, counts, report = pipeline.build(ratings, options, str(path))
    report["read"] += int(duplicates.sum())
    if duplicates.any():
        report["dropped"] = {"repeated (user, item): the last row kept": int(duplicates.sum()), **report["dropped"]}
    if feature_columns:
        add_item_features(tables, frame, item, feature_columns)
    record = {
        "member": "interactions",
        "file": path.name,
        "origin": str(path),
        "bytes": path.stat().st_size,
        "sha256": source_sha256,
        "verified": False,
    }
    return write_dataset(
        folder,
        name,
        tables,
        parameters,
        protocol="recommendation",
        raw_files=[record],
        counts=counts,
        force=force,
        rows=report,
        verification=UNPUBLISHED,
    )


def prepare_table(
    data_dir: Path,
    *,
    name: str | None = None,
    source: str | None = None,
    target: str | None = None,
    normalise: str = "l2",
    encoding: str = "block",
    force: bool = False,
    **_,
) -> Path:
    name = check_name(name)
    if not target:
        raise UserError("--target is required: the column holding the class of each row")
    frame, path = read_table(source)
    classes = column(frame, path, target, "--target")
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise UserError(f"{path}: no feature columns besides {target!r}")
    empty = [c for c in features.columns if features[c].isna().any()]
    if empty:
        raise UserError(f"{path}: column {empty[0]!r} has {int(features[empty[0]].isna().sum())} empty values")
    if len(frame) < MIN_SAMPLES:
        raise UserError(f"{path}: {len(frame)} rows, too few for the classification protocol (at least {MIN_SAMPLES})")
    text = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if text:  # categorical columns one-hot, as for UCI mushroom
        features = pd.get_dummies(features, columns=text, prefix=text).sort_index(axis=1)
    y = labelled.encode_labels(classes.astype(str).to_numpy() if classes.dtype == object else classes.to_numpy())
    if y.max() < 1:
        raise UserError(f"{path}: column {target!r} holds one class only; the protocol needs at least 2")
    source_sha256 = sha256_of(path)
    parameters = {"source_sha256": source_sha256, "target": target, "normalise": normalise, "encoding": encoding}
    folder = Path(data_dir) / name
    if up_to_date(folder, parameters, force):
        return folder
    x = labelled.apply_normalisation(features.to_numpy(np.float32), normalise, images=False)
    counts = {"samples": len(y), "features": x.shape[1], "classes": int(y.max()) + 1}
    record = {
        "member": "table",
        "file": path.name,
        "origin": str(path),
        "bytes": path.stat().st_size,
        "sha256": source_sha256,
        "verified": False,
    }
    return write_dataset(
        folder,
        name,
        {"samples": labelled.samples_table(x, y)},
        parameters,
        protocol="classification",
        raw_files=[record],
        counts=counts,
        force=force,
        rows={"read": len(frame), "kept": len(y), "dropped": {}},
        verification=UNPUBLISHED,
    )


GROUPS_HELP = (
    f"K-means user groups (the bandit's users) [default: {pipeline.DEFAULT_GROUPS}, or users/{sanity.USERS_PER_GROUP} "
    "when that is fewer]."
)
NAME_OPTION = Option(
    "name", str, None, "Name of your dataset: its folder under --data-dir and `run --dataset NAME`.", required=True
)

register(
    Dataset(
        "interactions",
        "your own interactions (CSV or Parquet: user, item, reward [, timestamp, item features]) → "
        "recommendation pools as for MovieLens",
        "M-CNB §5.2 pipeline",
        "recommendation",
        pipeline.with_rating_options(prepare_interactions),
        (
            NAME_OPTION,
            Option("user", str, "user", "Column of user ids."),
            Option("item", str, "item", "Column of item ids."),
            Option("reward", str, "reward", "Column of rewards or ratings (numeric)."),
            Option(
                "timestamp",
                str,
                None,
                "Column of times, kept with each interaction [default: 'timestamp' if there].",
                optional=True,
            ),
            Option(
                "item_features",
                str,
                None,
                "Comma-separated item-feature columns [default: SVD features of the interactions].",
                optional=True,
            ),
            *(
                replace(o, help=GROUPS_HELP) if o.name == "groups" else o
                for o in pipeline.rating_options(positive_above=0.0, groups=None)
            ),
            *pipeline.PROTOCOL_OPTIONS,
        ),
        named=True,
        files="one CSV (header row, any delimiter) or Parquet file",
    )
)

register(
    Dataset(
        "classification",
        "your own labelled table (CSV or Parquet, --target COLUMN) → classification protocol, a class per user",
        "M-CNB §5.3 protocol",
        "classification",
        prepare_table,
        (
            NAME_OPTION,
            Option("target", str, None, "Column holding each row's class.", required=True),
            Option("normalise", str, "l2", "l2 (row unit norm) | none.", choices=("l2", "none")),
            Option(
                "encoding",
                str,
                "block",
                "Arm contexts: block (d·K, M-CNB) | shift (d + K − 1, Meta-Ban's code).",
                choices=labelled.ENCODINGS,
            ),
        ),
        named=True,
        files="one CSV (header row, any delimiter) or Parquet file",
    )
)
