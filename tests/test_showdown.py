"""The Showdown's problems as rewards tables: the wheel bandit's reward definition and optimal policy, mushroom's
reward table, the standardised classification problems, the protocol's rounds, and bad inputs to prepare."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import banditbench_here
from fixtures_raw import SHARED, covertype_rows, write_covertype
from scipy import stats

from banditbench import api
from banditbench.data import load_dataset, showdown
from banditbench.envs.rewards_table import RewardsTableEnvironment
from banditbench.errors import UserError
from banditbench.runner.unit import Unit, run_group, run_unit

MUSHROOMS = (
    "p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u\n"
    "e,x,s,y,t,a,f,c,b,k,e,c,s,s,w,w,p,w,o,p,n,n,g\n"
    "e,b,s,w,t,l,f,c,b,n,e,?,s,s,w,w,p,w,o,p,n,n,m\n"
)
UNVERIFIED = {"offline": True, "verify": False}  # self-made files carry the published names, not their bytes
SHUTTLE = "50 21 77 0 28 0 27 48 22 1\n55 0 92 0 0 26 36 92 56 4\n53 0 82 0 52 -5 29 30 2 1\n41 0 83 0 46 0 42 37 5 7\n"


def table(dataset):
    rows = dataset.table("rows")
    return (
        rows.filter(like="x_").to_numpy(),
        rows.filter(like="reward_").to_numpy(),
        rows.filter(like="mean_").to_numpy(),
    )


def test_the_wheel_pays_a5_inside_the_radius_and_the_quadrants_action_outside_it():
    x = np.array([[0.1, 0.1], [0.6, 0.6], [0.6, -0.6], [-0.6, 0.6], [-0.6, -0.6], [0.5, 0.0], [0.0, -0.7]])
    means = showdown.wheel_means(x, delta=0.5)
    assert means.argmax(axis=1).tolist() == [4, 0, 1, 2, 3, 1, 3]  # ‖x‖ = δ counts as outside; a zero coordinate as ≤ 0
    assert means.max(axis=1).tolist() == [1.2, 50, 50, 50, 50, 50, 50]
    np.testing.assert_array_equal(means[:, 4], 1.2)  # a₅ always pays 1.2, every other action 1.0
    assert means[:, :4].sum(axis=1).tolist() == [4.0] + [53.0] * 6
    assert showdown.wheel_means(x, delta=1.0).argmax(axis=1).tolist() == [4] * 7


def test_a_prepared_wheel_draws_uniform_contexts_and_rewards_around_their_means(tmp_path):
    showdown.prepare_wheel(tmp_path, delta=0.7, contexts=3000, seed=1)
    x, rewards, means = table(load_dataset(tmp_path, "showdown-wheel"))
    radius = np.linalg.norm(x, axis=1)
    assert x.shape == (3000, 2) and radius.max() <= 1.0
    # uniform on the disc: P(‖x‖ ≤ r) = r²
    assert stats.kstest(radius**2, "uniform").pvalue > 1e-3
    assert stats.kstest(radius, "uniform").pvalue < 1e-3
    np.testing.assert_array_equal(means, showdown.wheel_means(x, 0.7))
    noise = (rewards - means) / showdown.WHEEL_SIGMA
    assert stats.kstest(noise.ravel(), "norm").pvalue > 1e-3


def test_the_authors_small_reward_noise_is_an_option_that_leaves_the_large_reward_at_the_papers(tmp_path):
    showdown.prepare_wheel(tmp_path, delta=0.7, contexts=3000, seed=1, small_sigma=0.05)
    x, rewards, means = table(load_dataset(tmp_path, "showdown-wheel"))
    large = means == showdown.WHEEL_LARGE
    assert stats.kstest(((rewards - means) / 0.05)[~large], "norm").pvalue > 1e-3
    assert stats.kstest(((rewards - means) / showdown.WHEEL_SIGMA)[large], "norm").pvalue > 1e-3
    assert stats.kstest(((rewards - means) / showdown.WHEEL_SIGMA)[~large], "norm").pvalue < 1e-3


def test_wheel_rounds_show_the_row_to_every_action_and_the_best_action_is_its_regions(tmp_path):
    showdown.prepare_wheel(tmp_path, delta=0.5, contexts=400, seed=0)
    dataset = load_dataset(tmp_path, "showdown-wheel")
    env = RewardsTableEnvironment(dataset, np.random.SeedSequence(0))
    assert (env.n_users, env.n_arms, env.dim) == (1, 5, 10)
    assert RewardsTableEnvironment.dimensions(dataset) == (1, 5, 10, 2)
    for rnd in env.rounds(450):  # more rounds than rows: a second pass
        x = rnd.arms[:, :2].sum(axis=0) if rnd.arms[0, :2].any() else rnd.arms[1, 2:4]
        np.testing.assert_array_equal(rnd.arms.reshape(5, 5, 2)[np.arange(5), np.arange(5)], np.tile(x, (5, 1)))
        best = int(rnd.expected.argmax())
        inside = np.linalg.norm(x) < 0.5
        assert best == (4 if inside else 2 * (x[0] <= 0) + (x[1] <= 0))
        assert rnd.user == 0 and rnd.block == 2


def test_mushroom_eats_for_five_and_poison_costs_thirty_five_half_the_time(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    rows = MUSHROOMS.splitlines()
    (raw / "agaricus-lepiota.data").write_text("\n".join(rows[i % 3] for i in range(600)) + "\n")
    showdown.prepare_uci(tmp_path / "ds", "mushroom", source=str(raw), **UNVERIFIED, seed=3)
    x, rewards, means = table(load_dataset(tmp_path / "ds", "showdown-mushroom"))
    poisonous = np.arange(600) % 3 == 0
    assert x.shape[0] == 600 and np.all(x.sum(axis=1) == 22)  # one-hot, not normalised
    np.testing.assert_array_equal(rewards[:, 0], 0)
    np.testing.assert_array_equal(means[:, 0], 0)
    np.testing.assert_array_equal(rewards[~poisonous, 1], 5)
    np.testing.assert_array_equal(means[:, 1], np.where(poisonous, -15.0, 5.0))
    assert set(rewards[poisonous, 1]) == {5.0, -35.0}
    assert stats.binomtest(int((rewards[poisonous, 1] == -35).sum()), int(poisonous.sum())).pvalue > 1e-3
    # the best action by expectation: eat the edible, leave the poisonous
    assert means.argmax(axis=1).tolist() == np.where(poisonous, 0, 1).tolist()


def test_statlog_standardises_each_feature_and_pays_one_for_the_class(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "shuttle.trn").write_text(SHUTTLE)
    showdown.prepare_uci(tmp_path / "ds", "statlog", source=str(raw), **UNVERIFIED)
    x, rewards, means = table(load_dataset(tmp_path / "ds", "showdown-statlog"))
    assert x.shape == (4, 9)
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=1e-12)
    varying = x.std(axis=0) > 0
    np.testing.assert_allclose(x.std(axis=0)[varying], 1)
    assert not varying[3]  # the constant column stays 0
    assert rewards.argmax(axis=1).tolist() == [0, 3, 0, 6] and rewards.sum(axis=1).tolist() == [1] * 4
    np.testing.assert_array_equal(means, rewards)


def test_covertype_reads_the_published_gzip_standardises_and_pays_one_for_the_class(tmp_path):
    rows = covertype_rows(28)
    raw = write_covertype(tmp_path / "raw", rows)
    showdown.prepare_uci(tmp_path / "ds", "covertype", source=str(raw), **UNVERIFIED)
    x, rewards, means = table(load_dataset(tmp_path / "ds", "showdown-covertype"))
    features = rows[:, :54].astype(float)
    spread = features.std(axis=0)
    expected = (features - features.mean(axis=0)) / np.where(spread > 0, spread, 1.0)  # a constant column only centred
    np.testing.assert_allclose(x, expected, atol=1e-6)
    np.testing.assert_array_equal(rewards, np.eye(7)[rows[:, 54] - 1])
    np.testing.assert_array_equal(means, rewards)


def shuttle_file(folder, rows: int = 40) -> np.ndarray:
    """A shuttle training file of ``rows`` rows (features on unlike scales, classes 1 … 7); returns its table."""
    rng = np.random.default_rng(3)
    features = rng.integers(-50, 150, size=(rows, 9)) * np.array([1, 10, 1, 1, 100, 1, 1, 1, 1])
    table = np.column_stack([features, rng.integers(1, 8, rows)])
    folder.mkdir(exist_ok=True)
    (folder / "shuttle.trn").write_text("\n".join(" ".join(map(str, row)) for row in table) + "\n")
    return table


def test_a_run_keeping_fewer_rows_standardises_them_as_the_showdowns_sampler_does(tmp_path):
    """``--env contexts=N``: each run keeps N rows of its own, drawn without replacement from its stream, with their
    features standardised over those N: the raw rows' standardisation over them (their sampler's), not the file's."""
    table = shuttle_file(tmp_path / "raw")
    showdown.prepare_uci(tmp_path / "ds", "statlog", source=str(tmp_path / "raw"), **UNVERIFIED)
    dataset = load_dataset(tmp_path / "ds", "showdown-statlog")
    whole = RewardsTableEnvironment(dataset, np.random.SeedSequence(0))
    np.testing.assert_allclose(whole.x, showdown.standardised(table[:, :9].astype(float)), atol=1e-12)
    kept = {}
    for seed in (0, 1):
        env = RewardsTableEnvironment(dataset, np.random.SeedSequence(seed), {"contexts": 15})
        kept[seed] = np.random.default_rng(np.random.SeedSequence(seed)).choice(40, size=15, replace=False)
        np.testing.assert_allclose(env.x, showdown.standardised(table[kept[seed], :9].astype(float)), atol=1e-12)
        np.testing.assert_array_equal(env.rewards.argmax(axis=1), table[kept[seed], 9] - 1)
        assert len(set(kept[seed])) == 15 and len(list(env.rounds(15))) == 15
    assert set(kept[0]) != set(kept[1])
    # a problem prepared without standardising keeps its contexts as they are
    showdown.prepare_wheel(tmp_path, delta=0.5, contexts=40, seed=0)
    wheel = load_dataset(tmp_path, "showdown-wheel")
    rows = RewardsTableEnvironment(wheel, np.random.SeedSequence(0), {"contexts": 15}).x
    prepared = RewardsTableEnvironment(wheel, np.random.SeedSequence(0)).x
    assert all((prepared == row).all(axis=1).any() for row in rows)


def test_each_seed_streams_fresh_shuffles_of_the_rows_with_their_expected_rewards_apart(tmp_path):
    """A run plays a permutation of every row drawn from its seed, then a fresh one for each further pass; each
    round carries its row's realised rewards and, apart, their means, from which regret is counted."""
    showdown.prepare_wheel(tmp_path, delta=0.5, contexts=40, seed=0)
    wheel = load_dataset(tmp_path, "showdown-wheel")
    orders = {}
    for seed in (0, 1):
        env = RewardsTableEnvironment(wheel, np.random.SeedSequence(seed))
        rounds = list(env.rounds(100))
        rows = [int(np.flatnonzero((env.x == rnd.arms[0, :2]).all(axis=1))[0]) for rnd in rounds]
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        np.testing.assert_array_equal(rows, np.concatenate([rng.permutation(40) for _ in range(3)])[:100])
        assert rows[:40] != rows[40:80]
        for rnd, row in zip(rounds, rows):
            np.testing.assert_array_equal(rnd.rewards, env.rewards[row])
            np.testing.assert_array_equal(rnd.expected, env.expected[row])
        assert any((rnd.rewards != rnd.expected).any() for rnd in rounds)  # the wheel's noise, kept out of regret
        orders[seed] = rows
    assert orders[0] != orders[1]


def test_a_run_may_keep_every_row_but_no_more_than_the_problem_has(tmp_path, capsys):
    shuttle_file(tmp_path / "raw")
    showdown.prepare_uci(tmp_path / "ds", "statlog", source=str(tmp_path / "raw"), **UNVERIFIED)
    args = ("run", "--dataset", "showdown-statlog", "--data-dir", tmp_path / "ds", "--algos", "random")
    done = banditbench_here(*args, "--rounds", 5, "--env", "contexts=41", "--out", tmp_path / "r", capsys=capsys)
    assert done.returncode == 2 and not (tmp_path / "r").exists()
    assert done.stderr.strip() == "error: --env contexts=41: 'showdown-statlog' holds 40 rows"
    every = banditbench_here(*args, "--rounds", 5, "--env", "contexts=40", "--out", tmp_path / "r", capsys=capsys)
    assert every.returncode == 0, every.stderr


ADULT = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
    "United-States, <=50K\n"
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, "
    "United-States, <=50K\n"
    "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K\n"
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, 0, 0, 40, "
    "United-States, <=50K\n"
)


def test_adult_drops_rows_with_missing_attributes_and_makes_the_occupation_the_action(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "adult.data").write_text(ADULT + "\n")  # the published file ends with an empty line
    showdown.prepare_uci(tmp_path / "ds", "adult", source=str(raw), **UNVERIFIED)
    dataset = load_dataset(tmp_path / "ds", "showdown-adult")
    x, rewards, means = table(dataset)
    assert dataset.manifest["sanity"]["rows"]["dropped"] == {"missing attribute": 1}
    # occupations in sorted order: Adm-clerical, Exec-managerial, Handlers-cleaners
    assert rewards.argmax(axis=1).tolist() == [0, 1, 2] and rewards.shape == (3, 3)
    # 6 numeric attributes, then one column per category of the 8 categorical ones seen in the 3 rows kept
    assert x.shape == (3, 6 + 3 + 2 + 3 + 2 + 1 + 1 + 1 + 1)
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=1e-12)
    # verified against adult.names' 32 561 rows (and the empty last line), the three-row file is refused whole
    with pytest.raises(UserError, match=r"adult.data: row count mismatch, expected 32,562 lines .* found 5 lines"):
        showdown.prepare_uci(tmp_path / "verified", "adult", source=str(raw), offline=True)
    assert not (tmp_path / "verified" / "showdown-adult").exists()


@pytest.mark.skipif(not (SHARED / "uci-shuttle" / "shuttle.trn").is_file(), reason="genuine shuttle not available")
def test_genuine_statlog_is_the_showdowns_training_file(tmp_path):
    showdown.prepare_uci(tmp_path, "statlog", source=str(SHARED / "uci-shuttle"), offline=True)
    counts = load_dataset(tmp_path, "showdown-statlog").manifest["counts"]
    assert (counts["rows"], counts["features"], counts["actions"]) == (43500, 9, 7)


def test_bad_input_to_prepare_says_one_line_and_writes_nothing(tmp_path):
    with pytest.raises(UserError, match="--delta must be between 0 and 1"):
        api.prepare("showdown-wheel", data_dir=tmp_path, delta=1.5)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "agaricus-lepiota.data").write_text(MUSHROOMS + "e,x,s\n")
    with pytest.raises(UserError, match="agaricus-lepiota.data, line 4: 3 fields, expected 23") as error:
        showdown.prepare_uci(tmp_path / "ds", "mushroom", source=str(raw), **UNVERIFIED)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "ds" / "showdown-mushroom").exists()


@pytest.mark.parametrize("algorithm", ["lints-one", "lints-ind", "blr-one", "blr-ind"])
def test_the_thompson_learners_run_on_the_wheel_and_a_group_equals_its_units(tmp_path, algorithm):
    showdown.prepare_wheel(tmp_path, delta=0.5, contexts=300, seed=0)
    dataset = load_dataset(tmp_path, "showdown-wheel")
    units = [Unit("showdown-wheel", "rewards-table", algorithm, {}, 0, seed, 200, None) for seed in range(2)]
    together = run_group(units, dataset)
    for unit, result in zip(units, together):
        alone = run_unit(unit, dataset).outcome
        np.testing.assert_array_equal(result.outcome["chosen"].to_numpy(), alone["chosen"].to_numpy())
        assert (alone["regret"].to_numpy() >= 0).all()
    oracle = run_unit(Unit("showdown-wheel", "rewards-table", "oracle", {}, 0, 0, 200, None), dataset).outcome
    np.testing.assert_array_equal(oracle["regret"].to_numpy(), 0.0)


def test_the_mushroom_preset_prints_the_readme_totals_as_regret_against_its_optimum():
    from banditbench import presets

    printed = presets.PRESETS["showdown-mushroom"]["printed"]
    assert {v.algorithm: v.value for v in printed.values} == {
        "blr-one": 5235 - 4365,
        "neurallinear-ts": 5235 - 4110,
        "dropout-ts": 5235 - 3430,
        "paramnoise": 5235 - 3270,
        "bootrms": 5235 - 3050,
        "bbb": 5235 - 2505,
        "random": 5235 + 4930,
    }
    networks = ("neurallinear-ts", "bootrms", "dropout-ts", "paramnoise")
    assert {"bbb", *networks} <= set(presets.PRESETS["showdown-mushroom"]["algos"])
    # the networks' rate decays over all their steps, and BBB takes every switch to their code, as in the README's run
    assert presets.preset_settings("showdown-mushroom")["set"] == {
        **{name: {"lr_reset": [False]} for name in networks},
        "bbb": {"sigma": ["exp"], "prior": ["fan-in"], "sample_biases": [False], "local_reparam": [True]},
    }
    assert not printed.facts  # every README total is entered
    assert [(c.kind, c.a, c.b) for c in printed.claims] == [("beats", "blr-one", "random")]
    assert presets.missing_for("showdown-mushroom") == presets.missing_for("showdown-wheel") == []


@pytest.mark.parametrize("problem", ["statlog", "covertype", "adult", "census", "jester", "financial"])
def test_each_real_problem_has_a_preset_that_says_why_it_prints_no_paper_numbers(problem):
    from banditbench import presets

    spec = presets.PRESETS[f"showdown-{problem}"]
    assert spec["dataset"] == f"showdown-{problem}" and spec["protocol"] == "rewards-table"
    assert "random" in spec["algos"] and presets.missing_for(f"showdown-{problem}") == []
    assert not spec["printed"].values and not spec["printed"].claims
    assert "not entered" in spec["printed"].stand_in
    # the problems prepared whole: each run keeps the example script's 2000 rows, standardised over them
    sampled = problem in ("statlog", "covertype", "adult")
    assert presets.preset_settings(f"showdown-{problem}")["env"] == ({"contexts": 2000} if sampled else {})


GROUPS = (0, 2, 5)  # the file's occupation codes: actions 0, 1, 2


def census_file(folder, people: int = 30, extra: str = ""):
    """A coded census table in the published layout: whole-number codes, the occupation group repeated as dAge
    (so that a prepared row's context tells its group), the case id counting from 1."""
    codes = np.random.default_rng(0).integers(0, 3, size=(people, len(showdown.CENSUS_COLUMNS)))
    codes[:, 0] = np.arange(1, people + 1)
    group = np.array(GROUPS)[np.arange(people) % 3]
    for name in ("dOccup", "dAge"):
        codes[:, showdown.CENSUS_COLUMNS.index(name)] = group
    lines = [",".join(showdown.CENSUS_COLUMNS), *(",".join(map(str, row)) for row in codes)]
    folder.mkdir(exist_ok=True)
    (folder / showdown.CENSUS_FILE).write_text("\n".join(lines) + "\n" + extra)
    return folder


def test_census_samples_people_one_hot_and_pays_one_for_their_occupation_group(tmp_path):
    raw = census_file(tmp_path / "raw")
    showdown.prepare_census(tmp_path / "ds", contexts=12, seed=4, source=str(raw), **UNVERIFIED)
    dataset = load_dataset(tmp_path / "ds", "showdown-census")
    x, rewards, means = table(dataset)
    assert rewards.shape == (12, 3) and rewards.sum(axis=1).tolist() == [1] * 12
    np.testing.assert_array_equal(means, rewards)
    # dAge, the first attribute, repeats the group: its one-hot block (3 columns) names each row's action
    assert set(rewards.argmax(axis=1)) == {0, 1, 2}
    np.testing.assert_array_equal(x[:, :3].argmax(axis=1), rewards.argmax(axis=1))
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=1e-12)
    varying = x.std(axis=0) > 0
    np.testing.assert_allclose(x.std(axis=0)[varying], 1)
    # 67 attributes (case id and occupation left out), one column per code a sampled person holds
    assert 67 < x.shape[1] <= 67 * 3
    rows = dataset.manifest["sanity"]["rows"]
    assert rows == {"read": 30, "kept": 12, "dropped": {"not in the --contexts sample": 18}}


def test_census_samples_by_seed(tmp_path):
    frame = showdown.read_census(census_file(tmp_path) / showdown.CENSUS_FILE)
    first, again, other = (showdown.census_sample(frame, 10, np.random.default_rng(s)) for s in (1, 1, 2))
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert first[0].shape != other[0].shape or not np.array_equal(first[0], other[0])


def test_a_census_group_the_sample_lacks_stays_an_action_that_never_pays(tmp_path):
    """The actions are the whole file's occupation groups, whichever people the sample holds."""
    raw = census_file(tmp_path / "raw")
    path = raw / showdown.CENSUS_FILE
    frame = showdown.read_census(path).astype(np.int64)
    later = frame.index > 2
    frame.loc[later, "dOccup"] = frame.loc[later, "dOccup"].replace(GROUPS[2], GROUPS[1])  # group 5: row 2 alone
    frame.to_csv(path, index=False)
    seed = next(s for s in range(100) if 2 not in np.random.default_rng(s).choice(30, size=10, replace=False))
    showdown.prepare_census(tmp_path / "ds", contexts=10, seed=seed, source=str(raw), **UNVERIFIED)
    _, rewards, _ = table(load_dataset(tmp_path / "ds", "showdown-census"))
    assert rewards.shape == (10, 3) and rewards.sum(axis=1).tolist() == [1] * 10
    assert rewards[:, 2].sum() == 0 and rewards[:, :2].sum(axis=0).min() > 0


@pytest.mark.parametrize(
    ("extra", "contexts", "verify", "message"),
    [
        ("", 31, False, "--contexts 31 is more than the 30 rows of .*USCensus1990.data.txt$"),
        ("", 10, True, r"USCensus1990.data.txt: row count mismatch, expected 2,458,286 lines .* found 31 lines"),
        ("7,1,2\n", 10, False, r"USCensus1990.data.txt, line 32: 3 fields, expected 69"),
        ("31" + ",1" * 67 + ",-1\n", 10, False, r"USCensus1990.data.txt, line 32: dYrsserv -1 is below 0"),
        ("31" + ",1.5" * 68 + "\n", 10, False, r"USCensus1990.data.txt, line 32: dAge 1.5 is not a whole number"),
    ],
)
def test_a_bad_census_file_is_refused_in_one_line_and_nothing_is_written(tmp_path, extra, contexts, verify, message):
    raw = census_file(tmp_path / "raw", extra=extra)
    with pytest.raises(UserError, match=message) as error:
        showdown.prepare_census(tmp_path / "ds", contexts=contexts, source=str(raw), offline=True, verify=verify)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "ds" / "showdown-census").exists()


def test_a_census_file_with_other_columns_is_refused_by_its_header(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / showdown.CENSUS_FILE).write_text("caseid,dAge\n1,2\n")
    refused = "USCensus1990.data.txt: cannot read it as the coded US Census 1990 table.*header is caseid,dAge, expected"
    with pytest.raises(UserError, match=refused):
        showdown.prepare_census(tmp_path / "ds", source=str(raw), **UNVERIFIED)
    with pytest.raises(UserError, match="--contexts must be between 1 and 150000"):
        api.prepare("showdown-census", data_dir=tmp_path, contexts=200_000, source=str(raw))


def jester_file(folder, ratings) -> str:
    folder.mkdir(exist_ok=True)
    np.save(folder / showdown.JESTER_FILE, ratings)
    return str(folder)


def test_jester_shows_32_jokes_ratings_and_pays_the_rating_of_the_recommended_joke(tmp_path):
    ratings = np.round(np.random.default_rng(0).uniform(-10, 10, size=(50, 40)), 2)
    source = jester_file(tmp_path / "raw", ratings)
    showdown.prepare_jester(tmp_path / "ds", source=source, **UNVERIFIED)
    dataset = load_dataset(tmp_path / "ds", "showdown-jester")
    x, rewards, means = table(dataset)
    np.testing.assert_array_equal(x, ratings[:, :32])
    np.testing.assert_array_equal(rewards, ratings[:, 32:])
    np.testing.assert_array_equal(means, rewards)  # a rating is known, not drawn: the regret is exact
    counts = dataset.manifest["counts"]
    assert (counts["rows"], counts["features"], counts["actions"]) == (50, 32, 8)
    assert [counts[f"best_action_{a}"] for a in range(8)] == np.bincount(
        ratings[:, 32:].argmax(axis=1), minlength=8
    ).tolist()
    showdown.prepare_jester(tmp_path / "ten", context_jokes=30, source=source, **UNVERIFIED)
    x, rewards, _ = table(load_dataset(tmp_path / "ten", "showdown-jester"))
    assert x.shape == (50, 30) and rewards.shape == (50, 10)


def test_shuffled_jokes_are_a_seeded_permutation_of_the_columns_recorded_in_the_manifest(tmp_path):
    ratings = np.round(np.random.default_rng(2).uniform(-10, 10, size=(20, 40)), 2)
    source = jester_file(tmp_path / "raw", ratings)

    def prepared(folder, **options):
        showdown.prepare_jester(tmp_path / folder, source=source, **UNVERIFIED, **options)
        dataset = load_dataset(tmp_path / folder, "showdown-jester")
        x, rewards, _ = table(dataset)
        return np.hstack([x, rewards]), dataset.manifest["parameters"]

    plain, parameters = prepared("plain")
    np.testing.assert_array_equal(plain, ratings)
    assert "shuffle_jokes" not in parameters and "seed" not in parameters  # the file's order: the manifest it had
    shuffled, parameters = prepared("a", shuffle_jokes=True, seed=3)
    order = np.asarray(parameters["joke_order"]) - 1
    assert sorted(order) == list(range(40)) and order.tolist() != list(range(40))
    np.testing.assert_array_equal(shuffled, ratings[:, order])
    again, _ = prepared("b", shuffle_jokes=True, seed=3)
    other, other_parameters = prepared("c", shuffle_jokes=True, seed=4)
    np.testing.assert_array_equal(again, shuffled)
    assert other_parameters["joke_order"] != parameters["joke_order"]
    np.testing.assert_array_equal(other, ratings[:, np.asarray(other_parameters["joke_order"]) - 1])


@pytest.mark.parametrize(
    ("options", "message"),
    [({"seed": -1}, "--seed must be non-negative"), ({"context_jokes": 40}, "--context-jokes must be")],
)
def test_jester_options_out_of_their_domain_are_refused_in_one_line(tmp_path, options, message):
    source = jester_file(tmp_path / "raw", np.zeros((5, 40)))
    with pytest.raises(UserError, match=message) as error:
        api.prepare("showdown-jester", data_dir=tmp_path, source=source, verify=False, shuffle_jokes=True, **options)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "showdown-jester").exists()


@pytest.mark.parametrize(
    ("ratings", "verify", "message"),
    [
        (np.zeros((5, 39)), False, r"holds an array of shape \(5, 39\), expected \(users, 40 jokes\)"),
        (
            np.where(np.eye(5, 40) > 0, 99.0, 1.0),
            False,
            "user 1, joke 1: rating 99 is outside Jester's scale -10 to 10",
        ),
        (np.full((5, 40), np.nan), False, "user 1, joke 1: rating nan is outside"),
        (np.array([{"a": 1}] * 40, dtype=object).reshape(1, 40), False, "cannot read it as a NumPy .npy array"),
        (np.full((5, 40), "x"), False, "holds <U1 values, expected ratings"),
        (np.zeros((5, 40)), True, "row count mismatch, expected 19,181 users .*, found 5"),
    ],
)
def test_a_bad_jester_file_is_refused_in_one_line_and_nothing_is_written(tmp_path, ratings, verify, message):
    source = jester_file(tmp_path / "raw", ratings)
    with pytest.raises(UserError, match=f"{showdown.JESTER_FILE}: {message}") as error:
        showdown.prepare_jester(tmp_path / "ds", source=source, offline=True, verify=verify)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "ds" / "showdown-jester").exists()


def stock_file(folder, changes, extra: str = "") -> str:
    """The Showdown's layout: a first line it skips, then a day per line of space-separated price changes."""
    folder.mkdir(exist_ok=True)
    days = "\n".join(" ".join(f"{v:.6f}" for v in day) for day in changes)
    (folder / showdown.STOCK_FILE).write_text(f"{len(changes)} {changes.shape[1]}\n{days}\n{extra}")
    return str(folder)


CHANGES = np.round(np.random.default_rng(0).normal(0, 1, size=(300, 21)), 6)


def test_financial_portfolios_are_unit_norm_linear_in_the_day_plus_their_own_noise(tmp_path):
    source = stock_file(tmp_path / "raw", CHANGES)
    showdown.prepare_financial(tmp_path / "ds", seed=5, source=source, **UNVERIFIED)
    x, rewards, means = table(load_dataset(tmp_path / "ds", "showdown-financial"))
    np.testing.assert_array_equal(x, CHANGES)  # the first line is skipped, the days kept as they are
    weights = np.linalg.lstsq(x, means, rcond=None)[0]  # exact: 300 days of 21 independent stocks
    np.testing.assert_allclose(x @ weights, means, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(weights, axis=0), 1.0)
    assert weights.shape == (21, 8) and np.abs(weights).max() <= 1.0
    sigma = np.asarray(showdown.PORTFOLIO_NOISE)
    np.testing.assert_allclose(sigma, np.arange(1, 9) / 100)
    noise = (rewards - means) / sigma
    assert stats.kstest(noise.ravel(), "norm").pvalue > 1e-3
    np.testing.assert_allclose((rewards - means).std(axis=0), sigma, rtol=0.15)  # 300 draws each: ±4 % per σ


def test_financial_portfolios_are_drawn_by_seed():
    first, again, other = (showdown.portfolios(CHANGES, np.random.default_rng(s)) for s in (1, 1, 2))
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.allclose(first[1], other[1])


@pytest.mark.parametrize(
    ("extra", "verify", "message"),
    [
        ("1 2 3\n", False, "line 302: 3 fields, expected 21"),
        ("x" + " 1" * 20 + "\n", False, "line 302: stock 1 'x' is not a number"),
        ("1" * 1 + " 1" * 19 + " inf\n", False, "line 302: stock 21 inf is not a finite number"),
        ("", True, "row count mismatch, expected 3,713 days .*, found 300"),
    ],
)
def test_a_bad_stock_file_is_refused_in_one_line_and_nothing_is_written(tmp_path, extra, verify, message):
    source = stock_file(tmp_path / "raw", CHANGES, extra)
    with pytest.raises(UserError, match=f"{showdown.STOCK_FILE}(, |: ){message}") as error:
        showdown.prepare_financial(tmp_path / "ds", source=source, offline=True, verify=verify)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "ds" / "showdown-financial").exists()


def prepared_problem(tmp_path, problem: str):
    """Each Showdown problem prepared from a small local copy of its raw files in their published layout."""
    raw, data = tmp_path / "raw", tmp_path / "ds"
    if problem == "wheel":
        showdown.prepare_wheel(data, delta=0.5, contexts=100, seed=0)
    elif problem == "mushroom":
        raw.mkdir()
        (raw / "agaricus-lepiota.data").write_text(MUSHROOMS * 20)
        showdown.prepare_uci(data, "mushroom", source=str(raw), **UNVERIFIED)
    elif problem == "statlog":
        shuttle_file(raw)
        showdown.prepare_uci(data, "statlog", source=str(raw), **UNVERIFIED)
    elif problem == "covertype":
        showdown.prepare_uci(data, "covertype", source=str(write_covertype(raw, covertype_rows(40))), **UNVERIFIED)
    elif problem == "adult":
        raw.mkdir()
        (raw / "adult.data").write_text(ADULT * 10)
        showdown.prepare_uci(data, "adult", source=str(raw), **UNVERIFIED)
    elif problem == "census":
        showdown.prepare_census(data, contexts=20, source=str(census_file(raw)), **UNVERIFIED)
    elif problem == "jester":
        ratings = np.round(np.random.default_rng(1).uniform(-10, 10, size=(40, 40)), 2)
        showdown.prepare_jester(data, source=jester_file(raw, ratings), **UNVERIFIED)
    else:
        showdown.prepare_financial(data, source=stock_file(raw, CHANGES[:40]), **UNVERIFIED)
    return load_dataset(data, f"showdown-{problem}")


SMALL_NETWORK = {"width": 8, "train_steps": 2, "batch_size": 8}
THOMPSON_LEARNERS = {  # the learners of the Thompson family, with networks small enough for a test
    "lints-one": {},
    "lints-ind": {},
    "blr-one": {},
    "blr-ind": {},
    "neuralts-one": SMALL_NETWORK,
    "neuralts-ind": SMALL_NETWORK,
    **{
        name: {**SMALL_NETWORK, "training_freq": 20}
        for name in ("neurallinear-ts", "bootrms", "dropout-ts", "paramnoise", "bbb")
    },
}


PROBLEMS = ("wheel", "mushroom", "statlog", "covertype", "adult", "census", "jester", "financial")


def test_the_problems_below_are_the_showdown_suites():
    from banditbench.suites import load_suite

    assert sorted(load_suite("showdown").datasets) == sorted(f"showdown-{problem}" for problem in PROBLEMS)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_every_thompson_learner_runs_on_each_problem_and_the_oracle_has_no_regret(tmp_path, problem):
    dataset = prepared_problem(tmp_path, problem)
    for algorithm, params in THOMPSON_LEARNERS.items():
        outcome = run_unit(Unit(dataset.name, "rewards-table", algorithm, params, 0, 0, 40, None), dataset).outcome
        regret = outcome["regret"].to_numpy()
        assert len(outcome) == 40 and np.isfinite(regret).all() and (regret >= -1e-12).all(), algorithm
    oracle = run_unit(Unit(dataset.name, "rewards-table", "oracle", {}, 0, 0, 40, None), dataset).outcome
    np.testing.assert_array_equal(oracle["regret"].to_numpy(), 0.0)
