"""The Python API: ``prepare``, ``run`` and ``load``, returning Python objects (results as pandas DataFrames).

The ``banditbench`` command is a thin layer over these functions, so both share one code path: the same
settings (preset < config file < arguments), the same checks before anything is written, the same
one-line :class:`~banditbench.errors.UserError` messages (raised here, never a ``SystemExit``), which name a
setting by its keyword here (``rounds``) and by its flag on the command line (``--rounds``).

>>> import banditbench
>>> banditbench.prepare("synthetic", users=20, clusters=2, dim=5, arms=10, data_dir="datasets")
>>> results = banditbench.run(algos=["linucb-ind", "club"], dataset="synthetic", rounds=500, seeds=3)
>>> results.summary()[["algorithm", "regret_mean", "regret_ci_low", "regret_ci_high"]]

``algos`` takes registered names, installed plugins' names, ``"package.module:Class"`` import paths and
policy classes (see banditbench/algos/plugins.py for what a plugin class declares).
"""

from __future__ import annotations

import functools
import inspect
import os
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from banditbench import names
from banditbench.algos import ALGORITHMS, plugins
from banditbench.data.prepared import MANIFEST
from banditbench.envs import BudgetExceeded
from banditbench.errors import Interrupted, SettingError, UserError
from banditbench.presets import resolve
from banditbench.results.folder import check_output
from banditbench.results.shards import shard_path
from banditbench.runner import grid
from banditbench.runner.engines import check_engine
from banditbench.runner.executors import make_executor
from banditbench.runner.experiment import Experiment, check_sizes, execute, plan, prepare_output
from banditbench.runner.settings import DEFAULT_BENCHMARK, RunSettings
from banditbench.suites import SUITE_FILE, Member, Suite, load_suite, with_tuning, write_suite_record

__all__ = ["Hooks", "Results", "check_contract", "claims", "load", "prepare", "run", "run_experiment"]

CONTRACT_ROUNDS = 3  # rounds of the experiment's own environment that a plugin is tried on before the run


def default_data_dir() -> Path:
    return Path(os.environ.get("BANDITBENCH_DATA_DIR", "datasets")).expanduser()


def user_path(path: str | os.PathLike) -> Path:
    """A path as the user gave it, ``~`` expanded as a shell would (a config file's ``out = "~/x"`` too)."""
    return Path(path).expanduser()


# ---- prepare ---------------------------------------------------------------------------------------------
# every dataset that reads raw files takes these
SOURCE_OPTIONS = ("source", "offline", "verify", "cache_dir", "max_extract_gb")


def prepare(name: str, /, *, data_dir: str | Path | None = None, force: bool = False, **options: Any) -> Path:
    """Build the prepared dataset ``name`` under ``data_dir`` and return its folder.

    ``options`` are the options of ``banditbench prepare NAME`` with underscores (``top_users=2000``,
    ``variant="100k"``), plus, for data read from raw files, ``source`` (a local archive, folder or URL),
    ``offline``, ``verify``, ``cache_dir`` and ``max_extract_gb`` (the largest archive member to unpack).
    Each is checked against its declared domain before anything is read or written
    (banditbench/data/registry.py). ``force``: prepare again over an existing prepared dataset.

    Returns the prepared dataset's folder. Raises UserError, one line, for an unknown dataset or option, a value
    outside its domain, or raw files that cannot be found or verified."""
    from banditbench.data import DATASETS
    from banditbench.data.fetch import extract_limit

    dataset = DATASETS.get(name)
    if dataset is None or dataset.prepare is None:
        preparable = [n for n, d in DATASETS.items() if d.prepare is not None]
        raise names.unknown("dataset", name, preparable, listing="`banditbench list datasets` shows them")
    known = [o.name for o in dataset.options] + (list(SOURCE_OPTIONS) if dataset.reads_raw else [])
    unknown = [key for key in options if key not in known]
    if unknown:
        raise UserError(f"prepare {name}: no option {unknown[0]!r}; it has: {', '.join(sorted(known))}")
    checked = dataset.check(options)  # every option within its domain before anything is read
    max_extract_gb = options.get("max_extract_gb")
    if max_extract_gb is not None and not (isinstance(max_extract_gb, (int, float)) and 0 < max_extract_gb < np.inf):
        raise SettingError("{max_extract_gb} must be a positive number of gigabytes, got {got!r}", got=max_extract_gb)
    if dataset.reads_raw:
        source = options.get("source")
        common = {
            "source": os.fspath(source) if isinstance(source, os.PathLike) else source,
            "offline": options.get("offline", False),
            "verify": options.get("verify", True),
            "cache": None if options.get("cache_dir") is None else user_path(options["cache_dir"]),
        }
        accepted = inspect.signature(dataset.prepare).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
            common = {k: v for k, v in common.items() if k in accepted}  # e.g. a folder-only source
        checked.update(common)
    data_dir = user_path(data_dir) if data_dir is not None else default_data_dir()
    with extract_limit(max_extract_gb):
        return Path(dataset.prepare(data_dir, force=force, **checked))


# ---- run -------------------------------------------------------------------------------------------------
@dataclass
class Hooks:
    """Progress callbacks (the CLI's progress bar); all optional."""

    on_plan: Callable[[list], None] | None = None
    on_unit_start: Callable[[Any], None] | None = None
    progress: Callable[[int], None] | None = None
    warn: Callable[[str], None] | None = None  # dataset warnings, a broken shard run again, workers sharing a GPU
    on_prepared: Callable[[Path], None] | None = None  # a dataset ``prepare=True`` built, by its folder


def run(
    algos: str | type | Iterable[str | type] | None = None,
    dataset: str | None = None,
    rounds: int | None = None,
    seeds: int | None = None,
    budget: int | str | None = None,
    out: str | Path | None = None,
    jobs: int | None = 1,
    data_dir: str | Path | None = None,
    *,
    seed: int | None = None,
    tune_seeds: int | None = None,
    tune_rounds: int | None = None,
    params: dict | list[str] | None = None,
    env: dict[str, Any] | list[str] | None = None,
    preset: str | None = None,
    config: str | Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    backend: str | None = None,
    address: str | None = None,
    gpus_per_unit: float | None = None,
    checkpoint_every: int | None = None,
    device: str | None = None,
    engine: str | None = None,
    allow_stand_in: bool | None = None,
    prepare: bool = False,
    source: str | Path | None = None,
    environment=None,
    suite: str | Path | None = None,
    tune_on: str | list[str] | None = None,
) -> Results:
    """Run every (algorithm × grid cell × seed) unit and return the :class:`Results`.

    ``algos``: names, plugin names, ``"package.module:Class"`` paths or policy classes (a comma-separated
    string works too). ``params``: hyper-parameters, ``{"club": {"alpha": [0.1, 0.3]}}``,
    ``{"club.alpha": 0.1}`` or ``["club.alpha=0.1,0.3"]`` (a list is a grid), under the algorithms' short
    names. ``env``: protocol settings (``{"slate_size": 5}``). ``out=None``: a temporary folder that lives
    as long as the returned Results (``Results.save(path)`` keeps it); give ``out`` to keep the shards.
    Arguments left at None take the preset's, the config file's or the CLI's defaults; with no ``algos``,
    ``dataset``, ``preset`` or ``config``, the default benchmark runs (DEFAULT_BENCHMARK, runner/settings.py).
    ``jobs=None``: one worker per core. ``engine="lockstep"`` runs the seeds of lockstep algorithms together
    (runner/engines.py).
    A preset runs only on the data it declares (banditbench/presets.py), unless ``allow_stand_in``; ``prepare=True``
    first prepares that data where it is missing, downloading it or reading ``source``. ``environment``: a
    :class:`~banditbench.environment.Environment` (a DataFrame or a reward function) to run on, in place of
    ``dataset`` and ``data_dir``. ``suite``: a built-in suite's name or a suite file, every algorithm run on each of
    its prepared members (``run --suite``), ``tune_on`` its members that choose each grid's cell (``--tune-on``).

    The others are the flags of ``banditbench run``: ``rounds`` T per unit, ``seeds`` S per algorithm, ``seed``
    the master seed every unit's seed is spawned from, ``budget`` the arms a policy may score per round,
    ``tune_seeds`` the tuning seeds (disjoint from the reported ones) that pick each grid's best cell, on the first
    ``tune_rounds`` rounds (0: the whole horizon); ``data_dir`` the folder of prepared datasets; ``overwrite``
    replaces an existing results folder, ``resume`` finishes an interrupted one; ``backend`` "local" or "ray"
    (``address``: the Ray cluster to join, ``gpus_per_unit``: the GPUs each Ray task asks for);
    ``checkpoint_every`` saves each unit's state every N rounds; ``device`` ("cpu", "cuda" or "auto") sets the
    device of every algorithm that has one; ``engine`` "units" or "lockstep".

    Returns the run's Results. Raises UserError, one line and before any unit runs, for an unknown algorithm,
    dataset or preset, a hyper-parameter outside its domain, or a results folder that exists (without
    ``overwrite`` or ``resume``).

    Over 80 lines only by its keywords and this page on them: the body gathers them into one RunSettings.
    """
    if environment is not None:  # a DataFrame or a reward function, staged as a prepared dataset
        if dataset is not None or data_dir is not None:
            raise UserError("run takes environment= or dataset= and data_dir=, not both")
        dataset, data_dir = environment.name, environment.data_dir
    flags = RunSettings(
        dataset=dataset,
        algos=None if algos is None else algorithm_names(algos),
        rounds=rounds,
        seeds=seeds,
        tune_seeds=tune_seeds,
        tune_rounds=tune_rounds,
        seed=seed,
        budget=budget,
        params=params,
        env=env,
        out=None if out is None else str(out),
        jobs=jobs,
        backend=backend,
        address=address,
        gpus_per_unit=gpus_per_unit,
        checkpoint_every=checkpoint_every,
        engine=engine,
        allow_stand_in=allow_stand_in,
    )
    if suite is not None:
        given = {"config": config, "preset": preset, "prepare_data": prepare}
        common = {"data_dir": data_dir, "overwrite": overwrite, "resume": resume, "device": device}
        return run_suite(os.fspath(suite), flags, tune_on=tune_on, **given, **common)[0]
    if tune_on is not None:
        raise SettingError("{tune_on} goes with {suite}: it names members of the suite")
    if is_default_benchmark(flags, config, preset):
        return run_default_benchmark(
            flags, data_dir=data_dir, overwrite=overwrite, resume=resume, device=device, prepare_data=prepare
        )[0]
    results, _, _ = run_experiment(
        flags,
        config=config,
        preset=preset,
        data_dir=data_dir,
        overwrite=overwrite,
        resume=resume,
        device=device,
        prepare_data=prepare,
        source=source,
    )
    return results


def algorithm_names(algos: str | type | Iterable[str | type]) -> list[str]:
    """Registry names for ``algos``, plugins registered on the way."""
    if isinstance(algos, (str, type)):
        algos = [algos] if isinstance(algos, type) else [a.strip() for a in algos.split(",") if a.strip()]
    return [plugins.resolve(a) for a in algos]


def on_cuda(experiment: Experiment) -> bool:
    """Whether a unit's networks run on a CUDA device (``device`` cuda, or auto where torch sees one)."""
    units = experiment.tuning_units + experiment.units
    devices = {u.params["device"] for u in units if ALGORITHMS[u.algorithm].capabilities.device}
    if not devices:
        return False
    from banditbench.algos.neural import resolve_device  # plan() imported torch for these units already

    return any(resolve_device(name).type == "cuda" for name in devices)


def run_experiment(
    flags: RunSettings,
    *,
    config: str | Path | None = None,
    preset: str | None = None,
    data_dir: str | Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    device: str | None = None,
    default_out: Callable[[RunSettings], Path] | None = None,
    hooks: Hooks | None = None,
    prepare_data: bool = False,
    source: str | Path | None = None,
) -> tuple[Results, list, Experiment]:
    """What ``run`` and ``banditbench run`` share: resolve the settings, plan and check everything, then
    write. ``flags``: the settings given (None where not given). Without an ``out`` anywhere,
    ``default_out(settings)`` names the folder, or a temporary folder is used. Returns the Results, the
    units that ran and the experiment. ``prepare_data``: prepare the data the run needs first (``--prepare``),
    reading ``source`` where given."""
    hooks = hooks or Hooks()
    data_dir = user_path(data_dir) if data_dir is not None else default_data_dir()
    planned = plan_experiment(
        flags,
        config=config,
        preset=preset,
        data_dir=data_dir,
        device=device,
        hooks=hooks,
        prepare_data=prepare_data,
        source=source,
    )
    s, temporary = planned.settings, None
    if s.out:
        out = user_path(s.out)
    elif default_out is not None:
        out = default_out(s)
    else:
        temporary = tempfile.mkdtemp(prefix=f"banditbench-{s.dataset}-")
        out = Path(temporary) / "results"
    try:
        ran = write_experiment(planned, out, data_dir=data_dir, overwrite=overwrite, resume=resume, hooks=hooks)
    except BaseException:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    return Results(out, temporary=temporary), ran, planned.experiment


def is_default_benchmark(flags: RunSettings, config: str | Path | None, preset: str | None) -> bool:
    """Whether a run names none of dataset, algorithms, preset and experiment file: the default benchmark."""
    return config is None and preset is None and not flags.dataset and not flags.algos


def run_default_benchmark(
    flags: RunSettings,
    *,
    data_dir: str | Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    device: str | None = None,
    default_out: Callable[[RunSettings], Path] | None = None,
    hooks: Hooks | None = None,
    prepare_data: bool = False,
) -> tuple[Results, list[tuple[list, Experiment]]]:
    """``banditbench run`` with no dataset, algorithms, preset or file: each part of DEFAULT_BENCHMARK
    (runner/settings.py) as an experiment of its own in OUT/DATASET, the flags given applying to every part.
    Every part is planned and its folder checked before any is written. Returns the Results of all parts and,
    per part, the units that ran and the experiment."""
    hooks = hooks or Hooks()
    data_dir = user_path(data_dir) if data_dir is not None else default_data_dir()
    planned = [
        plan_experiment(flags, data_dir=data_dir, device=device, hooks=hooks, prepare_data=prepare_data, base=part)
        for part in DEFAULT_BENCHMARK
    ]
    first, temporary = planned[0].settings, None
    if first.out:
        parent = Path(first.out)
    elif default_out is not None:
        parent = default_out(replace(first, dataset="default"))
    else:
        temporary = tempfile.mkdtemp(prefix="banditbench-default-")
        parent = Path(temporary) / "results"
    outs = [parent / p.settings.dataset for p in planned]
    for part, out in zip(planned, outs):
        check_output(out, part.experiment.config, overwrite=overwrite, resume=resume, data_dir=data_dir)
    done = []
    try:
        for part, out in zip(planned, outs):
            ran = write_experiment(part, out, data_dir=data_dir, overwrite=overwrite, resume=resume, hooks=hooks)
            done.append((ran, part.experiment))
    except Interrupted as stop:  # resume the whole benchmark, from its parent folder
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        units = [u for p in planned for u in p.experiment.tuning_units + p.experiment.units]
        finished = sum(shard_path(o, u).exists() for p, o in zip(planned, outs) for u in p.experiment.units)
        raise Interrupted(units, parent, stop.staged, done=finished) from None
    except BaseException:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    return Results(*outs, temporary=temporary), done


@dataclass
class Planned:
    """One experiment resolved, planned and checked, before anything is written."""

    settings: RunSettings
    experiment: Experiment
    executor: Any
    config: Path | None


def plan_experiment(
    flags: RunSettings,
    *,
    data_dir: Path,
    config: str | Path | None = None,
    preset: str | None = None,
    device: str | None = None,
    hooks: Hooks,
    prepare_data: bool = False,
    source: str | Path | None = None,
    base: dict[str, Any] | None = None,
    declared: dict[str, Any] | None = None,
) -> Planned:
    """Resolve the settings (``base``: a layer under the file and the flags, a default benchmark part or a suite's
    member; ``declared``: the data it needs, as a preset's ``prepared-with``), prepare the data where asked, plan the
    experiment and check that it fits, writing nothing but prepared data."""
    config = None if config is None else user_path(config)
    s = resolve(flags, config, preset, base=base)
    if declared is not None:
        s = replace(s, prepared_with=declared)
    s = replace(s, algos=[plugins.resolve(a) for a in s.algos])  # a preset's or config file's plugins, by path or name
    if s.checkpoint_every < 0:
        raise SettingError("{checkpoint_every} must be zero or positive, got {value}", value=s.checkpoint_every)
    check_engine(s.engine)
    if source is not None and not prepare_data:
        raise SettingError("{source} goes with {prepare}: it names the raw files of the data to prepare")
    if prepare_data:
        path = prepare_declared(data_dir, s, source)
        if path is not None and hooks.on_prepared is not None:
            hooks.on_prepared(path)
    experiment = plan(s, data_dir=data_dir, device=device)
    if hooks.warn is not None:  # what prepare found suspicious in the data, repeated where the results are made
        for line in experiment.dataset.manifest.get("warnings", []):
            hooks.warn(f"dataset {s.dataset}: {line}")
    executor = make_executor(s.backend, s.jobs, s.address, s.gpus_per_unit)
    if executor.sharing_a_gpu > 1 and on_cuda(experiment):
        (hooks.warn or warnings.warn)(
            f"{executor.sharing_a_gpu} worker processes take turns on each GPU, which ran mcnb-movielens's networks "
            "about 20× slower on an H100 than on its CPU (docs/performance.md, 'On a GPU'); use --device cpu for "
            "these small networks, or one process per GPU (--jobs 1, or Ray with --gpus-per-unit 1)"
        )
    for name in s.algos:
        if name in plugins.ORIGINS:
            check_contract(experiment, name)
            if not isinstance(ALGORITHMS[name].source, str) and getattr(executor, "jobs", 1) != 1:
                raise UserError(
                    f"{name} is a class that worker processes cannot import (defined in __main__, "
                    "a notebook, or inside a function); use jobs=1 or move it into a module"
                )
    check_sizes(experiment, executor.workers, s.engine)
    return Planned(s, experiment, executor, config)


def write_experiment(
    planned: Planned, out: Path, *, data_dir: Path, overwrite: bool, resume: bool, hooks: Hooks
) -> list:
    """Create ``out`` and run the planned experiment's units into it; return the units that ran."""
    s, experiment, config = planned.settings, planned.experiment, planned.config
    target = None
    try:
        target = prepare_output(out, experiment, overwrite=overwrite, resume=resume, data_dir=data_dir)
        return execute(
            experiment,
            target,
            out,
            executor=planned.executor,
            checkpoint_every=s.checkpoint_every,
            engine=s.engine,
            settings={
                **s.record(),
                "config": None if config is None else str(config),
                "data": experiment.dataset.manifest.get("parameters", {}),
                "stand_in": experiment.stand_in,
                "plugins": {a: plugins.ORIGINS[a] for a in s.algos if a in plugins.ORIGINS},
            },
            on_plan=hooks.on_plan,
            on_unit_start=hooks.on_unit_start,
            progress=hooks.progress,
            warn=hooks.warn,
        )
    except KeyboardInterrupt:
        raise Interrupted(experiment.tuning_units + experiment.units, out, getattr(target, "staged", False)) from None


def prepare_declared(data_dir: Path, settings: RunSettings, source: str | Path | None) -> Path | None:
    """``--prepare``: build the dataset a run needs, with the parameters its preset declares (the dataset's defaults
    without a preset), unless it is prepared already; return its folder, or None when there was nothing to do.
    Data prepared otherwise is never replaced: it is refused with the command that replaces it, or run as a
    stand-in where the settings allow one."""
    from banditbench.data import DATASETS, load_dataset
    from banditbench.data.prepared import MANIFEST
    from banditbench.runner import declared_data

    declared = settings.prepared_with or {}
    name = settings.dataset
    needs = declared.get("parameters", {}) if declared.get("dataset") == name else {}
    folder = Path(data_dir) / name
    if (folder / MANIFEST).is_file():
        differ = declared_data.differences(name, needs, declared_data.prepared_parameters(load_dataset(data_dir, name)))
        if differ and not settings.allow_stand_in:
            command = declared_data.prepare_command(name, needs, data_dir, replace=True)
            raise SettingError(
                "{prepare} would replace {folder}, prepared with {prepared}; replace it with `{command}`, or pass "
                "another {data_dir}",
                folder=folder,
                prepared=declared_data.listing(differ, "prepared"),
                command=command,
            )
        return None
    if name not in DATASETS or DATASETS[name].prepare is None:
        raise SettingError("{prepare} cannot build {name!r}: it has no prepare command of its own", name=name)
    options = dict(needs)
    if DATASETS[name].reads_raw:
        options["source"] = source
    elif source is not None:
        raise UserError(f"{name} is generated, not read from files: --source has nothing to read")
    return prepare(name, data_dir=data_dir, **options)


def default_results_folder(settings: RunSettings) -> Path:
    """The CLI's ``results/DATASET-TIMESTAMP``."""
    return Path("results") / f"{settings.dataset}-{datetime.now():%Y%m%d-%H%M%S}"


# ---- suites: one experiment per member -----------------------------------------------------------------------
def run_suite(
    name: str,
    flags: RunSettings,
    *,
    tune_on: str | list[str] | None = None,
    data_dir: str | Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    device: str | None = None,
    default_out=None,
    hooks: Hooks | None = None,
    config: str | Path | None = None,
    preset: str | None = None,
    prepare_data: bool = False,
) -> tuple[Results, list[tuple[list, Any]], Suite, list[str]]:
    """``run --suite NAME``: every algorithm of ``flags`` on every prepared member of suite ``name`` (a built-in or a
    suite file), each member its own experiment in ``OUT/DATASET/`` (the runner, engines, executors and ``--resume``
    of a single run), ``OUT/suite.json`` recording the suite, the members that ran and those missing. Every member
    whose data is prepared is planned and checked before anything is written; a missing member is named with the
    command that prepares it and the others run (it fails only when none is prepared). ``tune_on``: the Bake-off's
    tuning members (banditbench/suite_run.py). Without an ``out`` anywhere, ``default_out`` names the folder, or a
    temporary folder is used, removed with the returned Results. ``config``, ``preset`` and ``prepare_data`` are
    refused: the suite names its datasets.
    Returns the reported members' Results, per member the units that ran and the experiment, the suite and the
    missing members."""
    hooks = hooks or Hooks()
    if config is not None or preset is not None or prepare_data:
        raise SettingError("{suite} runs the suite's own datasets: it takes no {config}, {preset} or {prepare}")
    if flags.dataset:
        raise SettingError("{suite} and {dataset} exclude each other: the suite names its datasets")
    data_dir = user_path(data_dir) if data_dir is not None else default_data_dir()
    suite = load_suite(name)
    if tune_on is not None:
        suite = with_tuning(suite, tune_on, "--tune-on")
    present, missing = _prepared_members(suite, data_dir, hooks)
    tuning = [m for m in present if m.dataset in suite.tune_on]
    reported = [m for m in present if m.dataset not in suite.tune_on]
    _check_members(suite, flags, tuning, reported, data_dir)
    parent = _suite_folder(suite, flags, default_out)
    if parent is not None and parent.is_dir() and any(parent.iterdir()) and not (parent / SUITE_FILE).is_file():
        raise SettingError("{out} {path} holds files but no suite's results; choose another {out}", path=parent)
    plan_member = _planner(flags, data_dir, device, hooks)
    planned = [plan_member(m) for m in tuning + reported]  # every member checked before anything is written
    temporary = None
    if parent is None:
        temporary = tempfile.mkdtemp(prefix=f"banditbench-{suite.name}-")
        parent = Path(temporary) / "results"
    try:
        for member, part in zip(tuning + reported, planned):
            check_output(
                _folder(parent, member, tuning),
                part.experiment.config,
                overwrite=overwrite,
                resume=resume,
                data_dir=data_dir,
            )
        record = functools.partial(write_suite_record, parent, suite, [m.dataset for m in present], missing)
        record()
        write = _writer(parent, data_dir, overwrite, resume, hooks)
        done = _tune_then_report(parent, write, record, plan_member, planned, tuning, reported)
    except BaseException:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    return Results(*[parent / m.dataset for m in reported], temporary=temporary), done, suite, missing


def _check_members(suite: Suite, flags: RunSettings, tuning: list[Member], reported: list[Member], data_dir: Path):
    """Refuse a suite run that cannot tune or has nothing left to report."""
    if suite.tune_on and flags.tune_seeds:
        raise SettingError(
            "{tune_on} and {tune_seeds} are two tuning rules (held-out datasets, held-out seeds); pick one"
        )
    if suite.tune_on and not tuning:
        raise UserError(f"none of the tuning members {', '.join(suite.tune_on)} is prepared in {data_dir}/")
    if not reported:
        raise UserError(f"every prepared member of suite {suite.name} is a tuning member; none is left to report")


def _tune_then_report(parent: Path, write, record, plan_member, planned, tuning, reported) -> list[tuple[list, Any]]:
    """Run the tuning members, fix each tuned algorithm to the cell they choose (recorded in the suite's file), then
    run the reported members with it; per member, the units that ran and the experiment."""
    from banditbench.suite_run import choose_configurations  # reads results: the report layer, imported when used

    done = []
    if tuning:
        done += [write(part, _folder(parent, m, tuning)) for m, part in zip(tuning, planned)]
        experiments = [part.experiment for part in planned[: len(tuning)]]
        chosen = choose_configurations([_folder(parent, m, tuning) for m in tuning], experiments)
        record(tuned=chosen)
        fixed = {t.algorithm: {k: [v] for k, v in t.chosen.items()} for t in chosen}
        planned[len(tuning) :] = [plan_member(m, fixed) for m in reported]
    return done + [write(part, parent / m.dataset) for m, part in zip(reported, planned[len(tuning) :])]


def _prepared_members(suite: Suite, data_dir: Path, hooks: Hooks) -> tuple[list[Member], list[str]]:
    """The members prepared in ``data_dir`` and the names of the others, each warned about with the command that
    prepares it; none prepared is a UserError naming the first commands."""
    present = [m for m in suite.members if (data_dir / m.dataset / MANIFEST).is_file()]
    missing = [m.dataset for m in suite.members if m not in present]
    if not present:
        commands = "; ".join(m.prepare_command() for m in suite.members[:5])
        more = f" (and {len(suite.members) - 5} more)" if len(suite.members) > 5 else ""
        raise UserError(f"no member of suite {suite.name} is prepared in {data_dir}/; prepare them: {commands}{more}")
    for member in suite.members:
        if member.dataset in missing:
            (hooks.warn or warnings.warn)(
                f"suite {suite.name}: {member.dataset} is not prepared in {data_dir}/, skipped; "
                f"prepare it with `{member.prepare_command()}`"
            )
    return present, missing


def _suite_folder(suite: Suite, flags: RunSettings, default_out) -> Path | None:
    """The folder ``out`` or ``default_out`` names, or None (a temporary one) where neither does."""
    if flags.out:
        return user_path(flags.out)
    return None if default_out is None else default_out(RunSettings(dataset=suite.name))


def _folder(parent: Path, member: Member, tuning: list[Member]) -> Path:
    from banditbench.suite_run import TUNING

    return parent / TUNING / member.dataset if member in tuning else parent / member.dataset


def _planner(flags: RunSettings, data_dir: Path, device: str | None, hooks: Hooks):
    """Plan one member: the run's flags over the member's dataset and protocol settings; ``fixed`` replaces the
    grids of the tuned algorithms by their chosen cells."""

    def plan_member(member: Member, fixed: dict[str, dict[str, list]] | None = None) -> Planned:
        layer = replace(flags, dataset=None, out=None)
        if fixed:
            given = layer.params or []
            given = grid.parse_assignments(given) if isinstance(given, list) else given
            layer = replace(layer, params=grid.merge(given, fixed))
        base = {"dataset": member.dataset, "env": member.env}
        declared = {"dataset": member.dataset, "parameters": member.data, "by": "the suite"} if member.data else None
        return plan_experiment(layer, data_dir=data_dir, device=device, hooks=hooks, base=base, declared=declared)

    return plan_member


def _writer(parent: Path, data_dir: Path, overwrite: bool, resume: bool, hooks: Hooks):
    def write(part: Planned, out: Path) -> tuple[list, Any]:
        try:
            ran = write_experiment(part, out, data_dir=data_dir, overwrite=overwrite, resume=resume, hooks=hooks)
        except Interrupted as stop:  # resume the whole suite, from its folder
            units = part.experiment.tuning_units + part.experiment.units
            finished = sum(shard_path(out, u).exists() for u in part.experiment.units)
            raise Interrupted(units, parent, stop.staged, done=finished) from None
        return ran, part.experiment

    return write


# ---- the policy contract, tried before the run --------------------------------------------------------------
def check_contract(experiment: Experiment, name: str) -> None:
    """Build ``name`` for the experiment's problem and play the first CONTRACT_ROUNDS rounds of its first seed through
    the runner's own round loop (runner/unit.py), so that it accepts exactly what a run accepts; a broken rule of the
    policy contract is one line naming it."""
    from banditbench.results.units import Unit
    from banditbench.runner.choices import BrokenContract
    from banditbench.runner.unit import play, start_lanes

    config = experiment.config
    first_cell = grid.cells(config["algorithms"][name])[0]
    unit = Unit(
        config["dataset"],
        config["protocol"],
        name,
        first_cell,
        config["master_seed"],
        0,
        min(CONTRACT_ROUNDS, config["rounds"]),
        config["budget"],
        env=config.get("env", {}),
    )
    broken = f"{name} breaks the policy contract:"
    try:
        lanes, group, _ = start_lanes([unit], experiment.dataset, None)
    except TypeError as e:
        raise UserError(
            f"{broken} its constructor must take the keywords n_users, n_arms, dim and seed besides "
            f"its hyper-parameters ({e})"
        ) from None
    try:
        play(lanes, Watched(group), 0, None, None)
    except BrokenContract as e:
        raise UserError(f"{broken} {e.rule}") from None
    except BudgetExceeded as e:
        raise UserError(f"{broken} select() exceeded the budget ({e})") from None
    except UpdateFailed as e:
        raise UserError(f"{broken} update(view, chosen, reward) failed: {e}") from None


class UpdateFailed(Exception):
    """A policy's update raised, said as ``Type: message``."""


class Watched:
    """A group's policy whose update failures are told apart from the round loop's own (for check_contract)."""

    def __init__(self, group):
        self.group = group

    def __getattr__(self, name: str):
        return getattr(self.group, name)

    def update(self, views, chosen, rewards) -> None:
        try:
            self.group.update(views, chosen, rewards)
        except Exception as e:
            raise UpdateFailed(f"{type(e).__name__}: {e}") from None


# ---- results -----------------------------------------------------------------------------------------------
FORMATS = ("md", "csv", "latex", "html")


class Results:
    """One results folder, read lazily. ``frame()`` per round, ``summary()`` final regret with 95 %
    intervals, ``curves()`` mean cumulative regret per round, ``plot()`` a figure, ``report()`` the tables
    as Markdown, CSV, LaTeX or HTML text.

    ``folders``: one or more results folders (``load``); ``temporary``: a folder removed when this object is,
    for ``run(out=None)``; ``allow_mixed``: report folders run with different settings side by side. Raises
    UserError when no folder is given, a folder does not exist, or one of its result files is broken."""

    def __init__(self, *folders: str | Path, temporary: str | None = None, allow_mixed: bool = False):
        if not folders:
            raise UserError("load needs at least one results folder")
        self.folders = [user_path(f) for f in folders]
        self.folder = self.folders[0]
        self.allow_mixed = allow_mixed
        self._loaded = None
        self._report = None
        if temporary is not None:  # the folder lives as long as this object
            self._cleanup = weakref.finalize(self, shutil.rmtree, temporary, True)
        for folder in self.folders:
            if not folder.exists():
                raise UserError(f"results folder {folder} does not exist")
        self._load()  # a folder that is not a results folder fails here, not at first use

    def _load(self):
        if self._loaded is None:
            from banditbench.report.make import load_checked

            self._loaded = load_checked(self.folders, self.allow_mixed)  # no numbers from a folder with a broken shard
        return self._loaded

    def _built(self):
        if self._report is None:  # `banditbench report`'s function, writing nothing
            from banditbench.report.make import ReportOptions, make_report

            options = ReportOptions(allow_mixed=self.allow_mixed)
            self._report = make_report(self.folders, options, results=self._load()).report
        return self._report

    def __repr__(self) -> str:
        loaded = self._load()
        folders = ", ".join(repr(str(f)) for f in self.folders)
        return (
            f"Results({folders}: {', '.join(loaded.datasets)}; {len(loaded.units)} units of "
            f"{', '.join(loaded.algorithms)})"
        )

    @property
    def algorithms(self) -> list[str]:
        return list(self._load().algorithms)

    @property
    def tables(self):
        """The full report (banditbench.report.tables.Report): summary, pairwise comparisons, ranks."""
        return self._built()

    def frame(self) -> pd.DataFrame:
        """Every round of every unit: dataset, algorithm, seed, t, user, group, chosen, reward,
        expected_reward, best_expected_reward, regret, budget_spent (+ slate and diagnostic columns) and
        cumulative_regret (or cumulative_ctr for slates)."""
        return self._load().rounds.copy()

    def summary(self) -> pd.DataFrame:
        """One row per dataset × algorithm: seeds, final cumulative regret mean, std and 95 % bootstrap interval
        (``regret_ci_low``, ``regret_ci_high``; CTR columns for slates), paired-test marks and costs."""
        return self._built().summary.copy()

    def logged(self) -> pd.DataFrame:
        """On logged datasets: one row per algorithm and estimator (replay, IPS, SNIPS, DM, DR) with its estimate,
        95 % interval, events kept or effective sample size, the replay's lift over random, and what it assumes."""
        table = self._built().logged
        return pd.DataFrame() if table is None else table.copy()

    def curves(self) -> pd.DataFrame:
        """Per dataset, algorithm and round t: mean, std and 95 % interval over seeds of the cumulative regret."""
        from banditbench.report.tables import curves

        return curves(self._load())

    def plot(
        self,
        algos: Iterable[str] | str | None = None,
        band: str = "ci",
        log_x: bool = False,
        style: str = "paper",
        panels: str = "dataset",
    ):
        """Returns the cumulative regret (or CTR) curves, one panel per dataset, as a matplotlib Figure. ``algos``:
        the algorithms drawn (default all); ``band``: "ci" (mean, 95 % bootstrap band), "iqr" (median, quartiles) or
        "none"; ``log_x``: rounds on a log axis; ``style``: "paper" or "slides"; ``panels``: "dataset" or "family"
        (a panel per algorithm family of each dataset: clustering of bandits, linear, neural, baselines); as
        ``banditbench report``'s --plot-algos, --band, --log-x, --style and --panels. Raises UserError for an
        algorithm not in these results or another band, style or panels."""
        from banditbench.report.plot_options import PlotOptions
        from banditbench.report.plots import regret_figure

        if isinstance(algos, str):
            algos = [name.strip() for name in algos.split(",") if name.strip()]
        chosen = None if algos is None else tuple(algos)
        return regret_figure(self._built(), PlotOptions(chosen, band, log_x, style, panels))

    def report(self, format: str = "md") -> str:
        """Returns the report's tables as text in ``format``: "md", "csv" (the summary), "latex" or "html" (with
        figures). Raises UserError for another format."""
        from banditbench.report import formats

        report = self._built()
        if format == "md":
            return formats.to_markdown(report)
        if format == "csv":
            return report.summary.to_csv(index=False)
        if format == "latex":
            return formats.to_latex(report)
        if format == "html":
            from banditbench.report.plots import svg_figures

            return formats.to_html(report, svg_figures(report))
        raise names.unknown("format", format, FORMATS)

    def save(self, path: str | Path) -> Results:
        """Copy the results folder to ``path`` (which must not exist) and return the Results read from there.
        Raises UserError when ``path`` exists or these results come from several folders."""
        if len(self.folders) > 1:
            raise UserError("save copies one results folder; these results come from several")
        path = user_path(path)
        if path.exists():
            raise UserError(f"{path} already exists; choose a new folder")
        shutil.copytree(self.folder, path)
        return Results(path)


def load(*paths: str | Path, allow_mixed: bool = False) -> Results:
    """The results in one or more folders written by ``run`` or ``banditbench run`` (several folders: e.g. one
    per dataset, reported side by side as ``banditbench report A B`` does; ``allow_mixed`` as ``--allow-mixed``).

    ``paths``: the folders. Returns their Results. Raises UserError as :class:`Results` does."""
    return Results(*paths, allow_mixed=allow_mixed)


def claims(*sources: str | Path, test: str = "t"):
    """The claims scorecard (``banditbench claims``): every table and figure with results in the five source
    papers, each with the verdicts that ``sources`` give it, or why no preset reproduces it. ``sources``: results
    folders run with a preset, or evidence files written by ``banditbench claims … --save-evidence``; none gives the
    inventory alone. ``test``: the paired test of the stated comparisons, "t" or "wilcoxon". Returns a
    ``banditbench.report.scorecard.Scorecard``: ``exhibits`` and ``rows`` as DataFrames, ``counts``, and
    ``to_text()``, ``to_markdown()``, ``to_json()``. Raises UserError for another ``test`` or a source that is
    neither a results folder nor an evidence file."""
    from banditbench.report.scorecard import read_runs, scorecard
    from banditbench.report.stats import TESTS

    names.pick("test", test, TESTS)
    return scorecard(read_runs([Path(s) for s in sources], test), test)


def policy(name: str, /, *, dim: int, n_users: int, n_arms: int, seed: int = 0, **params: Any):
    """A registered policy (``"club"``, ``"linucb-ind"``, a plugin's name or import path) for use outside any
    simulation: ``select(user, arms)`` returns the index of the arm to show, ``update(user, arms, chosen,
    reward)`` learns from the outcome. ``name``: the policy; ``dim``: the length of an arm's feature row;
    ``n_users``: the users it keeps state for (ids 0 … n_users − 1); ``n_arms``: the most rows ``arms`` may have;
    ``params``: its hyper-parameters, checked against their domains; ``seed`` makes its random choices
    reproducible. See banditbench/standalone.py.

    Returns the policy. Raises UserError for an unknown name, a policy that needs slates, user features or a
    simulation's hidden rewards, a size that is not a positive integer, or a hyper-parameter outside its domain."""
    from banditbench.standalone import StandalonePolicy

    return StandalonePolicy(name, dim=dim, n_users=n_users, n_arms=n_arms, seed=seed, **params)
