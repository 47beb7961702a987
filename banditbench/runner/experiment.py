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
from banditbench.errors import SettingError, UserError
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
from banditbench.runner.settings import RunSettings
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

    def report_units(self, algorithm: str, params: dict[str, Any], tuning: bool = False) -> list[Unit]:
        """The units of one cell: on the report seeds, or with ``tuning`` on the tuning seeds and rounds."""
        c = self.config
        seeds, rounds = (c["tune_seeds"], c.get("tune_rounds") or c["rounds"]) if tuning else (c["seeds"], c["rounds"])
        return [
            Unit(
                c["dataset"],
                c["protocol"],
                algorithm,
                params,
                c["master_seed"],
                i,
                rounds,
                c["budget"],
                tuning=tuning,
                env=c.get("env", {}),
                defaults=ALGORITHMS[algorithm].defaults(),
            )
            for i in range(seeds)
        ]


def plan(settings: RunSettings, *, data_dir: Path, device: str | None = None) -> Experiment:
    """Check a run's resolved ``settings`` against the registries and the prepared dataset, and list its units.

    ``settings.params``: ``--set`` strings or an assignments table (see runner/grid.py); ``settings.protocol``: the
    one a preset requires (the prepared dataset must have been prepared for it); ``device``: sets the ``device``
    hyper-parameter of every algorithm that has one (an explicit ``ALGO.device`` assignment wins);
    ``settings.env``: the protocol's settings, checked against its ``SETTINGS``; an algorithm with the
    ``noise_sigma`` capability gets the σ the dataset records unless ``params`` set it; ``settings.tune_rounds``:
    the rounds of a tuning unit (0: the whole horizon), for papers that tuned on the first rounds only;
    ``settings.prepared_with``: the data the experiment needs ({"dataset", "parameters", "by"}, a preset's),
    checked against the prepared dataset's manifest (runner/declared_data.py), where ``settings.allow_stand_in``
    lets other data through as a stand-in."""
    check_dataset_name(data_dir, settings.dataset, {*PROTOCOLS, *PROTOCOL_ALIASES})
    algorithms = list(settings.algos)
    check_algorithms(algorithms)
    check_counts(settings)
    assignments = grid.parse_assignments(settings.params) if isinstance(settings.params, list) else settings.params
    assignments = with_device(assignments, algorithms, device)
    resolved = grid.resolve(assignments, algorithms)
    check_unit_count(resolved, settings)
    check_devices(resolved)
    stand_in = {}
    if settings.prepared_with is not None:
        who = settings.prepared_with.get("by", "this experiment")
        stand_in = declared.check(
            data_dir, settings.dataset, settings.prepared_with, allow_stand_in=bool(settings.allow_stand_in), who=who
        )
    prepared = load_dataset(data_dir, settings.dataset)
    noise = prepared.parameters.get("noise")
    if isinstance(noise, (int, float)) and noise > 0:  # σ of the data, for the algorithms whose radius reads σ
        from_data = {a: {"sigma": [float(noise)]} for a in algorithms if ALGORITHMS[a].capabilities.noise_sigma}
        resolved = grid.resolve(grid.merge(from_data, assignments), algorithms)  # a σ the run sets wins
    protocol = prepared_protocol(prepared, settings.protocol, data_dir)
    env_settings = protocol_settings(protocol, settings.env or {})
    check_protocol(prepared, protocol, env_settings, algorithms, settings)
    state_bytes = check_state_memory(prepared, PROTOCOLS[protocol].environment, algorithms, resolved)
    config = {
        "dataset": settings.dataset,
        "dataset_manifest_sha256": prepared.manifest_sha256,
        "protocol": protocol,
        "algorithms": resolved,
        "seeds": settings.seeds,
        "tune_seeds": settings.tune_seeds,
        **({"tune_rounds": settings.tune_rounds} if settings.tune_rounds else {}),  # absent: tuned on the horizon
        "master_seed": settings.seed,
        "rounds": settings.rounds,
        "budget": settings.budget,
        **({"env": env_settings} if env_settings else {}),  # absent for protocols without settings, as before
    }
    experiment = Experiment(prepared, [], config, state_bytes=state_bytes, stand_in=stand_in)
    add_units(experiment, algorithms)
    return experiment


def check_algorithms(algorithms: list[str]) -> None:
    """Registered algorithms, at least one, none twice."""
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        raise names.unknown(
            "algorithm", unknown[0], ALGORITHMS, aliases=PAPER_NAMES, listing="`banditbench list algorithms` shows all"
        )
    if not algorithms:
        raise SettingError("{algos} is empty; name at least one algorithm")
    if len(set(algorithms)) != len(algorithms):
        raise SettingError("{algos} names an algorithm twice")


def check_counts(settings: RunSettings) -> None:
    """Rounds, seeds, tuning and budget within their domains."""
    rounds, seeds, tune_seeds, tune_rounds = settings.rounds, settings.seeds, settings.tune_seeds, settings.tune_rounds
    if rounds < 1:
        raise SettingError("{rounds} must be a positive integer, got {value}", value=rounds)
    if seeds < 1:
        raise SettingError("{seeds} must be a positive integer, got {value}", value=seeds)
    for setting, value, limit in (
        ("rounds", rounds, MAX_ROUNDS),
        ("seeds", seeds, MAX_SEEDS),
        ("tune_seeds", tune_seeds, MAX_SEEDS),
        ("seed", settings.seed, MAX_INT64),
    ):
        if value > limit:
            raise SettingError("{" + setting + "} {value} is above the limit of {limit}", value=value, limit=limit)
    if tune_seeds < 0:
        raise SettingError("{tune_seeds} must be zero or a positive integer, got {value}", value=tune_seeds)
    if not 0 <= tune_rounds <= rounds:
        raise SettingError(
            "{tune_rounds} must be between 0 (the whole horizon) and {rounds} {limit}, got {value}",
            limit=rounds,
            value=tune_rounds,
        )
    if settings.seed < 0:
        raise SettingError("{seed} must be non-negative, got {value}", value=settings.seed)
    if settings.budget is not None and settings.budget < 1:
        raise SettingError("{budget} must be at least 1 arm per round, got {value}", value=settings.budget)


def with_device(assignments: grid.Assignments, algorithms: list[str], device: str | None) -> grid.Assignments:
    """``device`` as the ``device`` hyper-parameter of every algorithm that has one, under the run's own."""
    if device is None:
        return assignments
    from banditbench.algos.neural import DEVICES  # imports torch, so only when a device is asked for

    if device not in DEVICES:
        raise SettingError("{device} must be one of {devices}, got {value!r}", devices=", ".join(DEVICES), value=device)
    given = {a: {"device": [device]} for a in algorithms if ALGORITHMS[a].capabilities.device}
    return grid.merge(given, assignments)


def check_unit_count(resolved: dict[str, Any], settings: RunSettings) -> None:
    """Refuse more units than shard files a folder should hold, counted before any unit is built, so that a huge
    number of seeds is refused at once."""
    units = 0
    for cells in resolved.values():
        n = len(grid.cells(cells))
        units += n * settings.tune_seeds + settings.seeds if settings.tune_seeds and n > 1 else n * settings.seeds
    if units > MAX_UNITS:
        raise SettingError(
            "{units} units are above the limit of {limit} (one shard file each); lower {seeds}, {tune_seeds} or "
            "the grid",
            units=units,
            limit=MAX_UNITS,
        )


def check_devices(resolved: dict[str, Any]) -> None:
    """An unusable device fails here, before anything is written."""
    for algo, cells in resolved.items():
        if ALGORITHMS[algo].capabilities.device:  # a neural algorithm: its module has imported torch already
            from banditbench.algos.neural import resolve_device

            for cell in grid.cells(cells):
                resolve_device(cell["device"])


def prepared_protocol(prepared: PreparedDataset, required: str | None, data_dir: Path) -> str:
    """The protocol ``prepared`` was prepared for, which must be ``required`` (a preset's) where given."""
    prepared_for = PROTOCOL_ALIASES.get(prepared.manifest["protocol"], prepared.manifest["protocol"])
    if required is not None and required != prepared_for:
        raise UserError(
            f"this experiment needs protocol {required!r}, but {prepared.name!r} in {data_dir}/ is "
            f"prepared for {prepared.manifest['protocol']!r}"
        )
    if prepared_for not in PROTOCOLS:  # e.g. logged impressions, which need a simulator protocol
        raise UserError(
            f"dataset {prepared.name!r} is for the {prepared_for!r} protocol, which this banditbench cannot run"
        )
    return prepared_for


def check_protocol(
    prepared: PreparedDataset, protocol: str, env: dict[str, Any], algorithms: list[str], settings: RunSettings
) -> None:
    """What the protocol's environment needs of the data and the run, and what it gives the algorithms."""
    info = PROTOCOLS[protocol]
    check = getattr(info.environment, "check", None)  # e.g. twostage: is a trained simulator there?
    if check is not None:
        check(prepared, env, settings.budget)
    if info.logged and settings.tune_seeds:
        raise SettingError("{tune_seeds} picks the cell of lowest regret, which a log does not have; report every cell")
    most_rounds = getattr(info.environment, "most_rounds", None)  # a log holds so many events, each one round
    if most_rounds is not None and settings.rounds > most_rounds(prepared):
        raise SettingError(
            "{rounds} {value} is more than the {events} events of {dataset!r}",
            value=settings.rounds,
            events=most_rounds(prepared),
            dataset=prepared.name,
        )
    for algo in algorithms:
        check_algorithm_fits(algo, prepared, protocol, env)
    # a protocol whose rounds carry user_features says so with ``provides_user_features = True`` on its class
    if not getattr(info.environment, "provides_user_features", False):
        for algo in algorithms:
            if ALGORITHMS[algo].capabilities.user_features:
                raise UserError(
                    f"{algo} needs user features, and protocol {protocol!r} gives none "
                    "(the M-CNB paper runs NeuA+U only on MovieLens and Yelp)"
                )


def check_algorithm_fits(algo: str, prepared: PreparedDataset, protocol: str, env: dict[str, Any]) -> None:
    """Refuse an algorithm the protocol cannot run: one reading expected rewards on a log, a slate policy on a
    one-arm protocol (or the reverse), a slate of topic groups larger than the topics."""
    info, capabilities = PROTOCOLS[protocol], ALGORITHMS[algo].capabilities
    if info.logged and ALGORITHMS[algo].policy.privileged:
        raise UserError(f"{algo} reads expected rewards, which the log {prepared.name!r} does not have")
    if capabilities.slate != info.slate:
        kind = "recommends slates" if info.slate else "recommends one arm per round"
        raise UserError(
            f"{algo} cannot run under protocol {protocol!r}, which {kind}; "
            f"`banditbench list` shows the algorithms of each protocol"
        )
    if capabilities.two_stage:  # Alg. 1 picks one topic group per slate item
        topics = prepared.manifest["counts"].get("topics", 0)
        if topics < env.get("slate_size", 0):
            raise SettingError(  # names as values: a template's braces are settings
                "{algo} recommends one item per topic group, but {dataset!r} has {topics} topics "
                "for a slate of {size}; lower {env} slate_size",
                algo=algo,
                dataset=prepared.name,
                topics=topics,
                size=env["slate_size"],
            )


def add_units(experiment: Experiment, algorithms: list[str]) -> None:
    """Each algorithm's report units, or with tuning seeds and several cells its tuning units (the report units
    of the cell they choose come later)."""
    c = experiment.config
    for algo in algorithms:
        algo_cells = grid.cells(c["algorithms"][algo])
        if c["tune_seeds"] and len(algo_cells) > 1:
            experiment.tuned[algo] = algo_cells
            experiment.tuning_units += [u for cell in algo_cells for u in experiment.report_units(algo, cell, True)]
            continue
        for cell in algo_cells:
            units = experiment.report_units(algo, cell)
            experiment.units += units
            label = grid.cell_label(algo, cell, grid.grid_keys(c["algorithms"][algo]))
            experiment.labels.update({u.id: label for u in units})


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
            raise SettingError(
                "{algo} keeps ridge statistics of the {dim:,}-dimensional contexts of {dataset!r}: about "
                f"{need / 2**30:,.0f} GiB for one unit, more than this machine's {memory / 2**30:.1f} GiB; "
                "leave it out of {algos}, or prepare {dataset} in the shift encoding (d + K − 1): "
                "`banditbench prepare {dataset} --encoding shift`",
                algo=algo,
                dim=dim,
                dataset=prepared.name,
            )
    return state_bytes


def check_sizes(experiment: Experiment, jobs: int, engine: str = "units") -> None:
    """Refuse a run whose units cannot fit: the memory the units running at once (``jobs`` of them, or ``jobs``
    lockstep groups of them) need for their statistics and their per-round columns, against this machine's
    memory."""
    c = experiment.config
    if jobs > MAX_JOBS:
        raise SettingError("{jobs} {value} is above the limit of {limit}", value=jobs, limit=MAX_JOBS)
    later = [u for algo, cells in experiment.tuned.items() for u in experiment.report_units(algo, cells[0])]
    in_flight = max(
        running_at_once(experiment.tuning_units + experiment.units, engine, jobs),
        running_at_once(later, engine, jobs),
    )
    units = experiment.tuning_units + experiment.units + later
    statistics = sum(sorted((experiment.state_bytes.get(u.algorithm, 0) for u in units), reverse=True)[:in_flight])
    needed = BYTES_PER_ROUND * c["rounds"] * in_flight
    memory = physical_memory()
    or_units = " or use {engine} units" if engine == "lockstep" else ""
    if memory and statistics + needed > memory and statistics >= needed:
        raise SettingError(
            f"{{jobs}} {jobs} runs {in_flight} units at once, whose statistics need about "
            f"{statistics / 2**30:.1f} GiB together, more than this machine's {memory / 2**30:.1f} GiB; "
            "lower {jobs}" + or_units
        )
    if memory and needed > memory:
        raise SettingError(
            f"{{rounds}} {c['rounds']} with {{jobs}} {jobs} needs about {needed / 2**30:.1f} GiB for the "
            f"per-round columns, more than this machine's {memory / 2**30:.1f} GiB; lower {{rounds}} "
            "or {jobs}" + or_units
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
        raise SettingError(
            "{env} {name}: protocol {protocol!r} has no such setting; {hint}",
            name=unknown[0],
            protocol=protocol,
            hint=hint or f"it has: {', '.join(defaults) or 'none'}",
        )
    return {
        name: grid.cast(protocol, name, given.get(name, default), default, setting="env")
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
    engine = check_engine(engine)
    execution = {"executor": executor.describe(), "engine": engine, "checkpoint_every": checkpoint_every}
    execution["settings"] = settings
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
        if output is not None:  # a failed overwrite leaves the old results as they were
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
