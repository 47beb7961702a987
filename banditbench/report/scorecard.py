"""The claims scorecard: every table and figure with results in the five source papers (presets.INVENTORY), each
with the verdicts that runs of its presets give it, or why no preset reproduces it. Written as text for an
80-column terminal, as Markdown (the docs' claims scorecard page), or as JSON.

Its sources are results folders run with a preset, or evidence files: the per-unit values a scorecard reads
(report/claims.py's Run), saved as JSON by ``banditbench claims FOLDERS --save-evidence FILE``, so that a stored
scorecard regenerates from a few kilobytes.

An exhibit's status: *not reproduced* (no preset names it), *not run* (no source ran a preset that names it),
*decided* (every row of it agrees or disagrees) or *inconclusive* (some row is undecided or not comparable).
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from banditbench.errors import UserError
from banditbench.presets import INVENTORY, PRESETS, SHORT, covering
from banditbench.report.claims import Run, build_runs, judge
from banditbench.report.tables import build_report, load_results
from banditbench.report.verdicts import AGREES, DISAGREES, NOT_COMPARABLE, number

EVIDENCE = "banditbench claims evidence"  # the marker of an evidence file, with its format version
EVIDENCE_VERSION = 1
BEGIN, END = "<!-- banditbench claims: begin -->", "<!-- banditbench claims: end -->"
STATUSES = ("decided", "inconclusive", "not run", "not reproduced")
WIDTH = 80


@dataclass
class Scorecard:
    """``exhibits``: one row per table or figure (paper, exhibit, shows, presets, status, missing); ``rows``: the
    paper-vs-here rows of every run (report/claims.py's columns, with ``paper_name``), notes left out."""

    exhibits: pd.DataFrame
    rows: pd.DataFrame
    runs: list[Run]

    @property
    def counts(self) -> dict[str, int]:
        counted = self.exhibits["status"].value_counts()
        counts = {status: int(counted.get(status, 0)) for status in STATUSES}
        return {"exhibits": len(self.exhibits), "covered": len(self.exhibits) - counts["not reproduced"], **counts}

    def headline(self) -> str:
        c = self.counts
        return (
            f"{c['exhibits']} tables and figures with results in {len(set(self.exhibits['paper']))} papers: "
            f"{c['covered']} covered by a preset ({c['decided']} decided, {c['inconclusive']} inconclusive, "
            f"{c['not run']} not run here), {c['not reproduced']} not reproduced"
        )

    def rows_of(self, paper: str, exhibit: str) -> pd.DataFrame:
        cites = self.rows["exhibit"].map(lambda named: exhibit in named.split("; "))
        return self.rows[(self.rows["paper_name"] == paper) & cites]

    def to_json(self) -> str:
        exhibits = []
        for e in self.exhibits.itertuples():
            rows = self.rows_of(e.paper, e.exhibit).drop(columns="paper_name")
            rows = rows.astype(object).where(rows.notna(), None).to_dict(orient="records")
            exhibits.append({**e._asdict(), "rows": rows})
        exhibits = [{k: v for k, v in e.items() if k != "Index"} for e in exhibits]
        return json.dumps({"counts": self.counts, "runs": [_run_line(r) for r in self.runs], "exhibits": exhibits},
                          indent=1, ensure_ascii=False) + "\n"  # fmt: skip

    def entries(self, paper: str, exhibit: str) -> list[dict]:
        """The rows an exhibit shows (those whose first exhibit it is: a figure that shows a table's runs refers to
        the table's), consecutive values not comparable for one same reason merged into one entry."""
        rows = self.rows_of(paper, exhibit)
        rows = rows[rows["exhibit"].str.split("; ").str[0] == exhibit]
        entries: list[dict] = []
        for r in rows.to_dict(orient="records"):
            last = entries[-1] if entries else {}
            if r["kind"] == "value" and r["verdict"] == NOT_COMPARABLE:
                if last.get("values") and last["reason"] == r["reason"]:
                    last["values"].append(r)
                    continue
                r = {**r, "values": [r]}
            entries.append(r)
        return [_merged(e) if e.get("values") else e for e in entries]

    def to_text(self) -> str:
        """Every exhibit, paper by paper, with its status and its rows' verdicts, wrapped to 80 columns."""
        lines = _wrap(self.headline() + ".", "")
        for run in self.runs:
            lines += _wrap(f"run: {_run_line(run)}", "", "  ")
        for paper, exhibits in self.exhibits.groupby("paper", sort=False):
            lines += ["", paper if len(paper) <= WIDTH else SHORT[paper]]
            for e in exhibits.itertuples():
                covered = f" ({', '.join(e.presets)})" if e.presets and e.status == "not run" else ""
                lines += _wrap(f"{e.exhibit}, {e.shows}: {e.status}{covered}.", "  ", "    ")
                if e.missing:
                    lines += _wrap(("Why: " if e.status == "not reproduced" else "Note: ") + e.missing + ".", "    ")
                for r in self.entries(e.paper, e.exhibit):
                    said = f"paper {r['paper']}; here {r['here']}" if r["paper"] else r["here"]
                    said = f"{r['claim']}: {said}: {r['verdict'].upper()}, {r['reason']}"
                    lines += _wrap(said, "    - ", "      ")
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        """The docs' claims scorecard: the headline, the runs, one table of every judged row (a printed value's
        number in its claim), the exhibits not run here by paper, and those not reproduced with their reasons."""
        parts = [f"**{self.headline()}.**", ""]
        machines = sorted({run.machine for run in self.runs if run.machine})
        if self.runs:
            on = f" (on {'; '.join(machines)})" if machines else ""
            parts += [f"Runs{on}: " + "; ".join(_run_line(run, machine=False) for run in self.runs) + ".", ""]
        if not self.rows.empty:
            parts += ["| paper | table / figure | claim | here | verdict | reason |", "|---" * 6 + "|"]
            for e in self.exhibits.itertuples():
                for r in self.entries(e.paper, e.exhibit):
                    claim = (
                        f"{r['claim']}: {r['paper']}"
                        if r["kind"] in ("value", "ordering") and r["paper"]
                        else r["claim"]
                    )
                    cells = [SHORT[e.paper], e.exhibit, claim, r["here"], r["verdict"], r["reason"]]
                    parts.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
            parts.append("")
        not_run = self.exhibits[self.exhibits["status"] == "not run"]
        if not not_run.empty:
            parts += ["Not run here:", ""]
            for paper, of_paper in not_run.groupby("paper", sort=False):
                parts.append(f"- {SHORT[paper]}: {', '.join(of_paper['exhibit'])}.")
            parts.append("")
        not_reproduced = self.exhibits[self.exhibits["status"] == "not reproduced"]
        if not not_reproduced.empty:
            parts += ["Not reproduced:", ""]
            parts += [f"- {SHORT[e.paper]}, {e.exhibit}: {e.missing}." for e in not_reproduced.itertuples()]
            parts.append("")
        return "\n".join(parts)


def _where(row: dict) -> str:
    """Where the paper prints a value: the parenthesis that ends its paper text."""
    return row["paper"].split(" (", 1)[1][:-1]


def _merged(entry: dict) -> dict:
    """Values not comparable for one reason as one entry: each algorithm's printed value → here's mean (with its
    column when they span several)."""
    values, metric = entry["values"], entry["claim"].split(": ", 1)[1]
    places = list(dict.fromkeys(_where(v) for v in values))
    if len(places) > 1:
        metric, exhibit = re.sub(r" at \d+$", "", metric), values[0]["exhibit"]
    shown = []
    for v in values:
        column = f" ({_where(v).removeprefix(exhibit + ', ')})" if len(places) > 1 else ""
        shown.append(f"{v['claim'].split(': ', 1)[0]}{column} {number(v['paper_value'])} → {number(v['here_mean'])}")
    where = places[0] if len(places) == 1 else exhibit
    return {**entry, "claim": f"{metric}, {where} (paper → here)", "paper": "", "here": "; ".join(shown)}


def _md_cell(text) -> str:
    return str(text if isinstance(text, str) else "–").replace("|", "\\|").replace("\n", " ")


def _wrap(text: str, first: str, rest: str | None = None) -> list[str]:
    rest = first if rest is None else rest
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def _run_line(run: Run, machine: bool = True) -> str:
    seeds = run.units.groupby("algorithm")["seed"].nunique()
    counted = f"{seeds.min()} seeds" if seeds.min() == seeds.max() else f"{seeds.min()}–{seeds.max()} seeds"
    on = f", {run.machine}" if run.machine and machine else ""
    return f"{run.preset} on {run.dataset}, {run.rounds} rounds, {counted}{on}"


def _status(presets: list[str], rows: pd.DataFrame) -> str:
    if not presets:
        return "not reproduced"
    if rows.empty:
        return "not run"
    return "decided" if rows["verdict"].isin([AGREES, DISAGREES]).all() else "inconclusive"


def scorecard(runs: list[Run], test: str = "t") -> Scorecard:
    """Every exhibit of the inventory with the rows ``runs`` give it."""
    judged = [judge(run, test).assign(paper_name=PRESETS[run.preset]["paper"]) for run in runs]
    rows = pd.concat(judged, ignore_index=True) if judged else pd.DataFrame(columns=["exhibit", "paper_name"])
    rows = rows[rows.get("kind", pd.Series(dtype=str)) != "note"].reset_index(drop=True)
    card = Scorecard(pd.DataFrame(), rows, runs)
    exhibits = []
    for exhibit in INVENTORY:
        presets = covering(exhibit)
        status = _status(presets, card.rows_of(exhibit.paper, exhibit.name))
        exhibits.append(
            {"paper": exhibit.paper, "exhibit": exhibit.name, "shows": exhibit.shows, "presets": presets,
             "status": status, "missing": exhibit.missing}
        )  # fmt: skip
    card.exhibits = pd.DataFrame(exhibits)
    return card


def read_runs(sources: list[Path], test: str = "t") -> list[Run]:
    """The runs of every source: a results folder run with a preset, or an evidence file. Every source is read
    before anything is judged, so a bad one fails alone, with one line."""
    runs = []
    for source in map(Path, sources):
        if source.suffix == ".json":
            runs += _read_evidence(source)
            continue
        results = load_results([source])
        found = build_runs(results, build_report(results, test=test).summary)
        if not found:
            raise UserError(f"{source} was not run with a preset: its results judge no paper's claim")
        runs += found
    return runs


def _read_evidence(path: Path) -> list[Run]:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"evidence file {path} does not exist") from None
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read evidence file {path}: {e}") from None
    if not isinstance(stored, dict) or stored.get("format") != EVIDENCE:
        raise UserError(f"{path} is not an evidence file written by `banditbench claims --save-evidence`")
    if stored.get("version") != EVIDENCE_VERSION:
        raise UserError(f"{path} is evidence of format version {stored.get('version')}; this version reads 1")
    unknown = sorted({run["preset"] for run in stored["runs"]} - set(PRESETS))
    if unknown:
        raise UserError(f"{path} holds runs of presets this version does not know: {', '.join(unknown)}")
    return [Run.from_json(run) for run in stored["runs"]]


def evidence(runs: list[Run]) -> str:
    """The runs as an evidence file's text."""
    stored = {"format": EVIDENCE, "version": EVIDENCE_VERSION, "runs": [run.to_json() for run in runs]}
    text = json.dumps(stored, indent=1, ensure_ascii=False, sort_keys=True)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", _one_line, text) + "\n"  # a unit's values on one line


def _one_line(match: re.Match) -> str:
    return "[" + ", ".join(part.strip() for part in match.group(1).split(",\n")) + "]"


def embed(document: str, block: str, name: str) -> str:
    """``document`` with the text between its BEGIN and END markers replaced by ``block``."""
    if document.count(BEGIN) != 1 or document.count(END) != 1 or document.index(BEGIN) > document.index(END):
        raise UserError(f"{name} must hold the markers {BEGIN} and {END} once each, in that order")
    head, rest = document.split(BEGIN)
    return f"{head}{BEGIN}\n{block.rstrip()}\n{END}{rest.split(END, 1)[1]}"
