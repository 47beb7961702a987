"""A preset knows its data: every preset declares the preparation parameters of its paper's data, a run on data
prepared otherwise is refused with the exact prepare command (nothing written), --allow-stand-in runs it and names
the stand-in in every verdict, and --prepare builds the declared data first."""

from __future__ import annotations

import json
import shlex

import pytest
import typer
from test_yahoo import write_set2
from typer.testing import CliRunner

import banditbench as bb
from banditbench import presets
from banditbench.cli import app, flag
from banditbench.data import DATASETS
from banditbench.errors import UserError
from banditbench.runner import declared_data

# a preset run cut to one short unit per algorithm, one cell of its grid
TINY = dict(algos="linucb-ind,bass", rounds=30, seeds=1, tune_seeds=0, params={"linucb-ind.alpha": 1, "bass.alpha": 1})


def prepare_command_line(command: str):
    """The click context ``banditbench prepare DATASET …`` parses to, without running it."""
    words = shlex.split(command)
    assert words[:2] == ["banditbench", "prepare"]
    group = typer.main.get_command(app).commands["prepare"]
    return group.commands[words[2]].make_context(words[2], words[3:])


@pytest.mark.parametrize("name", presets.PRESETS)
def test_every_preset_declares_its_data_and_the_command_that_prepares_it_parses(name):
    spec = presets.PRESETS[name]
    declared = spec["data"]
    options = {o.name: o for o in DATASETS[spec["dataset"]].options}
    assert declared or not options, f"{name} declares no data"  # {}: a preparation with no parameters
    assert set(declared) <= set(options), f"{name}: not options of prepare {spec['dataset']}"
    for key, value in declared.items():
        assert options[key].check(value) == value  # every value within its option's domain
    for data_dir, replace in (("datasets", False), ("other place/d", True)):
        command = declared_data.prepare_command(spec["dataset"], declared, data_dir, replace=replace)
        parsed = prepare_command_line(command).params
        assert {key: parsed[key] for key in declared} == declared  # the command builds exactly the declared data
        assert str(parsed["data_dir"]) == data_dir and parsed["force"] is replace


def test_a_preset_on_other_data_is_refused_with_the_command_that_prepares_its_data(data_dir, tmp_path):
    out = tmp_path / "out"
    args = ["run", "--preset", "bass-synthetic", "--data-dir", str(data_dir), "--out", str(out)]
    refused = CliRunner().invoke(app, args, standalone_mode=False)  # the command line's one-line UserError
    message = str(refused.exception)
    assert isinstance(refused.exception, UserError) and "\n" not in message and not out.exists()
    assert "with centres = bass, arm_set = unit, users = 18, noise = 1.0, but" in message
    assert "prepared with centres = sphere, arm_set = fresh, users = 20, noise = 0.1;" in message
    assert "or pass --allow-stand-in to run" in refused.exception.naming(flag)  # what the CLI prints
    command = message.split("prepare it with: ")[1].split("; or pass allow_stand_in")[0]
    assert command == (
        f"banditbench prepare synthetic --users 18 --dim 5 --arms 10 --noise 1 --centres bass --protocol linear "
        f"--arm-set unit "
        f"--data-dir {data_dir} --force"
    )
    done = CliRunner().invoke(app, shlex.split(command)[1:])
    assert done.exit_code == 0, done.output
    ran = bb.run(preset="bass-synthetic", data_dir=data_dir, out=out, **TINY)
    settings = json.loads((ran.folder / "manifest.json").read_text())["execution"]["settings"]
    assert settings["stand_in"] == {} and settings["prepared-with"]["parameters"]["arm_set"] == "unit"


def test_a_missing_dataset_and_another_dataset_are_refused_too(data_dir, tmp_path):
    with pytest.raises(
        UserError, match="preset bass-movielens needs movielens-small prepared in .*; prepare it with: "
    ):
        bb.run(preset="bass-movielens", data_dir=tmp_path / "empty", out=tmp_path / "out", **TINY)
    with pytest.raises(UserError, match="dataset synthetic makes it a stand-in: pass allow_stand_in"):
        bb.run(preset="bass-movielens", dataset="synthetic", data_dir=data_dir, out=tmp_path / "out", **TINY)
    assert not (tmp_path / "out").exists()


def test_a_stand_in_runs_when_allowed_and_every_verdict_names_it(data_dir, tmp_path):
    results = bb.run(preset="bass-synthetic", data_dir=data_dir, out=tmp_path / "out", allow_stand_in=True, **TINY)
    stand_in = json.loads((results.folder / "manifest.json").read_text())["execution"]["settings"]["stand_in"]
    assert stand_in["users"] == {"needed": 18, "prepared": 20} and stand_in["arm_set"] == {
        "needed": "unit",
        "prepared": "fresh",
    }
    judged = results.tables.paper
    judged = judged[(judged["verdict"] != "") & (judged["here"] != "–")]  # what this run measured
    said = judged["reason"] + " " + judged["differences"].fillna("")  # a judged ordering or claim names them apart
    assert (
        len(judged) and said.str.contains("stand-in data (--allow-stand-in): arm_set = fresh here", regex=False).all()
    )


def test_prepare_builds_the_declared_data_from_a_local_source(tmp_path, monkeypatch):
    source, _ = write_set2(tmp_path)
    small = {"clusters": 10, "arms": 6, "dim": 4, "agents": 8}
    monkeypatch.setitem(presets.PRESETS, "small-yahoo", {**presets.PRESETS["bass-yahoo"], "data": small})
    data = tmp_path / "datasets"
    with pytest.raises(UserError, match="source goes with prepare"):
        bb.run(preset="small-yahoo", data_dir=data, source=source, **TINY)
    results = bb.run(preset="small-yahoo", data_dir=data, prepare=True, source=source, out=tmp_path / "a", **TINY)
    assert json.loads((data / "yahoo" / "manifest.json").read_text())["parameters"]["agents"] == 8
    assert results.summary()["algorithm"].tolist() == ["linucb-ind", "bass"]
    again = bb.run(preset="small-yahoo", data_dir=data, prepare=True, out=tmp_path / "b", **TINY)  # prepared already
    assert again.summary()["algorithm"].tolist() == ["linucb-ind", "bass"]


def test_prepare_never_replaces_data_prepared_otherwise(data_dir, tmp_path):
    manifest = (data_dir / "synthetic" / "manifest.json").read_bytes()
    with pytest.raises(UserError, match="^prepare would replace .* prepared with .*users = 20.*--force`"):
        bb.run(preset="bass-synthetic", data_dir=data_dir, prepare=True, out=tmp_path / "out", **TINY)
    assert (data_dir / "synthetic" / "manifest.json").read_bytes() == manifest and not (tmp_path / "out").exists()


def test_an_option_whose_flag_differs_from_its_name_is_read_under_the_flags_name():
    """lastfm's ``pipeline_name`` is prepared with ``--pipeline``: data prepared with it is no stand-in."""
    option = next(o for o in DATASETS["lastfm"].options if o.name == "pipeline_name")
    other = next(c for c in option.choices if c != option.default) if option.choices else "something-else"
    assert declared_data.recorded(option, {"pipeline": other}) == other
    assert declared_data.differences("lastfm", {"pipeline_name": other}, {"pipeline": other}) == {}


def test_a_declared_value_equal_to_the_prepared_one_is_no_stand_in_whatever_its_type():
    assert declared_data.differences("synthetic", {"noise": 1}, {"noise": 1.0}) == {}
    assert declared_data.differences("synthetic", {"noise": 0.1}, {"noise": 0.2}) == {
        "noise": {"needed": 0.1, "prepared": 0.2}
    }
