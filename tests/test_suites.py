"""Suites: their declaration (built-ins and files), `run --suite` over the prepared members with the missing ones
named, Bake-off tuning on held-out members, and the cross-dataset report on constructed results."""

from __future__ import annotations

import gc
import json

import numpy as np
import pandas as pd
import pytest

import banditbench as bb
from banditbench import api, cli, suite_run
from banditbench.errors import UserError
from banditbench.report import stats
from banditbench.report.suite import normalised_regret, performance_profile, win_counts
from banditbench.runner.settings import RunSettings
from banditbench.suites import OPENML_CC18, load_suite, read_suite_file
from tests.conftest import banditbench_here


@pytest.fixture(scope="module")
def two_datasets(tmp_path_factory):
    """synthetic and synthetic-cosine: the same 12 users in 2 clusters, d = 4, K = 5."""
    folder = tmp_path_factory.mktemp("suite") / "datasets"
    bb.prepare("synthetic", users=12, clusters=2, dim=4, arms=5, data_dir=folder)
    return folder


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


SUITE = """name = "tiny"
[[member]]
dataset = "synthetic"
[[member]]
dataset = "synthetic-cosine"
[[member]]
dataset = "letter"
"""


# ---- declaration ---------------------------------------------------------------------------------------------
def test_built_in_suites_name_every_uci_set_the_cc18_datasets_and_each_papers_dataset_once():
    assert load_suite("uci").datasets == ["shuttle", "letter", "pendigits", "mushroom", "magic", "covertype"]
    cc18 = load_suite("openml-cc18")
    assert len(cc18.members) == len(set(OPENML_CC18)) == 72
    assert cc18.members[0].prepare_command() == "banditbench prepare openml --id 3"
    papers = load_suite("papers").datasets
    assert len(papers) == len(set(papers)) and {"synthetic", "movielens", "mnist"} <= set(papers)
    assert not {"obd", "showdown-mushroom"} & set(papers)  # the logs' and the Showdown's presets are no paper's
    assert set(load_suite("showdown").datasets) == {
        "showdown-wheel",
        "showdown-mushroom",
        "showdown-statlog",
        "showdown-covertype",
        "showdown-adult",
        "showdown-census",
        "showdown-jester",
        "showdown-financial",
    }


def test_the_showdown_suite_prepares_each_problem_as_its_preset_does():
    members = {m.dataset: m for m in load_suite("showdown").members}
    census = "banditbench prepare showdown-census --contexts 2000 --seed 0"
    assert members["showdown-census"].prepare_command() == census
    assert members["showdown-wheel"].data == {"contexts": 100_000, "seed": 0}
    assert members["showdown-jester"].data == {"context_jokes": 32}
    assert members["showdown-statlog"].data == {}  # its preset's: the preparation's defaults
    assert members["showdown-statlog"].env == {"contexts": 2000} and members["showdown-wheel"].env == {}


def test_a_suite_file_declares_members_with_settings_and_a_tuning_split(tmp_path):
    path = write(tmp_path / "s.toml", 'tune-on = ["synthetic"]\n' + SUITE + '[member.data]\nsplit = "train"\n')
    suite = read_suite_file(path)
    assert suite.name == "tiny" and suite.tune_on == ("synthetic",)
    assert suite.members[2].data == {"split": "train"}
    assert suite.members[2].prepare_command() == "banditbench prepare letter --split train"


@pytest.mark.parametrize(
    "text, error",
    [
        ('name = "x"\n', "declares no \\[\\[member\\]\\]"),
        (SUITE + '[[member]]\ndataset = "letter"\n', "names dataset 'letter' twice"),
        ('tune-on = ["mnist"]\n' + SUITE, "tune-on 'mnist' is not a member"),
        ('tune-on = ["synthetic", "synthetic-cosine", "letter"]\n' + SUITE, "leave some to report"),
        ("[[member]]\nname = 1\n", "member 1 has unknown key 'name'"),
        ("colour = 1\n" + SUITE, "unknown key 'colour'"),
        ("[[member", "not valid TOML"),
    ],
)
def test_a_bad_suite_file_is_refused_in_one_line(tmp_path, text, error):
    with pytest.raises(UserError, match=error):
        read_suite_file(write(tmp_path / "s.toml", text))


def test_an_unknown_suite_name_lists_the_built_ins():
    with pytest.raises(UserError, match="neither a built-in \\(papers, uci, showdown, openml-cc18\\)"):
        load_suite("ucl")


# ---- running ---------------------------------------------------------------------------------------------------
def test_a_suite_runs_the_prepared_members_names_the_missing_and_resumes(two_datasets, tmp_path, capsys):
    suite, out = write(tmp_path / "s.toml", SUITE), tmp_path / "results" / "tiny"
    args = ["run", "--suite", suite, "--algos", "random,linucb-one", "--rounds", "30", "--seeds", "2"]
    args += ["--data-dir", two_datasets, "--out", out, "--jobs", "1"]
    ran = banditbench_here(*args, capsys=capsys)
    assert ran.returncode == 0, ran.stderr
    assert "letter is not prepared" in ran.stderr and "`banditbench prepare letter`" in ran.stderr
    assert sorted(p.name for p in out.iterdir()) == ["suite.json", "synthetic", "synthetic-cosine"]
    record = json.loads((out / "suite.json").read_text())
    assert record["present"] == ["synthetic", "synthetic-cosine"]
    assert record["missing"] == {"letter": "banditbench prepare letter"}
    again = banditbench_here(*args, "--resume", capsys=capsys)
    assert again.returncode == 0 and "ran 0 of 4 units" in again.stdout
    report = bb.load(out).tables
    assert report.suite["suite"] == "tiny" and list(report.results.datasets) == ["synthetic", "synthetic-cosine"]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep")
    refused = banditbench_here(*args[:-4], "--out", notes, "--jobs", "1", capsys=capsys)
    assert refused.returncode == 2 and "holds files but no suite's results" in refused.stderr
    assert [p.name for p in notes.iterdir()] == ["todo.txt"]


def test_a_suite_with_no_prepared_member_fails_and_writes_nothing(tmp_path, capsys):
    suite, out = write(tmp_path / "s.toml", SUITE), tmp_path / "results"
    ran = banditbench_here("run", "--suite", suite, "--data-dir", tmp_path / "none", "--out", out, capsys=capsys)
    assert ran.returncode == 2 and "no member of suite tiny is prepared" in ran.stderr
    assert "banditbench prepare synthetic-cosine" in ran.stderr and not out.exists()


def test_tuning_chooses_on_the_tuning_members_only_and_fixes_the_choice_for_the_reported(
    two_datasets, tmp_path, monkeypatch
):
    read = []
    real = suite_run.load_results
    monkeypatch.setattr(suite_run, "load_results", lambda folders: read.extend(folders) or real(folders))
    out = tmp_path / "bakeoff"
    flags = dict(algos="random,linucb-ind", rounds=40, seeds=2, params=["linucb-ind.alpha=0.01,3"], jobs=1)
    with pytest.warns(UserWarning, match="letter is not prepared"):  # the Python API warns where the CLI prints
        results, _, suite, missing = api.run_suite(
            str(write(tmp_path / "s.toml", SUITE)), RunSettings(**flags, out=str(out)), tune_on="synthetic-cosine",
            data_dir=two_datasets,
        )  # fmt: skip
    assert missing == ["letter"]
    assert read == [out / "tuning" / "synthetic-cosine"]  # the choice read the tuning member and nothing else
    tuning = bb.load(out / "tuning" / "synthetic-cosine").summary().set_index("algorithm")["regret_mean"]
    record = json.loads((out / "suite.json").read_text())["tuned"]["linucb-ind"]
    cells = [c for c in tuning.index if c.startswith("linucb-ind[")]
    best = min(cells, key=lambda c: tuning[c])
    assert sorted(record["scores"]) == sorted(cells) and len(cells) == 2
    assert record["cell"] == best and record["scores"][best] == pytest.approx(tuning[best] / tuning.min())
    assert results.algorithms == ["random", "linucb-ind"] and results.tables.results.datasets == ["synthetic"]
    chosen = json.loads((out / "synthetic" / "manifest.json").read_text())["config"]["algorithms"]["linucb-ind"]
    assert chosen["alpha"] == record["chosen"]["alpha"] == float(best.split("=")[1].rstrip("]"))
    assert "Configurations chosen on synthetic-cosine" in results.report("md")
    with pytest.raises(UserError, match="two tuning rules"), pytest.warns(UserWarning):
        api.run_suite(
            str(tmp_path / "s.toml"),
            RunSettings(**flags, tune_seeds=2),
            tune_on="synthetic-cosine",
            data_dir=two_datasets,
        )


def test_the_api_runs_a_suite_in_a_folder_that_lives_as_long_as_its_results(two_datasets, tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    suite = write(tmp_path / "s.toml", SUITE)
    with pytest.warns(UserWarning, match="letter is not prepared"):
        results = bb.run(suite=suite, algos="random,linucb-one", rounds=20, seeds=1, data_dir=two_datasets)
    report = results.tables
    assert report.suite["suite"] == "tiny" and list(report.results.datasets) == ["synthetic", "synthetic-cosine"]
    assert results.algorithms == ["random", "linucb-one"]
    del results, report
    gc.collect()
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"suite": "uci", "preset": "bass-synthetic"}, "takes no config, preset or prepare"),
        ({"suite": "uci", "dataset": "synthetic"}, "suite and dataset exclude each other"),
        ({"tune_on": "letter", "dataset": "synthetic"}, "tune_on goes with suite"),
    ],
)
def test_the_api_refuses_what_run_suite_refuses(arguments, message, tmp_path):
    with pytest.raises(UserError, match=message):
        bb.run(algos="random", data_dir=tmp_path, **arguments)


def test_list_names_the_built_in_suites_and_their_datasets(capsys):
    listed = banditbench_here("list", "suites", "--json", capsys=capsys)
    assert listed.returncode == 0, listed.stderr
    suites = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    assert list(suites) == ["papers", "uci", "showdown", "openml-cc18"]
    assert suites["uci"]["datasets"] == load_suite("uci").datasets
    compact = banditbench_here("list", "suites", capsys=capsys).stdout
    assert "Suites (banditbench list suites --wide for details)" in compact and "openml-cc18" in compact.split()
    assert "suites" in cli.LISTS  # and so in the default listing of every registry


# ---- the cross-dataset report, on constructed results ----------------------------------------------------------
def constructed_units(seed: int = 0) -> pd.DataFrame:
    """Three datasets, five seeds: "good" beats "bad" by 10 ± 1 on every seed; "twin" is "bad" plus noise of mean
    zero, so neither of them ever beats the other."""
    rng = np.random.default_rng(seed)
    rows = []
    for dataset, scale in (("a", 1.0), ("b", 10.0), ("c", 100.0)):
        for s in range(5):
            bad = scale * (50 + rng.normal())
            twin = bad + scale * rng.normal(0, 3)
            rows += [(dataset, "good", s, bad - scale * (10 + rng.normal())), (dataset, "bad", s, bad)]
            rows.append((dataset, "twin", s, twin))
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "seed", "final_regret"])


def test_the_win_loss_matrix_counts_significant_wins_and_says_no_where_there_are_none():
    units = constructed_units()
    algorithms = ["good", "bad", "twin"]
    comparisons = pd.concat(
        [stats.pairwise(of, "final_regret", False, algorithms) for _, of in units.groupby("dataset")]
    )
    counts = win_counts(comparisons, algorithms)
    assert counts.loc["good", "bad"] == 3 and counts.loc["good", "twin"] == 3
    assert counts.loc["bad", "good"] == 0 and counts.loc["twin", "good"] == 0
    assert counts.loc["bad", "twin"] == 0 and counts.loc["twin", "bad"] == 0  # no significant difference: no win


def summary_of(means: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = [
        {"dataset": d, "algorithm": a, "regret_mean": v, "reference": False}
        for d, row in means.items()
        for a, v in row.items()
    ]
    return pd.DataFrame(rows)


def test_normalised_regret_leaves_out_the_oracle_and_divides_by_no_zero():
    """The oracle's zero regret would make every ratio to the best infinite: it is a reference line, left out. A
    best or random regret that is still zero (a dataset solved outright) gives no ratio, NaN, rather than inf."""
    summary = summary_of({"a": {"random": 100.0, "x": 20.0, "oracle": 0.0}, "b": {"random": 0.0, "x": 3.0}})
    summary["reference"] = summary["algorithm"] == "oracle"
    table = normalised_regret(summary).set_index(["dataset", "algorithm"])
    assert "oracle" not in table.index.get_level_values("algorithm")
    assert table.loc[("a", "x"), "to_best"] == 1.0 and table.loc[("a", "random"), "to_best"] == 5.0
    assert table.loc[("b", "x"), ["to_best", "to_random"]].isna().all()
    assert table.loc[("mean", "x"), "to_random"] == 0.2  # the mean skips the dataset without a ratio


def test_normalised_regret_divides_by_random_and_by_the_best_and_ties_share_the_best():
    summary = summary_of({"a": {"random": 100.0, "x": 20.0, "y": 20.0}, "b": {"random": 10.0, "x": 5.0, "y": 2.5}})
    table = normalised_regret(summary).set_index(["dataset", "algorithm"])
    assert table.loc[("a", "x"), "to_best"] == table.loc[("a", "y"), "to_best"] == 1.0  # a tie is best twice
    assert table.loc[("b", "x"), "to_best"] == 2.0 and table.loc[("b", "random"), "to_best"] == 4.0
    assert table.loc[("mean", "x"), "to_random"] == pytest.approx((0.2 + 0.5) / 2)
    assert table.loc[("mean", "y"), "to_best"] == 1.0
    ranks = stats.average_ranks(summary.rename(columns={"regret_mean": "mean"}), {"a": False, "b": False})
    assert dict(zip(ranks["algorithm"], ranks["average_rank"])) == {"y": 1.25, "x": 1.75, "random": 3.0}
    assert normalised_regret(summary[summary["dataset"] == "a"]) is None  # one dataset: nothing to normalise across


def test_the_performance_profile_is_the_share_of_datasets_within_tau_of_the_best():
    summary = summary_of({"a": {"random": 100.0, "x": 20.0, "y": 20.0}, "b": {"random": 10.0, "x": 5.0, "y": 2.5}})
    profile = performance_profile(normalised_regret(summary))
    at = {a: curve.set_index("tau")["share"] for a, curve in profile.groupby("algorithm")}
    assert at["y"].iloc[0] == 1.0 and at["x"].iloc[0] == 0.5  # τ = 1: y is best on both, x on one
    assert at["x"][at["x"].index >= 2.0].min() == 1.0 and at["random"][at["random"].index < 4.0].max() == 0.0


def test_the_performance_profile_counts_a_dataset_without_an_algorithm_as_not_within_any_tau():
    summary = summary_of({"a": {"random": 100.0, "x": 20.0}, "b": {"random": 10.0}})
    at = performance_profile(normalised_regret(summary)).groupby("algorithm")["share"].max()
    assert at["x"] == 0.5 and at["random"] == 1.0
