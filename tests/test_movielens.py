from collections import Counter

import numpy as np
import pytest
from conftest import banditbench
from fixtures_raw import SHARED, write_ml1m_zip

from banditbench.data import load_dataset, movielens
from banditbench.data.ratings import RatingOptions
from banditbench.envs.recommendation import RecommendationEnvironment
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=30, top_items=50, groups=5)


def prepare_fixture(tmp_path, options=SMALL, **kwargs):
    source, rows = write_ml1m_zip(tmp_path)
    movielens.prepare(tmp_path / "datasets", variant="1m", options=options, source=str(source), offline=True, **kwargs)
    return load_dataset(tmp_path / "datasets", "movielens"), rows


def test_ml1m_fixture_counts_features_and_manifest(tmp_path):
    dataset, rows = prepare_fixture(tmp_path)
    users, items, inter = dataset.table("users"), dataset.table("items"), dataset.table("interactions")
    # Authors' recipe: top 3·30 users (all 40), then the 50 most rated items, then the 30 most active users.
    top = lambda ids, n: sorted(Counter(ids), key=lambda i: (-Counter(ids)[i], i))[:n]  # noqa: E731
    top50 = top(rows[:, 1].tolist(), 50)
    in_items = rows[np.isin(rows[:, 1], top50)]
    top30 = top(in_items[:, 0].tolist(), 30)
    assert sorted(users["raw_user"]) == sorted(top30)
    assert sorted(items["raw_item"]) == sorted(top50)
    kept = in_items[np.isin(in_items[:, 0], top30)]
    assert len(inter) == len(kept)
    assert (inter["label"] == 1).sum() == (kept[:, 2] > 4).sum()  # positive = rating > 4 (only 5 stars here)
    features = users.filter(regex=r"^f_\d+$").to_numpy()
    assert features.shape == (30, 10)
    np.testing.assert_allclose(np.linalg.norm(features, axis=1), 1.0)  # [rownorm(U[:, :9]), 1]/√2 is unit-norm
    np.testing.assert_allclose(features[:, -1], 1 / np.sqrt(2))
    assert set(users["group"]) == set(range(5))
    assert items.loc[items["raw_item"] == 1, "title"].item() == "Les Misérables 1 (1995)"  # Latin-1 decoded
    manifest = dataset.manifest
    assert manifest["counts"]["users"] == 30 and manifest["parameters"]["variant"] == "1m"
    assert {r["file"] for r in manifest["raw_files"]} == {"ratings.dat", "movies.dat"}
    assert all(len(r["sha256"]) == 64 for r in manifest["raw_files"])


def test_paper_rounds_have_one_liked_item_among_nine_rated(tmp_path):
    dataset, _ = prepare_fixture(tmp_path)
    env = RecommendationEnvironment(dataset, np.random.SeedSequence(1))
    users, inter = dataset.table("users"), dataset.table("interactions")
    group = users.set_index("user")["group"].to_numpy()[inter["user"]]
    liked = set(zip(group[inter["label"] > 0], inter["item"][inter["label"] > 0]))
    rated = set(zip(group, inter["item"]))
    item_of = {tuple(np.round(f, 12)): i for i, f in enumerate(env.item_features)}
    positions = []
    for rnd in env.rounds(300):
        assert rnd.arms.shape == (10, 10) and rnd.rewards.sum() == 1
        items = [item_of[tuple(np.round(a, 12))] for a in rnd.arms]
        best = int(np.argmax(rnd.rewards))
        positions.append(best)
        assert (rnd.user, items[best]) in liked
        assert all((rnd.user, i) in rated and (rnd.user, i) not in liked for k, i in enumerate(items) if k != best)
        assert len(set(items)) == 10
    assert len(set(positions)) == 10  # the positive lands anywhere


def test_every_group_that_can_fill_a_round_is_served_with_its_members_mean_features(tmp_path):
    """With K one more than the fewest negatives of a group, that group fills a round exactly and is served like
    every other eligible group; a round's user features are the mean SVD features of its group's members."""
    dataset, _ = prepare_fixture(tmp_path)
    probe = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    dataset.manifest["parameters"]["arms"] = int(probe.negatives.count[probe.positives.count >= 1].min()) + 1
    env = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    np.testing.assert_array_equal(env.eligible, np.flatnonzero(probe.positives.count >= 1))
    users = dataset.table("users")
    members = users.filter(regex=r"^f_\d+$").to_numpy()
    rounds = list(env.rounds(200))
    assert {r.user for r in rounds} == set(env.eligible)
    for r in rounds[:20]:
        np.testing.assert_allclose(r.user_features, members[users["group"].to_numpy() == r.user].mean(axis=0))


def test_code_mode_rewards_the_single_disliked_item(tmp_path):
    options = RatingOptions(top_users=30, top_items=50, groups=5, negative_below=2.0)
    dataset, _ = prepare_fixture(tmp_path, options=options, mode="mcnb-code")
    assert set(dataset.table("interactions")["rating"]) <= {1.0, 5.0}  # the code drops ratings 2–4
    env = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    assert env.dim == 20
    for rnd in env.rounds(50):
        assert rnd.rewards.sum() == 1
        peak = 1 / (0.5 * np.sqrt(2 * np.pi))  # N(0, 0.5²) pdf of unit-norm features lies in [pdf(1), pdf(0)]
        assert np.all((rnd.arms >= peak * np.exp(-2) - 1e-12) & (rnd.arms <= peak + 1e-12))
        np.testing.assert_allclose(rnd.arms[:, 9], peak * np.exp(-2 * 0.5))  # the constant 1/√2 coordinate


def test_same_seed_same_rounds(tmp_path):
    dataset, _ = prepare_fixture(tmp_path)
    a = list(RecommendationEnvironment(dataset, np.random.SeedSequence(3)).rounds(20))
    b = list(RecommendationEnvironment(dataset, np.random.SeedSequence(3)).rounds(20))
    assert all(x.user == y.user and np.array_equal(x.arms, y.arms) for x, y in zip(a, b))


def test_prepare_is_idempotent_and_force_rebuilds(tmp_path):
    prepare_fixture(tmp_path)
    manifest = tmp_path / "datasets" / "movielens" / "manifest.json"
    before = manifest.stat().st_mtime_ns
    prepare_fixture(tmp_path)
    assert manifest.stat().st_mtime_ns == before
    with pytest.raises(UserError, match="--force"):
        prepare_fixture(tmp_path, options=RatingOptions(top_users=30, top_items=50, groups=4))
    prepare_fixture(tmp_path, options=RatingOptions(top_users=30, top_items=50, groups=4), force=True)
    assert load_dataset(tmp_path / "datasets", "movielens").parameters["groups"] == 4


@pytest.mark.skipif(not (SHARED / "movielens-100k" / "u.data").is_file(), reason="genuine ml-100k not available")
def test_genuine_ml100k(tmp_path):
    source = SHARED / "movielens-100k"
    movielens.prepare(tmp_path, variant="100k", source=str(source), offline=True)
    dataset = load_dataset(tmp_path, "movielens")
    assert dataset.manifest["counts"] == {
        "raw_ratings": 100000,
        "users": 943,
        "items": 1682,
        "interactions": 100000,
        "positives": 21201,
        "negatives": 78799,
        "groups": 50,
    }
    items = dataset.table("items")
    assert items["title"].str.contains("Misérables").any()
    assert items.loc[items["raw_item"] == 1, "genres"].item() == "Animation|Children's|Comedy"
    movielens.prepare(
        tmp_path,
        variant="100k",
        source=str(source),
        offline=True,
        force=True,
        options=RatingOptions(negative_below=2.0),
    )
    assert load_dataset(tmp_path, "movielens").manifest["counts"]["negatives"] == 6110  # only 1-star ratings


def test_cli_prepare_then_run(tmp_path):
    source = SHARED / "movielens-100k"
    if (source / "u.data").is_file():
        args = ["--variant", "100k", "--source", source]
    else:
        zipped, _ = write_ml1m_zip(tmp_path)
        args = ["--variant", "1m", "--source", zipped, "--groups", "5"]
    done = banditbench("prepare", "movielens", *args, "--offline", "--data-dir", tmp_path / "ds")
    assert done.returncode == 0, done.stderr
    done = banditbench(
        "run",
        "--dataset",
        "movielens",
        "--algos",
        "linucb-ind,random",
        "--rounds",
        "300",
        "--seeds",
        "1",
        "--data-dir",
        tmp_path / "ds",
        "--out",
        tmp_path / "out",
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "shards" / "linucb-ind-seed0.parquet").is_file()


def test_sparse_and_dense_svd_give_the_same_features(monkeypatch):
    import scipy.sparse as sp

    from banditbench.data import ratings

    matrix = sp.random(80, 120, density=0.2, random_state=np.random.default_rng(0), format="csr")
    matrix.data = np.where(matrix.data > 0.5, 1.0, -1.0)
    dense_users, dense_items = ratings.svd_features(matrix, 10)
    monkeypatch.setattr(ratings, "DENSE_SVD_CELLS", 0)
    sparse_users, sparse_items = ratings.svd_features(matrix, 10)
    np.testing.assert_allclose(sparse_users, dense_users, atol=1e-8)
    np.testing.assert_allclose(sparse_items, dense_items, atol=1e-8)


def test_source_folder_holding_the_archive(tmp_path):
    folder = tmp_path / "downloads"
    folder.mkdir()
    write_ml1m_zip(folder)
    movielens.prepare(tmp_path / "ds", variant="1m", options=SMALL, source=str(folder), offline=True)
    origins = [r["origin"] for r in load_dataset(tmp_path / "ds", "movielens").manifest["raw_files"]]
    assert origins == [f"{folder}/fixture-ml-1m.zip!ml-1m/ratings.dat", f"{folder}/fixture-ml-1m.zip!ml-1m/movies.dat"]


@pytest.mark.skipif(not (SHARED / "movielens-100k" / "u.data").is_file(), reason="genuine ml-100k not available")
def test_cofiba_clusters_real_items_on_ml100k(tmp_path):
    """With an item pool as large as the catalogue every item is its own node (its SVD feature is fixed):
    COFIBA's item graph is over real items, as in the paper, and it beats random recommendation."""
    from banditbench.runner import Unit, run_unit

    movielens.prepare(tmp_path, variant="100k", source=str(SHARED / "movielens-100k"), offline=True)
    dataset = load_dataset(tmp_path, "movielens")
    env = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    shown = np.unique(np.concatenate([r.arms for r in env.rounds(1500)]), axis=0)
    params = {"item_pool": 2000, "alpha2": 0.3}
    out = run_unit(Unit("movielens", "recommendation", "cofiba", params, 0, 0, 1500, None), dataset).outcome
    random = run_unit(Unit("movielens", "recommendation", "random", {}, 0, 0, 1500, None), dataset).outcome
    regret = out.column("regret").to_numpy().sum()
    assert regret < 0.8 * random.column("regret").to_numpy().sum()
    assert 1 < out.column("diag_n_item_clusters").to_numpy()[-1] <= len(shown)


def test_meta_bans_rule_makes_the_ratings_below_2_the_positives():
    import pandas as pd

    from banditbench.data.ratings import binarise

    ratings = pd.DataFrame({"raw_user": [1, 1, 1, 1], "raw_item": [1, 2, 3, 4], "rating": [1.0, 1.5, 3.0, 5.0]})
    assert binarise(ratings, RatingOptions(positive_below=2.0))["label"].tolist() == [1, 1, -1, -1]
    assert binarise(ratings, RatingOptions())["label"].tolist() == [-1, -1, -1, 1]  # M-CNB's: above 4 stars
    # recorded only when set, so datasets prepared before the option keep their parameters
    assert "positive_below" not in RatingOptions().as_dict()
    assert RatingOptions(positive_below=2.0).as_dict()["positive_below"] == 2.0
    with pytest.raises(UserError, match="--negative-below goes with --positive-above"):
        RatingOptions(positive_below=2.0, negative_below=1.0).validate()
