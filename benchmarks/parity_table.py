"""The parity table of docs/parity.md, written from the ``--out`` files of ``parity.py`` (never by hand).

    .venv/bin/python benchmarks/parity.py --table benchmarks/parity-results/*.json [--write-docs docs/parity.md]
    .venv/bin/python benchmarks/parity.py --table benchmarks/parity-results/*.json --check-docs docs/parity.md

One row per algorithm and setting: their mean final regret, ours (the code switches) against it with the 90 %
paired interval, the share of rounds in which ours chose their arm, every control against theirs, the final
clusters of both sides where both cluster users, and the verdict. Instances are listed under the table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from parity_verdict import signed

START, END = "<!-- parity-table -->", "<!-- /parity-table -->"
ORDER = (
    "club",
    "sclub",
    "locb",
    "cofiba",
    "neuucb-one",
    "neuucb-ind",
    "mcnb",
    "metaban",
    "eenet",
    "bass",
    "dynucb",
    "cmlb",
    "blr-one",
    "random",
)
NAMES = {
    "club": "CLUB",
    "sclub": "SCLUB",
    "locb": "LOCB",
    "cofiba": "COFIBA",
    "neuucb-one": "NeuUCB-ONE",
    "neuucb-ind": "NeuUCB-IND",
    "mcnb": "M-CNB",
    "metaban": "Meta-Ban",
    "eenet": "EE-Net",
    "bass": "BASS (bandpy)",
    "dynucb": "DynUCB (bandpy)",
    "cmlb": "CMLB (bandpy)",
    "blr-one": "BLR-ONE (the Showdown's LinFullPost)",
    "random": "Random (the Showdown's Uniform)",
}


def number(x: float) -> str:
    """Thousands with a thin space, one decimal below 1 000."""
    return f"{x:,.0f}".replace(",", " ") if abs(x) >= 1000 else f"{x:.1f}"


def clusters(entry: dict, item: dict) -> str:
    """'theirs → ours' final cluster counts and pair F1, where both sides report them."""
    theirs = entry["theirs"]
    if "clusters" not in theirs or "clusters" not in item:
        return ""
    text = f"{np.mean(theirs['clusters']):.1f} / {np.mean(item['clusters']):.1f}"
    if "f1" in theirs and "f1" in item:
        text += f"; F1 {np.mean(theirs['f1']):.2f} / {np.mean(item['f1']):.2f}"
    return text


def setting(entry: dict) -> str:
    shown = {**entry["settings"], **{f"ours {k}": v for k, v in entry.get("ours_params", {}).items()}}
    return ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in shown.items()) or "default"


def row(entry: dict, instance: str) -> str:
    code = entry["variants"].get("code") or next(iter(entry["variants"].values()))
    theirs = entry["theirs"]["final"]
    controls = "; ".join(f"{name} {signed(c['compare'])}" for name, c in entry["controls"].items())
    paper = entry["variants"].get("default")
    paper_text = f"{signed(paper['compare'])}: {paper['verdict']}" if paper and paper is not code else ""
    cells = [
        NAMES[entry["algorithm"]],
        setting(entry),
        f"{instance}, {entry['rounds']}, {entry['runs']}",
        f"{number(np.mean(theirs))} ± {number(np.std(theirs, ddof=1))}",
        signed(code["compare"]),
        f"{100 * np.mean(code['agreement']):.1f} %",
        controls,
        clusters(entry, code),
        f"**{code['verdict']}**",
        paper_text,
    ]
    return "| " + " | ".join(cells) + " |"


def render(entries: list[dict]) -> str:
    """The Markdown table, its instance list and its margins."""
    entries = sorted(
        (e for e in entries if "variants" in e),
        key=lambda e: (ORDER.index(e["algorithm"]), setting(e) != "default", setting(e)),
    )
    instances: dict[str, str] = {}
    for e in entries:
        instances.setdefault(e["instance"], f"I{len(instances) + 1}")
    lines = [
        "| algorithm | setting | instance, T, runs | theirs (final regret) | ours, code switches − theirs | same arm "
        "| controls − theirs | clusters, theirs / ours | verdict | paper mode − theirs |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(row(e, instances[e["instance"]]) for e in entries),
        "",
        *(f"- {label}: {text}" for text, label in instances.items()),
    ]
    margins = sorted({100 * e["margin"] for e in entries})
    shown = ", ".join(f"{m:g}" for m in margins)
    lines.append(f"- Differences in % of their mean with their 90 % paired interval; margin ±{shown} %.")
    return "\n".join(lines)


def summary(entry: dict) -> str:
    """A few lines for the terminal after an algorithm's runs."""
    name = NAMES[entry["algorithm"]]
    if "variants" not in entry:
        ours, theirs = entry["ours"], entry["theirs"]
        return (
            f"{name} speed, ours [{entry['variant']}: {entry['work']}]: steady {ours['steady_rounds_per_s']:.1f} r/s "
            f"(theirs {theirs['steady_rounds_per_s']:.1f}), cold {ours['cold_rounds_per_s']:.1f} "
            f"(theirs {theirs['cold_rounds_per_s']:.1f}), CPU {ours['cpu_s_per_1000']:.3f} s/1000 rounds "
            f"(theirs {theirs['cpu_s_per_1000']:.3f}): steady ×{entry['ratio_steady']:.1f}, "
            f"cold ×{entry['ratio_cold']:.1f}, CPU ×{entry['ratio_cpu']:.1f}"
        )
    lines = [f"{name} [{setting(entry)}], theirs {number(np.mean(entry['theirs']['final']))}"]
    for label, item in entry["variants"].items():
        lines.append(
            f"  ours [{label}] {signed(item['compare'])}, same arm {100 * np.mean(item['agreement']):.1f} %: "
            f"{item['verdict']} ({item['reason']})"
        )
    for label, item in entry["controls"].items():
        lines.append(f"  control {label} {signed(item['compare'])}")
    return "\n".join(lines)


def main(files: list[Path], page: Path | None, check: bool = False) -> None:
    """Print the table, write it between the markers of ``page``, or (``check``) refuse a page whose table is not
    the one ``files`` give: a hand edit, or a result added without regenerating."""
    entries = [e for f in files for e in json.loads(f.read_text())["algorithms"].values()]
    table = render(entries)
    if page is None:
        print(table)
        return
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{page} has no {START} … {END} section to write the table into")
    wanted = pattern.sub(lambda _: f"{START}\n{table}\n{END}", text)
    if check and wanted != text:
        raise SystemExit(
            f"{page}: its parity table is not the one these {len(files)} files give; rewrite it with --write-docs"
        )
    if not check:
        page.write_text(wanted, encoding="utf-8")
