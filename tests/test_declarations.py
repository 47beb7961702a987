"""One declaration per dataset: the prepare commands, their options and `list datasets` come from it."""

import ast
from pathlib import Path

import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

from banditbench import cli
from banditbench.data import DATASETS, Dataset, Option, load_dataset, register
from banditbench.data.prepared import write_dataset
from banditbench.errors import UserError

COMMON = {"--source", "--offline", "--force", "--verify", "--no-verify", "--data-dir", "--cache-dir"}


def prepare_commands():
    group = typer.main.get_group(cli.app)
    return group.commands["prepare"].commands


def flags(command):
    return {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}


def test_every_prepare_that_reads_files_has_the_same_source_options():
    commands = prepare_commands()
    assert set(commands) == {d.name for d in DATASETS.values() if d.prepare is not None}
    for dataset in DATASETS.values():
        if dataset.prepare is None:
            continue
        have = flags(commands[dataset.name])
        assert {o.flag for o in dataset.options} <= have, dataset.name
        if dataset.reads_raw:
            assert COMMON <= have, (dataset.name, COMMON - have)
        else:
            assert {"--data-dir", "--force"} <= have and "--source" not in have


def test_existing_option_names_and_defaults_are_kept():
    commands = prepare_commands()
    defaults = {name: {p.opts[0]: p.default for p in command.params} for name, command in commands.items()}
    assert defaults["movielens"]["--variant"] == "25m" and defaults["movielens"]["--top-users"] == 10_000
    assert defaults["lastfm"]["--pipeline"] == "svd" and defaults["lastfm"]["--top-items"] == 20_000
    assert defaults["amazon"]["--category"] == "AMAZON_FASHION" and defaults["mnist"]["--normalise"] == "meanstd"
    assert defaults["mnist-notmnist"]["--encoding"] == "shift" and defaults["synthetic"]["--users"] == 50
    assert defaults["movielens-logged"]["--history-until"] == "2010-01-01"


def test_an_option_outside_its_domain_is_refused_before_anything_is_read(tmp_path):
    result = CliRunner().invoke(
        cli.app,
        [
            "prepare",
            "movielens",
            "--variant",
            "7m",
            "--source",
            str(tmp_path / "no"),
            "--data-dir",
            str(tmp_path / "ds"),
        ],
        standalone_mode=False,
    )
    assert isinstance(result.exception, UserError)
    assert str(result.exception) == "--variant must be 100k | 1m | 20m | 25m, got '7m'"
    with pytest.raises(UserError, match="--groups must be at least 1, got 0"):
        DATASETS["yelp"].check({"groups": 0})
    with pytest.raises(UserError, match="--positive-above must be a finite number, got nan"):
        DATASETS["movielens"].check({"positive_above": float("nan")})
    assert not (tmp_path / "ds").exists()


def test_a_new_dataset_is_one_declaration(tmp_path):
    def prepare(data_dir, *, rows, force, source=None):  # takes only the source keywords it uses
        frame = pd.DataFrame({"x_0": range(rows), "label": [i % 2 for i in range(rows)]})
        return write_dataset(
            Path(data_dir) / "toy", "toy", {"samples": frame}, {"rows": rows}, protocol="classification", force=force
        )

    toy = register(
        Dataset(
            "toy",
            "a toy table",
            "nobody 2026",
            "classification",
            prepare,
            (Option("rows", int, 12, "Rows.", minimum=2),),
        )
    )
    cli.prepare_command(toy)
    try:
        result = CliRunner().invoke(cli.app, ["prepare", "toy", "--rows", "14", "--data-dir", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert load_dataset(tmp_path, "toy").manifest["sanity"]["samples"] == 14
        listed = CliRunner().invoke(cli.app, ["list", "datasets", "--wide"], env={"COLUMNS": "200"})
        assert "toy" in listed.output and "--rows 12 (at least 2)" in listed.output
    finally:  # unregister it again
        DATASETS.pop("toy")
        cli.prepare_app.registered_commands.pop()


def test_data_never_imports_the_layers_above_it():
    above = (
        "banditbench.envs",
        "banditbench.algos",
        "banditbench.runner",
        "banditbench.report",
        "banditbench.results",
        "banditbench.simulator",
        "banditbench.cli",
    )
    for module in Path(cli.__file__).parent.joinpath("data").glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert not name.startswith(above), f"{module.name} imports {name}"
