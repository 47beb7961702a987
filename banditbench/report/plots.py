"""Figures (matplotlib, Agg backend, no display needed): cumulative regret or CTR vs rounds with 95 % bands, one
panel per dataset (or per dataset and algorithm family); runtime vs final regret (M-CNB paper, Figure 5); number
of clusters over time.

Every algorithm keeps one colour, line style and marker in every figure, so curves stay apart in print and in
grey scale. :class:`PlotOptions` picks the algorithms, the band (mean with the bootstrap band, or median with
the interquartile range), a log round axis and a style for papers or slides.

Output is deterministic: a fixed SVG id salt, no date or software stamp in the files' metadata."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)
import numpy as np  # noqa: E402

from banditbench.algos import ALGORITHMS  # noqa: E402
from banditbench.algos.base import FAMILIES  # noqa: E402
from banditbench.report.plot_options import STYLES, PlotOptions  # noqa: E402
from banditbench.report.suite import profile_figure, winloss_figure  # noqa: E402
from banditbench.report.tables import Report, curves  # noqa: E402

MAX_POINTS = 400  # points per curve: keeps SVGs small without changing the picture
STYLE = {
    "svg.hashsalt": "banditbench",
    "svg.fonttype": "path",
    "figure.dpi": 100,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}
LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
MARKS_PER_CURVE = 8  # markers on a curve: enough to tell lines apart, few enough not to hide them


def _looks(algorithms: list[str]) -> dict[str, dict]:
    """Colour, line style and marker of each algorithm: the three cycle at different lengths."""
    palette = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
    return {
        a: {
            "color": palette[i % len(palette)],
            "linestyle": LINE_STYLES[i % len(LINE_STYLES)],
            "marker": MARKERS[i % len(MARKERS)],
        }
        for i, a in enumerate(algorithms)
    }


def _colours(algorithms: list[str]) -> dict[str, tuple]:
    return {a: look["color"] for a, look in _looks(algorithms).items()}


def _thin(frame):
    """At most MAX_POINTS evenly spaced rows, always keeping the last round."""
    if len(frame) <= MAX_POINTS:
        return frame
    keep = np.unique(np.linspace(0, len(frame) - 1, MAX_POINTS).round().astype(int))
    return frame.iloc[keep]


def _panels(n: int, size: tuple[float, float] | None = None, columns: int | None = None):
    columns = min(n, columns or 3)
    rows = -(-n // columns)
    width, height = size or ((6.4, 4.0) if columns == 1 else (4.4, 3.4))
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def regret_figure(report: Report, options: PlotOptions | None = None):
    """Cumulative regret (or CTR) against rounds, one line per algorithm with its band, one panel per dataset or, with
    ``panels="family"``, per dataset and algorithm family (a row of panels per dataset, sharing its regret axis)."""
    results = report.results
    options = (options or PlotOptions()).checked(results.algorithms)
    drawn = list(options.algorithms or results.algorithms)
    looks = _looks(results.algorithms)
    rc, size = STYLES[options.style]
    panels = regret_panels(results.datasets, drawn, options.panels)
    with plt.rc_context(rc):
        per_row = len(panels) // len(results.datasets) if options.panels == "family" else None
        fig, axes = _panels(len(panels), size, per_row)
        table = None if options.band == "iqr" else curves(results)
        for ax, (dataset, title, members) in zip(axes, panels):
            ctr = results.kinds[dataset] == "ctr"
            metric = "cumulative_ctr" if ctr else "cumulative_regret"
            lines = _centre_and_band(results, table, dataset, members, metric, options.band)
            for algorithm, (t, centre, low, high) in lines.items():
                step = max(1, len(t) // MARKS_PER_CURVE)
                mark_from = drawn.index(algorithm) * step // len(drawn)  # markers of two lines never coincide
                ax.plot(t, centre, label=algorithm, markevery=(mark_from, step), **looks[algorithm])
                if low is not None:
                    ax.fill_between(t, low, high, color=looks[algorithm]["color"], alpha=0.18, linewidth=0)
            ax.set_title(title)
            ax.set_xlabel("round t (log scale)" if options.log_x else "round t")
            ax.set_ylabel("cumulative click-through rate" if ctr else "cumulative regret")
            if options.log_x:
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
            ax.legend(frameon=False, fontsize="small")  # each panel names its own algorithms
        for dataset in results.datasets:  # one scale per dataset, so that its family panels compare at a glance
            row = [ax for ax, panel in zip(axes, panels) if panel[0] == dataset]
            limits = [ax.get_ylim() for ax in row]
            for ax in row:
                ax.set_ylim(min(low for low, _ in limits), max(high for _, high in limits))
        fig.suptitle(_regret_title(results, options))
        fig.tight_layout()
    return fig


FAMILY_TITLES = {
    "clustering": "clustering of bandits",
    "linear": "linear bandits",
    "neural": "neural bandits",
    "baseline": "baselines",
    "other": "other algorithms",
}


def family_of(algorithm: str) -> str:
    """The declared family of an algorithm as the results name it (``eps-greedy[epsilon=0.05]``: its grid cell); an
    algorithm this process does not know (a plug-in not imported) is "other"."""
    spec = ALGORITHMS.get(algorithm.split("[")[0])
    return "other" if spec is None else spec.family


def regret_panels(datasets: list[str], drawn: list[str], by: str) -> list[tuple[str, str, list[str]]]:
    """(dataset, title, algorithms) of each panel: one per dataset, or one per dataset and family present."""
    if by == "dataset":
        return [(dataset, dataset, drawn) for dataset in datasets]
    families = {algorithm: family_of(algorithm) for algorithm in drawn}
    present = [family for family in FAMILIES if family in families.values()]
    return [
        (
            dataset,
            FAMILY_TITLES[family] if len(datasets) == 1 else f"{dataset}: {FAMILY_TITLES[family]}",
            [algorithm for algorithm in drawn if families[algorithm] == family],
        )
        for dataset in datasets
        for family in present
    ]


def _regret_title(results, options: PlotOptions) -> str:
    kinds = {results.kinds[d] for d in results.datasets}
    what = " and ".join(["Cumulative regret"] * ("regret" in kinds) + ["Cumulative CTR"] * ("ctr" in kinds))
    seeds = results.rounds.groupby(["dataset", "algorithm"])["seed"].nunique().max()
    band = {
        "ci": f"mean of {seeds} seeds, 95 % bootstrap band",
        "iqr": f"median of {seeds} seeds, interquartile band",
        "none": f"mean of {seeds} seeds",
    }[options.band]
    return f"{what} ({band})"


def _centre_and_band(results, table, dataset: str, algorithms: list[str], metric: str, band: str) -> dict:
    """algorithm → (rounds, centre, band low or None, band high or None), thinned to MAX_POINTS; ``table``: the
    report's curves (mean and bootstrap band), unused for the median and interquartile band."""
    lines = {}
    if band == "iqr":
        rows = results.rounds[results.rounds["dataset"] == dataset]
        for algorithm in algorithms:
            by_t = rows[rows["algorithm"] == algorithm].groupby("t")[metric]
            if by_t.ngroups:
                q = _thin(by_t.quantile([0.25, 0.5, 0.75]).unstack())
                lines[algorithm] = (q.index.to_numpy() + 1, q[0.5], q[0.25], q[0.75])
        return lines
    for algorithm in algorithms:
        line = _thin(table[(table["dataset"] == dataset) & (table["algorithm"] == algorithm)])
        if line.empty:
            continue
        banded = band == "ci" and line[f"{metric}_ci_low"].notna().any()
        low, high = (line[f"{metric}_ci_{side}"] if banded else None for side in ("low", "high"))
        lines[algorithm] = (line["t"].to_numpy() + 1, line[f"{metric}_mean"], low, high)
    return lines


def runtime_figure(report: Report):
    results, summary = report.results, report.summary
    colours = _colours(results.algorithms)
    fig, axes = _panels(len(results.datasets))
    for ax, dataset in zip(axes, results.datasets):
        ctr = results.kinds[dataset] == "ctr"
        value = "ctr" if ctr else "regret"
        rows = summary[(summary["dataset"] == dataset) & np.isfinite(summary["wall_seconds"])]
        for row in rows.itertuples():
            mean, low, high = (getattr(row, f"{value}_{s}") for s in ("mean", "ci_low", "ci_high"))
            error = None if not np.isfinite(low) else [[mean - low], [high - mean]]
            ax.errorbar(
                row.wall_seconds,
                mean,
                yerr=error,
                fmt="o",
                color=colours[row.algorithm],
                capsize=3,
                label=row.algorithm,
            )
        if (rows["wall_seconds"] > 0).all() and len(rows):
            ax.set_xscale("log")
        ax.set_title(dataset)
        ax.set_xlabel("wall time per unit (s)")
        ax.set_ylabel("cumulative CTR" if ctr else "final cumulative regret")
        ax.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle("Running time vs final regret or CTR (mean, 95 % bootstrap interval)")
    fig.tight_layout()
    return fig


def clusters_figure(report: Report):
    """Mean number of clusters over seeds at each sampled round, or None when no policy reports clusters."""
    rounds = report.results.rounds
    if "diag_n_clusters" not in rounds or rounds["diag_n_clusters"].isna().all():
        return None
    sampled = rounds[rounds["diag_n_clusters"].notna()]
    datasets = [d for d in report.results.datasets if d in set(sampled["dataset"])]
    colours = _colours(report.results.algorithms)
    fig, axes = _panels(len(datasets))
    for ax, dataset in zip(axes, datasets):
        of_dataset = sampled[sampled["dataset"] == dataset]
        for algorithm in report.results.algorithms:
            line = of_dataset[of_dataset["algorithm"] == algorithm].groupby("t")["diag_n_clusters"].mean()
            if not line.empty:
                ax.plot(line.index + 1, line.to_numpy(), color=colours[algorithm], label=algorithm, linewidth=1.4)
        ax.set_title(dataset)
        ax.set_xlabel("round")
        ax.set_ylabel("number of clusters")
        ax.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle("Inferred clusters over time (mean over seeds)")
    fig.tight_layout()
    return fig


def ranks_figure(report: Report):
    """Critical-difference diagram (Demšar 2006, Fig. 1): average ranks on one axis, a bar of length CD, and thick
    lines joining algorithms whose ranks are within CD of each other. None when the Friedman test is undefined."""
    if report.friedman is None:
        return None
    ranks = report.ranks.sort_values("average_rank", kind="stable")
    k, cd = len(ranks), report.friedman["critical_difference"]
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.28 * k))
    ax.set_xlim(0.5, k + 0.5)
    ax.set_ylim(-(k + 1), 2.2)
    ax.axhline(0, color="black", linewidth=1)
    for r in range(1, k + 1):
        ax.plot([r, r], [0, 0.15], color="black", linewidth=1)
        ax.text(r, 0.3, str(r), ha="center", va="bottom")
    ax.plot([1, 1 + cd], [1.5, 1.5], color="black", linewidth=2)
    ax.text(1 + cd / 2, 1.65, f"CD = {cd:.2f}", ha="center", va="bottom")
    for i, row in enumerate(ranks.itertuples()):
        y = -(i + 1)
        ax.plot([row.average_rank, row.average_rank], [0, y], color="grey", linewidth=0.8)
        ax.text(row.average_rank + 0.05, y, f"{row.algorithm} ({row.average_rank:.2f})", va="center", fontsize=8)
    values = ranks["average_rank"].to_numpy()
    reach = [int(np.searchsorted(values, v + cd, side="left")) - 1 for v in values]  # last index within CD
    level, furthest = 0, -1
    for i, j in enumerate(reach):
        if j > i and j > furthest:  # a maximal group not inside the previous one
            ax.plot([values[i] - 0.05, values[j] + 0.05], [-0.35 - 0.25 * level] * 2, color="black", linewidth=3)
            level, furthest = level + 1, j
    ax.axis("off")
    ax.set_title(
        f"Average ranks over {report.friedman['datasets']} datasets (Friedman p = {report.friedman['friedman_p']:.3g})"
    )
    fig.tight_layout()
    return fig


FIGURES = (
    ("regret", regret_figure, "Cumulative regret (or CTR) against rounds, with 95 % confidence bands."),
    ("runtime", runtime_figure, "Wall time per unit against final regret (or CTR)."),
    ("clusters", clusters_figure, "Number of clusters the policies infer over time."),
    (
        "ranks",
        ranks_figure,
        "Critical-difference diagram: algorithms joined by a bar are not significantly different (Nemenyi, α = 0.05).",
    ),
    ("winloss", winloss_figure, "Win–loss matrix: datasets on which the row algorithm beat the column significantly."),
    ("profile", profile_figure, "Performance profile: share of datasets with regret within τ × the best's."),
)


def _figures(report: Report, options: PlotOptions | None = None):
    with plt.rc_context(STYLE):
        for name, make, caption in FIGURES:
            fig = make(report, options) if make is regret_figure else make(report)
            if fig is not None:
                yield name, fig, caption


def _save(fig, target, kind: str) -> None:
    with plt.rc_context(STYLE):
        fig.savefig(target, format=kind, metadata=METADATA[kind])


def write_plots(report: Report, out: Path, kinds: list[str], options: PlotOptions | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig, _ in _figures(report, options):
        for kind in kinds:
            written.append(out / f"{name}.{kind}")
            _save(fig, written[-1], kind)
        plt.close(fig)
    return written


def svg_figures(report: Report, options: PlotOptions | None = None) -> list[tuple[str, str]]:
    """(caption, inline SVG markup) of every figure, for the self-contained HTML report."""
    figures = []
    for _, fig, caption in _figures(report, options):
        buffer = io.StringIO()
        _save(fig, buffer, "svg")
        plt.close(fig)
        svg = buffer.getvalue()
        figures.append((caption, svg[svg.index("<svg") :]))  # drop the XML prolog and DOCTYPE
    return figures
