"""Nothing written outside: a `~` means the home folder wherever a path is given, a dataset is a name, results and
reports never go into prepared data, a symlinked `--out` is followed, and what a killed `--overwrite` left is
removed by the next run, which keeps the folder's mode.

Each test names the guarantee of docs/reliability.md it checks."""

import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_reliability import main, run, shards, tree  # noqa: E402

SMALL = ("--algos", "random", "--rounds", "50", "--seeds", "1", "--jobs", "1")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty home folder, and a working folder apart from it."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "home"


def test_a_tilde_means_the_home_folder_in_out_and_in_a_config_file(data_dir, home, tmp_path, capsys):
    code, err = main("run", "--data-dir", data_dir, *SMALL, "--out", "~/flag", capsys=capsys)
    assert code == 0, err
    (tmp_path / "work" / "run.toml").write_text('out = "~/file"\n')
    code, err = main("run", "--data-dir", data_dir, *SMALL, "--config", "run.toml", capsys=capsys)
    assert code == 0, err
    code, err = main("report", "~/flag", "--out", "~/report", "--format", "csv", capsys=capsys)
    assert code == 0, err
    assert sorted(p.name for p in home.iterdir()) == ["file", "flag", "report"]
    assert len(shards(home / "flag")) == 1 and len(shards(home / "file")) == 1
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["run.toml"]  # no folder named ~


def test_out_the_home_folder_itself_writes_nothing_outside_it(data_dir, home, tmp_path, capsys):
    code, err = main("run", "--data-dir", data_dir, *SMALL, "--out", "~", capsys=capsys)
    assert code == 0, err
    assert len(shards(home)) == 1 and list((tmp_path / "work").iterdir()) == []
    assert not [p for p in home.rglob("*") if p.name.endswith(".partial")]


@pytest.mark.parametrize("name", ["../x", "/abs/olute", "sub/name", ".", "~"])
def test_a_dataset_is_a_name_not_a_path(name, data_dir, tmp_path, capsys):
    before = tree(tmp_path)
    for args in (("run", "--data-dir", data_dir, *SMALL, "--dataset", name), ("info", name, "--data-dir", data_dir)):
        code, err = main(*args, capsys=capsys)
        assert code == 2 and "is a path, not a name" in err and len(err.strip().splitlines()) == 1, err
    assert tree(tmp_path) == before


def test_results_and_reports_never_go_into_prepared_data(data_dir, tmp_path, capsys, monkeypatch):
    run(data_dir, tmp_path / "done")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "done").rename(data_dir / "done")  # a results folder moved in among the datasets
    before = tree(tmp_path)
    for args in (
        ("run", "--data-dir", data_dir, *SMALL, "--out", data_dir / "sub"),
        ("run", "--data-dir", data_dir, *SMALL, "--out", data_dir / "synthetic" / "sub"),
        ("report", data_dir / "done", "--out", data_dir),
        ("report", data_dir / "done", "--out", data_dir / "synthetic"),
        ("report", data_dir / "done"),  # the default: beside the shards, here among the datasets
    ):
        code, err = main(*args, capsys=capsys)
        assert code == 2 and ("data folder" in err or "prepared data" in err), (args, err)
        assert tree(tmp_path) == before, args
    code, err = main("report", data_dir / "done", "--out", tmp_path / "report", "--format", "csv", capsys=capsys)
    assert code == 0, err


def test_overwrite_through_a_symlinked_out_replaces_its_target_and_keeps_the_link(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "real", seeds=1)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    code, err = main("run", "--data-dir", data_dir, *SMALL, "--out", tmp_path / "link", "--overwrite", capsys=capsys)
    assert code == 0 and "Traceback" not in err, err
    assert (tmp_path / "link").is_symlink() and os.readlink(tmp_path / "link") == str(tmp_path / "real")
    assert list(shards(tmp_path / "real")) == ["random-seed0.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasets", "link", "real"]  # no .old, no staging


def test_the_next_run_removes_what_a_killed_overwrite_left_and_nothing_else(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "ow")
    staging = tmp_path / ".ow.k3x_9q2z"  # a killed --overwrite's staging folder, named as mkdtemp names it
    (staging / "shards").mkdir(parents=True)
    (staging / ".lock").write_text("")
    (staging / "shards" / "random-seed0.parquet").write_bytes(b"x" * 1000)
    run(data_dir, tmp_path / ".ow.old")  # the old results of a swap cut short
    keep = [tmp_path / ".ow.notes", tmp_path / ".ow.k3x_9q2"]  # the user's: no lock, or not mkdtemp's name
    for folder in keep:
        folder.mkdir()
        (folder / ".lock").write_text("") if folder.name.endswith("q2") else (folder / "n.txt").write_text("x")
    code, err = main("run", "--data-dir", data_dir, *SMALL, "--out", tmp_path / "ow", "--overwrite", capsys=capsys)
    assert code == 0, err
    assert not staging.exists() and not (tmp_path / ".ow.old").exists() and all(f.exists() for f in keep)


def test_overwrite_keeps_the_folders_mode(data_dir, tmp_path, capsys):
    run(data_dir, tmp_path / "ow")
    os.chmod(tmp_path / "ow", 0o751)
    code, err = main("run", "--data-dir", data_dir, *SMALL, "--out", tmp_path / "ow", "--overwrite", capsys=capsys)
    assert code == 0, err
    assert stat.S_IMODE((tmp_path / "ow").stat().st_mode) == 0o751
