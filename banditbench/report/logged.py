"""The value of each policy on a log (the ``logged`` protocol), by every evaluator of report/offpolicy.py.

One row per dataset, algorithm and estimator: the estimate (the mean over seeds of each unit's), its 95 % interval
(the mean over seeds of each unit's bounds: the log's sampling error, which seeds do not vary), the events kept or
the effective sample size, and, for the replay, the CTR lift over the random policy's replay on the same log with
its delta-method interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from banditbench.report.offpolicy import ASSUMPTIONS, ESTIMATORS, Estimate, every_estimate, ratio

RANDOM = "random"
COLUMNS = ["dataset", "algorithm", "estimator", "estimate", "ci_low", "ci_high", "size", "se", "seeds", "events"]


def unit_estimates(frame: pd.DataFrame, bounds: tuple[float, float]) -> dict[str, Estimate]:
    """Every estimate of one unit's choices, from its shard's logged columns (runner/logged.py)."""
    kept = frame["kept"].to_numpy(bool)
    logged_reward = frame["logged_reward"].to_numpy(float)
    return every_estimate(
        logged_reward[kept],
        logged_reward,
        frame["propensity"].to_numpy(float),
        frame["matched"].to_numpy(float),  # the replayed policy picks the logged arm with probability 0 or 1
        frame["estimate_logged"].to_numpy(float),
        frame["estimate_chosen"].to_numpy(float),
        bounds,
    )


def mean_estimate(estimates: list[Estimate]) -> Estimate:
    """The mean over seeds of each field (seeds where an estimate is undefined left out)."""
    fields = np.array([[e.value, e.low, e.high, e.size, e.se] for e in estimates], dtype=float)
    defined = fields[np.isfinite(fields[:, 0])]
    return Estimate(*defined.mean(axis=0)) if len(defined) else Estimate.undefined(fields[:, 3].mean())


def logged_table(rounds: pd.DataFrame, logged: dict[str, dict], algorithms: list[str]) -> pd.DataFrame:
    """The rows of every logged dataset of ``rounds`` (a Results' rounds; ``logged``: each dataset's shard metadata,
    runner/logged.py), the algorithms in the order given."""
    rows = []
    for dataset, meta in logged.items():
        bounds = tuple(meta["reward_range"])
        of_dataset = rounds[rounds["dataset"] == dataset]
        by_algorithm = dict(list(of_dataset.groupby("algorithm", sort=False)))
        for algorithm, frames in ((a, by_algorithm[a]) for a in algorithms if a in by_algorithm):
            units = [unit_estimates(frame, bounds) for _, frame in frames.groupby("seed", sort=True)]
            for name in ESTIMATORS:
                e = mean_estimate([unit[name] for unit in units])
                rows.append(
                    [
                        dataset,
                        algorithm,
                        name,
                        e.value,
                        e.low,
                        e.high,
                        e.size,
                        e.se,
                        len(units),
                        len(frames) // len(units),
                    ]
                )
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["assumption"] = table["estimator"].map(ASSUMPTIONS)
    return with_lift(table)


def with_lift(table: pd.DataFrame) -> pd.DataFrame:
    """The replay rows' CTR ÷ the random policy's replay CTR on the same dataset, with its interval (NaN where
    random did not run or either kept no reward)."""
    lift = np.full((len(table), 3), np.nan)
    for _, rows in table[table["estimator"] == "replay"].groupby("dataset", sort=False):
        random = rows[rows["algorithm"] == RANDOM]
        if random.empty:
            continue
        base = as_estimate(random.iloc[0])
        for index, row in rows.iterrows():
            lift[table.index.get_loc(index)] = ratio(as_estimate(row), base)
    return table.assign(lift=lift[:, 0], lift_low=lift[:, 1], lift_high=lift[:, 2])


def as_estimate(row: pd.Series) -> Estimate:
    return Estimate(row["estimate"], row["ci_low"], row["ci_high"], row["size"], row["se"])
