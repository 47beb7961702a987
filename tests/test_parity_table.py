"""The parity table of docs/parity.md is generated from the stored harness results, and those results say parity
only where every control was shown different; the speed comparison times the same work unless told otherwise.

Nothing here runs the authors' code: the stored results are read, and the speed path gets stand-in timings.
"""

from __future__ import annotations

import json
import shutil
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import parity_table  # noqa: E402
import parity_verdict  # noqa: E402
from test_parity import load_harness  # noqa: E402

PAGE = ROOT / "docs" / "parity.md"
RESULTS = sorted((ROOT / "benchmarks" / "parity-results").glob("*.json"))


def stored_entries() -> list[dict]:
    return [e for f in RESULTS for e in json.loads(f.read_text())["algorithms"].values()]


def test_the_page_holds_the_table_the_stored_results_give(monkeypatch):
    argv = ["parity.py", "--table", *map(str, RESULTS), "--check-docs", str(PAGE)]
    monkeypatch.setattr(sys, "argv", argv)
    load_harness().main()  # raises SystemExit when the page's table is not the regenerated one


def test_a_hand_edit_or_a_result_left_out_of_the_table_is_refused(tmp_path):
    edited = tmp_path / "parity.md"
    text = PAGE.read_text(encoding="utf-8")
    assert "| **differs** |" in text
    edited.write_text(text.replace("| **differs** |", "| **parity** |", 1), encoding="utf-8")
    with pytest.raises(SystemExit, match="not the one these"):
        parity_table.main(RESULTS, edited, check=True)
    more = tmp_path / "results"
    more.mkdir()
    for f in RESULTS:
        shutil.copy(f, more)
    extra = json.loads(RESULTS[0].read_text())
    (entry,) = extra["algorithms"].values()
    entry["settings"] = {"alpha2": 7}  # a new row nobody rendered
    (more / "extra.json").write_text(json.dumps(extra))
    copy = tmp_path / "copy.md"
    copy.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit, match="not the one these"):
        parity_table.main(sorted(more.glob("*.json")), copy, check=True)
    parity_table.main(sorted(more.glob("*.json")), copy)  # regenerated, the page holds the new row
    assert "alpha2 = 7" in copy.read_text(encoding="utf-8")


def test_every_algorithm_has_a_row_with_its_controls():
    entries = stored_entries()
    assert {e["algorithm"] for e in entries} == set(parity_table.ORDER)
    assert all(e["controls"] and "code" in e["variants"] for e in entries)


def row_id(entry: dict) -> str:
    return "-".join([entry["algorithm"], *(f"{k}-{v}" for k, v in entry["settings"].items())])


@pytest.mark.parametrize("entry", stored_entries(), ids=row_id)
def test_every_stored_verdict_follows_from_its_runs_and_no_parity_has_a_control_that_passes(entry):
    theirs = entry["theirs"]["final"]
    controls = {}
    for name, control in entry["controls"].items():
        controls[name] = parity_verdict.compare(control["final"], theirs, entry["margin"], entry["same_draws"])
    for item in entry["variants"].values():
        found = parity_verdict.compare(item["final"], theirs, entry["margin"], entry["same_draws"])
        assert parity_verdict.verdict(found, controls)[0] == item["verdict"]
        if item["verdict"] == "parity":
            assert all(c["p_beyond"] < parity_verdict.LEVEL for c in controls.values())


@pytest.mark.parametrize(
    "asked,variant,work",
    [(None, "code", "the same work (their loops)"), ("default", "default", "different work")],
)
def test_speed_times_the_same_work_unless_the_paper_mode_is_asked_for_and_says_which(monkeypatch, asked, variant, work):
    harness = load_harness()
    timings = {"steady_seconds": 1.0, "cold_seconds": 2.0, "cpu_seconds": 1.5}
    timed = []
    monkeypatch.setattr(harness, "spawn", lambda side, job: timed.append(job.get("learners")) or dict(timings))
    args = Namespace(variant=asked or "code", variant_given=asked is not None, rounds=100, runs=2, lockstep=1)
    entry = harness.speed_entry("club", args, {"algorithm": "club"}, {}, {}, {})
    assert entry["variant"] == variant and entry["work"].startswith(work)
    assert [list(learners) for learners in timed if learners] == [[variant], [variant]]
    assert work in parity_table.summary(entry)
