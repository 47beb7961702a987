"""The results board: a static HTML site (no server, no script) with one page per suite, preset or experiment.

Each page holds the report's tables and figures (the paper-vs-here verdicts of a preset's run among them) and, for
every reported cell (dataset × algorithm), its provenance: the command that reruns it, the package version and git
commit that ran it, the sha256 of the prepared dataset's manifest, the seeds, and links to the raw shards, which the
board copies beside the page so that the site can be published as one folder.
"""

from __future__ import annotations

import html
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from banditbench.errors import SettingError, UserError
from banditbench.report.formats import HTML_STYLE, to_html
from banditbench.report.load import PROVENANCE, load_results
from banditbench.report.plots import svg_figures
from banditbench.report.tables import Report, build_report
from banditbench.results.folder import experiment_folders, read_manifest
from banditbench.results.shards import SHARDS
from banditbench.suites import read_suite_record

MARKER = '<meta name="generator" content="banditbench board">'  # a folder holding it is a board --out may replace
SHARD_SUFFIXES = (".parquet", ".timing.parquet", ".sha256.json")


@dataclass
class Page:
    name: str  # the page's folder under the site
    title: str
    folders: list[Path]  # the experiments it reports
    report: Report


def plan_pages(sources: list[Path], test: str = "t") -> list[Page]:
    """One page per source folder, each loaded and checked (broken shards refused) before anything is written."""
    pages, names = [], set()
    for source in sources:
        folders = experiment_folders([source])
        results = load_results(folders)
        if results.problems:
            raise UserError(f"{source}: {len(results.problems)} broken result file(s), e.g. {results.problems[0]}")
        record = read_suite_record(source)
        preset = _settings(folders[0]).get("preset")
        kind, title = (
            ("suite", record["suite"]) if record else ("preset", preset) if preset else ("experiment", source.name)
        )
        name = f"{kind}-{title}".replace("/", "-")
        name = _unique(name if name not in names else f"{name}-{source.name}", names)
        pages.append(Page(name, f"{kind} {title}", folders, build_report(results, test=test)))
    return pages


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate


def _settings(folder: Path) -> dict:
    return read_manifest(folder).get("execution", {}).get("settings", {})


def rerun_command(folder: Path) -> str:
    """The ``banditbench run`` that reruns an experiment folder's units, from the settings its manifest records."""
    s = _settings(folder)
    config = read_manifest(folder)["config"]
    args = ["banditbench", "run"]
    if s.get("preset"):
        args += ["--preset", s["preset"]]
    args += ["--dataset", config["dataset"], "--algos", ",".join(s.get("algos") or config["algorithms"])]
    args += ["--rounds", str(config["rounds"]), "--seeds", str(config["seeds"]), "--seed", str(config["master_seed"])]
    if config.get("tune_seeds"):
        args += ["--tune-seeds", str(config["tune_seeds"])]
    if config.get("budget") is not None:
        args += ["--budget", str(config["budget"])]
    for name, value in (config.get("env") or {}).items():
        args += ["--env", f"{name}={value}"]
    for algorithm, params in config["algorithms"].items():
        for name, value in params.items():
            if isinstance(value, list) and len(value) > 1:  # a grid: defaults and single values are in the config
                args += ["--set", f"{algorithm}.{name}={','.join(map(str, value))}"]
    return shlex.join(args)


def provenance(page: Page) -> pd.DataFrame:
    """One row per dataset × algorithm: command, version, git sha, dataset sha256, seeds and shard files."""
    rows = []
    for exp in page.report.results.experiments:
        command = rerun_command(exp.folder)
        for algorithm, of_algorithm in exp.timing.groupby("algorithm", sort=False):
            rows.append(
                {
                    "dataset": exp.dataset,
                    "algorithm": algorithm,
                    "command": command,
                    **{key: ", ".join(sorted({str(v) for v in of_algorithm[key]})) for key in PROVENANCE},
                    "seeds": ", ".join(map(str, sorted(of_algorithm["seed"]))),
                    "shards": [(exp.folder, unit) for unit in of_algorithm["unit"]],
                }
            )
    return pd.DataFrame(rows)


def _provenance_html(table: pd.DataFrame, shards_of: dict[Path, str]) -> str:
    head = ["dataset", "algorithm", "command", "version", "git sha", "dataset sha256", "seeds", "raw shards"]
    body = []
    for row in table.itertuples():
        links = " ".join(
            f'<a href="{html.escape(shards_of[folder])}/{html.escape(unit)}.parquet">{html.escape(unit)}</a>'
            for folder, unit in row.shards
        )
        cells = [row.dataset, row.algorithm]
        body.append(
            "<tr>"
            + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
            + f"<td><code>{html.escape(row.command)}</code></td>"
            + "".join(f"<td><code>{html.escape(str(v))}</code></td>" for v in (row.version, row.git_sha))
            + f"<td><code>{html.escape(row.dataset_sha256)}</code></td><td>{html.escape(row.seeds)}</td>"
            + f"<td>{links}</td></tr>"
        )
    return (
        '<h2 id="provenance">Provenance</h2>\n<p class="note">What made every cell: the command that reruns its '
        "experiment, the banditbench version and git commit of its shards, the sha256 of the prepared dataset's "
        "manifest, its seeds and its raw shards (Parquet, with their timing sidecars and checksum records).</p>\n"
        "<table>\n<thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody>\n</table>\n"
    )


def write_page(page: Page, folder: Path) -> None:
    """``folder/index.html`` and the page's shards under ``folder/shards/DATASET/``."""
    shards_of = {}
    for exp in page.report.results.experiments:
        target = folder / "shards" / exp.dataset
        target.mkdir(parents=True, exist_ok=True)
        for unit in exp.timing["unit"]:
            for suffix in SHARD_SUFFIXES:
                shutil.copy2(exp.folder / SHARDS / f"{unit}{suffix}", target / f"{unit}{suffix}")
        shards_of[exp.folder] = f"shards/{exp.dataset}"
    document = to_html(page.report, svg_figures(page.report))
    back = '<p><a href="../index.html">← all results</a></p>\n'
    document = document.replace("<title>banditbench report</title>", f"<title>{html.escape(page.title)}</title>")
    document = document.replace('<meta charset="utf-8">', f'<meta charset="utf-8">\n{MARKER}')
    document = document.replace("<body>\n", f"<body>\n{back}", 1)
    document = document.replace("</body>", _provenance_html(provenance(page), shards_of) + "</body>")
    (folder / "index.html").write_text(document, encoding="utf-8")


def index_html(pages: list[Page]) -> str:
    items = "\n".join(
        f'<li><a href="{html.escape(p.name)}/index.html">{html.escape(p.title)}</a>: '
        f"{len(p.report.results.datasets)} dataset(s), {len(p.report.results.algorithms)} algorithm(s), "
        f"{len(p.report.results.units)} units</li>"
        for p in pages
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{MARKER}\n'
        f"<title>banditbench results</title>\n<style>\n{HTML_STYLE}\n</style>\n</head>\n<body>\n"
        f"<h1>banditbench results</h1>\n<ul>\n{items}\n</ul>\n</body>\n</html>\n"
    )


def check_board_folder(out: Path) -> None:
    """``out`` must be new, empty, or a board written before (which is replaced whole)."""
    if out.exists() and not out.is_dir():
        raise SettingError("{out} {path} is a file; name a folder for the site", path=out)
    if out.is_dir() and any(out.iterdir()):
        index = out / "index.html"
        if not (index.is_file() and MARKER in index.read_text(encoding="utf-8", errors="replace")):
            raise SettingError("{out} {path} holds files but no banditbench board; choose another folder", path=out)


def write_board(sources: list[Path], out: Path, test: str = "t") -> list[Path]:
    """Write the site into a staging folder beside ``out`` and swap it in when complete: a failure leaves the old
    board (or nothing) in place. Returns the pages written."""
    check_board_folder(out)
    pages = plan_pages(sources, test)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for page in pages:
            write_page(page, staging / page.name)
        (staging / "index.html").write_text(index_html(pages), encoding="utf-8")
        old = None
        if out.exists():
            old = out.parent / f"{staging.name}.old"
            os.replace(out, old)
        os.replace(staging, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / page.name / "index.html" for page in pages]
