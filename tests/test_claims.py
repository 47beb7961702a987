"""Paper vs here: each preset's printed numbers and claims judged against a run of it; independent OFUL; the
import directions between presets and settings, and among the report's modules."""

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import banditbench
from fixtures_raw import SHARED

from banditbench import presets
from banditbench.algos import ALGORITHMS
from banditbench.algos.ridge import oful_radius
from banditbench.report.tables import build_report, load_results

PACKAGE = Path(__file__).resolve().parents[1] / "banditbench"


def imported(module: str) -> set[str]:
    """Every banditbench module ``module`` imports, at the top or inside a function."""
    tree = ast.parse((PACKAGE / module).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("banditbench")}


def test_lower_modules_do_not_import_the_ones_above_them():
    assert "banditbench.presets" not in imported("runner/settings.py")
    assert not {"banditbench.report.formats", "banditbench.report.plots"} & imported("report/tables.py")
    assert "banditbench.report.formats" not in imported("report/plots.py")
    assert "banditbench.report.tables" not in imported("report/claims.py")


def synchronous(tmp_path, users=20, z=1.0, noise=1.0):
    data = tmp_path / "data"
    done = banditbench(
        "prepare",
        "synthetic",
        "--protocol",
        "synchronous",
        "--users",
        users,
        "--z",
        z,
        "--noise",
        noise,
        "--data-dir",
        data,
    )
    assert done.returncode == 0, done.stderr
    return data


def test_oful_ind_is_cmlb_that_never_leaves_individual_learning(tmp_path):
    data = synchronous(tmp_path)
    out = tmp_path / "run"
    ran = banditbench(
        "run",
        "--data-dir",
        data,
        "--algos",
        "oful-ind,cmlb,linucb-ind",
        "--rounds",
        600,
        "--seeds",
        1,
        "--set",
        "cmlb.C=100",
        "--jobs",
        1,
        "--out",
        out,
    )
    assert ran.returncode == 0, ran.stderr
    oful, cmlb, linucb = (
        pq.read_table(next((out / "shards").glob(f"{a}*seed0.parquet"))).to_pandas()
        for a in ("oful-ind", "cmlb", "linucb-ind")
    )
    assert (oful["chosen"] == cmlb["chosen"]).all()  # the same learner and radius, per user
    assert (oful["chosen"] != linucb["chosen"]).any()  # β is not LinUCB's α = 1
    # 30 pulls per user in d = 15: β grows from its value at A = λI, so its running mean (the diagnostic) grows
    first = oful_radius(15 * np.log(1.0), 15, 1.0, 1.0, 1.0, 0.4)
    radius = oful["diag_radius"].dropna()
    assert first < radius.iloc[0] and radius.is_monotonic_increasing and radius.iloc[-1] < 7
    assert ALGORITHMS["oful-ind"].defaults() == {"delta": 0.4, "ridge": 1.0, "sigma": 1.0, "S": 1.0}


def test_every_preset_value_and_claim_names_algorithms_the_preset_runs():
    for name, spec in presets.PRESETS.items():
        printed = spec["printed"]
        for value in printed.values:
            assert value.algorithm in spec["algos"], (name, value)
        for claim in printed.claims:
            assert claim.kind in ("beats", "competitive", "best", "improvement", "faster"), (name, claim)
            assert claim.a in spec["algos"] and (not claim.b or claim.b in spec["algos"]), (name, claim)
    ghosh = presets.PRESETS["ghosh-synthetic"]
    assert {"cmlb", "sclb", "pmlb", "oful-ind", "club"} <= set(ghosh["algos"])
    assert {(c.a, c.b) for c in ghosh["printed"].claims if c.kind == "beats"} >= {("cmlb", "oful-ind")}
    mcnb = {v.algorithm: v.value for v in presets.PRESETS["mcnb-movielens"]["printed"].values}
    assert mcnb == {"neuucb-one": 4839.6, "neuucb-ind": 7491.0, "mcnb": 4447.1}


def read_paper(out):
    return pd.read_csv(out / "paper_vs_here.csv")


def test_a_reduced_ghosh_synthetic_run_reports_paper_vs_here(tmp_path):
    data = synchronous(tmp_path)
    out = tmp_path / "run"
    ran = banditbench(
        "run",
        "--preset",
        "ghosh-synthetic",
        "--data-dir",
        data,
        "--rounds",
        1000,
        "--seeds",
        2,
        "--tune-seeds",
        1,
        "--set",
        "club.alpha=0.3,1",
        "--set",
        "club.alpha2=1",
        "--set",
        "cmlb.horizon=50",
        "--set",
        "pmlb.horizon=50",
        "--jobs",
        1,
        "--allow-stand-in",
        "--out",
        out,
    )
    assert ran.returncode == 0, ran.stderr
    settings = json.loads((out / "manifest.json").read_text())["execution"]["settings"]
    assert settings["preset"] == "ghosh-synthetic" and settings["data"]["z"] == 1.0
    shown = banditbench("report", out, "--out", tmp_path / "report", "--format", "md,csv,html")
    assert shown.returncode == 0, shown.stderr
    assert "paper vs here" in shown.stdout
    paper = read_paper(tmp_path / "report")
    claims = paper[paper["kind"] != "note"]
    assert list(claims["claim"]) == [
        "cmlb beats oful-ind",
        "cmlb competitive with club",
        "cmlb beats club",
        "cmlb beats sclb",
        "cmlb faster than club",
    ]
    assert set(claims["verdict"]) <= {"agrees", "disagrees", "not comparable"}
    assert claims["reason"].str.contains("1000 rounds here, 100000 in the paper").iloc[:4].all()
    scale = paper[paper["claim"] == "exploration scale"]["here"].iloc[0]
    assert "oful-ind: β̄ = " in scale and "linucb-ind: α = 1.0" in scale and "club: α = " in scale
    assert paper["claim"].eq("known structural fact").sum() == 3
    markdown = (tmp_path / "report" / "report.md").read_text()
    html = (tmp_path / "report" / "report.html").read_text()
    for text in (markdown, html):
        assert "synthetic: paper vs here" in text and "cmlb beats oful-ind" in text


def test_verdicts_follow_the_paired_test_and_the_papers_setting(tmp_path, monkeypatch):
    """A preset whose printed numbers are our own measured means agrees; move one far and it disagrees; a
    different dataset preparation makes the values not comparable but still judges the ordering."""
    data = synchronous(tmp_path, users=10, noise=0.1)
    out = tmp_path / "run"
    ran = banditbench(
        "run",
        "--data-dir",
        data,
        "--algos",
        "random,linucb-ind",
        "--rounds",
        800,
        "--seeds",
        3,
        "--jobs",
        1,
        "--out",
        out,
    )
    assert ran.returncode == 0, ran.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["execution"]["settings"]["preset"] = "claims-test"
    (out / "manifest.json").write_text(json.dumps(manifest))
    summary = build_report(load_results([out])).summary.set_index("algorithm")["regret_mean"]
    spec = {**presets.PRESETS["ghosh-synthetic"], "rounds": 800, "dataset": "synthetic"}

    def paper(values, claims=(), data_needed=None):
        printed = presets.PaperSide(
            "regret",
            tuple(presets.PaperValue(a, v, "Table 0") for a, v in values.items()),
            tuple(claims),
            data_needed or {},
            "the paper's data",
        )
        monkeypatch.setitem(presets.PRESETS, "claims-test", {**spec, "printed": printed})
        table = build_report(load_results([out])).paper
        return table.set_index("claim")

    same = paper(
        {"linucb-ind": summary["linucb-ind"], "random": summary["random"]},
        [
            presets.Claim("beats", "linucb-ind", "q", b="random"),
            presets.Claim("beats", "random", "q", b="linucb-ind"),
            presets.Claim("best", "linucb-ind", "q"),
        ],
    )
    assert same.loc["linucb-ind: regret", "verdict"] == "agrees"
    assert same.loc["ordering of the printed algorithms, best first", "verdict"] == "agrees"
    assert same.loc["linucb-ind beats random", "verdict"] == "agrees"
    assert same.loc["random beats linucb-ind", "verdict"] == "disagrees"
    assert same.loc["linucb-ind best of all", "verdict"] == "agrees"
    moved = paper({"linucb-ind": summary["random"], "random": summary["linucb-ind"]})
    assert moved.loc["linucb-ind: regret", "verdict"] == "disagrees"
    assert moved.loc["ordering of the printed algorithms, best first", "verdict"] == "disagrees"
    stand_in = paper({"linucb-ind": summary["linucb-ind"], "random": summary["random"]}, data_needed={"users": 500})
    assert stand_in.loc["linucb-ind: regret", "verdict"] == "not comparable"
    assert "users = 10: a stand-in for the paper's data" in stand_in.loc["linucb-ind: regret", "reason"]
    assert stand_in.loc["ordering of the printed algorithms, best first", "verdict"] == "agrees"


@pytest.mark.skipif(not (SHARED / "movielens-100k").is_dir(), reason="MovieLens-100K raw files not present")
def test_a_reduced_mcnb_movielens_run_reports_paper_vs_here(tmp_path):
    data = tmp_path / "data"
    done = banditbench(
        "prepare", "movielens", "--variant", "100k", "--source", SHARED / "movielens-100k", "--data-dir", data
    )
    assert done.returncode == 0, done.stderr
    single = {
        "club": ("ridge", "alpha"),
        "cofiba": ("ridge", "alpha"),
        "sclub": ("ridge", "alpha"),
        "locb": ("ridge", "alpha"),
        "neuucb-one": ("lam", "nu"),
        "neuucb-ind": ("lam", "nu"),
        "neu-au": ("lam", "nu"),
        "neurallinear": ("lam", "alpha"),
    }
    config = tmp_path / "reduced.toml"
    config.write_text(
        "rounds = 60\nseeds = 2\ntune-seeds = 0\njobs = 1\nallow-stand-in = true\n[set]\n"
        + "".join(f'"{a}.{r}" = 0.1\n"{a}.{e}" = 0.01\n' for a, (r, e) in single.items())
    )
    out = tmp_path / "run"
    ran = banditbench("run", "--preset", "mcnb-movielens", "--config", config, "--data-dir", data, "--out", out)
    assert ran.returncode == 0, ran.stderr
    shown = banditbench("report", out, "--out", tmp_path / "report", "--format", "md,csv")
    assert shown.returncode == 0, shown.stderr
    paper = read_paper(tmp_path / "report").set_index("claim")
    mcnb = paper.loc["mcnb: cumulative regret after 10000 rounds"]
    assert mcnb["paper_value"] == 4447.1 and mcnb["verdict"] == "not comparable"
    assert "variant = 100k: a stand-in for the top 10 000 users × 10 000 items of MovieLens-25M" in mcnb["reason"]
    assert (
        paper.loc["ordering of the printed algorithms, best first", "paper_order"] == "mcnb < neuucb-one < neuucb-ind"
    )
    assert paper.loc["mcnb's gain over the best baseline", "paper_value"] == 8.1
    assert "movielens: paper vs here" in (tmp_path / "report" / "report.md").read_text()
