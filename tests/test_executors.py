"""Executors give the same shards; a killed run resumes to the same bytes; units continue from checkpoints."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

from banditbench.algos import ALGORITHMS, Policy, register
from banditbench.results.shards import write_shard
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.executors import LocalExecutor, RayExecutor
from banditbench.runner.experiment import execute, plan, prepare_output
from banditbench.runner.settings import RunSettings
from banditbench.runner.unit import Unit, run_unit

SETTINGS = dict(
    dataset="synthetic",
    algos=["linucb-ind", "random"],
    rounds=400,
    seeds=2,
    seed=3,
    budget=None,
    params=["linucb-ind.alpha=0.1,1"],
    tune_seeds=2,
)


def run(data_dir, out, executor=None, engine="units", **settings):
    experiment = plan(RunSettings.with_defaults(**{**SETTINGS, **settings}), data_dir=data_dir)
    target = prepare_output(out, experiment, overwrite=False, resume=False)
    execute(experiment, target, out, executor=executor, engine=engine)
    return experiment


def shards(folder):
    return {
        p.name: p.read_bytes()
        for p in sorted((folder / "shards").glob("*.parquet"))
        if not p.name.endswith(".timing.parquet")
    }


def test_two_local_workers_write_the_same_shards_as_one(data_dir, tmp_path):
    run(data_dir, tmp_path / "one", LocalExecutor(jobs=1))
    run(data_dir, tmp_path / "two", LocalExecutor(jobs=2))
    one, two = shards(tmp_path / "one"), shards(tmp_path / "two")
    assert len(one) == 2 * 2 + 2 + 2 and one == two  # 2 cells × 2 tuning seeds, then 2 + 2 reported units
    assert (tmp_path / "one" / "manifest.json").read_text().replace('"jobs": 1', '"jobs": 2') == (
        tmp_path / "two" / "manifest.json"
    ).read_text()


def test_lockstep_groups_on_one_job_or_two_workers_write_the_units_engines_shards(data_dir, tmp_path):
    # linucb-ind's stacked products are exact: each member's result must reach its own unit's shard
    run(data_dir, tmp_path / "units", LocalExecutor(jobs=1), tune_seeds=0, seeds=3)
    run(data_dir, tmp_path / "one", LocalExecutor(jobs=1), engine="lockstep", tune_seeds=0, seeds=3)
    run(data_dir, tmp_path / "two", LocalExecutor(jobs=2), engine="lockstep", tune_seeds=0, seeds=3)
    units = shards(tmp_path / "units")
    assert len(units) == 2 * 3 + 3 and shards(tmp_path / "one") == units and shards(tmp_path / "two") == units


def test_a_worker_killed_midway_fails_the_run_instead_of_hanging(data_dir, tmp_path):
    executor = LocalExecutor(jobs=2)
    killed = []

    def kill_a_worker(unit):  # as the kernel's out-of-memory killer would, while the units run
        if not killed:
            killed.append(next(iter(executor.pool._processes.values())).pid)
            os.kill(killed[0], signal.SIGKILL)

    experiment = plan(RunSettings.with_defaults(**{**SETTINGS, "rounds": 20_000, "tune_seeds": 0}), data_dir=data_dir)
    target = prepare_output(tmp_path / "out", experiment, overwrite=False, resume=False)
    with pytest.raises(BrokenProcessPool):
        execute(experiment, target, tmp_path / "out", executor=executor, on_unit_start=kill_a_worker)
    assert killed and executor.pool is None  # the other worker was stopped, not left running
    assert len(shards(tmp_path / "out")) < len(experiment.units)


def test_an_interrupted_pool_has_stopped_its_manager_thread_when_the_run_returns(data_dir, tmp_path):
    # A manager thread still running at interpreter exit races Python's exit hook, which then prints a
    # traceback (writing to the wake-up pipe the thread has just closed) after the run's one-line message.
    executor = LocalExecutor(jobs=2)
    managers = []

    def interrupt(unit):
        managers.append(executor.pool._executor_manager_thread)
        raise KeyboardInterrupt

    experiment = plan(RunSettings.with_defaults(**{**SETTINGS, "rounds": 20_000, "tune_seeds": 0}), data_dir=data_dir)
    target = prepare_output(tmp_path / "out", experiment, overwrite=False, resume=False)
    with pytest.raises(KeyboardInterrupt):
        execute(experiment, target, tmp_path / "out", executor=executor, on_unit_start=interrupt)
    assert managers and not managers[0].is_alive() and executor.pool is None


def test_ray_writes_the_same_shards_as_the_local_executor(data_dir, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'banditbench-lab[ray]')")
    run(data_dir, tmp_path / "local", LocalExecutor(jobs=1), tune_seeds=0)
    run(data_dir, tmp_path / "ray", RayExecutor(jobs=2), tune_seeds=0)  # starts and stops a local Ray
    local, ray = shards(tmp_path / "local"), shards(tmp_path / "ray")
    assert len(local) == 3 * 2 and local == ray


def test_lockstep_groups_give_the_same_shards_on_local_workers_and_on_ray(data_dir, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'banditbench-lab[ray]')")
    settings = dict(algos=["neuucb-one", "linucb-ind"], seeds=4, tune_seeds=0, engine="lockstep")
    run(data_dir, tmp_path / "local", LocalExecutor(jobs=2), **settings)
    run(data_dir, tmp_path / "ray", RayExecutor(jobs=2), **settings)  # each of 2 tasks runs a group of 2 seeds
    local, ray = shards(tmp_path / "local"), shards(tmp_path / "ray")
    assert len(local) == 4 + 2 * 4 and local == ray


def test_sigkill_to_the_process_group_then_resume_gives_identical_shards(data_dir, tmp_path):
    args = [
        "--data-dir",
        data_dir,
        "--dataset",
        "synthetic",
        "--algos",
        "linucb-ind,linucb-one",
        "--rounds",
        4000,
        "--seeds",
        2,
        "--set",
        "linucb-ind.alpha=0.5",
        "--jobs",
        2,
        "--checkpoint-every",
        500,
    ]
    command = [sys.executable, "-m", "banditbench", "run", *map(str, args)]
    killed = tmp_path / "killed"
    process = subprocess.Popen(
        [*command, "--out", str(killed)], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:  # kill once a unit is done and one is midway
        if len(shards(killed) if (killed / "shards").exists() else {}) >= 1 and list(killed.glob("checkpoints/*.npz")):
            break
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    partial = shards(killed)
    assert 1 <= len(partial) < 4, "the run was not interrupted partway; make its units longer"
    assert list(killed.glob("checkpoints/*.npz"))  # a unit had been interrupted between checkpoints
    resumed = subprocess.run([*command, "--out", str(killed), "--resume"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    clean = plan(
        RunSettings.with_defaults(
            dataset="synthetic",
            algos=["linucb-ind", "linucb-one"],
            rounds=4000,
            seeds=2,
            seed=0,
            budget=None,
            params=["linucb-ind.alpha=0.5"],
        ),
        data_dir=data_dir,
    )
    execute(clean, prepare_output(tmp_path / "clean", clean, overwrite=False, resume=False), tmp_path / "clean")
    assert shards(killed) == shards(tmp_path / "clean") and len(shards(killed)) == 4
    assert not (killed / "checkpoints").exists()
    assert not list(killed.rglob(".*.partial"))


def test_a_worker_running_linucb_imports_neither_torch_nor_scikit_learn(data_dir):
    """Every worker of every run pays its imports; the registries import an algorithm's or protocol's
    module only when a unit uses it, so a linear-protocol linucb unit needs none of the heavy libraries."""
    code = textwrap.dedent(f"""
        import sys
        from banditbench.algos import ALGORITHMS
        from banditbench.data import load_dataset
        from banditbench.runner.executors import run_one
        from banditbench.runner.unit import Unit

        unit = Unit("synthetic", "linear", "linucb-ind", ALGORITHMS["linucb-ind"].defaults(), 0, 0, 50, None)
        run_one([unit], load_dataset({str(data_dir)!r}, "synthetic"))
        heavy = ("torch", "sklearn", "ray", "matplotlib", "rich", "typer")
        print(*sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith("scipy.stats")))
    """)
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert imported == []
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from banditbench.algos import ALGORITHMS; "
            "print(ALGORITHMS['mcnb'].policy.__module__, 'torch' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert heavy == ["banditbench.algos.mcnb", "True"]  # imported on first use


class Interrupted(Exception):
    pass


class CrashingCheckpoints(Checkpoints):
    """Saves like Checkpoints, then stops the unit after its ``crash_after``-th save, as a kill would."""

    def __init__(self, folder, every, crash_after):
        super().__init__(folder, every)
        self.saves, self.crash_after = 0, crash_after

    def save(self, unit, state):
        super().save(unit, state)
        self.saves += 1
        if self.saves == self.crash_after:
            raise Interrupted


class Resumed(Checkpoints):
    def load(self, unit):
        self.loaded = super().load(unit)
        return self.loaded


def continues_identically(dataset, tmp_path, unit):
    uninterrupted = run_unit(unit, dataset)
    with pytest.raises(Interrupted):
        run_unit(unit, dataset, checkpoints=CrashingCheckpoints(tmp_path, 300, crash_after=2))
    resumed_from = Resumed(tmp_path, 300)
    result = run_unit(unit, dataset, checkpoints=resumed_from)
    assert resumed_from.loaded["t"] == 600  # it continued from round 600 instead of restarting
    a = write_shard(tmp_path / "a", unit, uninterrupted, "sha")
    b = write_shard(tmp_path / "b", unit, result, "sha")
    assert a.read_bytes() == b.read_bytes()


def test_a_linucb_unit_continues_from_its_checkpoint_with_identical_results(dataset, tmp_path):
    params = ALGORITHMS["linucb-ind"].defaults()
    continues_identically(dataset, tmp_path, Unit("synthetic", "linear", "linucb-ind", params, 0, 1, 1000, None))


class DropoutRegression(Policy):
    """A small torch policy drawing from torch's global RNG (dropout): the checkpoint must restore both."""

    def __init__(self, *, n_users, n_arms, dim, seed, lr: float = 0.05):
        import torch

        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        torch.manual_seed(int(self.rng.integers(2**31)))
        self.net = torch.nn.Sequential(
            torch.nn.Linear(dim, 8), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1)
        ).double()
        self.optimiser = torch.optim.Adam(self.net.parameters(), lr=lr)

    def select(self, view, budget):
        import torch

        with torch.no_grad():
            scores = self.net(torch.from_numpy(np.array(view.arms[:]))).squeeze(1)
        return int(torch.argmax(scores))

    def update(self, view, chosen, reward):
        import torch

        x = torch.from_numpy(np.array(view.arms[chosen]))[None]
        loss = (self.net(x).squeeze() - reward) ** 2
        self.optimiser.zero_grad()
        loss.backward()
        self.optimiser.step()


def test_a_torch_policy_continues_from_its_checkpoint_with_identical_results(dataset, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    register("dropout-regression", DropoutRegression, paper="test", description="test")
    try:
        unit = Unit("synthetic", "linear", "dropout-regression", {"lr": 0.05}, 0, 0, 1000, None)
        continues_identically(dataset, tmp_path, unit)
    finally:
        del ALGORITHMS["dropout-regression"]
