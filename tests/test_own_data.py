"""A user's own interactions and a user's own labelled table prepare, coexist by name and run end to end."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import banditbench
from fixtures_raw import ratings_table

from banditbench.data import load_dataset, own
from banditbench.errors import UserError


def interactions_csv(tmp_path, name="clicks.csv", sep=",", features=False):
    rows = ratings_table()
    frame = pd.DataFrame(
        {
            "user": [f"u{u}" for u in rows[:, 0]],
            "item": [f"i{i}" for i in rows[:, 1]],
            "reward": (rows[:, 2] >= 4).astype(int),
            "timestamp": rows[:, 3],
        }
    )
    if features:
        frame["genre_a"] = rows[:, 1] % 3
        frame["genre_b"] = (rows[:, 1] % 5) / 5 + 0.1
    path = tmp_path / name
    frame.to_csv(path, index=False, sep=sep)
    return path, frame


def iris_like(tmp_path, n=60):
    rng = np.random.default_rng(0)
    species = np.array(["setosa", "versicolor", "virginica"])[np.arange(n) % 3]
    frame = pd.DataFrame(
        {
            "sepal": rng.normal(size=n) + (np.arange(n) % 3),
            "petal": rng.normal(size=n),
            "colour": np.where(np.arange(n) % 2, "blue", "red"),
            "species": species,
        }
    )
    path = tmp_path / "flowers.parquet"
    frame.to_parquet(path)
    return path


def test_interactions_and_table_prepare_and_run_end_to_end(tmp_path):
    csv, frame = interactions_csv(tmp_path)
    data = tmp_path / "ds"
    done = banditbench(
        "prepare", "interactions", "--source", csv, "--name", "shop", "--groups", "4", "--data-dir", data
    )
    assert done.returncode == 0, done.stderr
    table = iris_like(tmp_path)
    done = banditbench(
        "prepare", "classification", "--source", table, "--target", "species", "--name", "flowers", "--data-dir", data
    )
    assert done.returncode == 0, done.stderr
    shop = load_dataset(data, "shop")
    assert shop.manifest["protocol"] == "recommendation"
    assert shop.manifest["counts"]["users"] == frame["user"].nunique()
    assert shop.manifest["counts"]["positives"] == int(frame["reward"].sum())
    assert "timestamp" in shop.table("interactions").columns
    flowers = load_dataset(data, "flowers")
    samples = flowers.table("samples")
    assert flowers.manifest["counts"]["classes"] == 3 and len(samples) == 60
    assert samples.filter(like="x_").shape[1] == 4  # sepal, petal and colour one-hot (blue, red)
    for name in ("shop", "flowers"):
        out = tmp_path / f"out-{name}"
        ran = banditbench(
            "run",
            "--dataset",
            name,
            "--rounds",
            50,
            "--seeds",
            1,
            "--algos",
            "random,linucb-ind",
            "--data-dir",
            data,
            "--out",
            out,
            "--jobs",
            1,
        )
        assert ran.returncode == 0, ran.stderr
        assert (out / "shards" / "linucb-ind-seed0.parquet").is_file()


def test_given_item_features_replace_the_svd(tmp_path):
    csv, frame = interactions_csv(tmp_path, sep=";", features=True)  # a semicolon CSV is sniffed
    own.prepare_interactions(
        tmp_path / "ds",
        name="shop",
        source=str(csv),
        item_features="genre_a,genre_b",
        options=own.pipeline.RatingOptions(positive_above=0.0, groups=4),
    )
    dataset = load_dataset(tmp_path / "ds", "shop")
    items = dataset.table("items")
    assert [c for c in items.columns if c.startswith("f_")] == ["f_0", "f_1"]
    first = items.loc[items["raw_item"] == "i7", ["f_0", "f_1"]].to_numpy()[0]
    np.testing.assert_allclose(first, np.array([1, 0.5]) / np.hypot(1, 0.5))  # i7: genre_a 1, genre_b 0.5
    users = dataset.table("users")
    np.testing.assert_allclose(np.linalg.norm(users[["f_0", "f_1"]].to_numpy(), axis=1), 1.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"user": "customer"},
            r"no column 'customer' \(it has: user, item, reward, timestamp\); name yours with --user",
        ),
        ({"reward": "item"}, r"clicks.csv, line 2: column 'item' value 'i\d+' is not a number"),
        ({"name": "movielens"}, r"--name 'movielens' is a registered dataset"),
        ({"name": "../up"}, r"--name '../up' must be letters"),
    ],
)
def test_bad_interactions_are_one_line(tmp_path, kwargs, message):
    csv, _ = interactions_csv(tmp_path)
    with pytest.raises(UserError, match=message):
        own.prepare_interactions(tmp_path / "ds", **{"name": "shop", "source": str(csv), **kwargs})
    assert not (tmp_path / "ds").exists()


def test_too_few_rows_and_one_class_are_refused(tmp_path):
    csv, frame = interactions_csv(tmp_path)
    frame.head(5).to_csv(tmp_path / "five.csv", index=False)
    with pytest.raises(UserError, match="5 interactions, too few"):
        own.prepare_interactions(tmp_path / "ds", name="shop", source=str(tmp_path / "five.csv"))
    pd.DataFrame({"x": range(20), "y": ["a"] * 20}).to_csv(tmp_path / "one.csv", index=False)
    with pytest.raises(UserError, match="'y' holds one class only"):
        own.prepare_table(tmp_path / "ds", name="t", source=str(tmp_path / "one.csv"), target="y")
    with pytest.raises(UserError, match="no column 'label'"):
        own.prepare_table(tmp_path / "ds", name="t", source=str(tmp_path / "one.csv"), target="label")


def test_cli_requires_name_and_reports_the_sanity_warnings(tmp_path, monkeypatch, capsys):
    from test_prepare_values import run_cli

    csv, _ = interactions_csv(tmp_path)
    code, _, err = run_cli(
        monkeypatch, capsys, "prepare", "interactions", "--source", csv, "--data-dir", tmp_path / "ds"
    )
    assert code == 2 and "--name is required" in err and "Traceback" not in err
    code, _, err = run_cli(
        monkeypatch, capsys,
        "prepare", "interactions", "--source", csv, "--name", "shop", "--groups", "20", "--data-dir", tmp_path / "ds",
    )  # fmt: skip
    assert code == 0, err
    assert "warning: shop: 20 groups for 40 users" in err
    manifest = json.loads((tmp_path / "ds" / "shop" / "manifest.json").read_text())
    assert any("20 groups for 40 users" in w for w in manifest["warnings"])
    code, out, _ = run_cli(monkeypatch, capsys, "info", "shop", "--data-dir", tmp_path / "ds")
    assert code == 0 and "positives per user" in out and "20 groups for 40 users" in out


def test_an_export_with_common_column_names_prepares_as_the_same_table_named_the_default_way(
    tmp_path, monkeypatch, capsys
):
    from test_prepare_values import run_cli

    csv, frame = interactions_csv(tmp_path)
    exported = tmp_path / "ratings.csv"  # MovieLens' names for the same columns
    frame.rename(columns={"user": "userId", "item": "movieId", "reward": "Rating"}).to_csv(exported, index=False)
    code, out, err = run_cli(
        monkeypatch, capsys,
        "prepare", "interactions", "--source", exported, "--name", "exported", "--data-dir", tmp_path / "ds",
    )  # fmt: skip
    assert code == 0, err
    assert "read user from column 'userId', item from column 'movieId', reward from column 'Rating'" in out
    own.prepare_interactions(tmp_path / "ds", name="named", source=str(csv))
    ours, theirs = (load_dataset(tmp_path / "ds", name) for name in ("exported", "named"))
    assert ours.manifest["tables"].keys() == theirs.manifest["tables"].keys()
    for table in ours.manifest["tables"]:
        pd.testing.assert_frame_equal(ours.table(table), theirs.table(table))
    code, _, err = run_cli(
        monkeypatch, capsys,
        "prepare", "interactions", "--source", exported, "--name", "x", "--user", "customer",
        "--data-dir", tmp_path / "ds",
    )  # fmt: skip
    assert code == 2 and "no column 'customer'" in err  # a name given is never replaced by a guess


def test_run_and_report_repeat_the_datasets_warnings_in_the_manifest_and_the_report_header(tmp_path):
    csv, _ = interactions_csv(tmp_path)
    data, out = tmp_path / "ds", tmp_path / "out"
    done = banditbench(
        "prepare", "interactions", "--source", csv, "--name", "shop", "--groups", "20", "--data-dir", data
    )
    assert done.returncode == 0, done.stderr
    done = banditbench(
        "run",
        "--dataset",
        "shop",
        "--algos",
        "random",
        "--rounds",
        "20",
        "--seeds",
        "1",
        "--jobs",
        "1",
        "--data-dir",
        data,
        "--out",
        out,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: dataset shop: " in done.stderr and "20 groups for 40 users" in done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert any("20 groups for 40 users" in w for w in manifest["dataset_warnings"])
    done = banditbench("report", out, "--format", "md")
    assert done.returncode == 0, done.stderr
    assert "dataset shop: " in done.stderr and "20 groups for 40 users" in done.stderr
    head = (out / "report.md").read_text().splitlines()[0]
    assert head.startswith("> warning: ") and "20 groups for 40 users" in head


def test_ratings_on_a_scale_under_the_default_threshold_are_refused_with_the_flag_to_pass(
    tmp_path, monkeypatch, capsys
):
    from test_prepare_values import run_cli

    rows = ratings_table()
    pd.DataFrame({"user_id": rows[:, 0], "movie_id": rows[:, 1], "rating": rows[:, 2]}).to_csv(
        tmp_path / "ratings.csv", index=False
    )
    data = tmp_path / "ds"
    command = ["prepare", "interactions", "--source", tmp_path / "ratings.csv", "--user", "user_id", "--item"]
    command += ["movie_id", "--reward", "rating", "--name", "mine", "--data-dir", data]
    code, _, err = run_cli(monkeypatch, capsys, *command)
    assert code == 2 and err.count("\n") == 1 and not data.exists()
    assert "ratings.csv: every rating (1 to 5) is above --positive-above 0" in err
    assert "pass --positive-above 3 to make those above it the positives" in err
    code, out, err = run_cli(monkeypatch, capsys, *command, "--positive-above", "3")
    assert code == 0, err
    manifest = load_dataset(data, "mine").manifest
    assert manifest["counts"]["groups"] == 8  # sized from the data: one group per 5 of the 40 users
    assert manifest["counts"]["negatives"] > 0 and not manifest["warnings"]
    assert "; 8 of the 8 groups can serve a round" in out


def test_clicks_without_any_negative_say_what_is_missing(tmp_path):
    csv, frame = interactions_csv(tmp_path)
    frame.assign(reward=1).to_csv(csv, index=False)
    with pytest.raises(UserError, match=r"every rating \(1 to 1\) .* the data hold positives only"):
        own.prepare_interactions(tmp_path / "ds", name="shop", source=str(csv))


@pytest.mark.parametrize(
    "content, message",
    [
        ("", r"empty.csv: the file is empty"),
        ("\n\n", r"empty.csv: cannot read it as a CSV file with a header row \(Could not determine delimiter\)"),
    ],
)
def test_an_empty_or_unreadable_csv_names_the_file(tmp_path, content, message):
    (tmp_path / "empty.csv").write_text(content)
    with pytest.raises(UserError, match=message):
        own.prepare_interactions(tmp_path / "ds", name="shop", source=str(tmp_path / "empty.csv"))


def test_infinite_or_missing_rewards_are_refused_by_line_or_row(tmp_path):
    csv, frame = interactions_csv(tmp_path)
    frame["reward"] = frame["reward"].astype(float)
    frame.loc[11, "reward"] = np.inf
    frame.to_csv(csv, index=False)
    with pytest.raises(UserError, match=r"clicks.csv, line 13: column 'reward' value inf is not a finite number"):
        own.prepare_interactions(tmp_path / "ds", name="shop", source=str(csv))
    frame.loc[11, "reward"] = np.nan
    frame.to_parquet(tmp_path / "clicks.parquet")
    with pytest.raises(
        UserError, match=r"clicks.parquet, row 12: column 'reward' has no value \(1 empty values in all\)"
    ):
        own.prepare_interactions(tmp_path / "ds", name="shop", source=str(tmp_path / "clicks.parquet"))
    assert not (tmp_path / "ds").exists()
