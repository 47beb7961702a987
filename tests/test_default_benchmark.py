"""The default benchmark (``banditbench prepare synthetic && banditbench run``): clustering against LinUCB-Ind and
LinUCB-One on clustered linear users, and NeuralUCB against the linear ones on the same users' cosine reward, one
experiment per dataset below --out, read back as one report. Its separation is checked on a small instance; the
time of the full one is measured in the README, not asserted."""

from __future__ import annotations

import json

import pytest

import banditbench as bb
from banditbench.results.folder import latest_experiment
from banditbench.runner.settings import DEFAULT_BENCHMARK, GAMMA_STAR, RunSettings


@pytest.fixture
def small(tmp_path):
    """The default benchmark's two datasets, small: 30 users in 2 clusters, d = 15, K = 10."""
    bb.prepare("synthetic", users=30, clusters=2, dim=15, arms=10, data_dir=tmp_path / "datasets")
    return tmp_path / "datasets"


def test_a_run_naming_nothing_runs_each_part_into_its_own_folder_and_reads_back_as_one(small, tmp_path):
    out = tmp_path / "results" / "default"
    results = bb.run(rounds=20, seeds=1, data_dir=small, out=out)
    assert sorted(p.name for p in out.iterdir()) == ["synthetic", "synthetic-cosine"]
    summary = results.summary()
    for part in DEFAULT_BENCHMARK:
        assert sorted(summary.loc[summary["dataset"] == part["dataset"], "algorithm"]) == sorted(part["algos"])
    config = json.loads((out / "synthetic" / "manifest.json").read_text())["config"]
    assert config["algorithms"]["bass"]["gamma"] == GAMMA_STAR and config["algorithms"]["bass"]["sigma"] == 0.1
    assert latest_experiment(tmp_path / "results") == out
    assert bb.load(out).summary().equals(summary)


def winners(results) -> dict[frozenset, str]:
    pairs = results.tables.comparisons
    return {frozenset((row.a, row.b)): row.winner for row in pairs.itertuples()}


@pytest.mark.slow
def test_clustering_and_a_neural_bandit_win_significantly_on_a_small_instance(small):
    linear, cosine = DEFAULT_BENCHMARK
    for part, rounds, better in ((linear, 3000, ("club", "sclub", "bass")), (cosine, 2000, ("neuucb-one",))):
        results = bb.run(algos=part["algos"], dataset=part["dataset"], rounds=rounds, seeds=3, data_dir=small)
        won = winners(results)
        for algorithm in better:  # the paired t-test across seeds, Holm-corrected
            for baseline in ("linucb-one", "linucb-ind"):
                assert won[frozenset((algorithm, baseline))] == algorithm, (part["dataset"], algorithm, baseline)


def test_noise_aware_algorithms_take_the_datas_sigma_unless_the_run_sets_it(data_dir):
    from banditbench.runner.experiment import plan

    base = dict(dataset="synthetic", algos=["bass", "cmlb", "linucb-ind"], rounds=10, seeds=1)
    resolved = plan(RunSettings.with_defaults(**base), data_dir=data_dir).config["algorithms"]
    assert resolved["bass"]["sigma"] == resolved["cmlb"]["sigma"] == 0.1 and "sigma" not in resolved["linucb-ind"]
    given = RunSettings.with_defaults(**base, params=["bass.sigma=1"])
    assert plan(given, data_dir=data_dir).config["algorithms"]["bass"]["sigma"] == 1.0


def test_a_run_without_a_preset_gives_bass_gamma_star_and_the_bass_presets_the_papers_gamma():
    from banditbench.presets import resolve

    assert resolve(RunSettings(algos="bass")).params["bass"]["gamma"] == [GAMMA_STAR]
    assert resolve(RunSettings(algos="bass", params=["bass.gamma=1"])).params["bass"]["gamma"] == ["1"]  # cast in plan
    assert "bass" not in resolve(RunSettings(algos="club")).params
    assert resolve(RunSettings(), preset="bass-synthetic").params["bass"]["gamma"] == [1.0]
