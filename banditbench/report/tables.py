"""Regret / CTR tables, paired comparisons, ranks and curves from loaded results. Never re-runs anything."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from banditbench.report import stats
from banditbench.report.claims import paper_vs_here
from banditbench.report.load import LoadedExperiment, Results, latest_experiment, load_experiment, load_results
from banditbench.report.suite import normalised_regret
from banditbench.suites import read_suite_record

__all__ = [
    "FORMATS",
    "PLOT_FORMATS",
    "Report",
    "build_report",
    "format_mean_std",
    "latest_experiment",
    "load_experiment",
    "load_results",
    "regret_curves",
    "regret_table",
]

PLOT_FORMATS = ("png", "svg", "pdf")
FORMATS = ("md", "csv", "latex", "html", *PLOT_FORMATS)
RANDOM = "random"  # the uniformly random policy: regret is also shown relative to it when it ran


def algorithm_role(name: str, overrides: dict[str, str]) -> tuple[str, bool]:
    """(role, reference): the registry's role unless overridden; the privileged oracle is a reference line,
    kept in the table but left out of the best entry, ties, ranks and the best baseline."""
    from banditbench.algos import ALGORITHMS

    spec = ALGORITHMS.get(name.split("[")[0])  # a grid cell "club[alpha=0.1]" has its algorithm's role
    role = overrides.get(name, spec.role if spec else "proposed")
    return role, bool(spec and spec.policy.privileged)


@dataclass
class Report:
    results: Results
    summary: pd.DataFrame  # one row per dataset × algorithm
    comparisons: pd.DataFrame  # every pair of algorithms per dataset, Holm-corrected
    win_tie_loss: pd.DataFrame  # algorithm × algorithm, "w/t/l" over datasets
    ranks: pd.DataFrame  # average rank per algorithm over datasets
    test: str  # the paired test behind ties and wins: "t" or "wilcoxon"
    friedman: dict | None = None  # Friedman p and Nemenyi critical difference over datasets, when defined
    paper: pd.DataFrame | None = None  # "paper vs here" rows of the datasets run with a preset (report/claims.py)
    normalised: pd.DataFrame | None = None  # regret ÷ random's and ÷ the best's, per dataset and mean (report/suite.py)
    suite: dict | None = None  # the suite record (suites.py) of a suite's results folder


def build_report(results: Results, *, roles: dict[str, str] | None = None, test: str = "t") -> Report:
    roles = roles or {}
    units = results.units
    rows = []
    for (dataset, algorithm), unit in units.groupby(["dataset", "algorithm"], sort=False):
        role, reference = algorithm_role(algorithm, roles)
        row = {"dataset": dataset, "algorithm": algorithm, "role": role, "reference": reference, "seeds": len(unit)}
        for column, name in (("final_regret", "regret"), ("cumulative_ctr", "ctr"), ("ctr_regret", "ctr_regret")):
            if column in unit and unit[column].notna().any():
                d = stats.describe(unit[column])
                row.update(
                    {
                        f"{name}_mean": d["mean"],
                        f"{name}_std": d["std"],
                        f"{name}_ci_low": d["ci_low"],
                        f"{name}_ci_high": d["ci_high"],
                    }
                )
        if "mean_reward" in unit:
            row["mean_reward"] = unit["mean_reward"].mean()
        row["rounds_per_second"] = unit["rounds"].sum() / unit["wall_seconds"].sum()
        row["wall_seconds"] = unit["wall_seconds"].mean()
        row["peak_rss_mb"] = unit["peak_rss_mb"].max()
        for column in results.timing_columns + results.diagnostic_columns:
            row[column] = unit[column].mean()
        rows.append(row)
    summary = pd.DataFrame(rows)
    order = {a: i for i, a in enumerate(results.algorithms)}
    summary = summary.sort_values(
        ["dataset", "algorithm"],
        key=lambda c: c.map(order) if c.name == "algorithm" else c.map({d: i for i, d in enumerate(results.datasets)}),
        kind="stable",
        ignore_index=True,
    )

    # Ghosh et al.'s Last.FM measure (Fig. 1(e)): regret relative to random's
    if "regret_mean" in summary and RANDOM in results.algorithms:
        random_regret = summary[summary["algorithm"] == RANDOM].set_index("dataset")["regret_mean"]
        summary["regret_vs_random"] = summary["regret_mean"] / summary["dataset"].map(random_regret)

    compared = [a for a in results.algorithms if not algorithm_role(a, roles)[1]]
    comparisons = []
    for dataset in results.datasets:
        higher = results.kinds[dataset] == "ctr"
        value = "cumulative_ctr" if higher else "final_regret"
        comparisons.append(stats.pairwise(units[units["dataset"] == dataset], value, higher, compared, test=test))
    comparisons = pd.concat(comparisons, ignore_index=True)
    summary = _mark_best(summary, comparisons, results, test)
    means = pd.DataFrame(
        {
            "dataset": summary["dataset"],
            "algorithm": summary["algorithm"],
            "mean": [row[_value(results, row["dataset"])] for _, row in summary.iterrows()],
        }
    )
    means = means[~summary["reference"]]
    higher = {d: k == "ctr" for d, k in results.kinds.items()}
    return Report(
        results,
        summary,
        comparisons,
        stats.win_tie_loss(comparisons, compared),
        stats.average_ranks(means, higher),
        test,
        stats.friedman_nemenyi(means, higher),
        paper_vs_here(results, summary, test),
        normalised_regret(summary),
        next(filter(None, (read_suite_record(e.folder.parent) for e in results.experiments)), None),
    )


def _value(results: Results, dataset: str) -> str:
    return "ctr_mean" if results.kinds[dataset] == "ctr" else "regret_mean"


def _mark_best(summary: pd.DataFrame, comparisons: pd.DataFrame, results: Results, test: str) -> pd.DataFrame:
    """Best entry per dataset, entries tied with it (Holm-adjusted p ≥ ALPHA) and improvement over the best
    baseline for proposed methods."""
    summary = summary.assign(best=False, tied_with_best=False, p_vs_best=np.nan, improvement_pct=np.nan)
    for dataset in results.datasets:
        higher = results.kinds[dataset] == "ctr"
        value = _value(results, dataset)
        rows = summary[(summary["dataset"] == dataset) & ~summary["reference"]]
        if rows.empty:
            continue
        best_index = rows[value].idxmax() if higher else rows[value].idxmin()
        best = summary.at[best_index, "algorithm"]
        summary.at[best_index, "best"] = True
        of_dataset = comparisons[comparisons["dataset"] == dataset]
        for index, row in rows.iterrows():
            pair = of_dataset[
                ((of_dataset["a"] == best) & (of_dataset["b"] == row["algorithm"]))
                | ((of_dataset["b"] == best) & (of_dataset["a"] == row["algorithm"]))
            ]
            if not pair.empty:
                summary.at[index, "p_vs_best"] = pair[f"{test}_p_holm"].iloc[0]
                summary.at[index, "tied_with_best"] = pair["winner"].iloc[0] == ""
        baselines = rows[rows["role"] == "baseline"]
        if not baselines.empty:
            best_baseline = baselines[value].max() if higher else baselines[value].min()
            for index, row in rows[rows["role"] == "proposed"].iterrows():
                summary.at[index, "improvement_pct"] = stats.improvement_pct(row[value], best_baseline, higher)
    return summary


def curves(results: Results) -> pd.DataFrame:
    """Per dataset, algorithm and round t: mean, std and 95 % percentile bootstrap interval over seeds of the
    cumulative metrics (the interval of the last round is the table's)."""
    metrics = [c for c in ("cumulative_regret", "cumulative_ctr", "ctr_regret") if c in results.rounds]
    grouped = results.rounds.groupby(["dataset", "algorithm", "t"], sort=False)
    table = grouped[metrics].agg(["mean", "std"])
    table.columns = [f"{metric}_{stat}" for metric, stat in table.columns]
    seeds = grouped.size()
    for metric in metrics:
        bands = []
        for (dataset, algorithm), unit_rounds in results.rounds.groupby(["dataset", "algorithm"], sort=False):
            by_seed = unit_rounds.pivot(index="seed", columns="t", values=metric).sort_index()
            low, high = stats.bootstrap_interval(by_seed.to_numpy())
            at = pd.MultiIndex.from_product([[dataset], [algorithm], by_seed.columns])
            bands.append(pd.DataFrame({"low": low, "high": high}, index=at))
        bands = pd.concat(bands).reindex(table.index)
        table[f"{metric}_ci_low"], table[f"{metric}_ci_high"] = bands["low"].to_numpy(), bands["high"].to_numpy()
    table["seeds"] = seeds
    table = table.reset_index()
    # cumulative regret ÷ random's at the same round (Ghosh et al. Fig. 1(e))
    if "cumulative_regret" in metrics and RANDOM in results.algorithms:
        random = table[table["algorithm"] == RANDOM].set_index(["dataset", "t"])["cumulative_regret_mean"]
        at = pd.MultiIndex.from_frame(table[["dataset", "t"]])
        with np.errstate(divide="ignore", invalid="ignore"):
            table["cumulative_regret_vs_random"] = (
                table["cumulative_regret_mean"].to_numpy() / random.reindex(at).to_numpy()
            )
    order = {a: i for i, a in enumerate(results.algorithms)}
    datasets = {d: i for i, d in enumerate(results.datasets)}
    return table.sort_values(
        ["dataset", "algorithm", "t"],
        kind="stable",
        ignore_index=True,
        key=lambda c: c.map(datasets) if c.name == "dataset" else c.map(order) if c.name == "algorithm" else c,
    )


def format_mean_std(mean: float, std: float) -> str:
    return f"{mean:.2f} ± {std:.2f}" if np.isfinite(std) else f"{mean:.2f}"


# The Foundation's single-experiment API, kept for `banditbench run` and older callers.
def as_results(exp: LoadedExperiment) -> Results:
    return load_results([exp.folder]) if not isinstance(exp, Results) else exp


def regret_table(exp: LoadedExperiment) -> pd.DataFrame:
    """Final cumulative regret per algorithm: mean ± std (ddof = 1) over seeds, and the seed count."""
    return build_report(as_results(exp)).summary


def regret_curves(exp: LoadedExperiment) -> pd.DataFrame:
    """Per round t: mean and std over seeds of the cumulative regret, per algorithm."""
    return curves(as_results(exp))
