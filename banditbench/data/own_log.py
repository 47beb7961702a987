"""Your own log: ``prepare log --source FILE --name NAME`` reads a CSV or Parquet file with one row per logged event,
in the order the events happened (or sorted by ``--timestamp``): the user, the arm shown (``--action``), the reward,
and where you have them the logging policy's probability of that arm (``--propensity``) and the slot it was shown in
(``--position``). Every arm of the catalogue (every distinct action) is offered in every event.

A log without propensities is read as if its logging policy had been uniform over the catalogue: that is an
assumption (``propensities: assumed uniform`` in the manifest) and a warning every run and report repeats, since
replay and every off-policy estimate are biased when it is false. ``prepare interactions`` builds recommendation
pools from the same kind of file instead.

Arm contexts: the ``--item-features`` columns (an item's first row, scaled to unit norm), or else a one-hot of the
item (at most 1 000 items).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import logs, rows
from banditbench.data.fetch import UNPUBLISHED
from banditbench.data.obd import LOG_OPTIONS, propensities
from banditbench.data.own import NAME_OPTION, check_name, column, header_lines, names, numbers, read_table, unit_rows
from banditbench.data.prepared import sha256_of, up_to_date
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

MAX_ONE_HOT = 1000
ASSUMED = (
    "the log has no propensity column: its logging policy is assumed uniform over the {items} items; replay and "
    "off-policy estimates are biased if it was not (name the column with --propensity)"
)


def arm_features_of(
    frame: pd.DataFrame, path: Path, n_items: int, action_index: np.ndarray, feature_columns: list[str]
) -> np.ndarray:
    """Each item's context: its given features as a unit row (from its first row in the log), or one-hot."""
    if feature_columns:
        first = frame.assign(_item=action_index).drop_duplicates("_item").sort_values("_item")
        for c in feature_columns:
            numbers(column(frame, path, c, "--item-features"), path, c)
        return unit_rows(first[feature_columns].to_numpy(np.float64)).astype(np.float32)
    if n_items > MAX_ONE_HOT:
        raise UserError(
            f"{path}: {n_items} items are too many for one-hot contexts (at most {MAX_ONE_HOT}); "
            "name item-feature columns with --item-features"
        )
    return np.eye(n_items, dtype=np.float32)


def slots_of(frame: pd.DataFrame, path: Path, position: str, line) -> np.ndarray:
    """The slot each logged action was shown in, 1, 2, …, or a one-line error naming the row."""
    slots = numbers(column(frame, path, position, "--position"), path, position)
    row = rows.first((slots < 1) | (slots != np.rint(slots)))
    if row is not None:
        raise rows.at_row(path, row, f"position {slots[row]:g} is not a slot 1, 2, …", line)
    return slots


def prepare_log(
    data_dir: Path,
    *,
    name: str | None = None,
    source: str | None = None,
    user: str = "user",
    action: str = "action",
    reward: str = "reward",
    propensity: str | None = None,
    position: str | None = None,
    timestamp: str | None = None,
    item_features: str | None = None,
    folds: int = logs.DEFAULT_FOLDS,
    ridge: float = logs.DEFAULT_RIDGE,
    force: bool = False,
    **_,
) -> Path:
    name = check_name(name)
    frame, path = read_table(source)
    line = header_lines(path)
    if timestamp is not None:
        times = numbers(column(frame, path, timestamp, "--timestamp"), path, timestamp)
        frame = frame.iloc[np.argsort(times, kind="stable")].reset_index(drop=True)
    items, action_index = np.unique(column(frame, path, action, "--action").astype(str).to_numpy(), return_inverse=True)
    feature_columns = names(item_features)
    arm_features = arm_features_of(frame, path, len(items), action_index, feature_columns)
    given = {
        "source_sha256": sha256_of(path),
        "user": user,
        "action": action,
        "reward": reward,
        "propensity": propensity,
        "position": position,
        "timestamp": timestamp,
        "item_features": feature_columns,
        "propensities": "recorded" if propensity else "assumed uniform",
    }
    parameters = logs.log_parameters(given, "arm", folds, ridge)
    folder = Path(data_dir) / name
    if up_to_date(folder, parameters, force):
        return folder
    users, _ = logs.user_ids(column(frame, path, user, "--user").astype(str).to_frame())
    if propensity:
        p = propensities(column(frame, path, propensity, "--propensity"), path, f"column {propensity!r} value", line)
    else:
        p = np.full(len(frame), 1.0 / len(items))
    slots = slots_of(frame, path, position, line) if position else None
    log = logs.Log(
        user=users,
        action=action_index.astype(np.int64),
        reward=numbers(column(frame, path, reward, "--reward"), path, reward),
        propensity=p,
        arm_features=arm_features,
        items=items,
        position=None if slots is None else slots.astype(np.int64),
    )
    record = {"member": "log", "file": path.name, "origin": str(path), "bytes": path.stat().st_size,
              "sha256": given["source_sha256"], "verified": False}  # fmt: skip
    return logs.write_log(
        folder,
        name,
        log,
        parameters,
        raw_files=[record],
        verification=UNPUBLISHED,
        warnings=[] if propensity else [ASSUMED.format(items=len(items))],
        rows={"read": len(frame), "kept": len(frame), "dropped": {}},
        force=force,
    )


register(
    Dataset(
        "log",
        "your own log (CSV or Parquet: user, action, reward [, propensity, position, timestamp, item features]) → "
        "the logged protocol; without propensities, uniform logging is assumed and warned about",
        "Li, Chu, Langford & Wang, WSDM 2011 (replay)",
        logs.PROTOCOL,
        prepare_log,
        (
            NAME_OPTION,
            Option("user", str, "user", "Column of user ids."),
            Option("action", str, "action", "Column of the logged arms (item ids)."),
            Option("reward", str, "reward", "Column of rewards (numeric)."),
            Option(
                "propensity",
                str,
                None,
                "Column of the logging policy's probabilities of the logged arms [default: none, uniform assumed].",
                optional=True,
            ),  # fmt: skip
            Option("position", str, None, "Column of slots, from 1 [default: none].", optional=True),
            Option("timestamp", str, None, "Column to order the events by [default: the file's order].", optional=True),
            Option(
                "item_features",
                str,
                None,
                "Comma-separated item-feature columns [default: one-hot items].",
                optional=True,
            ),  # fmt: skip
            *LOG_OPTIONS,
        ),
        named=True,
        files="one CSV (header row, any delimiter) or Parquet file",
    )
)
