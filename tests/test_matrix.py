import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from conftest import banditbench
from fixtures_raw import SHARED

from banditbench.data import load_dataset, movielens_small
from banditbench.data.completion import als
from banditbench.envs.matrix import MatrixEnvironment
from banditbench.errors import UserError

GENRES = [
    "Adventure|Animation|Children",
    "Comedy|Romance",
    "Drama",
    "Action|Crime|Thriller",
    "Comedy",
    "Horror|Sci-Fi",
    "Documentary",
    "Drama|War",
    "Mystery|Thriller",
    "Children|Fantasy",
]


def write_small_zip(tmp_path, n_users=40, n_movies=24, seed=0):
    """ml-latest-small's layout: ratings.csv (userId,movieId,rating,timestamp) and movies.csv (movieId,title,genres,
    titles with commas quoted); movie ids start at 1; ratings are a rank-2 matrix rounded to the half-star scale,
    60 % of the entries observed. Returns the zip and the full (hidden) rating matrix [user, movie id − 1]."""
    rng = np.random.default_rng(seed)
    full = np.clip(
        np.rint(2 * (3.2 + rng.normal(0, 0.8, (n_users, 2)) @ rng.normal(0, 0.8, (2, n_movies)))) / 2, 0.5, 5.0
    )
    seen = rng.random(full.shape) < 0.6
    users, movies = np.nonzero(seen)
    ratings = pd.DataFrame(
        {
            "userId": users + 1,
            "movieId": movies + 1,
            "rating": full[seen],
            "timestamp": 964982703 + np.arange(len(users)),
        }
    )
    titles = [f'"Movie {m}, The (199{m % 10})"' for m in range(1, n_movies + 1)]
    movie_lines = ["movieId,title,genres"] + [
        f"{m},{t},{GENRES[(m - 1) % len(GENRES)]}" for m, t in zip(range(1, n_movies + 1), titles)
    ]
    archive = tmp_path / "ml-latest-small.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("ml-latest-small/ratings.csv", ratings.to_csv(index=False))
        z.writestr("ml-latest-small/movies.csv", "\n".join(movie_lines) + "\n")
        z.writestr("ml-latest-small/README.txt", "fixture\n")
    return archive, full, seen


def prepare(tmp_path, folder="datasets", **options):
    archive, full, seen = write_small_zip(tmp_path)
    movielens_small.prepare(
        tmp_path / folder, source=str(archive), offline=True, **{"agents": 10, "arms": 12, "dim": 6, **options}
    )
    return load_dataset(tmp_path / folder, "movielens-small"), full, seen


def test_als_is_deterministic_and_recovers_a_low_rank_matrix_from_its_observed_entries():
    rng = np.random.default_rng(3)
    truth = 3 + rng.normal(0, 1, (50, 3)) @ rng.normal(0, 1, (3, 40))
    seen = rng.random(truth.shape) < 0.5
    users, items = np.nonzero(seen)
    fit = lambda seed: als(users, items, truth[seen], 50, 40, rank=3, ridge=1e-3, iterations=50, seed=seed)
    mean, P, Q = fit(0)
    again = fit(0)
    assert again[0] == mean and np.array_equal(again[1], P) and np.array_equal(again[2], Q)
    predicted = mean + P @ Q.T
    assert np.sqrt(np.mean((predicted - truth)[seen] ** 2)) < 1e-2
    assert np.sqrt(np.mean((predicted - truth)[~seen] ** 2)) < 0.05 * truth.std()  # generalises to the missing half
    assert not np.array_equal(fit(1)[1], P)  # the start comes from the seed


def test_als_gives_an_unrated_item_the_mean_rating():
    mean, _, Q = als(
        np.array([0, 1]), np.array([0, 0]), np.array([4.0, 2.0]), 2, 2, rank=2, ridge=1.0, iterations=3, seed=0
    )
    assert mean == 3.0 and np.array_equal(Q[1], np.zeros(2))


def test_prepare_keeps_observed_ratings_fills_the_rest_and_records_the_raw_files(tmp_path):
    dataset, full, seen = prepare(tmp_path)
    table = dataset.table("rewards").sort_values("user").filter(like="r_").to_numpy()
    arms = dataset.table("arms")
    assert table.shape == (40, 12) and dataset.manifest["protocol"] == "matrix"
    assert list(arms["reward_movie"]) == list(arms["feature_movie"]) == list(range(1, 13))  # consistent mapping
    np.testing.assert_array_equal(table[seen[:, :12]], full[:, :12][seen[:, :12]])
    assert np.all((table >= 0.5) & (table <= 5.0))
    filled = table[~seen[:, :12]]
    assert np.corrcoef(filled, full[:, :12][~seen[:, :12]])[0, 1] > 0.8  # the fill follows the hidden ratings
    # Arm features: one-hot genres in order of first appearance, truncated to d = 6.
    x = arms.filter(like="x_").to_numpy()
    np.testing.assert_array_equal(x[0], [1, 1, 1, 0, 0, 0])  # Adventure|Animation|Children
    np.testing.assert_array_equal(x[3], [0, 0, 0, 0, 0, 0])  # Action|Crime|Thriller: labels 6–8, cut by d
    files = {r["file"]: r for r in dataset.manifest["raw_files"]}
    assert set(files) == {"ratings.csv", "movies.csv"} and all(len(r["sha256"]) == 64 for r in files.values())
    assert dataset.table("fit")["train_rmse"].item() < 0.5


def test_prepare_is_deterministic_given_the_seed(tmp_path):
    first, _, _ = prepare(tmp_path, "a")
    second, _, _ = prepare(tmp_path, "b")
    other, _, _ = prepare(tmp_path, "c", seed=1)
    table = lambda d: d.table("rewards").filter(like="r_").to_numpy()
    assert np.array_equal(table(first), table(second))
    assert (tmp_path / "a/movielens-small/rewards.parquet").read_bytes() == (
        tmp_path / "b/movielens-small/rewards.parquet"
    ).read_bytes()
    assert not np.array_equal(table(first), table(other))


def test_bandpy_compat_shifts_rewards_by_one_movie_against_the_features(tmp_path):
    default, _, seen = prepare(tmp_path, "a")
    quirk, _, _ = prepare(tmp_path, "b", compat="bandpy")
    arms_d, arms_q = default.table("arms"), quirk.table("arms")
    np.testing.assert_array_equal(arms_d.filter(like="x_").to_numpy(), arms_q.filter(like="x_").to_numpy())
    assert list(arms_q["feature_movie"]) == list(range(1, 13)) and list(arms_q["reward_movie"]) == list(range(12))
    table_d = default.table("rewards").filter(like="r_").to_numpy()
    table_q = quirk.table("rewards").filter(like="r_").to_numpy()
    mean = quirk.table("fit")["mean_rating"].item()
    np.testing.assert_array_equal(table_q[:, 0], np.rint(mean))  # movie id 0 does not exist: all imputed
    # arm k + 1 of the quirk has the rewards of the default's arm k (movie k + 1) on observed entries
    observed = seen[:, :11]
    np.testing.assert_array_equal(table_q[:, 1:][observed], table_d[:, :11][observed])
    filled = ~np.column_stack([np.zeros(len(seen), bool), observed])
    assert np.all(table_q[filled] == np.rint(table_q[filled]))  # filled entries rounded, as the authors' loader does
    assert not np.array_equal(table_q, table_d)


def test_sanity_report_counts_observed_entries_and_flags_an_arm_never_observed(tmp_path):
    default, _, seen = prepare(tmp_path, "a")
    report = default.manifest["sanity"]
    assert (report["table_rows"], report["arms"]) == (40, 12)
    assert report["observed_share"] == round(seen[:, :12].mean(), 4) and default.manifest["warnings"] == []
    np.testing.assert_array_equal(default.table("arms")["observed"], seen[:, :12].sum(axis=0))
    quirk, _, _ = prepare(tmp_path, "b", compat="bandpy")
    assert quirk.manifest["warnings"] == [
        "1 of the 12 arms (arm 0) have no observed reward: their columns are the factorisation's predictions only"
    ]


def test_async_rounds_draw_uniform_agents_and_noisy_table_values(tmp_path):
    dataset, _, _ = prepare(tmp_path, noise=0.5)
    env = MatrixEnvironment(dataset, np.random.SeedSequence(7))
    table = dataset.table("rewards").sort_values("user").filter(like="r_").to_numpy()
    assert env.n_users == 10 and env.n_arms == 12 and env.dim == 6 and (np.diff(env.agents) > 0).all()  # user order
    arms = dataset.table("arms").filter(like="x_").to_numpy()
    users, noise = [], []
    for rnd in env.rounds(5000):
        assert rnd.step is None and rnd.group == -1
        np.testing.assert_array_equal(rnd.expected, table[env.agents[rnd.user]])
        users.append(rnd.user)
        noise.append(rnd.rewards - rnd.expected)
    np.testing.assert_array_equal(rnd.arms, arms)
    counts = np.bincount(users, minlength=10)
    assert counts.min() > 400 and counts.max() < 600
    noise = np.array(noise)  # [rounds, arms]
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.5) < 0.01
    assert abs(np.corrcoef(noise[:, 0], noise[:, 1])[0, 1]) < 0.05  # each arm's own noise
    again = MatrixEnvironment(dataset, np.random.SeedSequence(7))
    assert np.array_equal(again.agents, env.agents)
    assert not np.array_equal(MatrixEnvironment(dataset, np.random.SeedSequence(8)).agents, env.agents)
    # 10 of the 40 users without replacement (with it, 7 seeds in 10 would draw one user twice)
    assert all(len(set(MatrixEnvironment(dataset, np.random.SeedSequence(s)).agents)) == 10 for s in range(20))


def test_sync_rounds_pull_every_agent_each_step(tmp_path):
    dataset, _, _ = prepare(tmp_path, pulling="sync")
    env = MatrixEnvironment(dataset, np.random.SeedSequence(0))
    rounds = list(env.rounds(25))
    assert [r.user for r in rounds] == list(range(10)) * 2 + list(range(5))
    assert [r.step for r in rounds] == [0] * 10 + [1] * 10 + [2] * 5
    rounds = list(env.rounds(2100))  # past the first block of 1 024 rounds, which 10 agents do not divide
    assert [(r.user, r.step) for r in rounds] == [(t % 10, t // 10) for t in range(2100)]


def test_run_reports_regret_as_row_maximum_minus_chosen_value(tmp_path):
    archive, _, _ = write_small_zip(tmp_path)
    data = tmp_path / "datasets"
    ok = banditbench(
        "prepare",
        "movielens-small",
        "--source",
        archive,
        "--offline",
        "--agents",
        5,
        "--arms",
        10,
        "--dim",
        4,
        "--data-dir",
        data,
    )
    assert ok.returncode == 0, ok.stderr
    run = banditbench(
        "run",
        "--dataset",
        "movielens-small",
        "--algos",
        "linucb-ind",
        "--rounds",
        300,
        "--seeds",
        1,
        "--jobs",
        1,
        "--data-dir",
        data,
        "--out",
        tmp_path / "results",
    )
    assert run.returncode == 0, run.stderr
    shard = pd.read_parquet(tmp_path / "results/shards/linucb-ind-seed0.parquet")
    table = load_dataset(data, "movielens-small").table("rewards").sort_values("user").filter(like="r_").to_numpy()
    assert set(shard["user"]) == set(range(5))  # 5 agents drawn from the 40 users
    best = shard["best_expected_reward"].to_numpy()
    assert np.all(np.isin(best, table.max(axis=1)))
    np.testing.assert_allclose(shard["regret"], best - shard["expected_reward"])
    assert np.all(shard["regret"] >= 0)


def test_bad_options_stop_before_anything_is_written(tmp_path):
    archive, _, _ = write_small_zip(tmp_path)
    with pytest.raises(UserError, match="--agents 50: the ratings hold only 40 users"):
        movielens_small.prepare(tmp_path / "d", source=str(archive), offline=True, agents=50, arms=12, dim=6)
    with pytest.raises(UserError, match="--dim 20: the genres features have only 15 dimensions"):
        movielens_small.prepare(tmp_path / "d", source=str(archive), offline=True, agents=5, arms=12, dim=20)
    with pytest.raises(UserError, match="--dim 12 exceeds --rank 10"):
        movielens_small.prepare(tmp_path / "d", source=str(archive), offline=True, features="factors", dim=12)
    assert not (tmp_path / "d").exists()


@pytest.mark.skipif(not (SHARED / "movielens-100k" / "u.data").is_file(), reason="genuine MovieLens-100K absent")
def test_genuine_movielens_100k_stands_in_for_ml_latest_small(tmp_path):
    movielens_small.prepare(tmp_path, variant="100k", source=str(SHARED / "movielens-100k"), offline=True)
    dataset = load_dataset(tmp_path, "movielens-small")
    assert dataset.manifest["counts"]["users"] == 943 and dataset.parameters["variant"] == "100k"
    assert all(r["verified"] for r in dataset.manifest["raw_files"])
    table = dataset.table("rewards").filter(like="r_").to_numpy()
    assert table.shape == (943, 30) and np.all((table >= 0.5) & (table <= 5))
    assert json.loads(json.dumps(dataset.table("arms")["title"].iloc[0])) == "Toy Story (1995)"
