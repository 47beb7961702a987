"""Reproducibility and the output-folder rules, through the experiment API."""

import pytest

from banditbench.errors import UserError
from banditbench.report.tables import load_experiment
from banditbench.runner.experiment import execute, plan, prepare_output
from banditbench.runner.settings import RunSettings


def run(data_dir, out, *, overwrite=False, resume=False, **settings):
    options = dict(
        dataset="synthetic",
        algos=["random", "linucb-ind", "oracle"],
        rounds=300,
        seeds=2,
        seed=0,
        budget=None,
        params=[],
    )
    options.update(settings)
    experiment = plan(RunSettings.with_defaults(**options), data_dir=data_dir)
    return execute(experiment, prepare_output(out, experiment, overwrite=overwrite, resume=resume), out)


def shards(folder):
    return {
        p.name: p.read_bytes()
        for p in sorted((folder / "shards").glob("*.parquet"))
        if not p.name.endswith(".timing.parquet")
    }


def test_same_inputs_give_bit_identical_shards(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    run(data_dir, tmp_path / "b")
    a, b = shards(tmp_path / "a"), shards(tmp_path / "b")
    assert len(a) == 6 and a == b


def test_different_seeds_give_different_results(data_dir, tmp_path):
    run(data_dir, tmp_path / "a", seed=0)
    run(data_dir, tmp_path / "b", seed=1)
    rounds_a = load_experiment(tmp_path / "a").rounds
    rounds_b = load_experiment(tmp_path / "b").rounds
    assert not rounds_a["user"].equals(rounds_b["user"])
    seed0 = rounds_a[rounds_a.seed == 0]
    seed1 = rounds_a[rounds_a.seed == 1]
    assert not seed0["user"].reset_index(drop=True).equals(seed1["user"].reset_index(drop=True))


def test_all_algorithms_of_one_seed_see_the_same_users_and_arms(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    rounds = load_experiment(tmp_path / "a").rounds
    for _seed, of_seed in rounds.groupby("seed"):
        per_algorithm = [frame.reset_index(drop=True) for _, frame in of_seed.groupby("algorithm")]
        for frame in per_algorithm[1:]:
            assert frame["user"].equals(per_algorithm[0]["user"])
            assert frame["best_expected_reward"].equals(per_algorithm[0]["best_expected_reward"])


def test_adding_seeds_leaves_earlier_units_unchanged(data_dir, tmp_path):
    run(data_dir, tmp_path / "two", seeds=2)
    run(data_dir, tmp_path / "three", seeds=3)
    two, three = shards(tmp_path / "two"), shards(tmp_path / "three")
    assert all(three[name] == content for name, content in two.items())


def test_resume_runs_only_missing_units_and_matches_a_clean_run(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    before = shards(tmp_path / "a")
    (tmp_path / "a" / "shards" / "linucb-ind-seed1.parquet").unlink()
    ran = run(data_dir, tmp_path / "a", resume=True)
    assert [u.id for u in ran] == ["linucb-ind-seed1"]
    assert shards(tmp_path / "a") == before


def test_resume_with_other_settings_is_refused(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    with pytest.raises(UserError, match="other settings"):
        run(data_dir, tmp_path / "a", resume=True, rounds=301)
    with pytest.raises(UserError, match="algorithms.linucb-ind.alpha: 1.0 in the folder, 0.5 now"):
        run(data_dir, tmp_path / "a", resume=True, params=["linucb-ind.alpha=0.5"])


def test_existing_results_are_kept_unless_overwrite(data_dir, tmp_path):
    run(data_dir, tmp_path / "a")
    before = shards(tmp_path / "a")
    with pytest.raises(UserError, match="pass resume to finish it or overwrite to replace it"):
        run(data_dir, tmp_path / "a", seed=5)
    assert shards(tmp_path / "a") == before
    run(data_dir, tmp_path / "a", seed=5, overwrite=True)
    assert shards(tmp_path / "a") != before
    assert load_experiment(tmp_path / "a").config["master_seed"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "datasets"]  # no staging folder left behind


def test_hyper_parameter_overrides_are_cast_and_recorded(data_dir, tmp_path):
    run(data_dir, tmp_path / "a", params=["linucb-ind.alpha=0.25"])
    assert load_experiment(tmp_path / "a").config["algorithms"]["linucb-ind"] == {"alpha": 0.25, "ridge": 1.0}


@pytest.mark.parametrize(
    "param, message",
    [
        ("linucb-ind.alpha", "ALGO.NAME=VALUE"),
        ("linucb-ind.beta=1", "no hyper-parameter 'beta'"),
        ("linucb-one.alpha=1", "not among algos"),
        ("linucb-ind.alpha=high", "alpha must be a finite real number ≥ 0"),
    ],
)
def test_bad_hyper_parameter_overrides_are_refused(data_dir, tmp_path, param, message):
    with pytest.raises(UserError, match=message):
        run(data_dir, tmp_path / "a", params=[param])
    assert not (tmp_path / "a").exists()
