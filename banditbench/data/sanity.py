"""The sanity report of a prepared dataset: what was read, what was kept, and whether it can mean anything.

Computed once at prepare time from the tables about to be written and stored in ``manifest.json``
under ``sanity`` (a dict) and ``warnings`` (a list of one-line strings; ``run`` and ``report`` repeat
them). ``banditbench info DATASET`` prints both. Thresholds:

- fewer than ``MIN_RESOLVED`` (50 %) of the references resolve (MIND: impression and history ids that
  name a news item in news.tsv) → error naming the override flag, because the results would be noise;
- median positives per user below ``MIN_MEDIAN_POSITIVES`` (2) → warning;
- more user groups than users / ``USERS_PER_GROUP`` (5) → warning;
- a reward table (matrix protocol) with an arm none of whose entries was observed, or an arm feature that is 0
  for every arm → warning.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from banditbench.errors import UserError

MIN_RESOLVED = 0.5
MIN_MEDIAN_POSITIVES = 2
USERS_PER_GROUP = 5
QUANTILES = {"min": 0.0, "q10": 0.1, "q25": 0.25, "median": 0.5, "q75": 0.75, "q90": 0.9, "max": 1.0}
ALLOW_UNRESOLVED = "--allow-unresolved"


def quantiles(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return {name: 0.0 for name in QUANTILES}
    return {name: round(float(np.quantile(values, q)), 4) for name, q in QUANTILES.items()}


def rows_report(read: int, dropped: dict[str, int]) -> dict[str, Any]:
    """Rows read, kept and dropped (by reason) of the main raw table."""
    dropped = {reason: int(n) for reason, n in dropped.items() if n}
    return {"read": int(read), "kept": int(read) - sum(dropped.values()), "dropped": dropped}


def recommendation(tables: dict[str, pd.DataFrame]) -> tuple[dict[str, Any], list[str]]:
    """Users, items, positives per user, groups and the arms each pool can offer."""
    inter, users = tables["interactions"], tables["users"]
    n_users, n_items = len(users), len(tables["items"])
    positive = inter["label"].to_numpy() > 0
    per_user = np.bincount(inter["user"].to_numpy()[positive], minlength=n_users)
    report: dict[str, Any] = {
        "users": n_users,
        "items": n_items,
        "interactions": len(inter),
        "positives_per_user": quantiles(per_user),
    }
    warnings = []
    median = report["positives_per_user"]["median"]
    if median < MIN_MEDIAN_POSITIVES:
        warnings.append(
            f"median positives per user is {median:g} (< {MIN_MEDIAN_POSITIVES}): most users have "
            "almost nothing to learn from"
        )
    if "group" in users.columns:
        group_of = users["group"].to_numpy()
        groups = int(group_of.max()) + 1 if len(group_of) else 0
        report["groups"] = groups
        report["users_per_group"] = quantiles(np.bincount(group_of, minlength=groups))
        pairs = pd.DataFrame(
            {"pool": group_of[inter["user"].to_numpy()], "item": inter["item"].to_numpy(), "positive": positive}
        ).drop_duplicates()
        report["positive_arms_per_group"] = quantiles(
            pairs[pairs["positive"]].groupby("pool")["item"].nunique().reindex(range(groups), fill_value=0)
        )
        report["other_arms_per_group"] = quantiles(
            pairs[~pairs["positive"]].groupby("pool")["item"].nunique().reindex(range(groups), fill_value=0)
        )
        if groups > n_users / USERS_PER_GROUP:
            warnings.append(
                f"{groups} groups for {n_users} users (more than users/{USERS_PER_GROUP}): the groups "
                "are nearly single users; choose fewer with --groups"
            )
    return report, warnings


def classification(tables: dict[str, pd.DataFrame]) -> tuple[dict[str, Any], list[str]]:
    samples = tables["samples"]
    labels = samples["label"].to_numpy()
    per_class = np.bincount(labels) if len(labels) else np.zeros(0, int)
    report = {
        "samples": len(samples),
        "features": sum(c.startswith("x_") for c in samples.columns),
        "classes": len(per_class),
        "samples_per_class": quantiles(per_class),
    }
    warnings = []
    if len(per_class) < 2:
        warnings.append(f"only {len(per_class)} class: every arm but one is always wrong")
    elif per_class.min() == 0:
        warnings.append(f"{int((per_class == 0).sum())} classes have no sample")
    return report, warnings


def logged(tables: dict[str, pd.DataFrame], allow_unresolved: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Impressions and histories must name news items that exist; the share that resolves is reported."""
    news, behaviors = tables["news"], tables["behaviors"]
    known = set(news["news_id"])
    report: dict[str, Any] = {
        "news": len(news),
        "impressions": len(behaviors),
        "users": int(behaviors["user_id"].nunique()),
    }
    warnings = []
    for column, label in (("shown", "impressions → news"), ("history", "history → news")):
        ids = [i for row in behaviors[column] for i in row]
        share = sum(i in known for i in ids) / len(ids) if ids else 1.0
        report[f"resolved_{column}"] = round(share, 4)
        if share < MIN_RESOLVED:
            message = (
                f"only {share:.1%} of the {label} references ({len(ids):,}) name a news item in the news "
                f"file: is part of news.tsv missing? {ALLOW_UNRESOLVED} prepares it anyway"
            )
            if not allow_unresolved:
                raise UserError(message)
            warnings.append(message)
        elif share < 1.0:
            warnings.append(f"{1 - share:.1%} of the {label} references name no news item in the news file")
    clicks = behaviors.groupby("user_id")["clicked"].agg(lambda c: int(sum(int(np.sum(x)) for x in c)))
    report["clicks_per_user"] = quantiles(clicks.to_numpy())
    return report, warnings


def matrix(tables: dict[str, pd.DataFrame]) -> tuple[dict[str, Any], list[str]]:
    """The reward table's size, the share of its entries observed rather than filled by the factorisation, and
    for query data (a ``queries`` table) the documents and distinct items of each query."""
    rewards, arms = tables["rewards"], tables["arms"]
    n_arms = len(arms)
    report: dict[str, Any] = {"table_rows": len(rewards), "arms": n_arms}
    warnings = []
    if "observed" in arms.columns:
        observed = arms["observed"].to_numpy()
        share = float(observed.sum()) / (len(rewards) * n_arms) if len(rewards) and n_arms else 0.0
        report["observed_share"] = round(share, 4)
        report["filled_share"] = round(1 - share, 4)
        report["observed_per_arm"] = quantiles(observed)
        empty = np.flatnonzero(observed == 0)
        if empty.size:
            warnings.append(
                f"{empty.size} of the {n_arms} arms (arm {', '.join(map(str, empty[:5].tolist()))}"
                f"{', …' if empty.size > 5 else ''}) have no observed reward: their columns are the "
                "factorisation's predictions only"
            )
    if "queries" in tables:
        queries = tables["queries"]
        report["queries"] = len(queries)
        report["documents_per_query"] = quantiles(queries["documents"].to_numpy())
        report["items_per_query"] = quantiles(queries["items"].to_numpy())
    features = arms.filter(like="x_").to_numpy()
    zero = np.flatnonzero(~features.any(axis=0)) if len(features) else np.zeros(0, int)
    if zero.size:
        warnings.append(
            f"{zero.size} of the {features.shape[1]} arm features (x_{', x_'.join(map(str, zero[:5].tolist()))}"
            f"{', …' if zero.size > 5 else ''}) are 0 for every arm: they carry no information"
        )
    return report, warnings


def analyse(
    protocol: str, tables: dict[str, pd.DataFrame], *, allow_unresolved: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """The protocol's report and warnings for ``tables`` (empty for protocols with no raw data)."""
    if "interactions" in tables and "users" in tables:
        return recommendation(tables)
    if "samples" in tables:
        return classification(tables)
    if "behaviors" in tables and "news" in tables:
        return logged(tables, allow_unresolved)
    if "rewards" in tables and "arms" in tables:
        return matrix(tables)
    return {}, []
