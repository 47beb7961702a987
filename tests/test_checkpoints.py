"""Checkpoints hold plain data only: every registered algorithm resumes to the same outcome, and a planted
pickle is never run."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from banditbench.algos import ALGORITHMS
from banditbench.data import load_dataset
from banditbench.envs import PROTOCOLS
from banditbench.runner.checkpoint import Checkpoints, read, write
from banditbench.runner.unit import Unit, run_unit

sys.path.insert(0, str(Path(__file__).parent))
from conftest import banditbench  # noqa: E402
from fixtures_logged import write_mind_fixture  # noqa: E402
from fixtures_raw import SHARED  # noqa: E402

EVERY, ROUNDS = 30, 100  # checkpoints at rounds 30, 60 and 90; the crash comes after the second
SLATE = [name for name, spec in ALGORITHMS.items() if spec.fixed.get("two_stage") is not None]
USER_FEATURES = [name for name, spec in ALGORITHMS.items() if spec.fixed.get("user_features")]
ONE_ARM = [name for name in ALGORITHMS if name not in SLATE and name not in USER_FEATURES]


class Interrupted(Exception):
    pass


class CrashingCheckpoints(Checkpoints):
    """Saves like Checkpoints, then stops the unit after its second save, as a kill would."""

    saves = 0

    def save(self, unit, state):
        super().save(unit, state)
        self.saves += 1
        if self.saves == 2:
            raise Interrupted


class Resumed(Checkpoints):
    def load(self, unit):
        self.loaded = super().load(unit)
        return self.loaded


class Saved(Checkpoints):
    """Records the round of every checkpoint it saves."""

    def __init__(self, folder, every: int):
        super().__init__(folder, every)
        self.rounds = []

    def save(self, unit, state):
        super().save(unit, state)
        self.rounds.append(state["t"])


def resumes_identically(unit: Unit, dataset, folder: Path, every: int = EVERY) -> None:
    uninterrupted = run_unit(unit, dataset)
    with pytest.raises(Interrupted):
        run_unit(unit, dataset, checkpoints=CrashingCheckpoints(folder, every))
    resumed_from = Resumed(folder, every)
    resumed = run_unit(unit, dataset, checkpoints=resumed_from)
    assert resumed_from.loaded is not None and resumed_from.loaded["t"] == 2 * every
    assert table_bytes(resumed.outcome) == table_bytes(uninterrupted.outcome), f"{unit.algorithm} resumed differently"


def table_bytes(table: pa.Table) -> bytes:
    """The table's columns bit for bit (NaN included, which ``Table.equals`` calls unequal to itself)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unit_of(algorithm: str, dataset: str, protocol: str, env=None, budget=None, rounds=ROUNDS, **params) -> Unit:
    return Unit(
        dataset,
        protocol,
        algorithm,
        {**ALGORITHMS[algorithm].defaults(), **params},
        0,
        1,
        rounds,
        budget,
        env=env or {},
    )


@pytest.mark.parametrize("algorithm", ONE_ARM)
def test_every_one_arm_policy_resumes_identically_on_synthetic_data(algorithm, dataset, tmp_path):
    resumes_identically(unit_of(algorithm, "synthetic", "linear"), dataset, tmp_path)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """A small pendigits-shaped table (16 features, 10 classes): block contexts of d·K = 160."""
    from banditbench.data import classification

    root = tmp_path_factory.mktemp("digits")
    rng = np.random.default_rng(0)
    for name, n in (("pendigits.tra", 60), ("pendigits.tes", 20)):
        rows = np.column_stack([rng.integers(0, 101, (n, 16)), np.arange(n) % 10])
        (root / name).write_text("\n".join(",".join(map(str, row)) for row in rows) + "\n")
    classification.prepare(root / "ds", "pendigits", source=str(root), offline=True, verify=False)
    return load_dataset(root / "ds", "pendigits")


@pytest.mark.parametrize("algorithm", ONE_ARM)
def test_every_one_arm_policy_resumes_identically_on_classification(algorithm, digits, tmp_path):
    resumes_identically(unit_of(algorithm, "pendigits", "classification"), digits, tmp_path)


@pytest.mark.skipif(not (SHARED / "movielens-100k").is_dir(), reason="MovieLens-100K not available")
@pytest.mark.parametrize("algorithm", USER_FEATURES)
def test_policies_on_user_features_resume_identically_on_movielens(algorithm, tmp_path):
    done = banditbench(
        "prepare",
        "movielens",
        "--variant",
        "100k",
        "--source",
        SHARED / "movielens-100k",
        "--offline",
        "--data-dir",
        tmp_path / "ds",
    )
    assert done.returncode == 0, done.stderr
    unit = unit_of(algorithm, "movielens", "recommendation")
    resumes_identically(unit, load_dataset(tmp_path / "ds", "movielens"), tmp_path)


@pytest.fixture(scope="module")
def mind(tmp_path_factory):
    from banditbench.data import logged

    root = tmp_path_factory.mktemp("mind")
    raw = write_mind_fixture(root / "mind-raw")
    logged.prepare_mind(root / "ds", source=str(raw), offline=True, verify=False)
    done = banditbench("simulator", "train", "mind", "--data-dir", root / "ds", "--epochs", "1", "--dim", "16")
    assert done.returncode == 0, done.stderr
    return load_dataset(root / "ds", "mind")


@pytest.mark.parametrize("algorithm", SLATE)
def test_every_slate_policy_resumes_identically_on_two_stage_rounds(algorithm, mind, tmp_path):
    """Short units whose neural item and topic models are retrained before and after the checkpoint."""
    settings = {**PROTOCOLS["twostage"].environment.SETTINGS, "users": 4, "slate_size": 3, "pretrain_epochs": 1}
    often = {
        k: v for k, v in (("item_update_every", 12), ("topic_update_every", 8)) if k in ALGORITHMS[algorithm].defaults()
    }
    unit = unit_of(algorithm, "mind", "twostage", env=settings, budget=20, rounds=50, **often)
    resumes_identically(unit, mind, tmp_path, every=20)


def test_a_unit_saves_a_checkpoint_every_so_many_rounds_but_not_after_its_last(dataset, tmp_path):
    # a checkpoint of the whole unit could never be resumed (check_state refuses its round); the shard follows at once
    saving = Saved(tmp_path, 25)
    run_unit(unit_of("linucb-ind", "synthetic", "linear"), dataset, checkpoints=saving)
    assert saving.rounds == [25, 50, 75]


def test_every_registered_algorithm_is_covered():
    assert sorted(ONE_ARM + USER_FEATURES + SLATE) == sorted(ALGORITHMS)


# -- the file format -----------------------------------------------------------------------------------------------


def test_plain_data_round_trips_with_its_types_and_shared_arrays(tmp_path):
    shared = np.arange(6.0).reshape(2, 3)
    tree = {
        "a": shared,
        "again": shared,
        3: (1, 2.5, float("nan"), "x", None, True),
        "s": np.float32(1.5),
        "big": 2**100,
        "nested": [{"k": np.zeros(0, np.int8)}],
        (1, 2): -float("inf"),
    }
    with open(tmp_path / "c.npz", "wb") as f:
        write(f, tree)
    back = read(tmp_path / "c.npz")
    assert back["again"] is back["a"] and back["a"].tolist() == shared.tolist()
    assert back[3][:2] == (1, 2.5) and np.isnan(back[3][2]) and back[3][3:] == ("x", None, True)
    assert type(back["s"]) is np.float32 and back["big"] == 2**100 and back[(1, 2)] == -float("inf")
    assert back["nested"][0]["k"].dtype == np.int8


def test_an_array_of_python_objects_is_refused(tmp_path):
    with open(tmp_path / "c.npz", "wb") as f, pytest.raises(TypeError, match="Python objects"):
        write(f, {"x": np.array([object()])})


class Planted:
    """Unpickling this runs ``touch MARKER``: what an attacker would put in a checkpoints folder."""

    marker: Path

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("disguise", ["pickle", "npz-of-objects", "truncated"])
def test_a_planted_or_broken_checkpoint_is_never_executed_and_the_unit_restarts(disguise, dataset, tmp_path, capsys):
    unit = unit_of("linucb-ind", "synthetic", "linear")
    checkpoints = Checkpoints(tmp_path / "out", EVERY)
    checkpoints.folder.mkdir(parents=True)
    planted = Planted()
    planted.marker = tmp_path / "ran"
    payload = pickle.dumps({"t": 60, "policy": planted, "columns": {}, "unit": planted})
    path = checkpoints.path(unit)
    if disguise == "pickle":
        path.write_bytes(payload)
        path.with_suffix(".pkl").write_bytes(payload)  # the old checkpoint name is not read either
    elif disguise == "npz-of-objects":
        np.savez(
            path, tree=np.frombuffer(b'{"array": "a0"}', np.uint8), a0=np.array([planted, 1], dtype=object)
        )  # numpy stores an object array as a pickle
    else:
        with pytest.raises(Interrupted):
            run_unit(unit, dataset, checkpoints=CrashingCheckpoints(tmp_path / "out", EVERY))
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    capsys.readouterr()
    resumed = run_unit(unit, dataset, checkpoints=checkpoints)
    assert not planted.marker.exists()
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith(f"warning: checkpoint {path} is unusable")
    assert "restarts from round 0" in warning[0]
    assert table_bytes(resumed.outcome) == table_bytes(run_unit(unit, dataset).outcome)


def test_an_attribute_that_is_not_plain_data_is_named():
    from banditbench.algos.linucb import LinUCB

    policy = LinUCB(n_users=2, n_arms=3, dim=2, seeds=[np.random.SeedSequence(0)])
    policy.seen = {1, 2}
    with pytest.raises(TypeError, match=r"LinUCB.seen: cannot save a set as plain state \(list it in `transient`"):
        policy.state_dict()


def test_run_resume_never_runs_a_planted_checkpoint(data_dir, tmp_path):
    """The attack as a user would meet it: a results folder with a pickle under a checkpoint's name."""
    args = [
        "run",
        "--data-dir",
        data_dir,
        "--dataset",
        "synthetic",
        "--algos",
        "linucb-ind",
        "--rounds",
        300,
        "--seeds",
        1,
        "--jobs",
        1,
        "--checkpoint-every",
        100,
    ]
    out, clean = tmp_path / "out", tmp_path / "clean"
    for folder in (out, clean):
        assert banditbench(*args, "--out", folder).returncode == 0
    shard = next((out / "shards").rglob("linucb-ind-seed0.parquet"))
    shard.unlink()  # as if the run had been killed during this unit
    planted = Planted()
    planted.marker = tmp_path / "ran"
    (out / "checkpoints").mkdir(exist_ok=True)
    for name in ("linucb-ind-seed0.npz", "linucb-ind-seed0.pkl"):
        (out / "checkpoints" / name).write_bytes(pickle.dumps({"t": 100, "policy": planted}))
    done = banditbench(*args, "--out", out, "--resume")
    assert done.returncode == 0, done.stderr
    assert not planted.marker.exists()
    assert "checkpoint" in done.stderr and "restarts from round 0" in done.stderr
    assert shard.read_bytes() == next((clean / "shards").rglob("linucb-ind-seed0.parquet")).read_bytes()
