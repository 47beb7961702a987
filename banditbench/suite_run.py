"""``banditbench run --suite NAME``: one experiment per member of a suite, and the Bake-off's tuning rule.

Every member whose data is prepared is planned and checked before anything is written; a member whose data is
missing is named with the command that prepares it, and the run goes on with the others (it fails only when no
member is prepared). Each member runs as its own experiment in ``OUT/DATASET/`` (the runner, engines, executors and
``--resume`` of a single run), and ``OUT/suite.json`` records the suite, which members ran and which were missing.

Bake-off tuning (Bietti, Agarwal & Langford 2021, §5.1: hyper-parameters fixed on held-out datasets): with
``--tune-on A,B`` (or a suite file's ``tune-on``), every grid cell of every algorithm runs on the tuning members
only, into ``OUT/tuning/DATASET/``; each algorithm keeps the cell with the lowest mean normalised regret over those
members (a cell's mean final regret divided by the best mean of any cell of any algorithm on that member, so every
member weighs alike whatever its scale; ties: the first cell in grid order), and that one cell runs on every
reported member. The choice reads only the tuning members' results; the reported members never shape it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from banditbench.api import (
    Hooks,
    Planned,
    Results,
    default_data_dir,
    plan_experiment,
    user_path,
    write_experiment,
)
from banditbench.data.prepared import MANIFEST
from banditbench.errors import Interrupted, UserError
from banditbench.report.load import load_results
from banditbench.results.folder import check_output
from banditbench.results.shards import shard_path
from banditbench.runner import grid
from banditbench.runner.settings import RunSettings
from banditbench.suites import SUITE_FILE, Member, Suite, load_suite, with_tuning, write_suite_record

TUNING = "tuning"  # OUT/tuning/DATASET: the tuning members' runs, below the folders a report reads
CRITERION = "mean normalised regret over the tuning members (final regret / the best mean on that member)"


@dataclass
class Tuned:
    """An algorithm's configuration chosen on the tuning members, with every cell's score."""

    algorithm: str
    chosen: dict[str, Any]
    label: str
    scores: dict[str, float]  # cell label → mean normalised regret
    criterion: str = CRITERION


def run_suite(
    name: str,
    flags: RunSettings,
    *,
    tune_on: str | None = None,
    data_dir: str | Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    device: str | None = None,
    default_out=None,
    hooks: Hooks | None = None,
) -> tuple[Results, list[tuple[list, Any]], Suite, list[str]]:
    """Run every algorithm of ``flags`` on every prepared member of suite ``name`` (a built-in or a suite file).
    Returns the reported members' Results, per member the units that ran and the experiment, the suite and the
    missing members."""
    hooks = hooks or Hooks()
    if flags.dataset:
        raise UserError("--suite and --dataset exclude each other: the suite names its datasets")
    data_dir = user_path(data_dir) if data_dir is not None else default_data_dir()
    suite = load_suite(name)
    if tune_on is not None:
        suite = with_tuning(suite, tune_on, "--tune-on")
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
    tuning = [m for m in present if m.dataset in suite.tune_on]
    reported = [m for m in present if m.dataset not in suite.tune_on]
    if suite.tune_on and flags.tune_seeds:
        raise UserError("--tune-on and --tune-seeds are two tuning rules (held-out datasets, held-out seeds); pick one")
    if suite.tune_on and not tuning:
        raise UserError(f"none of the tuning members {', '.join(suite.tune_on)} is prepared in {data_dir}/")
    if not reported:
        raise UserError(f"every prepared member of suite {suite.name} is a tuning member; none is left to report")
    parent = _suite_folder(suite, flags, default_out)
    if parent.is_dir() and any(parent.iterdir()) and not (parent / SUITE_FILE).is_file():
        raise UserError(f"--out {parent} holds files but no suite's results; choose another --out")
    plan = _planner(flags, data_dir, device, hooks)
    planned = [plan(m) for m in tuning + reported]  # every member checked before anything is written
    for member, part in zip(tuning + reported, planned):
        check_output(
            _folder(parent, member, tuning),
            part.experiment.config,
            overwrite=overwrite,
            resume=resume,
            data_dir=data_dir,
        )
    write_suite_record(parent, suite, [m.dataset for m in present], missing)
    write = _writer(parent, data_dir, overwrite, resume, hooks)
    done, chosen = [], []
    if tuning:
        done += [write(part, _folder(parent, m, tuning)) for m, part in zip(tuning, planned)]
        chosen = choose_configurations([_folder(parent, m, tuning) for m in tuning], planned[: len(tuning)])
        write_suite_record(parent, suite, [m.dataset for m in present], missing, tuned=chosen)
        fixed = {t.algorithm: {k: [v] for k, v in t.chosen.items()} for t in chosen}
        planned[len(tuning) :] = [plan(m, fixed) for m in reported]
    done += [write(part, parent / m.dataset) for m, part in zip(reported, planned[len(tuning) :])]
    return Results(*[parent / m.dataset for m in reported]), done, suite, missing


def _suite_folder(suite: Suite, flags: RunSettings, default_out) -> Path:
    if flags.out:
        return user_path(flags.out)
    if default_out is None:
        raise UserError("a suite needs an output folder: give out (--out)")
    return default_out(RunSettings(dataset=suite.name))


def _folder(parent: Path, member: Member, tuning: list[Member]) -> Path:
    return parent / TUNING / member.dataset if member in tuning else parent / member.dataset


def _planner(flags: RunSettings, data_dir: Path, device: str | None, hooks: Hooks):
    """Plan one member: the run's flags over the member's dataset and protocol settings; ``fixed`` replaces the
    grids of the tuned algorithms by their chosen cells."""

    def plan(member: Member, fixed: dict[str, dict[str, list]] | None = None) -> Planned:
        layer = replace(flags, dataset=None, out=None)
        if fixed:
            given = layer.params or []
            given = grid.parse_assignments(given) if isinstance(given, list) else given
            layer = replace(layer, params=grid.merge(given, fixed))
        base = {"dataset": member.dataset, "env": member.env}
        declared = {"dataset": member.dataset, "parameters": member.data, "by": "the suite"} if member.data else None
        return plan_experiment(layer, data_dir=data_dir, device=device, hooks=hooks, base=base, declared=declared)

    return plan


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


def choose_configurations(folders: list[Path], planned: list[Planned]) -> list[Tuned]:
    """Each algorithm's cell with the lowest mean normalised regret over the tuning members' results in
    ``folders`` (their experiments in ``planned``, which map each cell's label to its parameters)."""
    units = load_results(folders).units
    cells: dict[str, tuple[str, dict[str, Any]]] = {}  # label → (algorithm, parameters), in grid order
    for part in planned:
        for unit in part.experiment.units:
            cells.setdefault(part.experiment.labels[unit.id], (unit.algorithm, dict(unit.params)))
    means = units.groupby(["dataset", "algorithm"], sort=False)["final_regret"].mean()
    best = means.groupby(level="dataset").min()
    best = best.where(best > 0, 1.0)  # a member some cell solved without regret: its regrets stand as they are
    normalised = (means / best.reindex(means.index, level="dataset")).groupby(level="algorithm").mean()
    chosen = []
    for algorithm in dict.fromkeys(a for a, _ in cells.values()):
        labels = [label for label, (a, _) in cells.items() if a == algorithm]
        if len(labels) < 2:
            continue  # nothing to choose
        scores = {label: float(normalised.get(label, np.nan)) for label in labels}
        label = min(labels, key=lambda la: (np.nan_to_num(scores[la], nan=np.inf), labels.index(la)))
        grid_keys = [k for k in cells[label][1] if len({str(cells[la][1].get(k)) for la in labels}) > 1]
        chosen.append(Tuned(algorithm, {k: cells[label][1][k] for k in grid_keys}, label, scores))
    return chosen
