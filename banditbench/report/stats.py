"""Statistics over seeds and datasets: bootstrap intervals of means, paired tests that say when they are degenerate,
Holm's correction, the seeds a paired t-test needs, equivalence intervals, win / tie / loss counts and average ranks
(Demšar 2006's bake-off toolkit, which the bandit papers do not report).

Paired tests pair units by seed index: every algorithm with seed index i saw the same users, arms and noise
(common random numbers), so differences per seed remove most of the shared variance.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy.special import stdtrit  # Student t quantiles (scipy.stats' t.ppf), without scipy.stats' import

ALPHA = 0.05
TESTS = ("t", "wilcoxon")
MIN_SEEDS = 5  # below it a table warns: intervals and tests from so few seeds decide little
MIN_TEST_SEEDS = 3  # fewer paired seeds get no test: a paired t-test on 2 seeds has 1 degree of freedom
POWER = 0.8  # the power a seed count must reach to be the one "that would settle it"
MOST_SEEDS = 10_000  # beyond this many seeds a difference is reported as out of reach
BOOTSTRAP_RESAMPLES = 1000  # Efron & Tibshirani (1993, §19.3): enough for a percentile interval's ends
BOOTSTRAP_SEED = 0  # one fixed generator: the same values always give the same interval


def bootstrap_interval(values, confidence: float = 1 - ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean over axis 0 of ``values`` [seeds, …] (Efron & Tibshirani 1993,
    §13.3): BOOTSTRAP_RESAMPLES resamples of the seeds, drawn as multinomial weights from a generator with a fixed
    seed, so the same values give the same interval. Every resampled mean lies between the smallest and the largest
    value, so the interval never leaves the quantity's range (a regret is never below 0). With one value: NaN.
    The columns (e.g. the rounds of a curve) share the resamples and are done in blocks to bound memory."""
    x = np.asarray(values, dtype=float)
    n = x.shape[0]
    shape = x.shape[1:]
    if n < 2:
        return np.full(shape, np.nan), np.full(shape, np.nan)
    flat = x.reshape(n, -1)
    weights = np.random.default_rng(BOOTSTRAP_SEED).multinomial(n, np.full(n, 1 / n), BOOTSTRAP_RESAMPLES) / n
    low, high = np.empty(flat.shape[1]), np.empty(flat.shape[1])
    block = max(1, 2**22 // BOOTSTRAP_RESAMPLES)  # about 32 MB of resampled means at a time
    tails = [(1 - confidence) / 2, (1 + confidence) / 2]
    for start in range(0, flat.shape[1], block):
        means = flat[:, start : start + block].T @ weights.T  # [columns, resamples]: each row's quantiles contiguous
        low[start : start + block], high[start : start + block] = np.quantile(means, tails, axis=1)
    # a weighted sum may round a hair outside the values it averages
    low = np.clip(low, flat.min(axis=0), flat.max(axis=0))
    high = np.clip(high, flat.min(axis=0), flat.max(axis=0))
    return low.reshape(shape), high.reshape(shape)


def describe(values) -> dict[str, float]:
    """n, mean, sample std (ddof = 1) and the 95 % percentile bootstrap interval of the mean."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = values.size
    low, high = bootstrap_interval(values)
    return {
        "n": n,
        "mean": values.mean() if n else np.nan,
        "std": values.std(ddof=1) if n > 1 else np.nan,
        "ci_low": float(low),
        "ci_high": float(high),
    }


def mean_interval(values, confidence: float, runs: int = 0) -> tuple[float, float]:
    """The two-sided Student-t interval of the mean, mean ± t_{n−1}·std/√n; a point when every value is equal
    (the interval of a zero-variance sample), NaN with fewer than 2 values. With ``runs``, the prediction interval
    of the mean less the mean of ``runs`` more values of the same spread, mean ± t_{n−1}·std·√(1/n + 1/runs): where
    a number averaged over that many runs of its own may lie."""
    values = np.asarray(values, dtype=float)
    n = values.size
    if n < 2:
        return np.nan, np.nan
    mean, std = values.mean(), values.std(ddof=1)
    half = stdtrit(n - 1, (1 + confidence) / 2) * std * np.sqrt(1 / n + (1 / runs if runs else 0.0))
    return float(mean - half), float(mean + half)


@dataclass(frozen=True)
class Paired:
    """A paired comparison over seeds: the number of differences, their mean and std, the test's two-sided p
    (NaN when no test applies) and, when the test is degenerate or missing, why."""

    n: int
    mean: float
    std: float
    p: float
    note: str = ""


def paired_test(differences, test: str = "t") -> Paired:
    """The paired test of per-seed differences a − b (``test``: "t" or "wilcoxon"), honest about degenerate cases:
    fewer than MIN_TEST_SEEDS differences get no test; differences all 0 get none either (identical on every seed);
    differences all equal and non-zero (to 1e-9 of their size: sums of per-round floats round differently) leave
    the t statistic undefined (zero variance), so the t-test falls back to the exact sign test, p = 2·(1/2)^n, and
    says so."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    n = d.size
    mean = float(d.mean()) if n else np.nan
    std = float(d.std(ddof=1)) if n > 1 else np.nan
    if n < MIN_TEST_SEEDS:
        return Paired(n, mean, std, np.nan, f"n = {n}: no test")
    if np.all(d == 0):
        return Paired(n, mean, std, np.nan, "identical on every seed")
    constant = bool(np.ptp(d) <= 1e-9 * np.abs(d).max())  # equal up to the rounding of sums of per-round floats
    if test == "t" and constant:
        return Paired(
            n, mean, std, min(1.0, 2.0 * 0.5**n), "degenerate: every seed differs by the same amount (exact sign test)"
        )
    from scipy import stats  # half a second to import: only where two algorithms are compared

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(stats.ttest_1samp(d, 0.0).pvalue if test == "t" else stats.wilcoxon(d).pvalue)
    note = "every seed differs by the same amount" if constant else ""
    return Paired(n, mean, std, p, note)


def paired_pvalues(a, b) -> tuple[float, float, str]:
    """Two-sided p-values of the paired t-test and the Wilcoxon signed-rank test on a − b, and the note of
    :func:`paired_test` (NaN p-values where no test applies)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    t, w = paired_test(d, "t"), paired_test(d, "wilcoxon")
    return t.p, w.p, t.note


def seeds_for_power(mean: float, std: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The fewest seeds (≥ MIN_TEST_SEEDS) with which a two-sided paired t-test at level ``alpha`` detects the
    standardized effect |mean| / std with probability ``power``: power(n) = P(|T| > t_{1−α/2, n−1}) for T
    noncentral t with n − 1 degrees of freedom and noncentrality (|mean| / std)·√n (Cohen 1988, §2.3). None when
    the effect is 0 or undefined (zero variance); inf when more than MOST_SEEDS would be needed."""
    if not (np.isfinite(mean) and np.isfinite(std)) or mean == 0 or std <= 0:
        return None
    from scipy import stats

    effect = abs(mean) / std

    def reached(n: int) -> bool:
        df = n - 1
        critical = stats.t.ppf(1 - alpha / 2, df)
        shift = effect * math.sqrt(n)
        return stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift) >= power

    low, high = MIN_TEST_SEEDS - 1, MIN_TEST_SEEDS  # reached(high) is searched by doubling, then bisected
    while not reached(high):
        if high >= MOST_SEEDS:
            return math.inf
        low, high = high, min(2 * high, MOST_SEEDS)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reached(middle) else (middle, high)
    return high


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


def pairwise(
    units: pd.DataFrame, value: str, higher_is_better: bool, algorithms: list[str], *, test: str = "t"
) -> pd.DataFrame:
    """Every pair of algorithms on their common seeds, Holm-corrected over the pairs of one dataset.

    ``winner`` is the algorithm with the better mean difference when the chosen test's adjusted p < ALPHA,
    else empty (a tie); ``note`` says when the pair's test is missing or degenerate (:func:`paired_test`)."""
    rows = []
    for dataset, of_dataset in units.groupby("dataset", sort=False):
        wide = of_dataset.pivot(index="seed", columns="algorithm", values=value)
        present = [a for a in algorithms if a in wide]
        block = []
        for a, b in combinations(present, 2):
            common = wide[[a, b]].dropna()
            t_p, w_p, note = paired_pvalues(common[a], common[b])
            block.append(
                {
                    "dataset": dataset,
                    "a": a,
                    "b": b,
                    "seeds": len(common),
                    "mean_difference": float((common[a] - common[b]).mean()) if len(common) else np.nan,
                    "t_p": t_p,
                    "wilcoxon_p": w_p,
                    "note": note,
                }
            )
        if not block:
            continue
        block = pd.DataFrame(block)
        block["t_p_holm"] = holm(block["t_p"])
        block["wilcoxon_p_holm"] = holm(block["wilcoxon_p"])
        rows.append(block)
    columns = [
        "dataset",
        "a",
        "b",
        "seeds",
        "mean_difference",
        "t_p",
        "t_p_holm",
        "wilcoxon_p",
        "wilcoxon_p_holm",
        "note",
    ]
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


def wilcoxon_floor(n: int) -> float:
    """The smallest two-sided p the exact Wilcoxon signed-rank test can give with n non-zero differences: every
    sign alike, 2·(1/2)^n (0.0625 with 5 seeds, 0.25 with 3)."""
    return min(1.0, 2.0 * 0.5**n)
