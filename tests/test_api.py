"""The Python API: prepare, run and load return Python objects; errors are UserError, never SystemExit; the CLI
and the API give the same outcomes for the same arguments."""

from __future__ import annotations

import gc
import pickle
import shutil
import sys
import warnings
from pathlib import Path

import matplotlib.figure
import numpy as np
import pandas as pd
import pytest

import banditbench as bb
from banditbench.cli import flag
from banditbench.errors import SettingError, UserError

sys.path.insert(0, str(Path(__file__).parent))
from conftest import banditbench  # noqa: E402
from test_golden import digest  # noqa: E402

OUTCOME = [
    "dataset",
    "algorithm",
    "seed",
    "t",
    "user",
    "group",
    "chosen",
    "reward",
    "expected_reward",
    "best_expected_reward",
    "regret",
    "budget_spent",
    "cumulative_regret",
]


pytestmark = pytest.mark.usefixtures("restored_registry")  # plugins registered by a test are forgotten after it


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    data = tmp_path_factory.mktemp("api") / "datasets"
    bb.prepare("synthetic", users=20, clusters=2, dim=5, arms=10, data_dir=data)
    return bb.run(algos=["random", "linucb-ind", "oracle"], dataset="synthetic", rounds=120, seeds=3, data_dir=data)


def test_prepare_returns_the_folder_with_the_options_given(tmp_path):
    path = bb.prepare("synthetic", users=12, clusters=3, dim=4, arms=6, data_dir=tmp_path)
    assert path == tmp_path / "synthetic"
    manifest = (path / "manifest.json").read_text()
    assert '"users": 12' in manifest and '"clusters": 3' in manifest


def test_frame_holds_every_round_of_every_unit(results):
    frame = results.frame()
    assert list(frame.columns[: len(OUTCOME) - 1]) == OUTCOME[:-1] and "cumulative_regret" in frame
    assert len(frame) == 3 * 3 * 120
    unit = frame[(frame["algorithm"] == "linucb-ind") & (frame["seed"] == 1)]
    assert unit["t"].tolist() == list(range(120))
    np.testing.assert_allclose(unit["regret"], unit["best_expected_reward"] - unit["expected_reward"])
    np.testing.assert_allclose(unit["cumulative_regret"], unit["regret"].cumsum())
    assert (frame.loc[frame["algorithm"] == "oracle", "regret"] == 0).all()


def test_summary_gives_final_regret_with_a_95_percent_interval(results):
    summary = results.summary().set_index("algorithm")
    frame = results.frame()
    finals = frame.groupby(["algorithm", "seed"])["regret"].sum()
    for algorithm in ("random", "linucb-ind"):
        values = finals[algorithm].to_numpy()
        assert summary.at[algorithm, "seeds"] == 3
        assert summary.at[algorithm, "regret_mean"] == pytest.approx(values.mean())
        # the 95 % percentile bootstrap interval of the mean: inside the seeds' range, around the mean
        low, high = summary.at[algorithm, "regret_ci_low"], summary.at[algorithm, "regret_ci_high"]
        assert values.min() <= low <= values.mean() <= high <= values.max()
        mean_reward = frame[frame["algorithm"] == algorithm].groupby("seed")["reward"].mean().mean()
        assert summary.at[algorithm, "mean_reward"] == pytest.approx(mean_reward)  # each seed's mean, averaged
    assert summary.at["linucb-ind", "regret_mean"] < summary.at["random", "regret_mean"]


def test_curves_are_the_mean_cumulative_regret_per_round(results):
    curves = results.curves()
    assert len(curves) == 3 * 120
    last = curves[curves["t"] == 119].set_index("algorithm")["cumulative_regret_mean"]
    summary = results.summary().set_index("algorithm")["regret_mean"]
    for algorithm in ("random", "linucb-ind", "oracle"):
        assert last[algorithm] == pytest.approx(summary[algorithm])


def test_plot_is_a_figure_with_one_curve_per_algorithm(results):
    figure = results.plot()
    assert isinstance(figure, matplotlib.figure.Figure)
    [axes] = figure.axes
    assert [line.get_label() for line in axes.get_lines()] == ["random", "linucb-ind", "oracle"]


@pytest.mark.parametrize(
    "fmt, marker",
    [("md", "| linucb-ind |"), ("csv", "dataset,algorithm"), ("latex", r"\begin{tabular}"), ("html", "<svg")],
)
def test_report_text_in_each_format(results, fmt, marker):
    text = results.report(fmt)
    assert marker in text and "linucb-ind" in text


def test_load_reads_the_same_results_back(results):
    again = bb.load(results.folder)
    pd.testing.assert_frame_equal(again.frame(), results.frame())
    pd.testing.assert_frame_equal(again.summary(), results.summary())


def test_load_reports_several_folders_side_by_side(data_dir, tmp_path):
    bb.run(algos="linucb-one", dataset="synthetic", rounds=40, seeds=2, data_dir=data_dir, out=tmp_path / "a")
    bb.run(algos="random", dataset="synthetic", rounds=40, seeds=2, data_dir=data_dir, out=tmp_path / "b")
    both = bb.load(tmp_path / "a", tmp_path / "b")
    assert both.algorithms == ["linucb-one", "random"]
    assert both.summary()["seeds"].tolist() == [2, 2]
    shutil.copytree(tmp_path / "a", tmp_path / "c")
    with pytest.raises(UserError, match="linucb-one seed 0 on 'synthetic' is in both"):
        bb.load(tmp_path / "a", tmp_path / "c")


def test_a_run_without_out_lives_in_a_temporary_folder_until_save(data_dir, tmp_path):
    run = bb.run(algos="linucb-one", dataset="synthetic", rounds=30, seeds=1, data_dir=data_dir)
    folder = run.folder
    assert folder.is_dir() and (folder / "manifest.json").is_file()
    kept = run.save(tmp_path / "kept")
    pd.testing.assert_frame_equal(kept.frame(), run.frame())
    del run
    gc.collect()
    assert not folder.exists()
    assert (tmp_path / "kept" / "manifest.json").is_file()


@pytest.mark.parametrize(
    "arguments, flags",
    [
        ({"dataset": "nope"}, ["--dataset", "nope"]),
        ({"rounds": 0}, ["--rounds", "0"]),
        ({"params": ["linucb-one.alpha=x"]}, ["--set", "linucb-one.alpha=x"]),
        ({"params": {"club.alpha": 1.0}}, ["--set", "club.alpha=1.0"]),
        ({"env": {"users": 3}}, ["--env", "users=3"]),
        ({"budget": 0}, ["--budget", "0"]),
        ({"algos": "linucb-one,linucb-one"}, ["--algos", "linucb-one,linucb-one"]),
    ],
)
def test_bad_arguments_raise_the_cli_message_and_write_nothing(arguments, flags, data_dir, tmp_path):
    settings = {"algos": "linucb-one", "dataset": "synthetic", "rounds": 10, "seeds": 1}
    with pytest.raises(UserError) as caught:
        bb.run(**{**settings, **arguments}, data_dir=data_dir, out=tmp_path / "api")
    given = {f"--{key}": str(value) for key, value in settings.items()}
    cli = banditbench(
        "run", *[x for item in given.items() for x in item], *flags, "--data-dir", data_dir, "--out", tmp_path / "cli"
    )
    assert cli.returncode == 2
    error = caught.value
    if isinstance(error, SettingError):  # the API names a setting by its keyword, the CLI by its flag
        assert "--" not in str(error)
        error = error.naming(flag)
    assert f"error: {error}" == cli.stderr.strip()  # one line, the same words
    assert not (tmp_path / "api").exists() and not (tmp_path / "cli").exists()


def test_a_setting_error_crosses_processes_whole():
    """A Ray worker's refusal reaches the driver pickled: it must still name the setting, and the flag in the CLI."""
    again = pickle.loads(pickle.dumps(SettingError("{out} {path} holds files", path="/a/{b}")))
    assert type(again) is SettingError and str(again) == "out /a/{b} holds files"
    assert again.naming(flag) == "--out /a/{b} holds files"


def test_other_errors_are_user_errors_too(tmp_path, results):
    with pytest.raises(UserError, match="prepare synthetic: no option 'user'; it has: "):
        bb.prepare("synthetic", user=3, data_dir=tmp_path)
    with pytest.raises(UserError, match="unknown dataset 'nope'"):
        bb.prepare("nope", data_dir=tmp_path)
    with pytest.raises(UserError, match="is not a results folder"):
        bb.load(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        bb.load(tmp_path / "missing")
    with pytest.raises(UserError, match="unknown format 'pdf'; choose from: md, csv, latex, html"):
        results.report("pdf")
    assert not list(tmp_path.iterdir())


def test_cli_and_api_give_the_same_outcome_columns(data_dir, tmp_path):
    arguments = {"algos": "random,linucb-ind,club", "dataset": "synthetic", "rounds": 150, "seeds": 2, "seed": 7}
    flags = [x for key, value in arguments.items() for x in (f"--{key}", value)]
    done = banditbench(
        "run", *flags, "--set", "club.alpha=0.5", "--data-dir", data_dir, "--out", tmp_path / "cli", "--jobs", 1
    )
    assert done.returncode == 0, done.stderr
    api = bb.run(**arguments, params=["club.alpha=0.5"], data_dir=data_dir, out=tmp_path / "api")

    def digests(folder: Path) -> dict[str, str]:
        return {
            p.name: digest(p)
            for p in sorted((folder / "shards").glob("*.parquet"))
            if not p.name.endswith(".timing.parquet")
        }

    cli = digests(tmp_path / "cli")
    assert len(cli) == 6 and cli == digests(api.folder)


class Warned(Exception):
    pass


def refuse(line: str):
    raise Warned(line)


def test_worker_processes_sharing_one_gpu_are_warned_about_before_anything_runs(data_dir, tmp_path, monkeypatch):
    import torch

    from banditbench.api import Hooks, run_experiment
    from banditbench.runner.settings import RunSettings

    flags = dict(dataset="synthetic", algos=["neuucb-one"], rounds=20, seeds=2, out=str(tmp_path / "out"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # plan() accepts cuda; the warning stops the run
    with pytest.raises(Warned, match="^2 worker processes take turns on each GPU"):
        run_experiment(RunSettings(**flags, jobs=2), data_dir=data_dir, device="cuda", hooks=Hooks(warn=refuse))
    with pytest.raises(Warned, match="^2 worker processes"):
        run_experiment(RunSettings(**flags, jobs=2), data_dir=data_dir, device="auto", hooks=Hooks(warn=refuse))
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()  # now the units really run: no warning for one process, nor for the CPU
    quiet = [(1, "cpu"), (2, "cpu")] + ([] if torch.cuda.is_available() else [(2, "auto")])
    for jobs, device in quiet:
        run_experiment(
            RunSettings(**flags, jobs=jobs), data_dir=data_dir, device=device, overwrite=True, hooks=Hooks(warn=refuse)
        )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with warnings.catch_warnings():  # the library, without hooks, warns as Python does; as an error it stops the run
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match="take turns on each GPU"):
            run_experiment(RunSettings(**flags, jobs=2), data_dir=data_dir, device="cuda", overwrite=True)


def test_ray_tasks_sharing_a_gpu_are_warned_about_before_ray_starts(data_dir, tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'banditbench-lab[ray]')")
    import torch

    from banditbench.api import Hooks, run_experiment
    from banditbench.runner.settings import RunSettings

    flags = dict(dataset="synthetic", algos=["neuucb-one"], rounds=20, seeds=2, backend="ray")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(Warned, match="^4 worker processes take turns on each GPU"):
        run_experiment(
            RunSettings(**flags, gpus_per_unit=0.25), data_dir=data_dir, device="cuda", hooks=Hooks(warn=refuse)
        )
    assert ray_tasks_per_gpu(1.0) == ray_tasks_per_gpu(0.0) == 1 and ray_tasks_per_gpu(0.3) == 3


def ray_tasks_per_gpu(gpus_per_unit: float) -> int:
    from banditbench.runner.executors import RayExecutor

    return RayExecutor(gpus_per_unit=gpus_per_unit).sharing_a_gpu
