"""The Bake-off's tuning rule for a suite run (``banditbench.api.run_suite``, ``run --suite NAME --tune-on A,B``).

Bake-off tuning (Bietti, Agarwal & Langford 2021, §5.1: hyper-parameters fixed on held-out datasets): with
``--tune-on A,B`` (or a suite file's ``tune-on``), every grid cell of every algorithm runs on the tuning members
only, into ``OUT/tuning/DATASET/``; each algorithm keeps the cell with the lowest mean normalised regret over those
members (a cell's mean final regret divided by the best mean of any cell of any algorithm on that member, so every
member weighs alike whatever its scale; ties: the first cell in grid order), and that one cell runs on every
reported member. The choice reads only the tuning members' results; the reported members never shape it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from banditbench.report.load import load_results
from banditbench.runner.experiment import Experiment

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


def choose_configurations(folders: list[Path], experiments: list[Experiment]) -> list[Tuned]:
    """Each algorithm's cell with the lowest mean normalised regret over the tuning members' results in
    ``folders`` (their ``experiments``, which map each cell's label to its parameters)."""
    units = load_results(folders).units
    cells: dict[str, tuple[str, dict[str, Any]]] = {}  # label → (algorithm, parameters), in grid order
    for experiment in experiments:
        for unit in experiment.units:
            cells.setdefault(experiment.labels[unit.id], (unit.algorithm, dict(unit.params)))
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
