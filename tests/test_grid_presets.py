"""Grids, tuning seeds, experiment files and presets, through the planning API and the CLI."""

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from conftest import banditbench

from banditbench import presets
from banditbench.envs import PROTOCOLS
from banditbench.errors import UserError
from banditbench.presets import resolve
from banditbench.report.formats import tuned_note
from banditbench.report.tables import load_experiment
from banditbench.results.shards import read_shard, shard_path
from banditbench.results.units import Unit, params_hash
from banditbench.runner import grid
from banditbench.runner.experiment import execute, plan, prepare_output
from banditbench.runner.seeds import TUNING_KEY, unit_streams
from banditbench.runner.settings import RunSettings
from banditbench.runner.unit import run_unit


def planned(data_dir, **settings):
    options = dict(
        dataset="synthetic",
        algos=["linucb-ind"],
        rounds=200,
        seeds=3,
        seed=0,
        budget=None,
        params=["linucb-ind.alpha=0.1,1", "linucb-ind.ridge=0.5,2"],
    )
    options.update(settings)
    return plan(RunSettings.with_defaults(**options), data_dir=data_dir)


def stream_states(units):
    return {tuple(unit_streams(u.master_seed, u.seed_index, u.tuning)[0].generate_state(4)) for u in units}


def test_a_unit_told_its_algorithms_defaults_is_named_without_a_hash_and_they_stay_out_of_its_identity():
    defaults = {"alpha": 1.0, "ridge": 1.0}
    plain = Unit("synthetic", "linear", "linucb-ind", defaults, 0, 3, 100, None, defaults=dict(defaults))
    tuned = Unit("synthetic", "linear", "linucb-ind", {"alpha": 0.1, "ridge": 1.0}, 0, 3, 100, None, defaults=defaults)
    assert plain.id == "linucb-ind-seed3" and tuned.id == f"linucb-ind-{params_hash(tuned.params)}-seed3"
    assert "defaults" not in plain.config() and plain == replace(plain, defaults={})  # naming, not identity
    assert replace(plain, defaults={}).id == f"linucb-ind-{params_hash(defaults)}-seed3"


def test_a_2x2_grid_on_3_seeds_is_12_units_with_stable_ids_and_seeds(data_dir):
    units = planned(data_dir).units
    assert len(units) == 12 and len({u.id for u in units}) == 12
    assert [u.id for u in units] == [u.id for u in planned(data_dir).units]  # stable across plans
    # stable across versions too: sha256 of the cell's sorted JSON, first 8 hex digits
    assert units[0].id == "linucb-ind-f5e5a05b-seed0" and units[0].params == {"alpha": 0.1, "ridge": 0.5}
    cells = {(u.params["alpha"], u.params["ridge"]) for u in units}
    assert cells == {(0.1, 0.5), (0.1, 2.0), (1.0, 0.5), (1.0, 2.0)}
    # three distinct seed streams, each shared by the 4 cells (common random numbers across cells)
    assert len(stream_states(units)) == 3
    assert sorted(u.seed_index for u in units) == [0] * 4 + [1] * 4 + [2] * 4
    # the id of a cell depends on its hyper-parameters only: adding a cell leaves the others' ids alone
    wider = planned(data_dir, params=["linucb-ind.alpha=0.1,1,3", "linucb-ind.ridge=0.5,2"]).units
    assert {u.id for u in units} < {u.id for u in wider}
    default = planned(data_dir, params=[]).units
    assert [u.id for u in default] == ["linucb-ind-seed0", "linucb-ind-seed1", "linucb-ind-seed2"]


def test_tuning_seeds_never_overlap_report_seeds(data_dir):
    experiment = planned(data_dir, tune_seeds=4, seeds=5)
    assert len(experiment.tuning_units) == 4 * 4 and experiment.units == []
    tuning = stream_states(experiment.tuning_units)
    report = stream_states(experiment.report_units("linucb-ind", {"alpha": 1.0, "ridge": 1.0}))
    assert len(tuning) == 4 and len(report) == 5 and not tuning & report
    assert all(u.id.endswith(f"tune{u.seed_index}") for u in experiment.tuning_units)


@pytest.mark.parametrize("tuning", [False, True], ids=["report", "tuning"])
def test_seed_index_i_splits_the_documented_child_of_the_master_seed_into_environment_and_policy(tuning):
    # docs/architecture.md, "Seeds": report seed i is SeedSequence(master).spawn's i-th child, tuning seed i the child
    # under (TUNING_KEY, i); pinned, so that a unit's streams stay the same across versions
    child = np.random.SeedSequence(7, spawn_key=(TUNING_KEY, 3)) if tuning else np.random.SeedSequence(7).spawn(4)[3]
    streams = unit_streams(7, 3, tuning)
    assert [s.generate_state(4).tolist() for s in streams] == [s.generate_state(4).tolist() for s in child.spawn(2)]


@pytest.mark.parametrize("tuning", [False, True], ids=["report", "tuning"])
def test_a_unit_plays_the_rounds_of_its_own_seed_streams_environment(dataset, tuning):
    # a tuning unit must not replay the users and noise of the report unit of the same seed index
    unit = Unit("synthetic", "linear", "random", {}, 0, 1, 50, None, tuning=tuning)
    environment = PROTOCOLS["linear"].environment(dataset, unit_streams(0, 1, tuning)[0])
    played = run_unit(unit, dataset).outcome
    assert played["user"].to_pylist() == [rnd.user for rnd in environment.rounds(50)]


def test_tuning_on_the_first_rounds_runs_short_tuning_units_and_full_report_units(data_dir, tmp_path):
    experiment = planned(data_dir, tune_seeds=2, seeds=2, tune_rounds=50)
    assert {u.rounds for u in experiment.tuning_units} == {50} and experiment.config["tune_rounds"] == 50
    out = tmp_path / "prefix"
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    manifest = json.loads((out / "manifest.json").read_text())
    lengths = {uid: len(read_shard(out / "shards" / f"{uid}.parquet")[0]) for uid in manifest["units"]}
    assert set(lengths.values()) == {200}  # the chosen cell is reported over the whole horizon
    assert all(len(read_shard(out / "shards" / f"{uid}.parquet")[0]) == 50 for uid in manifest["tuning_units"])
    with pytest.raises(UserError, match="^tune_rounds must be between 0"):
        planned(data_dir, tune_seeds=2, tune_rounds=201)
    assert "tune_rounds" not in planned(data_dir, tune_seeds=2).config  # the whole horizon, as before
    assert presets.resolve(RunSettings(), None, "ghosh-synthetic").tune_rounds == 50_000
    assert (
        presets.resolve(RunSettings(rounds=1000), None, "ghosh-synthetic").tune_rounds == 0
    )  # shortened: whole horizon
    assert presets.resolve(RunSettings(rounds=1000, tune_rounds=2000), None, "ghosh-synthetic").tune_rounds == 2000


def test_best_of_grid_is_chosen_on_tuning_seeds_and_recorded(data_dir, tmp_path):
    experiment = planned(
        data_dir,
        algos=["linucb-ind", "random"],
        tune_seeds=2,
        seeds=2,
        params=["linucb-ind.alpha=0.01,3", "linucb-ind.ridge=1"],
    )
    out = tmp_path / "tuned"
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    manifest = json.loads((out / "manifest.json").read_text())
    record = manifest["tuning"]["linucb-ind"]
    means = {cell["params"]["alpha"]: cell["final_regret_mean"] for cell in record["cells"]}
    recomputed = {}
    for alpha in (0.01, 3.0):  # recompute the tuning scores from the tuning shards themselves
        shards = [read_shard(out / "shards" / f"{uid}.parquet") for uid in manifest["tuning_units"]]
        finals = [
            frame["regret"].sum()
            for frame, meta in shards
            if meta["unit"]["params"]["alpha"] == alpha and meta["unit"]["tuning"]
        ]
        recomputed[alpha] = np.mean(finals)
        assert len(finals) == 2 and means[alpha] == pytest.approx(recomputed[alpha])
    best = min(recomputed, key=recomputed.get)
    assert record["chosen"]["alpha"] == best
    assert record["tuning_seeds"] == [0, 1] and record["report_seeds"] == [0, 1]
    loaded = load_experiment(out)
    assert sorted(loaded.rounds["algorithm"].unique()) == ["linucb-ind", "random"]  # tuning shards not reported
    assert tuned_note(loaded) == f" Chosen on 2 tuning seeds: linucb-ind alpha = {best}."  # the grid key only
    reported = [read_shard(out / "shards" / f"{uid}.parquet")[1]["unit"] for uid in manifest["units"]]
    assert {u["params"]["alpha"] for u in reported if u["algorithm"] == "linucb-ind"} == {best}
    # listed in the order the algorithms were asked for, the tuned one's units (run after tuning) included
    assert [u["algorithm"] for u in reported] == ["linucb-ind", "linucb-ind", "random", "random"]
    assert [manifest["labels"][uid] for uid in manifest["units"]] == ["linucb-ind", "linucb-ind", "random", "random"]
    assert not any(u["tuning"] for u in reported)


def test_cells_tied_on_the_tuning_seeds_go_to_the_first_of_the_grid(data_dir, tmp_path, monkeypatch):
    from banditbench.runner import experiment as running

    monkeypatch.setattr(running, "final_regret", lambda path: 7.0)  # every cell ties
    experiment = planned(data_dir, tune_seeds=2, seeds=1, params=["linucb-ind.alpha=3,0.01", "linucb-ind.ridge=1"])
    out = tmp_path / "tied"
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    assert json.loads((out / "manifest.json").read_text())["tuning"]["linucb-ind"]["chosen"]["alpha"] == 3.0


def test_two_algorithms_tuned_on_the_same_grid_are_each_chosen_on_their_own_tuning_shards(
    data_dir, tmp_path, monkeypatch
):
    from banditbench.runner import experiment as running

    params = ["linucb-ind.alpha=0.1,1", "linucb-one.alpha=0.1,1"]  # the same cells: {alpha, ridge} alike
    experiment = planned(data_dir, algos=["linucb-ind", "linucb-one"], tune_seeds=2, seeds=1, params=params)
    regret = {("linucb-ind", 0.1): 1.0, ("linucb-ind", 1.0): 5.0, ("linucb-one", 0.1): 9.0, ("linucb-one", 1.0): 2.0}
    of_shard = {shard_path(tmp_path, u): (u.algorithm, u.params["alpha"]) for u in experiment.tuning_units}
    monkeypatch.setattr(running, "final_regret", lambda path: regret[of_shard[path]])
    chosen = running.choose_cells(experiment, tmp_path)
    assert {algo: record["chosen"]["alpha"] for algo, record in chosen.items()} == {
        "linucb-ind": 0.1,
        "linucb-one": 1.0,
    }


def test_the_unit_limit_counts_every_cell_of_a_grid_on_every_seed(data_dir, monkeypatch):
    from banditbench.runner import experiment as running

    monkeypatch.setattr(running, "MAX_UNITS", 11)
    with pytest.raises(UserError, match="12 units are above the limit of 11"):
        planned(data_dir)  # 2 × 2 cells on 3 seeds


def test_tuning_rounds_may_name_the_whole_horizon(data_dir):
    assert {u.rounds for u in planned(data_dir, tune_seeds=2, tune_rounds=200).tuning_units} == {200}


def test_a_grid_that_lists_a_value_twice_is_refused(data_dir):
    # 1 and 1.0 are one cell, which would otherwise run, and count, twice
    with pytest.raises(UserError, match="linucb-ind.alpha lists a value twice"):
        planned(data_dir, params=["linucb-ind.alpha=1,1.0"])


def test_an_integer_for_a_float_hyper_parameter_without_a_domain_becomes_a_float():
    # a plug-in without declared domains: alpha = 1 in a file is the cell (and the shard name) of alpha = 1.0
    value = grid.cast("plug-in", "alpha", 1, 0.5)
    assert value == 1.0 and type(value) is float


def test_the_chosen_cell_not_the_first_is_run_on_the_report_seeds(data_dir, tmp_path, monkeypatch):
    from banditbench.runner import experiment as running

    experiment = planned(data_dir, tune_seeds=2, seeds=2, params=["linucb-ind.alpha=0.1,3", "linucb-ind.ridge=1"])
    of_shard = {shard_path(tmp_path / "out", u): u.params["alpha"] for u in experiment.tuning_units}
    monkeypatch.setattr(running, "final_regret", lambda path: {0.1: 9.0, 3.0: 1.0}[of_shard[path]])  # the 2nd wins
    out = tmp_path / "out"
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    reported = [read_shard(out / "shards" / f"{u.id}.parquet")[1]["unit"] for u in experiment.units]
    assert [u["params"]["alpha"] for u in reported] == [3.0, 3.0]


def test_the_manifest_lists_the_algorithms_still_to_tune_until_their_cells_are_chosen(data_dir, tmp_path):
    # a report of a run killed while tuning counts the report units still to come from this list
    experiment = planned(data_dir, tune_seeds=2, seeds=1)
    out = tmp_path / "out"
    pending = []

    def read_manifest(units):
        pending.append(json.loads((out / "manifest.json").read_text())["pending_tuning"])

    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out, on_plan=read_manifest)
    assert pending == [["linucb-ind"], []]  # before tuning, and before the chosen cell's report units


def test_each_cell_of_a_grid_over_two_names_is_labelled_with_both_coordinates(data_dir):
    labels = sorted(set(planned(data_dir).labels.values()))
    assert labels == [
        "linucb-ind[alpha=0.1,ridge=0.5]",
        "linucb-ind[alpha=0.1,ridge=2.0]",
        "linucb-ind[alpha=1.0,ridge=0.5]",
        "linucb-ind[alpha=1.0,ridge=2.0]",
    ]


def test_without_tuning_seeds_every_cell_is_reported_under_its_own_label(data_dir, tmp_path):
    experiment = planned(data_dir, seeds=2, params=["linucb-ind.alpha=0.1,1"])
    out = tmp_path / "sweep"
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    labels = sorted(load_experiment(out).rounds["algorithm"].unique())
    assert labels == ["linucb-ind[alpha=0.1]", "linucb-ind[alpha=1.0]"]
    assert tuned_note(load_experiment(out)) == ""


def test_experiment_file_then_flags_override_it(tmp_path):
    config = tmp_path / "experiment.toml"
    config.write_text(
        'dataset = "synthetic"\nalgos = ["linucb-ind", "oracle"]\nrounds = 50\ntune-seeds = 2\n'
        'budget = "none"\n[set]\n"linucb-ind.alpha" = [0.1, 1]\n[set.linucb-ind]\nridge = 2\n'
    )
    settings = resolve(RunSettings(rounds=70, params=["linucb-ind.alpha=0.3"]), config)
    assert settings.rounds == 70 and settings.algos == ["linucb-ind", "oracle"]
    assert settings.tune_seeds == 2 and settings.budget is None and settings.seeds == 5
    assert settings.params == {"linucb-ind": {"alpha": ["0.3"], "ridge": [2]}}


def test_protocol_settings_of_the_file_and_the_flags_merge_name_by_name(tmp_path):
    config = tmp_path / "experiment.toml"
    config.write_text("[env]\nusers = 100\nslate_size = 5\n")
    assert resolve(RunSettings(env=["slate_size=3"]), config).env == {"users": 100, "slate_size": "3"}


def test_a_budget_of_none_in_any_case_is_unlimited(tmp_path):
    # a file's budget = "None" (as Python prints it) must not be refused as a non-integer
    config = tmp_path / "experiment.toml"
    config.write_text('budget = "None"\n')
    assert resolve(RunSettings(budget=None), config).budget is None
    assert resolve(RunSettings(budget="NONE"), None).budget is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("rounds = 'ten'\n", "rounds should be a int"),
        ("round = 10\n", "unknown setting 'round'"),
        ("rounds = \n", "not valid TOML"),
        ("[set]\nalpha = 1\n", "should read ALGO.NAME"),
    ],
)
def test_bad_experiment_files_are_refused(tmp_path, text, message):
    config = tmp_path / "experiment.toml"
    config.write_text(text)
    with pytest.raises(UserError, match=message):
        resolve(RunSettings(), config)


def test_resume_names_the_setting_that_differs(data_dir, tmp_path):
    out = tmp_path / "a"
    experiment = planned(data_dir, seeds=1)
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    with pytest.raises(UserError, match=r"rounds: 200 in the folder, 201 now"):
        prepare_output(out, planned(data_dir, seeds=1, rounds=201), overwrite=False, resume=True)
    other_grid = planned(data_dir, seeds=1, params=["linucb-ind.alpha=0.1,2", "linucb-ind.ridge=0.5,2"])
    with pytest.raises(
        UserError,
        match=r"algorithms\.linucb-ind\.alpha: \[0\.1, 1\.0\] in the folder, "
        r"\[0\.1, 2\.0\] now",
    ):
        prepare_output(out, other_grid, overwrite=False, resume=True)


def test_a_paper_preset_names_what_is_not_registered_yet(monkeypatch):
    monkeypatch.setitem(presets.PRESETS, "unready", {**presets.PRESETS["bass-yahoo"], "dataset": "nodata"})
    with pytest.raises(UserError) as error:
        resolve(RunSettings(), None, "unready")
    message = str(error.value)
    assert message.startswith("preset unready (Table 4 (Yahoo column) and Fig. 7) cannot run yet")
    assert "not registered: dataset nodata" in message
    assert presets.missing_for("mcnb-movielens") == []  # COFIBA, its last missing baseline, is registered
    with pytest.raises(UserError, match="unknown preset 'nope'"):
        resolve(RunSettings(), None, "nope")


def test_every_paper_of_the_issue_has_presets():
    papers = {spec["paper"] for spec in presets.PRESETS.values()}
    five = {presets.MCNB, presets.METABAN, presets.BASS, presets.GHOSH, presets.TWOSTAGE}
    assert five | {presets.SHOWDOWN, presets.OBD, presets.REPLAY} == papers  # the Showdown's and the logs' presets
    reproduced = " ".join(spec["reproduces"] for spec in presets.PRESETS.values())
    for figure in ("Fig. 2", "Fig. 3", "Fig. 4", "Table 4", "Table 5", "Table 6", "Fig. 1(e)"):
        assert figure in reproduced


def test_a_preset_whose_parts_are_registered_runs_with_its_settings(data_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(
        presets.PRESETS,
        "tiny",
        {
            "paper": "test",
            "reproduces": "nothing",
            "dataset": "synthetic",
            "protocol": "linear",
            "data": {"users": 20, "clusters": 2},
            "algos": ["linucb-ind", "random"],
            "rounds": 120,
            "seeds": 2,
            "tune-seeds": 1,
            "budget": None,
            "set": {"linucb-ind.alpha": [0.1, 1.0]},
            "notes": "",
        },
    )
    settings = resolve(RunSettings(seeds=1), None, "tiny")
    assert (settings.rounds, settings.seeds, settings.tune_seeds) == (120, 1, 1)
    experiment = plan(settings, data_dir=data_dir)
    assert len(experiment.tuning_units) == 2 and [u.id for u in experiment.units] == ["random-seed0"]
    monkeypatch.setitem(presets.PRESETS["tiny"], "set", {"linucb-ind.beta": 1})
    with pytest.raises(UserError, match="not registered: hyper-parameter linucb-ind.beta"):
        resolve(RunSettings(), None, "tiny")
    with pytest.raises(UserError, match="needs protocol 'matrix'"):
        plan(
            RunSettings.with_defaults(
                dataset="synthetic",
                algos=["random"],
                rounds=5,
                seeds=1,
                seed=0,
                budget=None,
                params=[],
                protocol="matrix",
            ),
            data_dir=data_dir,
        )


def test_list_presets_and_a_missing_preset_on_the_command_line(data_dir, tmp_path):
    listed = banditbench("list", "presets")
    assert listed.returncode == 0
    for name in ("mcnb-movielens", "metaban-mnist-notmnist", "bass-synthetic", "ghosh-lastfm", "twostage-table6-mind"):
        assert name in listed.stdout
    # the real entry point, with a preset naming a dataset that is not registered
    script = (
        "from banditbench import presets; "
        "presets.PRESETS['unready'] = {**presets.PRESETS['bass-yahoo'], 'dataset': 'nodata'}; "
        "from banditbench.cli import main; main()"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, "run", "--preset", "unready", "--data-dir", data_dir, "--out", tmp_path / "out"],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 2 and len(ran.stderr.strip().splitlines()) == 1
    assert "error: preset unready" in ran.stderr and "not registered: dataset nodata" in ran.stderr
    assert not (tmp_path / "out").exists()


def test_run_from_an_experiment_file_with_a_flag_override_records_the_resolved_settings(data_dir, tmp_path):
    config = tmp_path / "experiment.toml"
    out = tmp_path / "from-file"
    config.write_text(
        f'algos = "linucb-ind,random"\nrounds = 150\nseeds = 2\nout = "{out}"\njobs = 1\n'
        '[set]\n"linucb-ind.alpha" = [0.1, 1.0]\n'
    )
    ran = banditbench("run", "--config", config, "--data-dir", data_dir, "--rounds", 120)
    assert ran.returncode == 0, ran.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["rounds"] == 120 and manifest["config"]["algorithms"]["linucb-ind"]["alpha"] == [0.1, 1.0]
    assert manifest["execution"]["settings"]["config"] == str(config)
    assert len(manifest["units"]) == 2 * 2 + 2
    refused = banditbench("run", "--config", config, "--data-dir", data_dir, "--resume")
    assert refused.returncode == 2 and "rounds: 120 in the folder, 150 now" in refused.stderr


def test_presets_whose_parts_all_exist_are_ready():
    # BASS on synthetic data with its centres, Ghosh et al. on the synchronous protocol of the same dataset
    assert presets.missing_for("bass-synthetic") == []
    assert presets.missing_for("ghosh-synthetic") == []
    assert presets.missing_for("bass-movielens") == []  # the matrix protocol and movielens-small
    assert presets.missing_for("bass-yahoo") == []  # the matrix protocol and yahoo


def test_algos_narrow_a_preset_and_its_grid_but_a_flag_for_a_dropped_algorithm_is_refused():
    settings = resolve(RunSettings(algos="neuucb-one,mcnb"), None, "mcnb-mnist")
    assert settings.algos == ["neuucb-one", "mcnb"]
    assert set(settings.params) == {"neuucb-one", "mcnb"} and settings.params["neuucb-one"]["nu"] == [
        1e-4,
        1e-3,
        1e-2,
        0.1,
    ]
    with pytest.raises(UserError, match="'club' is not among algos"):
        grid.resolve(resolve(RunSettings(algos="mcnb", params=["club.alpha=1"]), None, "mcnb-mnist").params, ["mcnb"])
