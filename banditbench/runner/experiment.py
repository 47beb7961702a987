"""An experiment: every (algorithm × seed) unit on one dataset, written under ``results/<name>/``.

Everything a user can get wrong is checked in :func:`plan` before anything is written. A new
experiment folder receives shards as units finish (so an interrupted run can be resumed); with
``overwrite`` the run is staged beside the old folder and swapped in only when it completes, so the
old results survive a failed rerun.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from banditbench import __version__
from banditbench.algos import ALGORITHMS
from banditbench.algos.neural import DEVICES, resolve_device
from banditbench.data import DATASETS, PreparedDataset, load_dataset
from banditbench.envs import PROTOCOLS, BudgetExceeded
from banditbench.errors import UserError
from banditbench.results.shards import shard_path, write_shard
from banditbench.runner.unit import Unit, run_unit

MANIFEST = "manifest.json"


@dataclass
class Experiment:
    dataset: PreparedDataset
    units: list[Unit]
    config: dict[str, Any]


def parse_params(assignments: list[str], algorithms: list[str]) -> dict[str, dict[str, Any]]:
    """``ALGO.NAME=VALUE`` strings → per-algorithm overrides, cast to the type of the default."""
    params: dict[str, dict[str, Any]] = {name: {} for name in algorithms}
    for text in assignments:
        key, sep, raw = text.partition("=")
        algo, dot, name = key.partition(".")
        if not sep or not dot:
            raise UserError(f"--param expects ALGO.NAME=VALUE, got {text!r}")
        if algo not in params:
            raise UserError(f"--param {text!r} names {algo!r}, which is not among --algos")
        defaults = ALGORITHMS[algo].defaults()
        if name not in defaults:
            raise UserError(f"{algo} has no hyper-parameter {name!r}; it has: {', '.join(defaults) or 'none'}")
        default = defaults[name]
        try:
            if isinstance(default, bool):
                if raw.lower() not in ("true", "false", "1", "0"):
                    raise ValueError
                value: Any = raw.lower() in ("true", "1")
            else:
                value = type(default)(raw)
        except ValueError:
            raise UserError(f"--param {text!r}: expected a {type(default).__name__}") from None
        params[algo][name] = value
    return {algo: {**ALGORITHMS[algo].defaults(), **overrides} for algo, overrides in params.items()}


def plan(*, data_dir: Path, dataset: str, algorithms: list[str], rounds: int, seeds: int, master_seed: int,
         budget: int | None, params: list[str], device: str | None = None) -> Experiment:
    if dataset not in DATASETS:
        raise UserError(f"unknown dataset {dataset!r}; choose from: {', '.join(DATASETS)}")
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
    if master_seed < 0:
        raise UserError(f"--seed must be non-negative, got {master_seed}")
    if budget is not None and budget < 1:
        raise UserError(f"--budget must be at least 1 arm per round, got {budget}")
    if device is not None:  # --device sets the ``device`` hyper-parameter of every algorithm that has one
        if device not in DEVICES:
            raise UserError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
        params = [f"{a}.device={device}" for a in algorithms if "device" in ALGORITHMS[a].defaults()] + list(params)
    resolved = parse_params(params, algorithms)
    for algo_params in resolved.values():  # an unusable device fails here, before anything is written
        if "device" in algo_params:
            resolve_device(algo_params["device"])
    prepared = load_dataset(data_dir, dataset)
    protocol = prepared.manifest["protocol"]
    # An algorithm that needs user features (neu-au) is refused up front on a protocol that gives none; a
    # protocol whose rounds carry user_features says so with ``provides_user_features = True`` on its class.
    if not getattr(PROTOCOLS[protocol].environment, "provides_user_features", False):
        for algo in algorithms:
            if ALGORITHMS[algo].fixed.get("user_features"):
                raise UserError(f"{algo} needs user features, and protocol {protocol!r} gives none "
                                "(the M-CNB paper runs NeuA+U only on MovieLens and Yelp)")
    units = [Unit(dataset, protocol, algo, resolved[algo], master_seed, i, rounds, budget)
             for algo in algorithms for i in range(seeds)]
    config = {
        "dataset": dataset, "dataset_manifest_sha256": prepared.manifest_sha256, "protocol": protocol,
        "algorithms": {algo: resolved[algo] for algo in algorithms}, "seeds": seeds, "master_seed": master_seed,
        "rounds": rounds, "budget": budget,
    }
    return Experiment(prepared, units, config)


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
        previous = json.loads((out / MANIFEST).read_text())["config"]
        if previous != experiment.config:
            raise UserError(f"--resume: {out} was run with other settings; use another --out or --overwrite")
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


def execute(experiment: Experiment, target: Path, out: Path, on_unit_start: Callable[[Unit], None] | None = None,
            progress: Callable[[int], None] | None = None) -> list[Unit]:
    """Run every unit whose shard is missing in ``target``; return the units that ran."""
    manifest = {"config": experiment.config, "units": [u.id for u in experiment.units],
                "banditbench_version": __version__}
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    ran = []
    staged = Path(target) != Path(out)
    try:
        for unit in experiment.units:
            if shard_path(target, unit).exists():
                continue
            if on_unit_start is not None:
                on_unit_start(unit)
            try:
                result = run_unit(unit, experiment.dataset, progress)
            except BudgetExceeded as e:
                raise UserError(f"{unit.algorithm} broke the budget in unit {unit.id}: {e}") from None
            write_shard(target, unit, result, experiment.dataset.manifest_sha256)
            ran.append(unit)
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
