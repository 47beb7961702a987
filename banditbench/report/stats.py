"""Statistics over seeds and datasets: t confidence intervals, paired tests with Holm's correction, win / tie /
loss counts and average ranks (Demšar 2006's bake-off toolkit, which the bandit papers do not report).

Paired tests pair units by seed index: every algorithm with seed index i saw the same users, arms and noise
(common random numbers), so differences per seed remove most of the shared variance.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
import pandas as pd
from scipy.special import stdtrit  # Student t quantiles (scipy.stats' t.ppf), without scipy.stats' import

ALPHA = 0.05
TESTS = ("t", "wilcoxon")


def describe(values) -> dict[str, float]:
    """n, mean, sample std (ddof = 1) and the two-sided 95 % Student-t interval mean ± t_{n−1}·std/√n."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = values.size
    mean = values.mean() if n else np.nan
    std = values.std(ddof=1) if n > 1 else np.nan
    half = stdtrit(n - 1, 1 - ALPHA / 2) * std / np.sqrt(n) if n > 1 else np.nan
    return {"n": n, "mean": mean, "std": std, "ci_low": mean - half, "ci_high": mean + half}


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values: sorted ascending, p_(i)·(m − i + 1), made monotone, capped at 1.
    NaN entries (no test possible) stay NaN and do not count in m."""
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    m = order.size
    running = 0.0
    for i, index in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[index]))
        adjusted[index] = running
    return adjusted


def paired_pvalues(a, b) -> tuple[float, float]:
    """Two-sided p-values of the paired t-test and the Wilcoxon signed-rank test on a − b.
    All-zero differences give p = 1; a constant non-zero difference gives p = 0 for the t-test."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2:
        return np.nan, np.nan
    if np.all(d == 0):
        return 1.0, 1.0
    from scipy import stats  # half a second to import: only where two algorithms are compared

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_p = 0.0 if np.all(d == d[0]) else float(stats.ttest_rel(a, b).pvalue)
        w_p = float(stats.wilcoxon(d).pvalue)
    return t_p, w_p


def pairwise(
    units: pd.DataFrame, value: str, higher_is_better: bool, algorithms: list[str], *, test: str = "t"
) -> pd.DataFrame:
    """Every pair of algorithms on their common seeds, Holm-corrected over the pairs of one dataset.

    ``winner`` is the algorithm with the better mean difference when the chosen test's adjusted p < ALPHA,
    else empty (a tie)."""
    rows = []
    for dataset, of_dataset in units.groupby("dataset", sort=False):
        wide = of_dataset.pivot(index="seed", columns="algorithm", values=value)
        present = [a for a in algorithms if a in wide]
        block = []
        for a, b in combinations(present, 2):
            common = wide[[a, b]].dropna()
            t_p, w_p = paired_pvalues(common[a], common[b])
            block.append(
                {
                    "dataset": dataset,
                    "a": a,
                    "b": b,
                    "seeds": len(common),
                    "mean_difference": float((common[a] - common[b]).mean()) if len(common) else np.nan,
                    "t_p": t_p,
                    "wilcoxon_p": w_p,
                }
            )
        if not block:
            continue
        block = pd.DataFrame(block)
        block["t_p_holm"] = holm(block["t_p"])
        block["wilcoxon_p_holm"] = holm(block["wilcoxon_p"])
        rows.append(block)
    columns = ["dataset", "a", "b", "seeds", "mean_difference", "t_p", "t_p_holm", "wilcoxon_p", "wilcoxon_p_holm"]
    table = pd.concat(rows, ignore_index=True)[columns] if rows else pd.DataFrame(columns=columns)
    significant = table[f"{test}_p_holm"] < ALPHA
    a_better = table["mean_difference"] > 0 if higher_is_better else table["mean_difference"] < 0
    table["winner"] = np.where(significant, np.where(a_better, table["a"], table["b"]), "")
    return table


def win_tie_loss(comparisons: pd.DataFrame, algorithms: list[str]) -> pd.DataFrame:
    """Cell (row, column) = "w/t/l": datasets on which row beat, tied with, lost to column."""
    counts = {(a, b): [0, 0, 0] for a in algorithms for b in algorithms if a != b}
    for row in comparisons.itertuples():
        if row.winner == "":
            counts[row.a, row.b][1] += 1
            counts[row.b, row.a][1] += 1
        else:
            loser = row.b if row.winner == row.a else row.a
            counts[row.winner, loser][0] += 1
            counts[loser, row.winner][2] += 1
    return pd.DataFrame(
        [[("—" if a == b else "/".join(map(str, counts[a, b]))) for b in algorithms] for a in algorithms],
        index=pd.Index(algorithms, name="algorithm"),
        columns=algorithms,
    )


def average_ranks(means: pd.DataFrame, higher_is_better: dict[str, bool]) -> pd.DataFrame:
    """``means``: dataset, algorithm, mean. Rank 1 = best per dataset (ties share the average rank)."""
    if means.empty:
        return pd.DataFrame(columns=["algorithm", "average_rank", "datasets"])
    ranked = []
    for dataset, of_dataset in means.groupby("dataset", sort=False):
        sign = -1.0 if higher_is_better[dataset] else 1.0
        ranked.append(of_dataset.assign(rank=(sign * of_dataset["mean"]).rank(method="average")))
    ranked = pd.concat(ranked, ignore_index=True)
    table = ranked.groupby("algorithm", sort=False).agg(average_rank=("rank", "mean"), datasets=("rank", "size"))
    return table.reset_index().sort_values(["average_rank", "algorithm"], kind="stable", ignore_index=True)


def improvement_pct(value: float, best_baseline: float, higher_is_better: bool) -> float:
    """The papers' "improvement over the best baseline": the relative reduction in regret (or gain in CTR), in %."""
    if not np.isfinite(best_baseline) or best_baseline == 0:
        return np.nan
    gain = value - best_baseline if higher_is_better else best_baseline - value
    return 100.0 * gain / abs(best_baseline)


def friedman_nemenyi(means: pd.DataFrame, higher_is_better: dict[str, bool]) -> dict | None:
    """Friedman's test over the datasets on which every algorithm ran, and Nemenyi's critical difference
    CD = q_α·√(k(k+1)/(6N)) with q_α the studentized range quantile / √2 (Demšar 2006, §3.2.2): average ranks
    further apart than CD differ significantly. None with fewer than 3 algorithms or 2 datasets."""
    wide = means.pivot(index="dataset", columns="algorithm", values="mean").dropna()
    datasets, k = wide.shape
    if k < 3 or datasets < 2:
        return None
    from scipy import stats

    signs = np.array([-1.0 if higher_is_better[d] else 1.0 for d in wide.index])[:, None]
    oriented = wide.to_numpy() * signs  # lower is better on every row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(stats.friedmanchisquare(*oriented.T).pvalue)
    q = stats.studentized_range.ppf(1 - ALPHA, k, np.inf) / np.sqrt(2)
    return {
        "datasets": datasets,
        "algorithms": k,
        "friedman_p": p,
        "critical_difference": float(q * np.sqrt(k * (k + 1) / (6 * datasets))),
    }
