"""An experiment: every (algorithm × grid cell × seed) unit on one dataset, written under ``results/<name>/``.

Everything a user can get wrong is checked in :func:`plan`, :func:`check_sizes` and
``results.folder.check_output`` before anything is written. A new experiment folder receives shards as
units finish (so an interrupted run can be resumed); with ``overwrite`` the run is staged beside the old
folder and swapped in only when it completes, so the old results survive a failed rerun (results/folder.py).

Grids: with ``tune_seeds = 0`` every cell is run on the report seeds and reported (a sensitivity
study); with ``tune_seeds > 0`` an algorithm with several cells is first run on the tuning seeds, the
cell with the lowest mean final cumulative regret is kept (ties: the first cell in grid order), and
only that cell is run on the report seeds (best-of-grid as the papers do, without tuning on the seeds
it reports). The tuning scores and the choice are recorded in ``manifest.json``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from banditbench import names
from banditbench.algos import ALGORITHMS, PAPER_NAMES
from banditbench.data import PreparedDataset, check_dataset_name, load_dataset
from banditbench.data.prepared import physical_memory
from banditbench.envs import PROTOCOL_ALIASES, PROTOCOLS
from banditbench.errors import UserError
from banditbench.results import folder as manifest
from banditbench.results.folder import Output, check_output
from banditbench.results.shards import (
    disk_full,
    estimated_bytes,
    remove_shard,
    shard_path,
    verify_shard,
    write_shard,
)
from banditbench.results.units import Unit
from banditbench.runner import declared_data as declared
from banditbench.runner import grid
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.engines import check_engine, group_units
from banditbench.runner.executors import Executor, LocalExecutor
from banditbench.version import __version__

MAX_INT64 = 2**63 - 1
MAX_ROUNDS = 2**40  # far above any memory; the memory check in check_sizes is the usual limit
MAX_SEEDS = 100_000
MAX_UNITS = 1_000_000  # one shard file each
MAX_JOBS = 4096
BYTES_PER_ROUND = 256  # a unit's per-round columns in memory (about 12 eight-byte columns), twice over for the
# Arrow table built from them at the end


@dataclass
class Experiment:
    dataset: PreparedDataset
    units: list[Unit]  # report units known before tuning (algorithms with one cell, or every cell without tuning)
    config: dict[str, Any]
    tuning_units: list[Unit] = field(default_factory=list)
    tuned: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # algorithm → its cells, to tune
    labels: dict[str, str] = field(default_factory=dict)  # unit id → how reports name its cell
    state_bytes: dict[str, int] = field(default_factory=dict)  # algorithm → its statistics' bytes a unit, if known
    stand_in: dict[str, dict[str, Any]] = field(default_factory=dict)  # declared data the prepared data differs from

    def report_units(self, algorithm: str, params: dict[str, Any]) -> list[Unit]:
        c = self.config
        return [
            Unit(
                c["dataset"],
                c["protocol"],
                algorithm,
                params,
                c["master_seed"],
                i,
                c["rounds"],
                c["budget"],
                env=c.get("env", {}),
            )
            for i in range(c["seeds"])
        ]


def plan(
    *,
    data_dir: Path,
    dataset: str,
    algorithms: list[str],
    rounds: int,
    seeds: int,
    master_seed: int,
    budget: int | None,
    params: list[str] | grid.Assignments,
    tune_seeds: int = 0,
    tune_rounds: int = 0,
    protocol: str | None = None,
    device: str | None = None,
    env: dict[str, Any] | None = None,
    declared_data: dict[str, Any] | None = None,
    allow_stand_in: bool = False,
) -> Experiment:
    """``params``: ``--set`` strings or an assignments table (see runner/grid.py); ``protocol``: the one a
    preset requires (the prepared dataset must have been prepared for it); ``device``: sets the ``device``
    hyper-parameter of every algorithm that has one (an explicit ``--set ALGO.device=…`` wins); ``env``: the
    protocol's settings (``--env NAME=VALUE``), checked against its ``SETTINGS``; an algorithm with the
    ``noise_sigma`` capability gets the σ the dataset records unless ``params`` set it; ``tune_rounds``: the rounds of
    a tuning unit (0: the whole horizon), for papers that tuned on the first rounds only; ``declared_data``: the
    data the experiment needs ({"dataset", "parameters", "by"}, a preset's), checked against the prepared
    dataset's manifest (runner/declared_data.py), where ``allow_stand_in`` lets other data through as a stand-in."""
    check_dataset_name(data_dir, dataset, {*PROTOCOLS, *PROTOCOL_ALIASES})
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        raise names.unknown(
            "algorithm", unknown[0], ALGORITHMS, aliases=PAPER_NAMES, listing="`banditbench list algorithms` shows all"
        )
    if not algorithms:
        raise UserError("--algos is empty; name at least one algorithm")
    if len(set(algorithms)) != len(algorithms):
        raise UserError("--algos names an algorithm twice")
    if rounds < 1:
        raise UserError(f"--rounds must be a positive integer, got {rounds}")
    if seeds < 1:
        raise UserError(f"--seeds must be a positive integer, got {seeds}")
    for flag, value, limit in (
        ("--rounds", rounds, MAX_ROUNDS),
        ("--seeds", seeds, MAX_SEEDS),
        ("--tune-seeds", tune_seeds, MAX_SEEDS),
        ("--seed", master_seed, MAX_INT64),
    ):
        if value > limit:
            raise UserError(f"{flag} {value} is above the limit of {limit}")
    if tune_seeds < 0:
        raise UserError(f"--tune-seeds must be zero or a positive integer, got {tune_seeds}")
    if not 0 <= tune_rounds <= rounds:
        raise UserError(f"--tune-rounds must be between 0 (the whole horizon) and --rounds {rounds}, got {tune_rounds}")
    if master_seed < 0:
        raise UserError(f"--seed must be non-negative, got {master_seed}")
    if budget is not None and budget < 1:
        raise UserError(f"--budget must be at least 1 arm per round, got {budget}")
    assignments = grid.parse_assignments(params) if isinstance(params, list) else params
    if device is not None:
        from banditbench.algos.neural import DEVICES  # imports torch, so only when a device is asked for

        if device not in DEVICES:
            raise UserError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
        flag = {a: {"device": [device]} for a in algorithms if ALGORITHMS[a].capabilities.device}
        assignments = grid.merge(flag, assignments)
    resolved = grid.resolve(assignments, algorithms)
    units = 0  # counted before any unit is built, so that a huge --seeds is refused at once
    for algo in algorithms:
        n = len(grid.cells(resolved[algo]))
        units += n * tune_seeds + seeds if tune_seeds and n > 1 else n * seeds
    if units > MAX_UNITS:
        raise UserError(
            f"{units} units are above the limit of {MAX_UNITS} (one shard file each); "
            "lower --seeds, --tune-seeds or the grid"
        )
    for algo in algorithms:  # an unusable device fails here, before anything is written
        if ALGORITHMS[algo].capabilities.device:  # a neural algorithm: its module has imported torch already
            from banditbench.algos.neural import resolve_device

            for cell in grid.cells(resolved[algo]):
                resolve_device(cell["device"])
    stand_in = {}
    if declared_data is not None:
        who = declared_data.get("by", "this experiment")
        stand_in = declared.check(data_dir, dataset, declared_data, allow_stand_in=allow_stand_in, who=who)
    prepared = load_dataset(data_dir, dataset)
    noise = prepared.parameters.get("noise")
    if isinstance(noise, (int, float)) and noise > 0:  # σ of the data, for the algorithms whose radius reads σ
        from_data = {a: {"sigma": [float(noise)]} for a in algorithms if ALGORITHMS[a].capabilities.noise_sigma}
        resolved = grid.resolve(grid.merge(from_data, assignments), algorithms)  # a σ the run sets wins
    prepared_for = PROTOCOL_ALIASES.get(prepared.manifest["protocol"], prepared.manifest["protocol"])
    if protocol is not None and protocol != prepared_for:
        raise UserError(
            f"this experiment needs protocol {protocol!r}, but {dataset!r} in {data_dir}/ is prepared "
            f"for {prepared.manifest['protocol']!r}"
        )
    protocol = prepared_for
    if protocol not in PROTOCOLS:  # e.g. logged impressions, which need a simulator protocol
        raise UserError(f"dataset {dataset!r} is for the {protocol!r} protocol, which this banditbench cannot run")
    info = PROTOCOLS[protocol]
    env_settings = protocol_settings(protocol, env or {})
    check = getattr(info.environment, "check", None)  # e.g. twostage: is a trained simulator there?
    if check is not None:
        check(prepared, env_settings, budget)
    for algo in algorithms:
        if ALGORITHMS[algo].capabilities.slate != info.slate:
            kind = "recommends slates" if info.slate else "recommends one arm per round"
            raise UserError(
                f"{algo} cannot run under protocol {protocol!r}, which {kind}; "
                f"`banditbench list` shows the algorithms of each protocol"
            )
        if ALGORITHMS[algo].capabilities.two_stage:  # Alg. 1 picks one topic group per slate item
            topics = prepared.manifest["counts"].get("topics", 0)
            if topics < env_settings.get("slate_size", 0):
                raise UserError(
                    f"{algo} recommends one item per topic group, but {dataset!r} has {topics} topics "
                    f"for a slate of {env_settings['slate_size']}; lower --env slate_size"
                )
    # An algorithm that needs user features (neu-au) is refused up front on a protocol that gives none; a
    # protocol whose rounds carry user_features says so with ``provides_user_features = True`` on its class.
    if not getattr(info.environment, "provides_user_features", False):
        for algo in algorithms:
            if ALGORITHMS[algo].capabilities.user_features:
                raise UserError(
                    f"{algo} needs user features, and protocol {protocol!r} gives none "
                    "(the M-CNB paper runs NeuA+U only on MovieLens and Yelp)"
                )
    state_bytes = check_state_memory(prepared, info.environment, algorithms, resolved)
    config = {
        "dataset": dataset,
        "dataset_manifest_sha256": prepared.manifest_sha256,
        "protocol": protocol,
        "algorithms": resolved,
        "seeds": seeds,
        "tune_seeds": tune_seeds,
        **({"tune_rounds": tune_rounds} if tune_rounds else {}),  # absent when tuning sees the whole horizon
        "master_seed": master_seed,
        "rounds": rounds,
        "budget": budget,
        **({"env": env_settings} if env_settings else {}),  # absent for protocols without settings, as before
    }
    experiment = Experiment(prepared, [], config, state_bytes=state_bytes, stand_in=stand_in)
    for algo in algorithms:
        algo_cells = grid.cells(resolved[algo])
        if tune_seeds and len(algo_cells) > 1:
            experiment.tuned[algo] = algo_cells
            experiment.tuning_units += [
                Unit(
                    dataset,
                    protocol,
                    algo,
                    cell,
                    master_seed,
                    j,
                    tune_rounds or rounds,
                    budget,
                    tuning=True,
                    env=env_settings,
                )
                for cell in algo_cells
                for j in range(tune_seeds)
            ]
            continue
        for cell in algo_cells:
            units = experiment.report_units(algo, cell)
            experiment.units += units
            label = grid.cell_label(algo, cell, grid.grid_keys(resolved[algo]))
            experiment.labels.update({u.id: label for u in units})
    return experiment


def check_state_memory(prepared, environment, algorithms: list[str], resolved) -> dict[str, int]:
    """Refuse an algorithm whose statistics alone cannot fit in this machine's memory (ridge matrices of a
    block-encoded image set: d·K = 30 720 for CIFAR-10, blocks of 3 072), before anything is written; return
    each algorithm's statistics bytes a unit, where the protocol can size them."""
    dimensions = getattr(environment, "dimensions", None)  # protocols that can size their rounds cheaply
    memory = physical_memory()
    if dimensions is None or not memory:
        return {}
    n_users, n_arms, dim, block = dimensions(prepared)
    state_bytes = {}
    for algo in algorithms:
        state_bytes[algo] = need = max(
            ALGORITHMS[algo].state_bytes(n_users=n_users, n_arms=n_arms, dim=dim, params=cell, block=block)
            for cell in grid.cells(resolved[algo])
        )
        if need > memory:
            raise UserError(
                f"{algo} keeps ridge statistics of the {dim:,}-dimensional contexts of {prepared.name!r}: about "
                f"{need / 2**30:,.0f} GiB for one unit, more than this machine's {memory / 2**30:.1f} GiB; "
                f"leave it out of --algos, or prepare {prepared.name} with --encoding shift (d + K − 1)"
            )
    return state_bytes


def check_sizes(experiment: Experiment, jobs: int, engine: str = "units") -> None:
    """Refuse a run whose units cannot fit: the memory the units running at once (``jobs`` of them, or ``jobs``
    lockstep groups of them) need for their statistics and their per-round columns, against this machine's
    memory."""
    c = experiment.config
    if jobs > MAX_JOBS:
        raise UserError(f"--jobs {jobs} is above the limit of {MAX_JOBS}")
    later = [u for algo, cells in experiment.tuned.items() for u in experiment.report_units(algo, cells[0])]
    in_flight = max(
        running_at_once(experiment.tuning_units + experiment.units, engine, jobs),
        running_at_once(later, engine, jobs),
    )
    units = experiment.tuning_units + experiment.units + later
    statistics = sum(sorted((experiment.state_bytes.get(u.algorithm, 0) for u in units), reverse=True)[:in_flight])
    needed = BYTES_PER_ROUND * c["rounds"] * in_flight
    memory = physical_memory()
    if memory and statistics + needed > memory and statistics >= needed:
        raise UserError(
            f"--jobs {jobs} runs {in_flight} units at once, whose statistics need about "
            f"{statistics / 2**30:.1f} GiB together, more than this machine's {memory / 2**30:.1f} GiB; "
            f"lower --jobs{' or use --engine units' if engine == 'lockstep' else ''}"
        )
    if memory and needed > memory:
        raise UserError(
            f"--rounds {c['rounds']} with --jobs {jobs} needs about {needed / 2**30:.1f} GiB for the "
            f"per-round columns, more than this machine's {memory / 2**30:.1f} GiB; lower --rounds "
            f"or --jobs{' or use --engine units' if engine == 'lockstep' else ''}"
        )


def running_at_once(units: list[Unit], engine: str, jobs: int) -> int:
    """The most units in memory at once: those of the ``jobs`` largest groups the engine makes."""
    return sum(sorted(map(len, group_units(units, engine, jobs)), reverse=True)[:jobs])


def protocol_settings(protocol: str, given: dict[str, Any]) -> dict[str, Any]:
    """The protocol's settings, its ``SETTINGS`` defaults filled in and ``given`` cast to their types."""
    defaults = getattr(PROTOCOLS[protocol].environment, "SETTINGS", {})
    unknown = [name for name in given if name not in defaults]
    if unknown:
        hint = names.did_you_mean(unknown[0], defaults)
        raise UserError(
            f"--env {unknown[0]}: protocol {protocol!r} has no such setting; "
            + (hint if hint else f"it has: {', '.join(defaults) or 'none'}")
        )
    return {
        name: grid.cast(protocol, name, given.get(name, default), default, flag="--env")
        for name, default in defaults.items()
    }


def prepare_output(
    out: Path, experiment: Experiment, *, overwrite: bool, resume: bool, data_dir: Path | None = None
) -> Output:
    """Check the output folder, then create and lock it; returns where shards go (a staging folder when
    overwriting), to be handed to :func:`execute`."""
    check_output(Path(out), experiment.config, overwrite=overwrite, resume=resume, data_dir=data_dir)
    return Output(Path(out), overwrite=overwrite)


def final_regret(path: Path) -> float:
    return float(np.sum(pq.read_table(os.path.abspath(path), columns=["regret"])["regret"].to_numpy()))


def choose_cells(experiment: Experiment, target: Path) -> dict[str, dict[str, Any]]:
    """Best cell per tuned algorithm from its tuning shards: lowest mean final cumulative regret."""
    record = {}
    for algo, algo_cells in experiment.tuned.items():
        scores = []
        for cell in algo_cells:
            units = [u for u in experiment.tuning_units if u.algorithm == algo and u.params == cell]
            scores.append(
                {
                    "params": cell,
                    "units": [u.id for u in units],
                    "final_regret_mean": float(np.mean([final_regret(shard_path(target, u)) for u in units])),
                }
            )
        best = min(range(len(scores)), key=lambda i: scores[i]["final_regret_mean"])  # first of equals
        record[algo] = {
            "chosen": scores[best]["params"],
            "cells": scores,
            "tuning_seeds": list(range(experiment.config["tune_seeds"])),
            "report_seeds": list(range(experiment.config["seeds"])),
        }
    return record


def write_manifest(
    target: Path, experiment: Experiment, tuning: dict[str, Any] | None, execution: dict[str, Any]
) -> None:
    manifest.write_manifest(
        target,
        {
            "config": experiment.config,
            "units": [u.id for u in experiment.units],
            "labels": experiment.labels,
            "tuning_units": [u.id for u in experiment.tuning_units],
            "tuning": tuning,
            "pending_tuning": sorted(set(experiment.tuned) - set(tuning or {})),
            "execution": execution,
            "dataset_warnings": experiment.dataset.manifest.get("warnings", []),
            "banditbench_version": __version__,
        },
    )


def pending_units(
    units: list[Unit], target: Path, dataset_sha256: str, warn: Callable[[str], None] | None = None
) -> list[Unit]:
    """The units without a complete shard; a shard that fails verification is removed and its unit re-run."""
    pending = []
    for unit in units:
        path = shard_path(target, unit)
        if not path.exists():
            pending.append(unit)
            continue
        problem = verify_shard(path, unit, dataset_sha256)
        if problem is not None:
            if warn is not None:
                warn(f"{path} is broken ({problem}); running {unit.id} again")
            remove_shard(path)
            pending.append(unit)
    return pending


def execute(
    experiment: Experiment,
    target: Path | Output,
    out: Path,
    on_unit_start: Callable[[Unit], None] | None = None,
    progress: Callable[[int], None] | None = None,
    executor: Executor | None = None,
    checkpoint_every: int = 0,
    on_plan: Callable[[list[Unit]], None] | None = None,
    settings: dict[str, Any] | None = None,
    warn: Callable[[str], None] | None = None,
    engine: str = "units",
) -> list[Unit]:
    """Run every unit whose shard is missing or broken in ``target``; return the units that ran.

    Phase 1 runs the tuning units and the report units already known; phase 2 the report units of
    the cells chosen on the tuning seeds. ``on_plan`` is told the units of each phase before it runs.
    ``settings`` (the run's resolved settings: preset, file, flags) are recorded in the manifest as they
    are; only ``experiment.config`` decides whether a folder can be resumed. ``target`` is what
    :func:`prepare_output` returned; it is committed (a staged overwrite swapped in) and unlocked at the end.
    A full disk is one :class:`UserError` naming the folder; the finished shards stay, so ``--resume``
    continues once space is freed. ``engine`` groups the units (runner/engines.py) and is recorded in the manifest.
    """
    output = target if isinstance(target, Output) else None
    target = Path(target)
    executor = executor or LocalExecutor(jobs=1)
    checkpoints = Checkpoints(target, checkpoint_every) if checkpoint_every else None
    execution = {
        "executor": executor.describe(),
        "engine": check_engine(engine),
        "checkpoint_every": checkpoint_every,
        "settings": settings,
    }
    ran: list[Unit] = []
    sha = experiment.dataset.manifest_sha256

    def run_phase(units: list[Unit]) -> None:
        pending = pending_units(units, target, sha, warn)
        if on_plan is not None:
            on_plan(pending)
        left = {u.id: u for u in pending}

        def finished(unit: Unit, result) -> None:
            write_shard(target, unit, result, sha)
            if checkpoints is not None:
                checkpoints.clear(unit)
            ran.append(unit)
            left.pop(unit.id, None)

        try:
            executor.run(
                group_units(pending, engine, executor.workers),
                experiment.dataset,
                finished,
                on_unit_start=on_unit_start,
                progress=progress,
                checkpoints=checkpoints,
            )
        except OSError as e:
            needed = sum(estimated_bytes(u.rounds) for u in left.values())
            error = disk_full(e, Path(out), needed)
            if error is None:
                raise
            raise error from None

    try:
        try:
            write_manifest(target, experiment, None, execution)
        except OSError as e:
            raise disk_full(e, Path(out)) or e from None
        with executor:
            run_phases(experiment, target, execution, run_phase)
        if checkpoints is not None:
            shutil.rmtree(checkpoints.folder, ignore_errors=True)
    except BaseException:
        if output is not None:  # a failed --overwrite leaves the old results as they were
            output.discard()
        raise
    if output is not None:
        output.commit()
    return ran


def run_phases(
    experiment: Experiment, target: Path, execution: dict[str, Any], run_phase: Callable[[list[Unit]], None]
) -> None:
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
