"""The report's tables as text: one neutral model (Section) rendered to a rich table, Markdown, LaTeX and HTML,
plus CSV files of the underlying numbers. Outputs depend only on the results: no dates, no machine names."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.errors import UserError
from banditbench.report.claims import GAIN_TOLERANCE, MATCH_MARGIN, SPEED_MARGIN, VALUE_MARGIN
from banditbench.report.stats import ALPHA, MIN_SEEDS, wilcoxon_floor
from banditbench.report.tables import PLOT_FORMATS, Report, curves, format_mean_std

DAGGER = "†"


@dataclass
class Cell:
    text: str
    bold: bool = False  # the best entry
    tied: bool = False  # statistically tied with the best: marked with a dagger


@dataclass
class Section:
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    note: str = ""
    level: int = 2  # heading level in Markdown / HTML
    right: set[int] = field(default_factory=set)  # right-aligned column indices


def _num(value: float, spec: str) -> str:
    return "–" if value is None or not np.isfinite(value) else format(value, spec)


def format_p(p: float) -> str:
    if p is None or not np.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _interval(low: float, high: float, spec: str = ".2f") -> str:
    return "–" if not np.isfinite(low) else f"[{low:{spec}}, {high:{spec}}]"


def rests_on(seeds, rounds: int) -> str:
    """The seeds and rounds a table rests on, with a warning below MIN_SEEDS seeds."""
    low, high = int(min(seeds)), int(max(seeds))
    counted = f"{low} seeds" if low == high else f"{low} to {high} seeds per algorithm"
    warning = (
        f" **Warning: fewer than {MIN_SEEDS} seeds**: the intervals are rough and the tests decide little."
        if low < MIN_SEEDS
        else ""
    )
    return f"rests on {counted} of {rounds} rounds.{warning}"


def _column_title(name: str) -> str:
    return name.removesuffix("_seconds").replace("_", " ") + " s/unit"


def tuned_note(experiment) -> str:
    """The grid values each tuned algorithm's tuning seeds chose, which its reported seeds then ran."""
    if not experiment.tuned:
        return ""
    grids = experiment.config["algorithms"]
    cells = "; ".join(
        f"{algo} {', '.join(f'{k} = {cell[k]}' for k, v in grids[algo].items() if isinstance(v, list))}"
        for algo, cell in experiment.tuned.items()
    )
    return f" Chosen on {experiment.config.get('tune_seeds')} tuning seeds: {cells}."


def sections(report: Report) -> list[Section]:
    """The report's sections in order: the suite's members, per dataset its results table, the papers' numbers,
    the off-policy estimates, costs and diagnostics, then the comparisons across datasets."""
    test = "paired t-test" if report.test == "t" else "Wilcoxon signed-rank test"
    out = _suite_sections(report.suite) if report.suite else []
    for dataset in report.results.datasets:
        rows = report.summary[report.summary["dataset"] == dataset]
        out.append(_results_section(report, dataset, rows, test))
        out += _paper_sections(report, dataset)
        out += _logged_sections(report, dataset)
        out.append(_cost_section(report.results.timing_columns, dataset, rows))
        out += _diagnostics_sections(report.results.diagnostic_columns, dataset, rows)
    out += _comparison_sections(report, test)
    if not report.ranks.empty:
        out.append(_rank_section(report))
    if report.normalised is not None:
        out.append(_normalised_section(report.normalised))
    return out


def _results_section(report: Report, dataset: str, rows: pd.DataFrame, test: str) -> Section:
    """A dataset's main table: each algorithm's final regret (or CTR), interval, test against the best, role."""
    results = report.results
    experiment = next(e for e in results.experiments if e.dataset == dataset)
    config = experiment.config
    ctr = results.kinds[dataset] == "ctr"
    optimum = max(e.ctr_optimum for e in results.experiments if e.dataset == dataset)
    logged = dataset in results.logged
    what = "replay CTR" if logged else "cumulative CTR" if ctr else "final cumulative regret"
    title = f"{dataset}: {what} after {config['rounds']} {'logged events' if logged else 'rounds'}"
    note = (
        f"Protocol `{config['protocol']}`, master seed {config['master_seed']}, budget "
        f"{config['budget'] or 'unlimited'}; {rests_on(rows['seeds'], config['rounds'])} Mean ± std (ddof = 1) "
        f"over seeds and 95 % percentile bootstrap interval of the mean. "
        f"**Bold**: best; {DAGGER}: not significantly different from the best ({test} on common seeds, "
        f"Holm-corrected over all pairs, α = {ALPHA}). The oracle is a reference line, left out of both."
    ) + tuned_note(experiment)
    has_regret = "regret_mean" in rows and rows["regret_mean"].notna().any()
    by_random = "regret_vs_random" in rows and rows["regret_vs_random"].notna().any()
    lines = []
    for row in rows.itertuples():
        best, tied = bool(row.best), bool(row.tied_with_best) and not row.best
        cells = {"algorithm": Cell(row.algorithm), "seeds": Cell(str(row.seeds))}
        if ctr:
            digits = 4 if logged else 2  # a click-through rate of a few per thousand
            cells[f"{what} (mean ± std)"] = Cell(format_mean_std(row.ctr_mean, row.ctr_std, digits), best, tied)
            cells["95 % CI"] = Cell(_interval(row.ctr_ci_low, row.ctr_ci_high, f".{digits}f"))
            if not logged:
                cells[f"regret vs {optimum:g}/round"] = Cell(format_mean_std(row.ctr_regret_mean, row.ctr_regret_std))
        if has_regret:
            cells["cumulative regret (mean ± std)"] = Cell(
                format_mean_std(row.regret_mean, row.regret_std), best and not ctr, tied and not ctr
            )
            if not ctr:
                cells["95 % CI"] = Cell(_interval(row.regret_ci_low, row.regret_ci_high))
        if "mean_reward" in rows:
            cells["mean reward"] = Cell(_num(row.mean_reward, ".4f"))
        improvement = row.improvement_pct
        cells["p vs best"] = Cell("best" if best else format_p(row.p_vs_best))
        cells["improvement vs best baseline"] = Cell(f"{improvement:+.1f} %" if np.isfinite(improvement) else "–")
        if by_random:
            cells["÷ random"] = Cell(_num(row.regret_vs_random, ".3f"))  # Ghosh et al. Fig. 1(e)
        cells["role"] = Cell("reference" if row.reference else row.role)
        lines.append(cells)
    columns = list(lines[0])
    lines = [[cells[c] for c in columns] for cells in lines]
    return Section(title, columns, lines, note, right=set(range(1, len(columns) - 1)))


def _cost_section(timing: list[str], dataset: str, rows: pd.DataFrame) -> Section:
    """Wall time, throughput, memory and the per-round timing columns of each algorithm on a dataset."""
    cost_columns = ["algorithm", "wall s/unit", "rounds/s", "peak MB"] + [_column_title(c) for c in timing]
    cost_rows = [
        [
            Cell(row["algorithm"]),
            Cell(_num(row["wall_seconds"], ".3g")),
            Cell(_num(row["rounds_per_second"], ",.0f")),
            Cell(_num(row["peak_rss_mb"], ".0f")),
        ]
        + [Cell(_num(row[c], ".3g")) for c in timing]
        for _, row in rows.iterrows()
    ]
    return Section(
        f"{dataset}: cost",
        cost_columns,
        cost_rows,
        "Mean wall time per unit, rounds per second over all units, peak resident memory of the "
        "running process, and each per-round timing column summed per unit (mean over seeds).",
        level=3,
        right=set(range(1, len(cost_columns))),
    )


DIAGNOSTIC_NAMES = {
    "diag_ari": "ARI",
    "diag_nmi": "NMI",
    "diag_pair_f1": "pair F1",
    "diag_n_clusters": "clusters",
    "diag_radius": "mean OFUL radius β",
}


def _diagnostics_sections(columns: list[str], dataset: str, rows: pd.DataFrame) -> list[Section]:
    """The clustering and exploration diagnostics some algorithms record, where any did (none: no section)."""
    diagnostics = [c for c in columns if rows[c].notna().any()]
    if not diagnostics:
        return []
    named = DIAGNOSTIC_NAMES
    shown = [c for c in named if c in diagnostics] + [c for c in diagnostics if c not in named]
    diag_rows = [
        [Cell(row["algorithm"])] + [Cell(_num(row[c], ".1f" if c == "diag_n_clusters" else ".3f")) for c in shown]
        for _, row in rows.iterrows()
        if row[shown].notna().any()
    ]
    section = Section(
        f"{dataset}: clustering and exploration diagnostics",
        ["algorithm"] + [named.get(c, c.removeprefix("diag_")) for c in shown],
        diag_rows,
        "Final value of each unit (its last sample), mean over seeds; the OFUL radius is "
        "the mean β over the unit's selections.",
        level=3,
        right=set(range(1, len(shown) + 1)),
    )
    return [section]


def _comparison_sections(report: Report, test: str) -> list[Section]:
    """Every pair's paired test on each dataset, and the win / tie / loss counts across datasets."""
    comparisons = report.comparisons
    if comparisons.empty:
        return []
    rows = [
        [
            Cell(r.dataset),
            Cell(r.a),
            Cell(r.b),
            Cell(str(r.seeds)),
            Cell(_num(r.mean_difference, ".2f")),
            Cell(format_p(r.t_p_holm)),
            Cell(format_p(r.wilcoxon_p_holm)),
            Cell(r.winner or "tie"),
            Cell(r.note),
        ]
        for r in comparisons.itertuples()
    ]
    fewest = int(comparisons["seeds"].min())
    floor = (
        f" With {fewest} seeds the exact Wilcoxon test cannot go below p = {wilcoxon_floor(fewest):.4g}."
        if wilcoxon_floor(fewest) >= ALPHA / 5
        else ""
    )
    pairs = Section(
        "Paired comparisons",
        ["dataset", "A", "B", "seeds", "mean A − B", "t-test p (Holm)", "Wilcoxon p (Holm)", "winner", "note"],
        rows,
        f"On the seeds both algorithms ran; p-values Holm-adjusted over the pairs of each "
        f"dataset; the winner is decided by the {test} at α = {ALPHA}. Fewer than 3 seeds get no test, "
        f"and seeds that differ by one same amount leave the t statistic undefined: the t-test column then "
        f"gives the exact sign test.{floor}",
        right={3, 4, 5, 6},
    )
    wtl = report.win_tie_loss
    counts = Section(
        "Win / tie / loss",
        ["algorithm"] + list(wtl.columns),
        [[Cell(a)] + [Cell(v) for v in wtl.loc[a]] for a in wtl.index],
        "Datasets on which the row algorithm beat / tied with / lost to the column algorithm.",
        right=set(range(1, len(wtl.columns) + 1)),
    )
    return [pairs, counts]


def _rank_section(report: Report) -> Section:
    """Each algorithm's average rank over the datasets, with the Friedman test's note."""
    return Section(
        "Average rank",
        ["algorithm", "average rank", "datasets"],
        [[Cell(r.algorithm), Cell(f"{r.average_rank:.2f}"), Cell(str(r.datasets))] for r in report.ranks.itertuples()],
        "Rank 1 = best mean on a dataset (ties share the average rank), averaged over datasets."
        + _friedman_note(report.friedman),
        right={1, 2},
    )


def _suite_sections(record: dict) -> list[Section]:
    """The suite's members (reported, tuning, not prepared with the command that prepares them) and, after
    Bake-off tuning, each algorithm's chosen configuration and why."""

    def status(dataset: str) -> str:
        if dataset in record["missing"]:
            return f"not prepared: `{record['missing'][dataset]}`"
        return "tuning" if dataset in record["tune_on"] else "reported"

    members = [[Cell(m["dataset"]), Cell(status(m["dataset"]))] for m in record["members"]]
    out = [
        Section(
            f"Suite {record['suite']}",
            ["dataset", "status"],
            members,
            f"{len(record['present'])} of {len(record['members'])} members prepared. {record['description']}".strip(),
        )
    ]
    if record.get("tuned"):
        rows = [
            [
                Cell(algorithm),
                Cell(", ".join(f"{k}={v}" for k, v in t["chosen"].items())),
                Cell(_num(t["scores"][t["cell"]], ".3f")),
                Cell("; ".join(f"{cell}: {_num(score, '.3f')}" for cell, score in t["scores"].items())),
            ]
            for algorithm, t in record["tuned"].items()
        ]
        criterion = next(iter(record["tuned"].values()))["criterion"]
        out.append(
            Section(
                f"Configurations chosen on {', '.join(record['tune_on'])}",
                ["algorithm", "chosen", "score", "every cell's score"],
                rows,
                f"Each algorithm's grid cell with the lowest {criterion}, fixed for every reported member "
                "(Bietti et al. 2021's held-out tuning); the tuning members are not reported.",
                right={2},
            )
        )
    return out


def _normalised_section(table) -> Section:
    datasets = [d for d in dict.fromkeys(table["dataset"]) if d != "mean"]
    wide = table.pivot(index="algorithm", columns="dataset", values="to_best")
    mean = table[table["dataset"] == "mean"].set_index("algorithm")
    rows = [
        [Cell(a), Cell(_num(mean.at[a, "to_random"], ".3f")), Cell(_num(mean.at[a, "to_best"], ".3f"))]
        + [Cell(_num(wide.at[a, d], ".3f")) for d in datasets]
        for a in mean.index
    ]
    return Section(
        "Normalised regret across datasets",
        ["algorithm", "mean ÷ random", "mean ÷ best"] + [f"{d} ÷ best" for d in datasets],
        rows,
        "Mean final regret on each dataset divided by the random policy's (Riquelme et al. 2018) and by the best "
        "algorithm's on that dataset (Bietti et al. 2021), then averaged over datasets; 1 ÷ best is the best.",
        right=set(range(1, len(datasets) + 3)),
    )


def _paper_sections(report: Report, dataset: str) -> list[Section]:
    """The "paper vs here" table of a dataset run with a preset; its notes (exploration scale, known facts) below."""
    paper = report.paper
    if paper is None or paper.empty:
        return []
    rows = paper[paper["dataset"] == dataset]
    if rows.empty:
        return []
    from_presets = rows["preset"].iloc[0]
    judged = rows[rows["kind"] != "note"]
    if judged.empty:  # a preset whose paper prints nothing to compare (the logged replays)
        return []
    notes = [f"{r.claim}: {r.here}" for r in rows[rows["kind"] == "note"].itertuples()]
    seeds = report.summary[(report.summary["dataset"] == dataset) & ~report.summary["reference"]]["seeds"]
    rounds = next(e.config["rounds"] for e in report.results.experiments if e.dataset == dataset)
    differences = list(dict.fromkeys(d for r in judged.itertuples() if r.kind != "value" and r.differences
                                     for d in r.differences.split("; ")))  # fmt: skip
    setting = f" Differences from the paper's setting: {'; '.join(differences)}." if differences else ""
    note = (
        f"Preset `{from_presets}`; {rests_on(seeds, rounds)} A printed value is judged only on the paper's own "
        f"setting, by an equivalence test of here's mean within ± {100 * VALUE_MARGIN:.0f} % of it; stated "
        f"comparisons by the {report.test} test over seeds, Holm-corrected over the pairs of one claim (agrees only "
        f'when significant), "matches" and "competitive" within {100 * MATCH_MARGIN:.0f} %, "faster" by more than '
        f"{100 * SPEED_MARGIN:.0f} % in seconds per round, an improvement within ± {100 * GAIN_TOLERANCE:.0f} % of "
        f"the paper's (docs/reports.md).{setting} " + " ".join(f"{n}." if not n.endswith(".") else n for n in notes)
    )
    table = [
        [
            Cell(r.exhibit),
            Cell(r.claim),
            Cell(r.paper),
            Cell(r.here),
            Cell(r.verdict, bold=r.verdict == "disagrees"),
            Cell(r.reason),
        ]
        for r in judged.itertuples()
    ]
    columns = ["table / figure", "claim", "paper", "here", "verdict", "reason"]
    return [Section(f"{dataset}: paper vs here", columns, table, note, level=3)]


LOGGING = {  # runner/logged.py's ``logging`` of a log, in words
    "uniform": "logged uniformly at random",
    "recorded": "with recorded propensities",
    "assumed uniform": "whose propensities are assumed uniform (it has none)",
}


def _logged_sections(report: Report, dataset: str) -> list[Section]:
    """A logged dataset's replay table (CTR, kept events, lift over random) and its off-policy estimates."""
    table = report.logged
    if table is None or table[table["dataset"] == dataset].empty:
        return []
    rows = table[table["dataset"] == dataset]
    meta = report.results.logged[dataset]
    replay = rows[rows["estimator"] == "replay"]
    events = int(replay["events"].iloc[0])
    kept, width = replay["size"].mean(), (replay["ci_high"] - replay["ci_low"]).mean()
    evaluator = meta["evaluator"] + (f" (c = {meta['rejection_scale']:.3g})" if meta.get("rejection_scale") else "")
    note = (
        f"{evaluator.capitalize()} over the first {events:,} events of a log {LOGGING[meta['logging']]}; estimates: "
        f"mean over seeds, with the mean of each seed's 95 % interval (the log's sampling error). A policy kept "
        f"{kept:,.0f} of the {events:,} events on average, so its replay CTR interval is {width:.3g} wide"
        + (
            "; intervals shrink as 1/√(events kept): prepare the full log (about 100 times more events narrow them "
            "about 10-fold)."
            if kept < 1000
            else "."
        )
        + " Lift: replay CTR ÷ random's, delta-method interval; – where either kept no reward."
    )
    replay_rows = [
        [
            Cell(r.algorithm),
            Cell(_num(r.estimate, ".4f")),
            Cell(_interval(r.ci_low, r.ci_high, ".4f")),
            Cell(_num(r.size, ",.0f")),
            Cell(_num(r.lift, ".2f")),
            Cell(_interval(r.lift_low, r.lift_high)),
        ]
        for r in replay.itertuples()
    ]
    columns = ["algorithm", "replay CTR", "95 % interval", "events kept", "lift over random", "lift interval"]
    estimates = rows[rows["estimator"] != "replay"]
    estimate_rows = [
        [
            Cell(r.algorithm),
            Cell(r.estimator),
            Cell(_num(r.estimate, ".4f")),
            Cell(_interval(r.ci_low, r.ci_high, ".4f")),
            Cell(_num(r.size, ",.0f")),
            Cell(r.assumption),
        ]
        for r in estimates.itertuples()
    ]
    model = meta["reward_model"]
    estimates_note = (
        "Off-policy estimates of each policy's choices on every event (IPS, self-normalised IPS, direct method, "
        f"doubly robust); sample size: the effective number of events (Kish) of the importance weights, all events "
        f"for DM; – : no interval, the weighted terms do not vary (no reward among the matched events). Reward "
        f"model: {model['kind']}, {model['folds']} folds, λ = {model['ridge']:g}."
    )
    return [
        Section(f"{dataset}: replay", columns, replay_rows, note, level=3, right={1, 2, 3, 4, 5}),
        Section(
            f"{dataset}: off-policy estimates",
            ["algorithm", "estimator", "estimate", "95 % interval", "sample size", "needs"],
            estimate_rows,
            estimates_note,
            level=3,
            right={2, 3, 4},
        ),
    ]


def _friedman_note(friedman: dict | None) -> str:
    if friedman is None:
        return ""
    return (
        f" Over the {friedman['datasets']} datasets all {friedman['algorithms']} algorithms ran: Friedman "
        f"p = {format_p(friedman['friedman_p'])}; Nemenyi critical difference CD = "
        f"{friedman['critical_difference']:.2f} (α = {ALPHA}): average ranks further apart than CD differ."
    )


def _cell_md(cell: Cell) -> str:
    text = cell.text.replace("|", "\\|")
    text = f"**{text}**" if cell.bold else text
    return f"{text} {DAGGER}" if cell.tied else text


def to_markdown(report: Report) -> str:
    parts = []
    for s in sections(report):
        lines = [f"{'#' * s.level} {s.title}", ""] + ([s.note, ""] if s.note else [])
        lines.append("| " + " | ".join(s.columns) + " |")
        lines.append("|" + "|".join("---:" if i in s.right else "---" for i in range(len(s.columns))) + "|")
        lines += ["| " + " | ".join(_cell_md(c) for c in row) + " |" for row in s.rows]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "†": r"$^\dagger$",
    "−": "-",
    "–": "--",
    "—": "---",
    "α": r"$\alpha$",
    "<": r"$<$",
    "`": "",
}


def latex_escape(text: str) -> str:
    return "".join(LATEX_ESCAPES.get(ch, ch) for ch in text)


def to_latex(report: Report) -> str:
    """Tables for a paper: booktabs, one ``table`` float per section (\\usepackage{booktabs})."""
    parts = ["% banditbench report; needs \\usepackage{booktabs}"]
    for s in sections(report):
        align = "".join("r" if i in s.right else "l" for i in range(len(s.columns)))
        lines = [
            r"\begin{table}[ht]",
            r"\centering",
            f"\\caption{{{latex_escape(s.title)}. {latex_escape(s.note.replace('**Bold**', 'Bold'))}}}",
            f"\\begin{{tabular}}{{{align}}}",
            r"\toprule",
            " & ".join(latex_escape(c) for c in s.columns) + r" \\",
            r"\midrule",
        ]
        for row in s.rows:
            cells = []
            for c in row:
                text = latex_escape(c.text)
                text = f"\\textbf{{{text}}}" if c.bold else text
                cells.append(text + (r"$^\dagger$" if c.tied else ""))
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


HTML_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{padding:.25em .6em;border-bottom:1px solid #ddd}
th{text-align:left;border-bottom:2px solid #888}td.r{text-align:right;font-variant-numeric:tabular-nums}
p.note{color:#555;font-size:.9em;max-width:60em}figure{margin:1em 0}figure svg{max-width:100%;height:auto}"""


def to_html(report: Report, figures: list[tuple[str, str]] = ()) -> str:
    """One self-contained page: the tables, then the figures inlined as SVG (no external file, no script)."""
    body = ["<h1>banditbench report</h1>"]
    for s in sections(report):
        body.append(f"<h{s.level}>{html.escape(s.title)}</h{s.level}>")
        if s.note:
            body.append(f'<p class="note">{html.escape(s.note.replace("**Bold**", "Bold"))}</p>')
        body.append(
            "<table>\n<thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in s.columns) + "</tr></thead>\n<tbody>"
        )
        for row in s.rows:
            cells = []
            for i, c in enumerate(row):
                text = html.escape(c.text)
                text = f"<strong>{text}</strong>" if c.bold else text
                text += f"<sup>{DAGGER}</sup>" if c.tied else ""
                cells.append(f'<td class="r">{text}</td>' if i in s.right else f"<td>{text}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        body.append("</tbody>\n</table>")
    for caption, svg in figures:
        body.append(f"<figure>\n{svg}\n<figcaption>{html.escape(caption)}</figcaption>\n</figure>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>banditbench report</title>\n'
        f"<style>\n{HTML_STYLE}\n</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def to_rich(report: Report) -> list:
    """rich renderables (plain text when the console is not a terminal)."""
    from rich.table import Table
    from rich.text import Text

    shown = []
    for s in sections(report):
        table = Table(
            title=s.title, title_justify="left", caption=s.note.replace("**Bold**", "Bold"), caption_justify="left"
        )
        for i, column in enumerate(s.columns):
            table.add_column(column, justify="right" if i in s.right else "left", overflow="fold")
        for row in s.rows:
            table.add_row(
                *[Text(c.text + (f" {DAGGER}" if c.tied else ""), style="bold" if c.bold else "") for c in row]
            )
        shown.append(table)
    return shown


def write_files(report: Report, out: Path, formats: list[str], plot=None) -> list[Path]:
    """Write the chosen formats into ``out``; return the files written. ``plot``: the regret figure's
    ``banditbench.report.plots.PlotOptions`` (None: every algorithm, bootstrap bands, paper style)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot write the report to {out}: {e.strerror}") from None
    written = []

    def save(name: str, text: str) -> None:
        written.append(out / name)
        written[-1].write_text(text, encoding="utf-8")

    if "md" in formats:
        save("report.md", to_markdown(report))
    if "csv" in formats:
        save("report.csv", report.summary.to_csv(index=False))
        save("comparisons.csv", report.comparisons.to_csv(index=False))
        save("win_tie_loss.csv", report.win_tie_loss.to_csv())
        save("ranks.csv", report.ranks.to_csv(index=False))
        if report.normalised is not None:
            save("normalised.csv", report.normalised.to_csv(index=False))
        save("curves.csv", curves(report.results).to_csv(index=False))
        if report.paper is not None and not report.paper.empty:
            save("paper_vs_here.csv", report.paper.to_csv(index=False))
        if report.logged is not None:
            save("logged.csv", report.logged.to_csv(index=False))
    if "latex" in formats:
        save("report.tex", to_latex(report))
    images = [f for f in PLOT_FORMATS if f in formats]
    if images or "html" in formats:
        from banditbench.report.plots import svg_figures, write_plots  # matplotlib: a second to import

    if images:
        written += write_plots(report, out / "plots", images, plot)
    if "html" in formats:
        save("report.html", to_html(report, svg_figures(report, plot)))
    return written
