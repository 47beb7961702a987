"""`banditbench claims`: the inventory in 80 columns, the scorecard of stored runs as text, Markdown and JSON, its
evidence file read back to the same scorecard, the docs' block rewritten between markers, bad input refused in one
line with nothing written; and the docs' scorecard regenerated from its stored evidence."""

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import banditbench_here
from test_report import write_results

from banditbench import presets
from banditbench.report.scorecard import BEGIN, END, read_runs, scorecard

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "docs" / "claims-evidence.json"
NOISE = np.array([3.0, -2.0, 1.0, -4.0, 2.0])


def preset_run(folder, preset, finals, data):
    """A tiny results folder (shards with planted final regrets) recorded as a run of ``preset`` on ``data``."""
    write_results(folder, finals, dataset=presets.PRESETS[preset]["dataset"])
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["execution"] = {"settings": {"preset": preset, "data": data}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Ghosh et al.'s synthetic preset (CMLB far ahead of SCLB, level with CLUB) and BASS's MovieLens preset on the
    100K stand-in, 5 seeds each."""
    folder = tmp_path_factory.mktemp("runs")
    base = np.array([500.0, 620.0, 540.0, 580.0, 610.0])
    ghosh = {"cmlb": base + NOISE, "oful-ind": base + 40 + np.roll(NOISE, 1), "club": base + np.roll(NOISE, 2)}
    ghosh |= {"sclb": base + 90 + np.roll(NOISE, 3)}
    bass = {a: 10 * base + k * 40 + 30 * np.roll(NOISE, k) for k, a in enumerate(["bass", "sclub", "club", "cmlb"])}
    bass |= {"linucb-ind": 10 * base + 300, "dynucb": 10 * base + 900}
    return [
        preset_run(folder / "ghosh", "ghosh-synthetic", {a: list(v) for a, v in ghosh.items()}, {"z": 1.0}),
        preset_run(folder / "bass", "bass-movielens", {a: list(v) for a, v in bass.items()}, {"variant": "100k"}),
    ]


def test_the_inventory_alone_fits_80_columns_and_names_all_34(capsys):
    shown = banditbench_here("claims", capsys=capsys)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[0].startswith("34 tables and figures with results in 6 papers: 20 covered by a preset (0")
    assert "(0 decided, 0 inconclusive, 20 not run here), 14 not reproduced." in " ".join(lines[:3])
    exhibits = ("  Table ", "  Fig. ", "  README", "  regret table", "  wheel δ sweep")
    assert sum(line.startswith(exhibits) for line in lines) == 34
    as_json = json.loads(banditbench_here("claims", "--json", capsys=capsys).stdout)
    assert as_json["counts"] == {
        "exhibits": 34,
        "covered": 20,
        "decided": 0,
        "inconclusive": 0,
        "not run": 20,
        "not reproduced": 14,
    }


def test_stored_runs_and_their_evidence_give_the_same_scorecard(runs, tmp_path, capsys):
    evidence, card = tmp_path / "evidence.json", tmp_path / "card.md"
    made = banditbench_here(
        "claims", *runs, "--format", "md", "--save-evidence", evidence, "--out", card, capsys=capsys
    )
    assert made.returncode == 0, made.stderr
    text = card.read_text()
    assert "): ghosh-synthetic on synthetic, 50 rounds, 5 seeds; bass-movielens on movielens-small, 50 rounds" in text
    assert "| Ghosh et al. 2021 | Fig. 1 | cmlb beats sclb | cmlb 570.0 vs sclb 660.0 | agrees |" in text
    assert "| cmlb beats club | cmlb 570.0 vs club 570.0 | inconclusive | cmlb " in text  # level, to rounding
    assert (
        "| BASS | Table 4 | bass best of all | best: bass 5,700.0 | inconclusive | undecided (Holm, 5 seeds): bass"
        in text
    )
    # the values, not comparable for one reason, are one entry
    assert "(paper → here) | linucb-ind 11,825.2 → –; dynucb 16,835.0 → –; club" in text
    again = banditbench_here("claims", evidence, "--format", "md", capsys=capsys)
    assert again.returncode == 0 and again.stdout == text
    terminal = banditbench_here("claims", evidence, capsys=capsys).stdout
    assert max(map(len, terminal.splitlines())) <= 80
    assert "(0 decided, 2 inconclusive, 18 not run here)" in " ".join(terminal.splitlines()[:3])
    exhibits = json.loads(banditbench_here("claims", evidence, "--json", capsys=capsys).stdout)["exhibits"]
    table4 = next(e for e in exhibits if e["paper"].startswith("Cherkaoui") and e["exhibit"] == "Table 4")
    assert table4["status"] == "inconclusive" and {r["kind"] for r in table4["rows"]} == {"value", "ordering", "best"}


def test_into_rewrites_only_the_marked_block(runs, tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text(f"# Fidelity\n\nbefore\n\n{BEGIN}\nold scorecard\n{END}\n\nafter\n")
    done = banditbench_here("claims", *runs, "--format", "md", "--into", page, capsys=capsys)
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert text.startswith("# Fidelity\n\nbefore\n\n" + BEGIN + "\n**34 tables") and text.endswith(f"{END}\n\nafter\n")
    assert "old scorecard" not in text and text.count(BEGIN) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "html"], "--format must be one of: text, md, json; got 'html'"),
        (["{plain}"], "was not run with a preset: its results judge no paper's claim"),
        (["{missing}.json"], "evidence file"),
        (["{garbage}"], "is not an evidence file written by `banditbench claims --save-evidence`"),
        (["{ghosh}", "--into", "{unmarked}"], "must hold the markers"),
        (["{ghosh}", "--out", "{nowhere}/card.md"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(runs, tmp_path, capsys, args, message):
    plain = write_results(tmp_path / "plain", {"a": [1.0, 2.0, 3.0]})
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"runs": []}')
    unmarked = tmp_path / "unmarked.md"
    unmarked.write_text("# no markers\n")
    places = {"plain": plain, "missing": tmp_path / "missing", "garbage": garbage, "ghosh": runs[0]}
    places |= {"unmarked": unmarked, "nowhere": tmp_path / "nowhere"}
    before = sorted(p.name for p in tmp_path.iterdir())
    done = banditbench_here("claims", *(a.format(**places) for a in args), capsys=capsys)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before and unmarked.read_text() == "# no markers\n"


def test_the_docs_scorecard_regenerates_from_its_stored_evidence():
    page = (ROOT / "docs" / "claims.md").read_text(encoding="utf-8")
    stored = page.split(BEGIN)[1].split(END)[0].strip()
    assert stored == scorecard(read_runs([EVIDENCE])).to_markdown().strip()
    assert f"banditbench claims {EVIDENCE.relative_to(ROOT)} --format md --into docs/claims.md" in page
