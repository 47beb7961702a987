"""Paper vs here: each preset's printed numbers and claims judged against a run of it; independent OFUL; the
import directions between presets and settings, and among the report's modules."""

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import banditbench, banditbench_here
from fixtures_raw import SHARED

from banditbench import presets
from banditbench.algos import ALGORITHMS
from banditbench.algos.ridge import oful_radius
from banditbench.report import claims
from banditbench.report.claims import Run, judge

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
            assert claim.kind in ("beats", "competitive", "matches", "best", "improvement", "faster"), (name, claim)
            assert claim.a in spec["algos"] and (not claim.b or claim.b in spec["algos"]), (name, claim)
    ghosh = presets.PRESETS["ghosh-synthetic"]
    assert {"cmlb", "sclb", "pmlb", "oful-ind", "club"} <= set(ghosh["algos"])
    assert {(c.a, c.b) for c in ghosh["printed"].claims if c.kind == "beats"} >= {("cmlb", "oful-ind")}
    mcnb = presets.PRESETS["mcnb-movielens"]["printed"].values
    two_layers = {v.algorithm: v.value for v in mcnb if v.column == "2 layers"}
    assert two_layers == {"neuucb-one": 4839.6, "neuucb-ind": 7491.0, "mcnb": 4447.1}
    convergence = [(v.at, v.value) for v in mcnb if v.exhibit == "Table 2"]
    assert convergence == [(2000, 0.4717), (4000, 0.4555), (6000, 0.4475), (8000, 0.4452), (10000, 0.4442)]


def read_paper(out):
    return pd.read_csv(out / "paper_vs_here.csv")


def test_a_reduced_ghosh_synthetic_run_reports_paper_vs_here(tmp_path, capsys):
    data = synchronous(tmp_path)
    out = tmp_path / "run"
    ran = banditbench_here(
        "run", "--preset", "ghosh-synthetic", "--data-dir", data, "--rounds", 400, "--seeds", 2, "--tune-seeds", 1,
        "--set", "club.alpha=0.3,1", "--set", "club.alpha2=1", "--set", "cmlb.horizon=20", "--set", "pmlb.horizon=20",
        "--jobs", 1, "--allow-stand-in", "--out", out, capsys=capsys,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    settings = json.loads((out / "manifest.json").read_text())["execution"]["settings"]
    assert settings["preset"] == "ghosh-synthetic" and settings["data"]["z"] == 1.0
    shown = banditbench_here("report", out, "--out", tmp_path / "report", "--format", "md,csv,html", capsys=capsys)
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
    # 2 seeds decide nothing: every comparison is inconclusive, and says why
    assert set(claims["verdict"]) == {"inconclusive"}
    assert claims["reason"].str.startswith("n = 2: no test").all()
    assert claims["differences"].str.contains("400 rounds here, 100000 in the paper").all()
    assert set(claims["exhibit"]) == {"Fig. 1"}
    scale = paper[paper["claim"] == "exploration scale"]["here"].iloc[0]
    assert "oful-ind: β̄ = " in scale and "linucb-ind: α = 1.0" in scale and "club: α = " in scale
    assert paper["claim"].eq("known structural fact").sum() == 3
    markdown = (tmp_path / "report" / "report.md").read_text()
    html = (tmp_path / "report" / "report.html").read_text()
    for text in (markdown, html):
        assert "synthetic: paper vs here" in text and "cmlb beats oful-ind" in text


def make_run(preset, finals, *, rounds=None, data=None, env=None, columns=None, algorithms=None, machine="") -> Run:
    """A Run of ``preset`` whose unit (algorithm, seed i) ends at finals[algorithm][i] (cumulative regret or CTR,
    linear in t), with ``columns`` (name → algorithm → per-seed values) added; the oracle is the reference line."""
    spec = presets.PRESETS[preset]
    rounds = rounds or spec["rounds"]
    higher = spec["protocol"] == "twostage"
    rows = []
    for algorithm, values in finals.items():
        for seed, final in enumerate(values):
            row = {"algorithm": algorithm, "seed": seed, "reference": algorithm == "oracle", "role": "baseline"}
            row["role"] = "proposed" if algorithm in ("mcnb", "bass", "cmlb", "metaban") else "baseline"
            for at in {rounds, *(v.at for v in spec["printed"].values if v.at and v.at <= rounds)}:
                row[f"at_{at}"] = final * at / rounds
                if not higher:
                    row[f"per_round_at_{at}"] = final / rounds
            for name, per_algorithm in (columns or {}).items():
                row[name] = per_algorithm.get(algorithm, [np.nan] * len(values))[seed]
            rows.append(row)
    config = {
        "dataset": spec["dataset"],
        "rounds": rounds,
        "env": {**spec["env"], **(env or {})},
        "budget": spec["budget"],
        "algorithms": {a: {"alpha": 1.0, **(algorithms or {}).get(a, {})} for a in finals},
    }
    return Run(preset, spec["dataset"], higher, rounds, pd.DataFrame(rows), config, data or {}, machine=machine)


def by_claim(table):
    return table.set_index("claim")


NOISE = np.array([3.0, -2.0, 1.0, -4.0, 2.0, 0.5, -1.5, 4.0, -3.0, 0.0])


def test_the_issues_bass_synthetic_case_no_longer_agrees():
    """Full preset, 10 seeds: BASS's nine zeros and one 4 077 were "best of all: agrees" against CMLB's 96."""
    bass = [0.0] * 9 + [4077.0]
    cmlb = list(96 + NOISE)
    finals = {"linucb-ind": bass, "dynucb": list(900 + 10 * NOISE), "club": bass, "sclub": bass, "cmlb": cmlb}
    finals |= {"bass": bass, "oracle": [0.0] * 10}
    table = by_claim(judge(make_run("bass-synthetic", finals)))
    best = table.loc["bass best of all"]
    assert best["verdict"] == "inconclusive" and "bass behind cmlb (p =" in best["reason"]
    assert "bass vs club: identical on every seed" in best["reason"]
    assert best["here"].startswith("best: cmlb 96.0; bass 407.7")
    tie = table.loc["bass beats linucb-ind"]  # identical on every seed: a tie is no agreement and no disagreement
    assert tie["verdict"] == "inconclusive" and tie["reason"].startswith("identical on every seed")
    assert table.loc["bass best of all", "exhibit"] == "Table 2; Fig. 3"


def test_the_issues_mcnb_movielens_cases_no_longer_agree():
    # 4 seeds, 10 000 rounds, M-CNB last: the paper's order fully reversed
    finals = {"mcnb": list(6961 + 30 * NOISE[:4]), "neuucb-one": list(6379 + 30 * NOISE[2:6])}
    finals |= {"neuucb-ind": list(6500 + 30 * NOISE[4:8]), "club": list(6600 + 30 * NOISE[1:5])}
    run = make_run("mcnb-movielens", finals, data={"variant": "100k"})
    table = judge(run)
    ordering = table[table["kind"] == "ordering"].set_index("exhibit").loc["Table 3"]
    assert ordering["paper_order"] == "mcnb > neuucb-one > neuucb-ind"
    assert ordering["here_order"] == "neuucb-one > neuucb-ind > mcnb" and ordering["verdict"] == "disagrees"
    assert "variant = 100k: a stand-in" in ordering["differences"]
    rows = by_claim(table)
    assert rows.loc["mcnb best of all", "verdict"] == "disagrees"
    values = table[table["kind"] == "value"]
    assert (values["verdict"] == "not comparable").all() and len(values) == 3 + 5  # 2 layers (depth 2) + Table 2
    # 3 seeds, 2 000 rounds, M-CNB 7th of 9 by mean, nothing significant
    short = {a: list(v + 30 * NOISE[3:6]) for a, v in zip(["club", "sclub", "locb", "mcnb"], [363, 380, 390, 422])}
    table = judge(make_run("mcnb-movielens", short, rounds=2000, data={"variant": "100k"}))
    best = by_claim(table).loc["mcnb best of all"]
    assert (
        best["verdict"] in ("inconclusive", "disagrees")
        and "mcnb behind club (p = 0.750, degenerate)" in best["reason"]
    )
    at_2000 = by_claim(table).loc["mcnb: regret per round at 2000"]
    assert at_2000["verdict"] == "not comparable" and "variant = 100k" in at_2000["reason"]
    at_4000 = by_claim(table).loc["mcnb: regret per round at 4000"]
    assert "the run stops at 2000 rounds, before the printed value's round" in at_4000["reason"]


def test_table_2_of_mcnb_is_judged_on_the_papers_setting():
    """M-CNB's convergence values (average regret per round every 2000 rounds) on the paper's data and horizon."""
    finals = {"mcnb": list(4442 + 30 * NOISE), "neuucb-one": list(4839.6 + 30 * NOISE), "neuucb-ind": [7491] * 10}
    run = make_run("mcnb-movielens", finals, data={"variant": "25m"}, algorithms={a: {"depth": 2} for a in finals})
    rows = by_claim(judge(run))
    assert rows.loc["mcnb: regret per round at 10000", "verdict"] == "agrees"  # 0.4442 printed, 0.4442 here
    assert rows.loc["mcnb: regret per round at 2000", "verdict"] == "agrees"  # linear curve: 0.4442 vs 0.4717
    table3 = rows.loc["mcnb: cumulative regret after 10000 rounds"]
    assert table3["paper"] == "4,447.1 (Table 3, 2 layers)" and table3["verdict"] == "agrees"
    longer = by_claim(judge(make_run("mcnb-movielens", finals, rounds=12000, data={"variant": "25m"})))
    assert longer.loc["mcnb best of all", "differences"] == "12000 rounds here, 10000 in the paper"
    # the gain over the best baseline: 8.2 % over NeuUCB-ONE, the oracle's line being no baseline
    with_oracle = by_claim(judge(make_run("mcnb-movielens", {**finals, "oracle": [0.0] * 10}, data={"variant": "25m"})))
    gain = with_oracle.loc["mcnb's gain over the best baseline"]
    assert gain["here"] == "+8.2 %" and gain["verdict"] == "agrees"
    assert "within the margin (± 444.7)" in table3["reason"]
    # a run with 4-layer networks is judged against Table 3's 4-layer row
    deeper = make_run("mcnb-movielens", finals, data={"variant": "25m"}, algorithms={a: {"depth": 4} for a in finals})
    four = judge(deeper)
    assert set(four[four["kind"] == "value"]["paper"].str.extract(r"\((Table [23][^)]*)\)")[0]) == {
        "Table 3, 4 layers",
        "Table 2, 2000 rounds",
        "Table 2, 4000 rounds",
        "Table 2, 6000 rounds",
        "Table 2, 8000 rounds",
        "Table 2, 10000 rounds",
    }


def test_the_columns_of_a_table_follow_the_runs_setting():
    """Two-stage Table 4's 10-user column is judged on a 10-user run; a 50-user run gets the preset's own column, not
    comparable."""
    algos = presets.PRESETS["twostage-table4-mind"]["algos"]
    printed = (320, 442, 1140, 1188, 1198, 1538, 1402)
    finals = {a: list(v + 5 * np.roll(NOISE, i)[:5]) for i, (a, v) in enumerate(zip(algos, printed))}
    ten = judge(make_run("twostage-table4-mind", finals, env={"users": 10}))
    values = ten[ten["kind"] == "value"]
    assert values["paper"].str.endswith("(Table 4, users 10)").all() and (values["verdict"] == "agrees").all()
    assert by_claim(ten).loc["s-n-galm-ucb best of all", "verdict"] == "agrees"
    fifty = judge(make_run("twostage-table4-mind", finals, env={"users": 50}))
    values = fifty[fifty["kind"] == "value"]
    assert values["paper"].str.endswith("(Table 4, users 100)").all()
    assert (values["verdict"] == "not comparable").all()
    assert values["reason"].str.contains("users = 50 here, 100 in the paper's column").all()


def test_table_6_judges_the_time_ratio_and_the_ctr_match():
    algos = ["s-n-galm-ucb", "s-n-gblm-ucb", "2-s-n-galm-ucb", "2-s-n-gblm-ucb"]
    finals = {a: list(1700 + 10 * NOISE[:5]) for a in algos}
    jitter = 1 + NOISE[:5] / 100
    select = {"select_seconds_per_round": {a: list(t * jitter) for a, t in zip(algos, (0.08, 0.9, 0.01, 0.05))}}
    run = make_run("twostage-table6-mind", finals, columns=select, machine="Test CPU (2 cores)")
    rows = by_claim(judge(run))
    faster = rows.loc["2-s-n-galm-ucb faster than s-n-galm-ucb in select seconds"]
    assert faster["verdict"] == "agrees" and faster["exhibit"] == "Table 6"
    assert "paper 2-s-n-galm-ucb/s-n-galm-ucb = 0.13" in faster["reason"]
    assert "on Test CPU (2 cores)" in faster["reason"]
    assert rows.loc["2-s-n-galm-ucb matches s-n-galm-ucb", "verdict"] == "agrees"
    untimed = by_claim(judge(make_run("twostage-table6-mind", finals)))
    assert untimed.loc["2-s-n-gblm-ucb faster than s-n-gblm-ucb in select seconds", "verdict"] == "not comparable"


def test_competitive_is_one_sided_and_matches_two_sided():
    """ "a competitive with b" bounds a's shortfall only: far better agrees. "a matches b" bounds the difference both
    ways: far better disagrees, as far worse would."""
    ghosh = {"cmlb": list(100 + np.roll(NOISE, 3)), "club": list(300 + NOISE), "oful-ind": list(400 + NOISE)}
    competitive = by_claim(judge(make_run("ghosh-synthetic", ghosh))).loc["cmlb competitive with club"]
    assert competitive["verdict"] == "agrees" and "cmlb competitive with club" in competitive["reason"]
    algos = ["s-n-galm-ucb", "s-n-gblm-ucb", "2-s-n-galm-ucb", "2-s-n-gblm-ucb"]
    finals = {
        a: list((2300 if a == "2-s-n-galm-ucb" else 1700) + 10 * np.roll(NOISE, i)[:5]) for i, a in enumerate(algos)
    }
    matches = by_claim(judge(make_run("twostage-table6-mind", finals))).loc["2-s-n-galm-ucb matches s-n-galm-ucb"]
    assert matches["verdict"] == "disagrees" and "2-s-n-galm-ucb better by more than it" in matches["reason"]


def test_bass_table_3_judges_the_clustering_scores_ordering_and_best_claim():
    algos = ["linucb-ind", "dynucb", "club", "sclub", "cmlb", "bass", "oracle"]
    finals = {a: list(200 + 5 * NOISE) for a in algos}
    f1 = {"diag_pair_f1": {"dynucb": [0.7] * 10, "club": [0.0] * 10, "sclub": list(0.02 + NOISE / 1000)}}
    f1["diag_pair_f1"] |= {"cmlb": [0.0] * 10, "bass": list(0.85 + NOISE / 100), "oracle": [1.0] * 10}
    rows = judge(make_run("bass-synthetic", finals, columns=f1))
    values = rows[rows["kind"] == "value"]
    assert len(values) == 10 and (values["verdict"] == "not comparable").all()
    assert values["reason"].str.contains("the ω of Table 3's two scenarios").all()
    orderings = rows[rows["kind"] == "ordering"]
    assert list(orderings["claim"]) == [
        "ordering of Table 3, scenario 1 (similar θ), best first",
        "ordering of Table 3, scenario 2 (almost orthogonal θ), best first",
    ]
    # the paper's ties (dynucb = bass, club = sclub = cmlb) are no claimed pairs: 6 ordered pairs in scenario 1
    scenario_1 = orderings.iloc[0]
    assert scenario_1["verdict"] == "agrees" and "every one of the 6 ordered pairs" in scenario_1["reason"]
    best = by_claim(rows).loc["bass best of all in pair F1"]
    assert best["verdict"] == "agrees" and "each of the 4 others" in best["reason"]  # oracle left out, Ind has none
    # a graph that never cut an edge scores the complete graph's F1 (0.64 for 2 clusters of 9): no clustering earns it
    f1["diag_n_clusters"] = {a: [1.0] * 10 if a == "bass" else [2.0] * 10 for a in algos}
    best = by_claim(judge(make_run("bass-synthetic", finals, columns=f1))).loc["bass best of all in pair F1"]
    assert best["verdict"] == "inconclusive" and "one cluster on every seed" in best["reason"]
    f1["diag_n_clusters"]["bass"] = [1.0] * 5 + [2.0] * 5  # one cluster on some seeds only: its scores are judged
    best = by_claim(judge(make_run("bass-synthetic", finals, columns=f1))).loc["bass best of all in pair F1"]
    assert best["verdict"] == "agrees"


def test_a_score_in_0_1_is_judged_within_an_absolute_margin(monkeypatch):
    """Pair F1 is printed with one decimal: its margin is 0.1 absolute, not 10 % of the printed value. Were Table 3's
    ω known, BASS's 0.78 against the printed 0.7 would agree (a relative margin, 0.07, would call it a
    disagreement)."""
    import dataclasses

    spec = presets.PRESETS["bass-synthetic"]
    known = {**spec, "printed": dataclasses.replace(spec["printed"], stand_in="")}
    monkeypatch.setitem(presets.PRESETS, "bass-synthetic", known)
    algos = ["linucb-ind", "dynucb", "club", "sclub", "cmlb", "bass", "oracle"]
    f1 = {"diag_pair_f1": {a: list((0.78 if a == "bass" else 0.3) + NOISE / 1000) for a in algos}}
    rows = judge(make_run("bass-synthetic", {a: list(200 + 5 * NOISE) for a in algos}, columns=f1))
    bass = rows[(rows["kind"] == "value") & (rows["claim"].str.startswith("bass")) & (rows["paper_value"] == 0.7)]
    assert bass["verdict"].tolist() == ["agrees"]


def test_a_run_without_a_record_of_a_data_parameter_the_paper_names_is_a_stand_in():
    item = presets.PaperValue("linucb-one", 1.0, "Table 1")
    printed = presets.PaperSide("regret", (item,), data={"variant": "25m"}, data_text="ML-25M")
    spec = {"printed": printed, "rounds": 100, "dataset": "movielens", "env": {}, "budget": None}
    config = {"dataset": "movielens", "algorithms": {}, "env": {}, "budget": None}
    run = Run("p", "movielens", False, 100, pd.DataFrame(), config, data={})
    assert any("a stand-in for ML-25M" in reason for reason in claims._differences(run, spec, item))
    run.data = {"variant": "25m"}
    assert claims._differences(run, spec, item) == []
    assert claims._stand_in_flag({"stand_in": True}) == "run on stand-in data (--allow-stand-in)"
    assert claims._stand_in_flag({}) == ""


def test_the_showdown_readmes_one_run_totals_are_judged_with_that_runs_spread():
    """blr-one 1 340 ± 405 (sd over 10 seeds) against the README's single run of 870: undecided, not disagreeing, as
    the one run may lie anywhere in a seed's spread; the beats claim still agrees."""
    finals = {"blr-one": list(1340.0 + 150.0 * NOISE), "random": list(10165 + 50 * NOISE)}
    rows = by_claim(judge(make_run("showdown-mushroom", finals, data={"seed": 0})))
    linfullpost = rows.loc[next(claim for claim in rows.index if claim.startswith("blr-one: cumulative regret"))]
    assert linfullpost["verdict"] == "inconclusive" and "from 1 run, its spread taken as ours" in linfullpost["reason"]
    assert rows.loc["blr-one beats random", "verdict"] == "agrees"


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
    ordering = paper.loc["ordering of Table 3, 2 layers, best first"]
    assert ordering["paper_order"] == "mcnb > neuucb-one > neuucb-ind" and ordering["verdict"] == "inconclusive"
    assert paper.loc["mcnb's gain over the best baseline", "paper_value"] == 8.1
    assert paper.loc["mcnb's gain over the best baseline", "reason"] == "n = 2: no test"
    assert "movielens: paper vs here" in (tmp_path / "report" / "report.md").read_text()
