"""The sanity report of a prepared dataset: what was read, what was kept, and whether it can mean anything.

Computed once at prepare time from the tables about to be written and stored in ``manifest.json``
under ``sanity`` (a dict) and ``warnings`` (a list of one-line strings; ``run`` and ``report`` repeat
them). ``banditbench info DATASET`` prints both. Thresholds:

- fewer than ``MIN_RESOLVED`` (50 %) of the references resolve (MIND: impression and history ids that
  name a news item in news.tsv) → error naming the override flag, because the results would be noise;
- median positives per user below ``MIN_MEDIAN_POSITIVES`` (2) → warning;
- more user groups than users / ``USERS_PER_GROUP`` (5) → warning;
- recommendation: no pool (group, or user) has the 1 liked and K − 1 other items a round shows → error with the
  fix (more data, fewer groups, a ``--positive-above`` for ratings on a scale); some pools lacking them → warning;
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


def recommendation(
    tables: dict[str, pd.DataFrame], parameters: dict[str, Any], name: str, protocol: str
) -> tuple[dict[str, Any], list[str]]:
    """Users, items, positives per user, groups, the arms each pool can offer and how many pools can serve a
    round (recommendation protocol); refused when none can."""
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
    if "group" not in users.columns:
        return report, warnings
    group_of = users["group"].to_numpy()
    groups = int(group_of.max()) + 1 if len(group_of) else 0
    report["groups"] = groups
    report["users_per_group"] = quantiles(np.bincount(group_of, minlength=groups))
    if groups > n_users / USERS_PER_GROUP:
        warnings.append(
            f"{groups} groups for {n_users} users (more than users/{USERS_PER_GROUP}): the groups "
            "are nearly single users; choose fewer with --groups"
        )
    if protocol != "recommendation":  # round-robin steps draw their arms from every item
        return report, warnings
    serve = parameters.get("serve", "groups")
    pool = serve[:-1]
    liked, others = pool_arms(inter, group_of if serve == "groups" else np.arange(n_users), n_items, parameters)
    report[f"positive_arms_per_{pool}"] = quantiles(liked)
    report[f"other_arms_per_{pool}"] = quantiles(others)
    arms = int(parameters.get("arms", 10))
    paper = parameters.get("mode", "paper") == "paper"
    need_others = arms - 1 if paper else 1
    servable = int(((liked >= 1) & (others >= need_others)).sum())
    report[f"servable_{serve}"] = servable
    if servable == 0:
        raise UserError(f"{name}: {unservable(inter, n_items, others, parameters, need_others)}")
    if servable < len(liked):
        warnings.append(
            f"{len(liked) - servable} of the {len(liked)} {serve} cannot serve a round (each needs 1 liked and "
            f"{need_others} other item{'s' * (need_others > 1)}): runs draw from the other {servable}"
        )
    return report, warnings


def pool_arms(
    inter: pd.DataFrame, pool_of_user: np.ndarray, n_items: int, parameters: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Per pool, the liked arms and the other arms a round can show, as the recommendation protocol draws them:
    in paper mode distinct items, an item a member liked never among the others (and with ``negatives =
    unrated`` every item not liked is another); in the code modes the pool's positive and negative entries."""
    n_pools = int(pool_of_user.max()) + 1
    pool = pool_of_user[inter["user"].to_numpy()]
    item = inter["item"].to_numpy()
    label = inter["label"].to_numpy()
    if parameters.get("mode", "paper") != "paper":
        return np.bincount(pool[label > 0], minlength=n_pools), np.bincount(pool[label < 0], minlength=n_pools)
    key = pool * n_items + item
    liked_keys = np.unique(key[label > 0])
    liked = np.bincount(liked_keys // n_items, minlength=n_pools)
    if parameters.get("negatives", "rated") == "unrated":
        return liked, n_items - liked
    other_keys = np.setdiff1d(key[label <= 0], liked_keys)
    return liked, np.bincount(other_keys // n_items, minlength=n_pools)


def unservable(
    inter: pd.DataFrame, n_items: int, others: np.ndarray, parameters: dict[str, Any], need_others: int
) -> str:
    """Why no pool can serve a round, and the fix."""
    arms, serve = int(parameters.get("arms", 10)), parameters.get("serve", "groups")
    if parameters.get("mode", "paper") == "paper" and n_items < arms:
        return (
            f"only {n_items} items are left, and a round shows {arms} (1 liked and {arms - 1} others): prepare "
            "it from more ratings (a larger file, or a larger --top-items if it cut the items)"
        )
    if not others.any():
        return only_positives(inter["rating"].to_numpy(), parameters.get("positive_above", 0.0))
    fix = "choose fewer --groups, so that each pools more users" if serve == "groups" else "serve groups"
    return (
        f"no {serve[:-1]} has the 1 liked and {need_others} other items a round needs (the most other items of "
        f"one: {int(others.max())}); {fix}"
    )


def only_positives(ratings: np.ndarray, threshold: float) -> str:
    """Why ratings all above ``--positive-above`` leave no item to show beside the liked one, and the fix: for
    ratings on a scale, the threshold at its midpoint rounded down (1–5 stars: 3, so 4 and 5 are the positives)."""
    low, high = float(ratings.min()), float(ratings.max())
    if low == high:
        fix = "the data hold positives only: add the items shown but not chosen, with reward 0"
    else:
        middle = np.floor((low + high) / 2)
        fix = f"ratings on a scale: pass --positive-above {middle:g} to make those above it the positives"
    return (
        f"every rating ({low:g} to {high:g}) is above --positive-above {threshold:g}, so a round has no item to "
        f"show beside the liked one; {fix}"
    )


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
    protocol: str,
    tables: dict[str, pd.DataFrame],
    *,
    allow_unresolved: bool = False,
    parameters: dict[str, Any] | None = None,
    name: str = "",
) -> tuple[dict[str, Any], list[str]]:
    """The protocol's report and warnings for ``tables`` (empty for protocols with no raw data); ``parameters``
    (the dataset's preprocessing parameters) tell how its rounds are formed."""
    if "interactions" in tables and "users" in tables:
        return recommendation(tables, parameters or {}, name, protocol)
    if "samples" in tables:
        return classification(tables)
    if "behaviors" in tables and "news" in tables:
        return logged(tables, allow_unresolved)
    if "rewards" in tables and "arms" in tables:
        return matrix(tables)
    return {}, []
