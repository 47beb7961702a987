"""An experiment: every (algorithm × grid cell × seed) unit on one dataset, written under ``results/<name>/``.

Everything a user can get wrong is checked in :func:`plan` before anything is written. A new
experiment folder receives shards as units finish (so an interrupted run can be resumed); with
``overwrite`` the run is staged beside the old folder and swapped in only when it completes, so the
old results survive a failed rerun.

Grids: with ``tune_seeds = 0`` every cell is run on the report seeds and reported (a sensitivity
study); with ``tune_seeds > 0`` an algorithm with several cells is first run on the tuning seeds, the
cell with the lowest mean final cumulative regret is kept (ties: the first cell in grid order), and
only that cell is run on the report seeds (best-of-grid as the papers do, without tuning on the seeds
it reports). The tuning scores and the choice are recorded in ``manifest.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow.parquet as pq

from banditbench import __version__
from banditbench.algos import ALGORITHMS
from banditbench.data import PreparedDataset, check_dataset_name, load_dataset
from banditbench.envs import PROTOCOL_ALIASES, PROTOCOLS
from banditbench.errors import UserError
from banditbench.results.shards import shard_path, write_shard
from banditbench.runner import grid
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.executors import Executor, LocalExecutor
from banditbench.runner.unit import Unit

MANIFEST = "manifest.json"


@dataclass
class Experiment:
    dataset: PreparedDataset
    units: list[Unit]  # report units known before tuning (algorithms with one cell, or every cell without tuning)
    config: dict[str, Any]
    tuning_units: list[Unit] = field(default_factory=list)
    tuned: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # algorithm → its cells, to tune
    labels: dict[str, str] = field(default_factory=dict)  # unit id → how reports name its cell

    def report_units(self, algorithm: str, params: dict[str, Any]) -> list[Unit]:
        c = self.config
        return [Unit(c["dataset"], c["protocol"], algorithm, params, c["master_seed"], i, c["rounds"], c["budget"],
                     env=c.get("env", {})) for i in range(c["seeds"])]


def plan(*, data_dir: Path, dataset: str, algorithms: list[str], rounds: int, seeds: int, master_seed: int,
         budget: int | None, params: list[str] | grid.Assignments, tune_seeds: int = 0,
         protocol: str | None = None, device: str | None = None, env: dict[str, Any] | None = None) -> Experiment:
    """``params``: ``--set`` strings or an assignments table (see runner/grid.py); ``protocol``: the one a
    preset requires (the prepared dataset must have been prepared for it); ``device``: sets the ``device``
    hyper-parameter of every algorithm that has one (an explicit ``--set ALGO.device=…`` wins); ``env``: the
    protocol's settings (``--env NAME=VALUE``), checked against its ``SETTINGS``."""
    check_dataset_name(data_dir, dataset, {*PROTOCOLS, *PROTOCOL_ALIASES})
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        raise UserError(f"unknown algorithm {unknown[0]!r}; choose from: {', '.join(ALGORITHMS)}")
    if not algorithms:
        raise UserError("--algos is empty; name at least one algorithm")
    if len(set(algorithms)) != len(algorithms):
        raise UserError("--algos names an algorithm twice")
    if rounds < 1:
        raise UserError(f"--rounds must be a positive integer, got {rounds}")
    if seeds < 1:
        raise UserError(f"--seeds must be a positive integer, got {seeds}")
    if tune_seeds < 0:
        raise UserError(f"--tune-seeds must be zero or a positive integer, got {tune_seeds}")
    if master_seed < 0:
        raise UserError(f"--seed must be non-negative, got {master_seed}")
    if budget is not None and budget < 1:
        raise UserError(f"--budget must be at least 1 arm per round, got {budget}")
    assignments = grid.parse_assignments(params) if isinstance(params, list) else params
    if device is not None:
        from banditbench.algos.neural import DEVICES  # imports torch, so only when a device is asked for

        if device not in DEVICES:
            raise UserError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
        flag = {a: {"device": [device]} for a in algorithms if "device" in ALGORITHMS[a].defaults()}
        assignments = grid.merge(flag, assignments)
    resolved = grid.resolve(assignments, algorithms)
    for algo in algorithms:  # an unusable device fails here, before anything is written
        for cell in grid.cells(resolved[algo]):
            if "device" in cell:  # a neural algorithm: its module has imported torch already
                from banditbench.algos.neural import resolve_device

                resolve_device(cell["device"])
    prepared = load_dataset(data_dir, dataset)
    prepared_for = PROTOCOL_ALIASES.get(prepared.manifest["protocol"], prepared.manifest["protocol"])
    if protocol is not None and protocol != prepared_for:
        raise UserError(f"this experiment needs protocol {protocol!r}, but {dataset!r} in {data_dir}/ is prepared "
                        f"for {prepared.manifest['protocol']!r}")
    protocol = prepared_for
    if protocol not in PROTOCOLS:  # e.g. logged impressions, which need a simulator protocol
        raise UserError(f"dataset {dataset!r} is for the {protocol!r} protocol, which this banditbench cannot run")
    info = PROTOCOLS[protocol]
    env_settings = protocol_settings(protocol, env or {})
    check = getattr(info.environment, "check", None)  # e.g. twostage: is a trained simulator there?
    if check is not None:
        check(prepared, env_settings, budget)
    for algo in algorithms:
        if getattr(ALGORITHMS[algo].policy, "slate", False) != info.slate:
            kind = "recommends slates" if info.slate else "recommends one arm per round"
            raise UserError(f"{algo} cannot run under protocol {protocol!r}, which {kind}; "
                            f"`banditbench list` shows the algorithms of each protocol")
        if ALGORITHMS[algo].fixed.get("two_stage"):  # Alg. 1 picks one topic group per slate item
            topics = prepared.manifest["counts"].get("topics", 0)
            if topics < env_settings.get("slate_size", 0):
                raise UserError(f"{algo} recommends one item per topic group, but {dataset!r} has {topics} topics "
                                f"for a slate of {env_settings['slate_size']}; lower --env slate_size")
    # An algorithm that needs user features (neu-au) is refused up front on a protocol that gives none; a
    # protocol whose rounds carry user_features says so with ``provides_user_features = True`` on its class.
    if not getattr(info.environment, "provides_user_features", False):
        for algo in algorithms:
            if ALGORITHMS[algo].fixed.get("user_features"):
                raise UserError(f"{algo} needs user features, and protocol {protocol!r} gives none "
                                "(the M-CNB paper runs NeuA+U only on MovieLens and Yelp)")
    config = {
        "dataset": dataset, "dataset_manifest_sha256": prepared.manifest_sha256, "protocol": protocol,
        "algorithms": resolved, "seeds": seeds, "tune_seeds": tune_seeds, "master_seed": master_seed,
        "rounds": rounds, "budget": budget,
        **({"env": env_settings} if env_settings else {}),  # absent for protocols without settings, as before
    }
    experiment = Experiment(prepared, [], config)
    for algo in algorithms:
        algo_cells = grid.cells(resolved[algo])
        if tune_seeds and len(algo_cells) > 1:
            experiment.tuned[algo] = algo_cells
            experiment.tuning_units += [Unit(dataset, protocol, algo, cell, master_seed, j, rounds, budget, tuning=True,
                                             env=env_settings)
                                        for cell in algo_cells for j in range(tune_seeds)]
            continue
        for cell in algo_cells:
            units = experiment.report_units(algo, cell)
            experiment.units += units
            label = grid.cell_label(algo, cell, grid.grid_keys(resolved[algo]))
            experiment.labels.update({u.id: label for u in units})
    return experiment


def protocol_settings(protocol: str, given: dict[str, Any]) -> dict[str, Any]:
    """The protocol's settings, its ``SETTINGS`` defaults filled in and ``given`` cast to their types."""
    defaults = getattr(PROTOCOLS[protocol].environment, "SETTINGS", {})
    unknown = [name for name in given if name not in defaults]
    if unknown:
        raise UserError(f"--env {unknown[0]}: protocol {protocol!r} has no such setting; it has: "
                        f"{', '.join(defaults) or 'none'}")
    return {name: grid.cast(protocol, name, given.get(name, default), default, flag="--env")
            for name, default in defaults.items()}


def config_difference(saved: dict[str, Any], current: dict[str, Any], prefix: str = "") -> str | None:
    """The first setting that differs, as ``rounds: 300 in the folder, 301 now``; None if they agree."""
    for key in sorted(set(saved) | set(current)):
        name = f"{prefix}{key}"
        if key not in saved or key not in current:
            return f"{name}: {'absent' if key not in saved else repr(saved[key])} in the folder, " \
                   f"{'absent' if key not in current else repr(current[key])} now"
        a, b = saved[key], current[key]
        if isinstance(a, dict) and isinstance(b, dict):
            found = config_difference(a, b, f"{name}.")
            if found:
                return found
        elif a != b:
            return f"{name}: {a!r} in the folder, {b!r} now"
    return None


def prepare_output(out: Path, experiment: Experiment, *, overwrite: bool, resume: bool) -> Path:
    """Check the output folder and return where shards go (a staging folder when overwriting)."""
    if overwrite and resume:
        raise UserError("--overwrite and --resume exclude each other")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not (overwrite or resume):
        raise UserError(f"{out} already holds results; pass --resume to finish it or --overwrite to replace it")
    if resume and (out / MANIFEST).exists():
        difference = config_difference(json.loads((out / MANIFEST).read_text())["config"], experiment.config)
        if difference:
            raise UserError(f"--resume: {out} was run with other settings ({difference}); "
                            "use another --out or --overwrite")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if overwrite and out.exists():
            target = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        else:
            out.mkdir(exist_ok=True)
            target = out
        probe = target / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UserError(f"cannot write results to {out}: {e.strerror}") from None
    return target


def final_regret(path: Path) -> float:
    return float(np.sum(pq.read_table(path, columns=["regret"])["regret"].to_numpy()))


def choose_cells(experiment: Experiment, target: Path) -> dict[str, dict[str, Any]]:
    """Best cell per tuned algorithm from its tuning shards: lowest mean final cumulative regret."""
    record = {}
    for algo, algo_cells in experiment.tuned.items():
        scores = []
        for cell in algo_cells:
            units = [u for u in experiment.tuning_units if u.algorithm == algo and u.params == cell]
            scores.append({"params": cell, "units": [u.id for u in units],
                           "final_regret_mean": float(np.mean([final_regret(shard_path(target, u)) for u in units]))})
        best = min(range(len(scores)), key=lambda i: scores[i]["final_regret_mean"])  # first of equals
        record[algo] = {"chosen": scores[best]["params"], "cells": scores,
                        "tuning_seeds": list(range(experiment.config["tune_seeds"])),
                        "report_seeds": list(range(experiment.config["seeds"]))}
    return record


def write_manifest(target: Path, experiment: Experiment, tuning: dict[str, Any] | None,
                   execution: dict[str, Any]) -> None:
    manifest = {"config": experiment.config, "units": [u.id for u in experiment.units],
                "labels": experiment.labels, "tuning_units": [u.id for u in experiment.tuning_units],
                "tuning": tuning, "pending_tuning": sorted(set(experiment.tuned) - set(tuning or {})),
                "execution": execution, "banditbench_version": __version__}
    partial = target / f".{MANIFEST}.partial"
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(partial, target / MANIFEST)


def execute(experiment: Experiment, target: Path, out: Path, on_unit_start: Callable[[Unit], None] | None = None,
            progress: Callable[[int], None] | None = None, executor: Executor | None = None,
            checkpoint_every: int = 0, on_plan: Callable[[list[Unit]], None] | None = None,
            settings: dict[str, Any] | None = None) -> list[Unit]:
    """Run every unit whose shard is missing in ``target``; return the units that ran.

    Phase 1 runs the tuning units and the report units already known; phase 2 the report units of
    the cells chosen on the tuning seeds. ``on_plan`` is told the units of each phase before it runs.
    ``settings`` (the run's resolved settings: preset, file, flags) are recorded in the manifest as they
    are; only ``experiment.config`` decides whether a folder can be resumed.
    """
    executor = executor or LocalExecutor(jobs=1)
    checkpoints = Checkpoints(target, checkpoint_every) if checkpoint_every else None
    execution = {"executor": executor.describe(), "checkpoint_every": checkpoint_every, "settings": settings}
    ran: list[Unit] = []
    staged = Path(target) != Path(out)

    def run_phase(units: list[Unit]) -> None:
        pending = [u for u in units if not shard_path(target, u).exists()]
        if on_plan is not None:
            on_plan(pending)

        def finished(unit: Unit, result) -> None:
            write_shard(target, unit, result, experiment.dataset.manifest_sha256)
            if checkpoints is not None:
                checkpoints.clear(unit)
            ran.append(unit)

        executor.run(pending, experiment.dataset, finished, on_unit_start=on_unit_start, progress=progress,
                     checkpoints=checkpoints)

    try:
        write_manifest(target, experiment, None, execution)
        with executor:
            run_phases(experiment, target, execution, run_phase)
        if checkpoints is not None:
            shutil.rmtree(checkpoints.folder, ignore_errors=True)
    except BaseException:
        if staged:  # a failed --overwrite leaves the old results as they were
            shutil.rmtree(target, ignore_errors=True)
        raise
    if staged:  # overwrite: swap the finished run in
        old = out.with_name(f".{out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.rename(out, old)
        os.rename(target, out)
        shutil.rmtree(old)
    return ran


def run_phases(experiment: Experiment, target: Path, execution: dict[str, Any],
               run_phase: Callable[[list[Unit]], None]) -> None:
    run_phase(experiment.tuning_units + experiment.units)
    if not experiment.tuned:
        return
    tuning = choose_cells(experiment, target)
    for algo, choice in tuning.items():
        units = experiment.report_units(algo, choice["chosen"])
        experiment.units += units
        experiment.labels.update({u.id: algo for u in units})
    order = {algo: i for i, algo in enumerate(experiment.config["algorithms"])}
    experiment.units.sort(key=lambda u: order[u.algorithm])  # stable: grid and seed order kept
    write_manifest(target, experiment, tuning, execution)
    run_phase([u for u in experiment.units if u.algorithm in tuning])
