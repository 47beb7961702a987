"""One report over results folders, as ``banditbench report`` and ``banditbench.load(...).report()`` make it:
check the options and every shard, build the tables and paired tests, write the files, and judge the CI gate.

Every input is checked and every shard verified before the first file is written; the files are staged and
renamed into place, so a failure leaves no partial file.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from banditbench import names
from banditbench.errors import SettingError, UserError
from banditbench.report import check as gate
from banditbench.report.formats import write_files
from banditbench.report.load import Results as LoadedResults
from banditbench.report.load import latest_experiment, load_results
from banditbench.report.plot_options import PlotOptions
from banditbench.report.stats import TESTS
from banditbench.report.tables import FORMATS, Report, build_report
from banditbench.results.folder import refuse_data_folder
from banditbench.results.shards import disk_full

INCOMPLETE = "INCOMPLETE.txt"  # beside the CSV files of a report built from fewer units than planned


class BrokenResults(UserError):
    """Result files that fail verification: no number is reported from their folders."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} broken result file(s): {'; '.join(problems)}")


@dataclass(frozen=True)
class ReportOptions:
    """What a report shows and writes: ``formats`` the files (none: nothing written), ``out`` their folder (default:
    the results folder, or the common parent of several), ``check`` a baseline JSON the gate compares with, within
    ``tolerance`` ("5%" or "0.05"), ``save_baseline`` where to write a new one, ``allow_mixed`` aggregate shards run
    with different settings, ``test`` the paired test, ``baselines`` and ``proposed`` roles overriding the
    registry's, ``plot`` the regret plot's options."""

    formats: tuple[str, ...] = ()
    out: Path | None = None
    check: Path | None = None
    tolerance: str = "5%"
    save_baseline: Path | None = None
    allow_mixed: bool = False
    test: str = "t"
    baselines: tuple[str, ...] = ()
    proposed: tuple[str, ...] = ()
    plot: PlotOptions = field(default_factory=PlotOptions)


@dataclass
class MadeReport:
    """A report and what making it did: the ``warnings`` to show, the files ``written``, the gate's ``outcome``
    (None without ``check``) and the ``baseline`` saved."""

    report: Report
    warnings: list[str]
    written: list[Path]
    outcome: gate.CheckOutcome | None = None
    baseline: Path | None = None


def load_checked(folders: list[Path], allow_mixed: bool = False) -> LoadedResults:
    """The results in ``folders``; :class:`BrokenResults` when any shard fails verification."""
    results = load_results(folders, allow_mixed=allow_mixed)
    if results.problems:
        raise BrokenResults(results.problems)
    return results


def make_report(folders: list[Path], options: ReportOptions, results: LoadedResults | None = None) -> MadeReport:
    """Report the results in ``folders`` (none: the newest under results/), already loaded as ``results`` where
    given, as ``options`` ask."""
    for name in options.formats:
        names.pick("format", name, FORMATS)
    names.pick("--test", options.test, TESTS)
    allowed = gate.parse_tolerance(options.tolerance)
    saved = gate.load_baseline(options.check) if options.check is not None else None  # fails before any output
    folders = folders or [latest_experiment(Path("results"))]
    target = options.out or (
        folders[0] if len(folders) == 1 else Path(os.path.commonpath([p.resolve() for p in folders]))
    )
    if options.formats:
        refuse_data_folder(target, "{out}" if options.out else "the report's folder")
    results = results or load_checked(folders, options.allow_mixed)
    roles = {**dict.fromkeys(options.baselines, "baseline"), **dict.fromkeys(options.proposed, "proposed")}
    for setting, given in (("baselines", options.baselines), ("proposed", options.proposed)):
        for name in given:
            if name not in results.algorithms:
                hint = names.did_you_mean(name, results.algorithms) or f"they hold: {', '.join(results.algorithms)}"
                raise SettingError(
                    "{" + setting + "} {name}: no such algorithm in these results; {hint}", name=name, hint=hint
                )
    plot = options.plot.checked(results.algorithms)
    report = build_report(results, roles=roles, test=options.test)
    incomplete = incompleteness(results)
    warnings = [
        f"{exp.folder}: {len(exp.missing)} units not finished: {', '.join(exp.missing)}"
        for exp in results.experiments
        if exp.missing
    ]
    warnings += results.warnings + ([incomplete] if incomplete else [])
    made = MadeReport(report, warnings, [])
    if options.formats:
        made.written = write_report_files(report, target, list(options.formats), incomplete, results.warnings, plot)
    if options.check is not None:
        made.outcome = gate.check(report, saved, allowed)
    if options.save_baseline is not None:
        made.baseline = gate.save_baseline(report, options.save_baseline)
    return made


def incompleteness(results: LoadedResults) -> str | None:
    """One line saying which experiments are reported on fewer units than their manifest's config planned."""
    parts = [
        f"{len(exp.timing)} of {exp.planned} planned units in {exp.folder}"
        for exp in results.experiments
        if len(exp.timing) < exp.planned
    ]
    if not parts:
        return None
    return f"incomplete: {'; '.join(parts)}; means and tests use fewer seeds than planned"


def write_report_files(
    report: Report,
    target: Path,
    formats: list[str],
    incomplete: str | None,
    warnings: list[str] = (),
    plot: PlotOptions | None = None,
) -> list[Path]:
    """Write the report into a temporary folder inside ``target``, then rename each finished file into place:
    a failure (a full disk) leaves no empty or partial file. An incomplete report says so in report.md's first
    line and in INCOMPLETE.txt beside the CSV files; ``warnings`` (the data's, the aggregation's) head report.md."""
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".report.", dir=target) as staging:
            staging = Path(staging)
            written = [p.relative_to(staging) for p in write_files(report, staging, formats, plot)]
            if warnings and "md" in formats:
                md = staging / "report.md"
                head = "".join(f"> warning: {line}\n" for line in warnings)
                md.write_text(head + "\n" + md.read_text(encoding="utf-8"), encoding="utf-8")
            if incomplete:
                if "md" in formats:
                    md = staging / "report.md"
                    md.write_text(f"> **{incomplete}**\n\n" + md.read_text(encoding="utf-8"), encoding="utf-8")
                if "csv" in formats:
                    (staging / INCOMPLETE).write_text(incomplete + "\n", encoding="utf-8")
                    written.append(Path(INCOMPLETE))
            for name in written:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / name, target / name)
            if not incomplete and "csv" in formats:
                (target / INCOMPLETE).unlink(missing_ok=True)
    except OSError as e:
        raise disk_full(e, target) or UserError(f"cannot write the report to {target}: {e.strerror}") from None
    return [target / name for name in written]
