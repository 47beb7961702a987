"""The Open Bandit Dataset (Saito, Aihara, Matsutani & Narita, NeurIPS 2021 Datasets and Benchmarks): ZOZOTOWN's
fashion recommendations of one week of November 2019, logged by a uniformly random policy and by Bernoulli Thompson
sampling on three campaigns (all: 80 items; men: 34; women: 46), three slots per impression.

Files: ``{policy}/{campaign}/{campaign}.csv`` (an unnamed index, timestamp, item_id, position 1–3, click,
propensity_score, user_feature_0 … 3 as hashed categories, user-item_affinity_0 … K−1) and
``{policy}/{campaign}/item_context.csv`` (an unnamed index, item_id, item_feature_0 as a number, item_feature_1 … 3
as hashed categories), in ZOZO's archive; the small sample that the Open Bandit Pipeline ships (10 000 rows per
policy and campaign) may sit directly under ``{policy}/``. ZOZO publishes no checksum of the archive: the full files
are checked against the row counts the paper publishes (its Table 1), the sample's files against the sha256 the
``obp`` 0.4.1 wheel's RECORD lists.

Every row is one event: the item shown in one slot. The policy sees the user (the combination of the four hashed
user features: the user id of the clustering-of-bandits algorithms, most frequent first) and each item's context:
its features (item_feature_0, then one-hot of item_feature_1 … 3) and, with ``--affinity`` (the default), the
user's affinity to it. The user features are also given to policies as their one-hot encoding. The slot goes to the
reward model, not to the policy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import logs, rows
from banditbench.data.fetch import UNVERIFIED, VERIFIED, Download, RawSpec, count_lines, mismatch, raw_files
from banditbench.data.prepared import up_to_date
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

URL = "https://research.zozo.com/data_release/open_bandit_dataset.zip"
ARCHIVE = "open_bandit_dataset.zip"
POLICIES = ("random", "bts")
CAMPAIGNS = ("all", "men", "women")
ITEMS = {"all": 80, "men": 34, "women": 46}
# Saito et al. 2021, Table 1: rows of each full log
ROWS = {
    ("random", "all"): 1_374_327,
    ("bts", "all"): 12_168_084,
    ("random", "men"): 452_949,
    ("bts", "men"): 4_077_727,
    ("random", "women"): 864_585,
    ("bts", "women"): 7_765_497,
}
# the small sample as shipped in the obp 0.4.1 wheel (the sha256 its RECORD lists)
SAMPLE_SHA256 = {
    ("random", "all", "log"): "7168295b6e0a9eabcf3392320a5dd434e542b68e705d5cd9491499af589812f1",
    ("random", "all", "items"): "eba04cc23d5f130a93ff174c5392986882b94c3839433cb8143870eaa6221358",
    ("bts", "all", "log"): "0ad874e4dbf6902f0845dd478ad8dde5ef6903583d3ffaace78411bdad064106",
    ("bts", "all", "items"): "5d4359ba1cfa3ae88f0f1bae66bd633859fe6323817183632ee57b83539d9153",
    ("random", "men", "log"): "ede6d08c6877f99cd3770f7d09e26c738e6aa6de4445ccccfb1356ba5d06b1eb",
    ("random", "men", "items"): "6d855c2b7e917d0448d71bbe62c023147495882c0fdc8c41e86fef86abf9fe09",
    ("bts", "men", "log"): "db6d1f7ed2d591ba521533e45286d4c1fba7fe57a8ad2e80342210335f43c527",
    ("bts", "men", "items"): "3b411ed6b0471316321a6b93f4f756bb25888eac6218cd71d0b603d41d85732d",
    ("random", "women", "log"): "e65f3bd3beb17664fa69cc129bf7bf852a775f8ffa630506e505fc905315bb34",
    ("random", "women", "items"): "b1ca4905f97703d196004f2ad4552c1e90c2afad8b50688d333b0d2dc0b33147",
    ("bts", "women", "log"): "e5d1b49a39b608585a2f3014a3f54970430cd37a495c1b73fceb85cdf428a5b8",
    ("bts", "women", "items"): "a56295bad066a558eb783055afd9279f5f4e209a4776eafc22151c53f0ac89d4",
}
USER_FEATURES = [f"user_feature_{j}" for j in range(4)]
ITEM_CATEGORIES = [f"item_feature_{j}" for j in (1, 2, 3)]


def spec(policy: str, campaign: str) -> RawSpec:
    return RawSpec(
        "obd",
        (Download(URL, ARCHIVE),),
        {
            "log": (f"{policy}/{campaign}/{campaign}.csv", f"{policy}/{campaign}.csv"),
            "items": (f"{policy}/{campaign}/item_context.csv", f"{policy}/item_context.csv"),
        },
    )


def log_columns(n_items: int) -> list[str]:
    return ["index", "timestamp", "item_id", "position", "click", "propensity_score", *USER_FEATURES] + [
        f"user-item_affinity_{i}" for i in range(n_items)
    ]


def read_items(path: Path, n_items: int) -> pd.DataFrame:
    """item_context.csv: items 0 … K−1, each once, with a numeric item_feature_0 and three hashed categories."""
    names = ["index", "item_id", "item_feature_0", *ITEM_CATEGORIES]
    expected = "OBD item_context.csv: an unnamed index, item_id, item_feature_0 … item_feature_3"
    frame = rows.read_fields(path, expected, names, header=("Unnamed: 0", *names[1:]))
    item = rows.numbers(frame["item_id"], path, "item_id", header=1, low=0, high=n_items - 1, step=1).astype(np.int64)
    row = rows.first(pd.Series(item).duplicated())
    if row is not None:
        raise rows.at_row(path, row, f"item_id {item[row]} appears twice", header=1)
    if len(item) != n_items:
        raise UserError(f"{path}: {len(item)} items, the campaign has {n_items} (items 0 … {n_items - 1})")
    frame["item_id"] = item
    frame["item_feature_0"] = rows.numbers(frame["item_feature_0"], path, "item_feature_0", header=1)
    return frame.sort_values("item_id", ignore_index=True)


def read_log(path: Path, n_items: int) -> pd.DataFrame:
    """{campaign}.csv, every value checked where it is read: an item of the campaign, a slot 1–3, a click 0 or 1, a
    propensity in (0, 1], present user features and finite affinities."""
    names = log_columns(n_items)
    expected = (
        f"OBD log: an unnamed index, timestamp, item_id, position, click, propensity_score, {len(names) - 6} more"
    )
    frame = rows.read_fields(path, expected, names, header=("Unnamed: 0", *names[1:]))
    frame["item_id"] = rows.numbers(frame["item_id"], path, "item_id", header=1, low=0, high=n_items - 1, step=1)
    frame["position"] = rows.numbers(frame["position"], path, "position", header=1, low=1, high=3, step=1)
    frame["click"] = rows.numbers(frame["click"], path, "click", header=1, low=0, high=1, step=1)
    frame["propensity_score"] = propensities(frame["propensity_score"], path, "propensity_score", header=1)
    for name in names[10:]:
        frame[name] = rows.numbers(frame[name], path, name, header=1)
    return frame


def propensities(values: pd.Series, path: Path, name: str, header: int | None = 0) -> np.ndarray:
    """A logging policy's probabilities of the logged actions: numbers in (0, 1], the first other refused by its
    line (a zero is an action the policy could not have taken, which no estimator can weight)."""
    p = rows.numbers(values, path, name, header=header, high=1)
    row = rows.first(p <= 0)
    if row is not None:
        raise rows.at_row(path, row, f"{name} {p[row]:g} is not a probability of a logged action (0 < p ≤ 1)", header)
    return p


def verification_of(raw, policy: str, campaign: str) -> str:
    """``verified`` when each file is the obp wheel's sample file or the log has the published row count (each
    record says which); anything else is refused, naming the file (--no-verify accepts it as unverified)."""
    for record in raw.records:
        if SAMPLE_SHA256.get((policy, campaign, record["member"])) == record["sha256"]:
            record["verified"] = True
        elif record["member"] == "log":
            lines = count_lines(raw["log"]) - 1  # the header line
            if lines != ROWS[policy, campaign]:
                published = f"{ROWS[policy, campaign]:,} rows (Saito et al. 2021, Table 1)"
                raise mismatch(raw["log"], published, f"{lines:,}", "row count")
            record["verified"] = True
    logged = next(r for r in raw.records if r["member"] == "log")
    for record in raw.records:  # the item file of a log verified by its row count comes with it
        record["verified"] = record["verified"] or logged["verified"]
    return VERIFIED


def one_hot(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Each hashed category as one-hot columns over the values it takes (sorted), side by side."""
    return pd.get_dummies(frame[columns].astype(str), columns=columns).to_numpy(np.float32)


def prepare_obd(
    data_dir: Path,
    *,
    campaign: str = "all",
    policy: str = "random",
    affinity: bool = True,
    folds: int = logs.DEFAULT_FOLDS,
    ridge: float = logs.DEFAULT_RIDGE,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    verify: bool = True,
    force: bool = False,
) -> Path:
    given = {"campaign": campaign, "policy": policy, "affinity": affinity, "verify": verify}
    parameters = logs.log_parameters(given, "arm", folds, ridge)
    folder = Path(data_dir) / "obd"
    if up_to_date(folder, parameters, force):
        return folder
    n_items = ITEMS[campaign]
    with raw_files(spec(policy, campaign), source, offline, cache, verify) as raw:
        verification = verification_of(raw, policy, campaign) if verify else UNVERIFIED
        items = read_items(raw["items"], n_items)
        frame = read_log(raw["log"], n_items)
        records = raw.records
    user, n_users = logs.user_ids(frame[USER_FEATURES])
    arm_features = np.column_stack([items["item_feature_0"].to_numpy(np.float32), one_hot(items, ITEM_CATEGORIES)])
    affinities = frame[log_columns(n_items)[10:]].to_numpy(np.float32)[:, :, None] if affinity else None
    log = logs.Log(
        user=user,
        action=frame["item_id"].to_numpy(np.int64),
        reward=frame["click"].to_numpy(np.float64),
        propensity=frame["propensity_score"].to_numpy(np.float64),
        arm_features=arm_features,
        items=items["item_id"].astype(str).to_numpy(),
        position=frame["position"].to_numpy(np.int64),
        extras=affinities,
        user_features=one_hot(frame, USER_FEATURES),
        notes={"clicks": int(frame["click"].sum())},
    )
    rows_read = {"read": len(frame), "kept": len(frame), "dropped": {}}
    return logs.write_log(
        folder, "obd", log, parameters, raw_files=records, verification=verification, rows=rows_read, force=force
    )


LOG_OPTIONS = (
    Option(
        "folds", int, logs.DEFAULT_FOLDS, "Cross-fitting folds of the reward model (DM, DR).", minimum=2, maximum=10
    ),
    Option("ridge", float, logs.DEFAULT_RIDGE, "Ridge λ of the reward model.", minimum=1e-6),
)

register(
    Dataset(
        "obd",
        "Open Bandit Dataset (ZOZOTOWN, 2019): a uniform-random or Bernoulli-TS log with propensities, "
        "--campaign all | men | women (80 | 34 | 46 items, 3 slots); users = hashed user-feature combinations",
        "Saito, Aihara, Matsutani & Narita, NeurIPS 2021 Datasets and Benchmarks",
        logs.PROTOCOL,
        prepare_obd,
        (
            Option("campaign", str, "all", "all | men | women.", choices=CAMPAIGNS),
            Option(
                "policy", str, "random", "The logging policy: random (uniform) | bts (Bernoulli TS).", choices=POLICIES
            ),
            Option("affinity", bool, True, "Add each item's user-item affinity to its context."),
            *LOG_OPTIONS,
        ),
        raw=lambda campaign="all", policy="random": spec(policy, campaign),
        files="open_bandit_dataset.zip or its folder ({policy}/{campaign}/{campaign}.csv and item_context.csv), or "
        "the small sample ({policy}/{campaign}.csv and {policy}/item_context.csv)",
    )
)
