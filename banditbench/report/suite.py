"""Across the datasets of a suite: normalised regret, the win–loss matrix and the performance profile.

Regret is not comparable across datasets (a 26-class problem costs more than a 2-class one), so the cross-dataset
views put every dataset on one scale first: regret relative to the uniformly random policy, as the Deep Bayesian
Bandits Showdown normalises cumulative regret (Riquelme, Tucker & Snoek 2018, §5), and relative to the best
algorithm on the dataset, as the Contextual Bandit Bake-off's normalised loss does (Bietti, Agarwal & Langford
2021, §5.1). The win–loss matrix counts, for each ordered pair, the datasets on which the row algorithm beat the
column algorithm significantly (paired over seeds, Holm-corrected over the pairs of each dataset; Bake-off §5.2).
The performance profile (Dolan & Moré 2002) gives, for each factor τ ≥ 1, the share of datasets on which an
algorithm's regret is within τ times the best's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RANDOM = "random"
PROFILE_POINTS = 200  # τ values of a performance profile, log-spaced from 1 to the largest ratio


def normalised_regret(summary: pd.DataFrame) -> pd.DataFrame | None:
    """Per dataset and algorithm, the mean final regret ÷ the random policy's (NaN where random did not run) and
    ÷ the best algorithm's on that dataset, then the mean of each over datasets (the row ``dataset == "mean"``).
    None for fewer than two regret datasets. Reference lines (the oracle) are left out."""
    if "regret_mean" not in summary:
        return None
    rows = summary[~summary["reference"] & summary["regret_mean"].notna()]
    if rows["dataset"].nunique() < 2:
        return None
    table = rows[["dataset", "algorithm", "regret_mean"]].copy()
    of_dataset = table.groupby("dataset", sort=False)["regret_mean"]
    best = of_dataset.transform("min")
    table["to_best"] = table["regret_mean"] / best.where(best > 0, np.nan)
    random = table[table["algorithm"] == RANDOM].set_index("dataset")["regret_mean"]
    table["to_random"] = table["regret_mean"] / table["dataset"].map(random.where(random > 0, np.nan))
    mean = table.groupby("algorithm", sort=False)[["to_random", "to_best"]].mean().reset_index()
    mean.insert(0, "dataset", "mean")
    return pd.concat([table, mean], ignore_index=True)[["dataset", "algorithm", "to_random", "to_best"]]


def win_counts(comparisons: pd.DataFrame, algorithms: list[str]) -> pd.DataFrame:
    """Cell (row, column): the datasets on which row beat column significantly (the pair's ``winner``)."""
    counts = pd.DataFrame(0, index=pd.Index(algorithms, name="algorithm"), columns=algorithms)
    for row in comparisons.itertuples():
        if row.winner:
            loser = row.b if row.winner == row.a else row.a
            counts.loc[row.winner, loser] += 1
    return counts


def performance_profile(normalised: pd.DataFrame) -> pd.DataFrame:
    """(algorithm, tau, share): the share of datasets with regret ≤ τ × the best's, for τ from 1 to the largest
    ratio seen (Dolan & Moré 2002, Eq. 1)."""
    ratios = normalised[normalised["dataset"] != "mean"].dropna(subset=["to_best"])
    top = max(float(ratios["to_best"].max()), 1.0 + 1e-9) if len(ratios) else 2.0
    taus = np.geomspace(1.0, top * 1.05, PROFILE_POINTS)
    datasets = ratios["dataset"].nunique()
    rows = []
    for algorithm, of_algorithm in ratios.groupby("algorithm", sort=False):
        values = np.sort(of_algorithm["to_best"].to_numpy())
        share = np.searchsorted(values, taus * (1 + 1e-12), side="right") / datasets
        rows.append(pd.DataFrame({"algorithm": algorithm, "tau": taus, "share": share}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["algorithm", "tau", "share"])


def winloss_figure(report):
    """Heatmap of :func:`win_counts` over the report's datasets; None with fewer than two datasets."""
    import matplotlib.pyplot as plt

    compared = list(report.win_tie_loss.index)
    if len(report.results.datasets) < 2 or len(compared) < 2:
        return None
    counts = win_counts(report.comparisons, compared)
    k = len(compared)
    fig, ax = plt.subplots(figsize=(1.6 + 0.7 * k, 1.2 + 0.6 * k))
    image = ax.imshow(counts.to_numpy(), cmap="Blues", vmin=0, vmax=len(report.results.datasets))
    for i in range(k):
        for j in range(k):
            text = "—" if i == j else str(counts.iat[i, j])
            dark = counts.iat[i, j] > len(report.results.datasets) / 2
            ax.text(j, i, text, ha="center", va="center", color="white" if dark else "black")
    ax.set_xticks(range(k), compared, rotation=45, ha="right")
    ax.set_yticks(range(k), compared)
    ax.set_xlabel("loses (column)")
    ax.set_ylabel("wins (row)")
    ax.set_title(f"Significant wins over {len(report.results.datasets)} datasets\n({report.test}-test, Holm)")
    fig.colorbar(image, ax=ax, label="datasets")
    fig.tight_layout()
    return fig


def profile_figure(report):
    """The performance profile of :func:`performance_profile`; None without a normalised table."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    if report.normalised is None:
        return None
    profile = performance_profile(report.normalised)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for algorithm, curve in profile.groupby("algorithm", sort=False):
        ax.step(curve["tau"], curve["share"], where="post", label=algorithm)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("τ (regret ÷ the best regret on the dataset)")
    ax.set_ylabel("share of datasets within τ")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
