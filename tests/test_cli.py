"""The command line end to end, as a user runs it: prepare → run → report, and every bad input."""

import csv

import pytest
from conftest import banditbench


def test_prepare_run_report_end_to_end(tmp_path):
    prepared = banditbench(
        "prepare",
        "synthetic",
        "--users",
        12,
        "--clusters",
        3,
        "--dim",
        4,
        "--arms",
        6,
        "--data-dir",
        tmp_path / "datasets",
    )
    assert prepared.returncode == 0, prepared.stderr
    ran = banditbench(
        "run",
        "--algos",
        "random,linucb-one,linucb-ind,oracle",
        "--rounds",
        400,
        "--seeds",
        2,
        "--data-dir",
        tmp_path / "datasets",
        "--out",
        tmp_path / "results" / "tiny",
    )
    assert ran.returncode == 0, ran.stderr
    assert "linucb-ind" in ran.stdout and "oracle" in ran.stdout and "ran 8 of 8 units" in ran.stdout
    out = tmp_path / "results" / "tiny"
    assert len(list((out / "shards").glob("*-seed?.parquet"))) == 8
    reported = banditbench("report", out, "--format", "md,csv")
    assert reported.returncode == 0, reported.stderr
    rows = list(csv.DictReader((out / "report.csv").open()))
    assert [r["algorithm"] for r in rows] == ["random", "linucb-one", "linucb-ind", "oracle"]
    assert all(r["seeds"] == "2" for r in rows)
    assert float(rows[3]["regret_mean"]) == 0.0
    assert float(rows[2]["regret_mean"]) < float(rows[0]["regret_mean"])
    assert "| linucb-ind | 2 |" in (out / "report.md").read_text()
    curves = list(csv.DictReader((out / "curves.csv").open()))
    assert len(curves) == 4 * 400
    last_random = [r for r in curves if r["algorithm"] == "random"][-1]
    assert float(last_random["cumulative_regret_mean"]) == pytest.approx(float(rows[0]["regret_mean"]))


def test_report_defaults_to_the_newest_results_folder(tmp_path):
    banditbench("prepare", "synthetic", "--users", 4, "--clusters", 2, cwd=tmp_path)
    assert banditbench("run", "--algos", "random", "--rounds", 50, "--seeds", 1, cwd=tmp_path).returncode == 0
    reported = banditbench("report", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    assert len(list(tmp_path.glob("results/synthetic-*/report.md"))) == 1


def test_help_on_every_command():
    for command in ([], ["list"], ["prepare"], ["prepare", "synthetic"], ["run"], ["report"]):
        shown = banditbench(*command, "--help")
        assert shown.returncode == 0 and "Usage" in shown.stdout


def test_version():
    from banditbench.version import __version__

    shown = banditbench("--version")
    assert shown.returncode == 0 and shown.stdout == f"banditbench {__version__}\n"


def test_no_help_text_loses_a_bracket_to_rich_markup():
    """rich reads an unescaped "[...]" in a help string as markup and drops it, leaving "one per dataset ."."""
    import re

    import typer.main

    from banditbench.cli import app

    def commands(command):
        yield command
        for sub in getattr(command, "commands", {}).values():
            yield from commands(sub)

    helps = [p.help or "" for c in commands(typer.main.get_command(app)) for p in c.params] + [
        c.help or "" for c in commands(typer.main.get_command(app))
    ]
    assert [h for h in helps if re.search(r"(?<!\\)\[[a-z]", h)] == []


def test_list_shows_every_registry():
    shown = banditbench("list").stdout
    for name in ("synthetic", "linear", "random", "linucb-one", "linucb-ind", "oracle", "bass-synthetic"):
        assert name in shown
    assert "alpha=1.0" in banditbench("list", "algorithms", "--wide", env={"COLUMNS": "200"}).stdout


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    banditbench("prepare", "synthetic", "--users", 6, "--clusters", 2, "--data-dir", data_dir)
    return data_dir


@pytest.mark.parametrize(
    "args, message",
    [
        (["--algos", "random,nope"], "unknown algorithm 'nope'; `banditbench list algorithms` shows them all"),
        (["--dataset", "zzz"], "unknown dataset 'zzz'; `banditbench list datasets` shows them"),
        (["--rounds", "0"], "--rounds must be a positive integer"),
        (["--seeds", "-1"], "--seeds must be a positive integer"),
        (["--budget", "0"], "--budget must be at least 1"),
        (["--rounds", "ten"], "Invalid value for '--rounds'"),
        (
            ["--budget", "3", "--algos", "linucb-ind"],
            "linucb-ind broke the budget in unit linucb-ind-seed",
        ),  # the first to fail of the parallel units
    ],
)
def test_bad_run_input_is_one_line_and_writes_nothing(prepared, tmp_path, args, message):
    out = tmp_path / "out"
    result = banditbench("run", "--data-dir", prepared, "--out", out, "--rounds", 20, *args)
    assert result.returncode != 0
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not list(out.glob("shards/*.parquet"))


def test_missing_dataset_names_the_prepare_command(tmp_path):
    result = banditbench("run", "--data-dir", tmp_path / "empty", "--out", tmp_path / "out")
    assert result.returncode == 2
    assert f"run `banditbench prepare synthetic --data-dir {tmp_path / 'empty'}` first" in result.stderr
    assert not (tmp_path / "out").exists()


def test_unwritable_output_folder(prepared, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = banditbench("run", "--data-dir", prepared, "--out", blocker / "results", "--rounds", 5)
    assert result.returncode == 2 and f"{blocker} is a file, not a folder" in result.stderr


def test_existing_output_folder_is_refused_and_kept(prepared, tmp_path):
    # the default benchmark: one experiment per dataset below --out, both checked before either is written
    out = tmp_path / "out"
    assert banditbench("run", "--data-dir", prepared, "--out", out, "--rounds", 5, "--seeds", 1).returncode == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.glob("*/shards/*")}
    assert {p.parts[0] for p in before} == {"synthetic", "synthetic-cosine"}
    result = banditbench("run", "--data-dir", prepared, "--out", out, "--rounds", 5, "--seeds", 1)
    assert result.returncode == 2 and "pass --resume to finish it or --overwrite to replace it" in result.stderr
    assert {p.relative_to(out): p.read_bytes() for p in out.glob("*/shards/*")} == before
    resumed = banditbench("run", "--data-dir", prepared, "--out", out, "--rounds", 5, "--seeds", 1, "--resume")
    assert resumed.returncode == 0
    assert "synthetic: ran 0 of 6 units" in resumed.stdout and "synthetic-cosine: ran 0 of 4 units" in resumed.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--users", "0"], "--users must be at least 1"),
        (["--clusters", "9", "--users", "3"], "--clusters (9) cannot exceed --users (3)"),
        (["--noise", "-1"], "--noise must be non-negative"),
    ],
)
def test_bad_prepare_input(tmp_path, args, message):
    result = banditbench("prepare", "synthetic", "--data-dir", tmp_path, *args)
    assert result.returncode == 2 and message in result.stderr
    assert not list(tmp_path.iterdir())


def test_report_of_a_folder_without_results(tmp_path):
    result = banditbench("report", tmp_path)
    assert result.returncode == 2 and "is not a results folder" in result.stderr


def test_report_refuses_unknown_formats(tmp_path):
    result = banditbench("report", tmp_path, "--format", "pfd")
    assert result.returncode == 2 and "unknown format 'pfd'; did you mean pdf?" in result.stderr
