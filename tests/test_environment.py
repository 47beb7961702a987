"""A problem built in Python (a DataFrame, a reward function) runs through the same runner and shard format as a
prepared dataset: the same rounds as the same table prepared from a file, an oracle with no regret, one seed fixing
everything, bad input refused in one line with no folder left behind."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from fixtures_raw import ratings_table

import banditbench as bb
from banditbench.errors import UserError
from banditbench.results.shards import METADATA_KEY


def ratings_frame() -> pd.DataFrame:
    rows = ratings_table(n_users=24, n_items=40)
    return pd.DataFrame({"user": rows[:, 0], "item": rows[:, 1], "reward": rows[:, 2].astype(float)})


def labelled_frame(n: int = 45) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "width": rng.normal(size=n) + np.arange(n) % 3,
            "colour": np.where(np.arange(n) % 2, "blue", "red"),
            "species": np.array(["a", "b", "c"])[np.arange(n) % 3],
        }
    )


def shards(folder: Path) -> dict[str, tuple[pd.DataFrame, dict]]:
    """Each outcome shard's table (without metadata) and its metadata, by file name."""
    found = {}
    for path in sorted((folder / "shards").glob("*.parquet")):
        if path.name.endswith(".timing.parquet"):
            continue
        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[METADATA_KEY])
        found[path.name] = (table.replace_schema_metadata(None).to_pandas(), meta)
    return found


def test_a_dataframe_gives_the_rounds_of_the_same_table_prepared_from_a_file(tmp_path):
    frame = ratings_frame()
    frame.to_csv(tmp_path / "ratings.csv", index=False)
    options = {"positive_above": 3, "groups": 4}
    bb.prepare("interactions", name="shop", source=tmp_path / "ratings.csv", data_dir=tmp_path / "data", **options)
    run = {"algos": ["random", "linucb-one"], "rounds": 40, "seeds": 1}
    from_file = bb.run(dataset="shop", data_dir=tmp_path / "data", out=tmp_path / "file", **run)
    environment = bb.Environment.from_dataframe(frame, name="shop", **options)
    in_memory = bb.run(environment=environment, out=tmp_path / "memory", **run)

    on_disk, staged = shards(from_file.folder), shards(in_memory.folder)
    assert list(on_disk) == list(staged) and len(on_disk) == 2
    for name, (table, meta) in on_disk.items():
        pd.testing.assert_frame_equal(
            table, staged[name][0], check_exact=True
        )  # every round's user, choice, reward, diagnostics
        differs = {key for key in meta if meta[key] != staged[name][1][key]}
        assert differs == {"dataset_manifest_sha256"}  # the source's identity: a CSV file or a DataFrame
    prepared = json.loads((tmp_path / "data" / "shop" / "manifest.json").read_text())["tables"]
    assert {t: v["sha256"] for t, v in prepared.items()} == {
        t: v["sha256"] for t, v in environment.manifest["tables"].items()
    }


def test_a_labelled_dataframe_prepares_as_the_classification_command_does(tmp_path):
    frame = labelled_frame()
    frame.to_csv(tmp_path / "flowers.csv", index=False)
    folder = bb.prepare(
        "classification", name="flowers", source=tmp_path / "flowers.csv", target="species", data_dir=tmp_path
    )
    environment = bb.Environment.from_dataframe(frame, target="species", name="flowers")
    on_disk = json.loads((folder / "manifest.json").read_text())
    assert environment.protocol == "classification"
    assert on_disk["tables"]["samples"]["sha256"] == environment.manifest["tables"]["samples"]["sha256"]
    assert environment.manifest["counts"] == on_disk["counts"] == {"samples": 45, "features": 3, "classes": 3}


def test_the_staged_folder_lives_as_long_as_the_environment(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    environment = bb.Environment.from_dataframe(labelled_frame(), target="species")
    assert [p.name for p in environment.data_dir.iterdir()] == ["dataframe"]  # the staged table is gone already
    staged = environment.data_dir.parent
    del environment
    gc.collect()
    assert not staged.exists()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: bb.Environment.from_dataframe(ratings_frame().rename(columns={"reward": "value"})),
            "the DataFrame: no column 'reward' (it has: user, item, value); name yours with --reward",
        ),
        (
            lambda: bb.Environment.from_dataframe(ratings_frame()),
            "the DataFrame: every rating (1 to 5) is above --positive-above 0",
        ),
        (lambda: bb.Environment.from_dataframe(ratings_frame(), source="x.csv"), "it takes no source= option"),
        (lambda: bb.Environment.from_dataframe(ratings_frame(), groups=0), "--groups must be"),
        (lambda: bb.Environment.from_dataframe([[1, 2]]), "takes a pandas DataFrame, got list"),
        (
            lambda: bb.Environment.from_function(lambda c, x: float("nan"), np.eye(3), n_arms=4),
            "reward_fn must return a finite number; on user 0, arm 0 it returned nan",
        ),
        (
            lambda: bb.Environment.from_function(lambda c, x: c[5], np.eye(3), n_arms=4),
            "reward_fn failed on user 0, arm 0: IndexError",
        ),
        (lambda: bb.Environment.from_function(lambda c, x: 0.0, np.eye(3), n_arms=4, arms=np.eye(3)), "one of the two"),
        (lambda: bb.Environment.from_function(lambda c, x: 0.0, np.eye(3), n_arms=1), "at least 2 arms"),
        (lambda: bb.Environment.from_function(lambda c, x: 0.0, np.eye(3), n_arms=4, noise=-1), "noise must be"),
        (lambda: bb.Environment.from_function(lambda c, x: 0.0, np.eye(3), n_arms=4, seed=-1), "seed must be"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_folder(build, message, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(UserError, match="^[^\n]*$") as refused:
        build()
    assert message in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_run_takes_an_environment_or_a_dataset_not_both():
    environment = bb.Environment.from_function(lambda c, x: float(c @ x), np.eye(3), n_arms=4)
    with pytest.raises(UserError, match="not both"):
        bb.run(environment=environment, dataset="synthetic", algos="random")


def linear(context: np.ndarray, arm: np.ndarray) -> float:
    return float(context @ arm)


def test_the_oracle_of_a_reward_function_has_no_regret_and_a_learner_finds_the_best_arms():
    users = np.random.default_rng(0).normal(size=(6, 4))
    environment = bb.Environment.from_function(linear, users, n_arms=5, noise=0.1)
    results = bb.run(environment=environment, algos=["oracle", "random", "linucb-ind"], rounds=600, seeds=2)
    regret = results.summary().set_index("algorithm")["regret_mean"]
    assert regret["oracle"] == 0.0
    assert regret["linucb-ind"] < regret["random"] / 3
    frame = results.frame()
    oracle = frame[frame["algorithm"] == "oracle"]
    assert (oracle["expected_reward"] == oracle["best_expected_reward"]).all()


def test_a_seed_fixes_the_arms_and_the_run_seed_the_users_and_noise(tmp_path):
    users = np.random.default_rng(0).normal(size=(5, 3))

    def outcome(seed: int, run_seed: int, out: str) -> dict[str, bytes]:
        environment = bb.Environment.from_function(linear, users, n_arms=4, seed=seed)
        results = bb.run(
            environment=environment, algos="linucb-one", rounds=30, seeds=1, seed=run_seed, out=tmp_path / out
        )
        outcomes = [p for p in (results.folder / "shards").glob("*.parquet") if not p.name.endswith(".timing.parquet")]
        return {path.name: path.read_bytes() for path in outcomes}

    first = outcome(0, 0, "a")
    assert first == outcome(0, 0, "b")  # the same bytes, shard for shard
    assert first != outcome(1, 0, "c")  # other arms
    assert first != outcome(0, 1, "d")  # other users and noise
