"""MIND impressions as a log (Wu et al. 2020): every news item shown in an impression is one event, the impression's
shown items its candidates, the click its reward.

MIND publishes no propensities: Microsoft News chose the shown lists with its own recommender. Each event's logging
probability is therefore *assumed* to be uniform over its impression, 1 / (items shown), a choice recorded in the
manifest's parameters (``propensities: assumed uniform``) and repeated as a warning by every run and report; replay and
the off-policy estimates on this log are only as good as that assumption. (An impression logs the click of every
item it shows, so a policy that picks one of them is matched on exactly one of the impression's events.)

A policy sees the user (the ``--users`` most active users each their own id, the rest one shared id), each news item's
context (a one-hot of its category) and, as user features, the categories of the user's clicked history as shares.
Impressions are read in time order, train then dev, the first ``--impressions`` of them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import logs
from banditbench.data.logged import mind_spec, read_mind
from banditbench.data.obd import LOG_OPTIONS
from banditbench.data.prepared import up_to_date
from banditbench.data.registry import Dataset, Option, register

ASSUMED = (
    "MIND publishes no propensities: each shown item's logging probability is assumed uniform over its impression "
    "(1 / items shown); replay and off-policy estimates are only as good as that assumption"
)


def history_shares(history: pd.Series, category_of: pd.Series, n_categories: int) -> np.ndarray:
    """Each impression's clicked history as the share of each category [n, categories] (zeros without history)."""
    exploded = history.explode().dropna()
    codes = category_of.reindex(exploded.to_numpy()).to_numpy()
    known = ~np.isnan(codes)
    rows, codes = exploded.index.to_numpy()[known], codes[known].astype(np.int64)
    shares = np.zeros((len(history), n_categories), np.float32)
    np.add.at(shares, (rows, codes), 1.0)
    totals = shares.sum(axis=1, keepdims=True)
    return np.divide(shares, totals, out=shares, where=totals > 0)


def prepare_mind_impressions(
    data_dir: Path,
    *,
    variant: str = "small",
    impressions: int = 100_000,
    users: int = 1000,
    folds: int = logs.DEFAULT_FOLDS,
    ridge: float = logs.DEFAULT_RIDGE,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    verify: bool = True,
    force: bool = False,
) -> Path:
    given = {"variant": variant, "impressions": impressions, "users": users, "propensities": "assumed uniform"}
    parameters = logs.log_parameters(given, "arm", folds, ridge)
    folder = Path(data_dir) / "mind-impressions"
    if up_to_date(folder, parameters, force):
        return folder
    news, behaviors, records, verification = read_mind(source, variant, offline, cache, verify)
    news = news.drop_duplicates("news_id", ignore_index=True)
    behaviors = behaviors.sort_values("time", kind="stable", ignore_index=True)
    if impressions:
        behaviors = behaviors.iloc[:impressions].reset_index(drop=True)
    categories = sorted(news["category"].unique())
    category_of = pd.Series(np.searchsorted(categories, news["category"]), index=news["news_id"], dtype=float)
    known = behaviors["shown"].map(lambda shown: all(item in category_of.index for item in shown))
    behaviors = behaviors[known].reset_index(drop=True)
    items = news["news_id"].to_numpy()
    index_of = pd.Series(np.arange(len(items)), index=items)
    sizes = behaviors["shown"].map(len).to_numpy()
    pools = [index_of[shown].to_numpy() for shown in behaviors["shown"]]
    rows = np.repeat(np.arange(len(behaviors)), sizes)
    user, _ = logs.user_ids(behaviors[["user_id"]].iloc[rows].reset_index(drop=True), users)
    shares = history_shares(behaviors["history"], category_of, len(categories))
    log = logs.Log(
        user=user,
        action=np.concatenate(pools),
        reward=np.concatenate(behaviors["clicked"].to_numpy()).astype(np.float64),
        propensity=1.0 / sizes[rows],
        arm_features=np.eye(len(categories), dtype=np.float32)[category_of[items].to_numpy(np.int64)],
        items=items,
        candidates=[pools[r] for r in rows],
        user_features=shares[rows],
        notes={"impressions": len(behaviors), "clicks": int(sum(map(np.sum, behaviors["clicked"])))},
    )
    dropped = {"an impression showing a news item missing from news.tsv": int((~known).sum())} if (~known).any() else {}
    kept = {"read": int(len(known)), "kept": len(behaviors), "dropped": dropped}
    return logs.write_log(
        folder,
        "mind-impressions",
        log,
        parameters,
        raw_files=records,
        verification=verification,
        warnings=[ASSUMED],
        rows=kept,
        force=force,
    )


register(
    Dataset(
        "mind-impressions",
        "MIND small | large impressions as a log: each shown item an event, the impression its candidates; "
        "uniform logging assumed (MIND has no propensities), with a warning",
        "Wu et al. 2020 (MIND)",
        logs.PROTOCOL,
        prepare_mind_impressions,
        (
            Option("variant", str, "small", "small | large (train + dev).", choices=("small", "large")),
            Option("impressions", int, 100_000, "The first impressions read, in time order (0: all).", minimum=0),
            Option("users", int, 1000, "The most active users kept as users; the rest share one id.", minimum=1),
            *LOG_OPTIONS,
        ),
        raw=lambda variant="small": mind_spec(variant, "train"),
        files="as mind: a folder with MIND<variant>_train.zip and MIND<variant>_dev.zip (or their unpacked folders)",
    )
)
