"""Loading results folders for the report: shards → one row per unit and per-round curves.

What the report reads from an outcome shard (``results/shards.py``):
- always ``t``; ``regret`` (per round, pseudo-regret) and ``reward`` when present;
- ``diag_*`` columns (``runner/diagnostics.py``): sampled every few rounds, NaN elsewhere; the last sample of a
  unit is its final value;
- simulator runs (Zhang et al. 2022): a shard is a CTR shard when it has a ``ctr`` column (clicks / slate size of the
  round), or a ``slate_size`` column (m, items recommended) with ``clicks`` (clicked items of the slate; without
  it ``reward`` is taken as the click count y_t = Σ clicks). Cumulative CTR = Σ_t clicks_t / m, and regret against
  the optimum = CTR_OPTIMUM·t − cumulative CTR (Zhang et al. 2022: rewards flipped with p = 0.1, so 0.9 per
  iteration). A shard's metadata key ``ctr_optimum`` overrides 0.9.
From the timing sidecar: ``wall_seconds``, ``peak_rss_mb`` and ``machine`` (metadata: the processor model and
core count) and every float per-round column summed over the unit (``select_seconds``, ``update_seconds`` and
whatever an algorithm adds).

Nothing is taken on trust. The units a folder should hold are planned again from its manifest's own config (every
algorithm's grid cells × seeds, the cell chosen on the tuning seeds where it tuned), and a manifest that lists
other units than its config plans is refused. Every shard must match its checksum record, hold the unit its file
is named after and one the config plans, no other shard's unit, and finite outcomes (``results/shards.py``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.errors import UserError
from banditbench.results.folder import (  # noqa: F401 (latest_experiment: the report's entry)
    MANIFEST,
    experiment_folders,
    latest_experiment,
    read_manifest,
)
from banditbench.results.shards import SHARDS, BrokenShard, read_shard, read_timing
from banditbench.runner import grid

CTR_OPTIMUM = 0.9  # Zhang et al. 2022: the expected optimal per-slot reward under 10 % flips
# What made a shard, from its metadata: the results board shows it beside every cell.
PROVENANCE = {"version": "banditbench", "git_sha": "git_sha", "dataset_sha256": "dataset_manifest_sha256"}
# Settings every unit of one dataset must share for its numbers to be comparable.
SETTINGS = ("dataset", "protocol", "rounds", "budget", "master_seed", "env")  # env: protocol settings, if any


@dataclass
class LoadedExperiment:
    folder: Path
    config: dict
    units: list[str]  # every planned unit id, in run order
    rounds: pd.DataFrame  # per-round outcome of the completed units, with ``algorithm`` and ``seed`` columns
    timing: pd.DataFrame  # one row per completed unit: algorithm, seed, rounds, wall_seconds, peak_rss_mb, totals
    problems: list[str] = field(default_factory=list)  # broken shards, named: the report refuses them
    ctr_optimum: float = CTR_OPTIMUM
    planned: int = 0  # report units the manifest's config plans, those of algorithms still tuning included
    tuned: dict = field(default_factory=dict)  # algorithm → the grid cell its tuning seeds chose

    @property
    def missing(self) -> list[str]:
        done = set(self.timing["unit"])
        broken = {p.split(":")[0] for p in self.problems}
        return [u for u in self.units if u not in done and f"{u}.parquet" not in broken]

    @property
    def dataset(self) -> str:
        return self.config["dataset"]


def _incompatibility(meta: dict, config: dict) -> str | None:
    unit = meta["unit"]
    for key in SETTINGS:
        if unit.get(key) != config.get(key):
            return f"{key} = {unit.get(key)!r}, the folder's manifest says {config.get(key)!r}"
    if meta.get("dataset_manifest_sha256") != config.get("dataset_manifest_sha256"):
        return "it was run on another version of the dataset (dataset manifest sha256 differs)"
    return None


def unit_key(unit: dict) -> tuple:
    """What tells one reported unit from another in a folder: its algorithm, grid cell and seed."""
    return unit["algorithm"], json.dumps(unit.get("params") or {}, sort_keys=True), unit["seed_index"]


def planned_units(manifest: dict, folder: Path) -> tuple[set[tuple], int]:
    """The report units the manifest's config plans, as :func:`unit_key` keys, and how many more units the
    algorithms still tuning will add; refused when the manifest lists other units than its config plans."""
    where = Path(folder) / MANIFEST
    config, listed = manifest["config"], manifest["units"]
    chosen = manifest.get("tuning") or {}
    keys, pending = set(), 0
    try:
        seeds = range(config["seeds"])
        for algo, params in config["algorithms"].items():
            cells = grid.cells(params)
            if config.get("tune_seeds") and len(cells) > 1:
                if algo not in chosen:
                    pending += len(seeds)
                    continue
                cells = [chosen[algo]["chosen"]]
            keys |= {unit_key({"algorithm": algo, "params": cell, "seed_index": i}) for cell in cells for i in seeds}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UserError(
            f"{where} is corrupt: its config cannot plan the run's units ({type(e).__name__}: {e})"
        ) from None
    if not isinstance(listed, list) or len(set(listed)) != len(listed):
        raise UserError(f"{where} is corrupt: it lists a unit twice")
    if len(listed) != len(keys):
        raise UserError(
            f"{where} contradicts itself: its config plans {len(keys)} units, it lists {len(listed)}; "
            "it was edited or is corrupt, so these results cannot be reported"
        )
    return keys, pending


def load_experiment(folder: Path, *, allow_mixed: bool = False) -> LoadedExperiment:
    folder = Path(folder)
    if not folder.exists():
        raise UserError(f"results folder {folder} does not exist")
    manifest = read_manifest(folder)
    config, unit_ids = manifest["config"], manifest["units"]
    planned, pending = planned_units(manifest, folder)
    labels = manifest.get("labels", {})  # grid cells reported side by side are named club[alpha=0.1] etc.
    frames, timings, problems, optima = [], [], [], set()
    held: dict[tuple, str] = {}  # unit key → the shard holding it
    for unit_id in unit_ids:
        path = folder / SHARDS / f"{unit_id}.parquet"
        if not path.exists():
            continue
        try:
            frame, meta = read_shard(path)
            timing = read_timing(path)
            key = unit_key(meta["unit"])
            if key not in planned:
                raise BrokenShard("it holds a unit that the manifest's config does not plan")
            if key in held:
                raise BrokenShard(f"it holds the same unit as {held[key]}")
            if "t" not in frame or not ("regret" in frame or ctr_columns(frame)):
                raise BrokenShard("it has no round column, or neither a regret column nor CTR columns")
            if "rounds" in config and len(frame) != config["rounds"]:
                raise BrokenShard(f"it has {len(frame)} rows for {config['rounds']} rounds")
        except BrokenShard as e:  # named, and the report refuses to be written
            problems.append(f"{path.name}: {e}")
            continue
        held[key] = path.name
        reason = _incompatibility(meta, config)
        if reason is not None and not allow_mixed:
            raise UserError(
                f"{path} does not belong with the other shards of {folder}: {reason}; "
                f"pass --allow-mixed to aggregate anyway"
            )
        optima.add(float(meta.get("ctr_optimum", CTR_OPTIMUM)))
        label = labels.get(unit_id, meta["unit"]["algorithm"])
        frame.insert(0, "algorithm", label)
        frame.insert(1, "seed", meta["unit"]["seed_index"])
        frames.append(frame)
        timings.append(
            {
                "unit": unit_id,
                "algorithm": label,
                "seed": meta["unit"]["seed_index"],
                "rounds": len(frame),
                "wall_seconds": timing.get("wall_seconds", np.nan),
                "peak_rss_mb": timing.get("peak_rss_mb", np.nan),
                "machine": timing.get("machine"),
                **timing.get("totals", {}),
                **{key: meta.get(field) for key, field in PROVENANCE.items()},
            }
        )
    if not frames:
        if problems:
            more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
            raise UserError(f"{folder}: no shard passes verification: {'; '.join(problems[:3])}{more}")
        raise UserError(f"{folder} has no finished units yet; run `banditbench run --out {folder} --resume`")
    if len(optima) > 1 and not allow_mixed:
        raise UserError(f"{folder}: shards disagree on the CTR optimum ({sorted(optima)}); pass --allow-mixed")
    return LoadedExperiment(
        folder,
        config,
        unit_ids,
        pd.concat(frames, ignore_index=True),
        pd.DataFrame(timings),
        problems,
        max(optima),
        planned=len(planned) + pending,
        tuned={algo: record["chosen"] for algo, record in (manifest.get("tuning") or {}).items()},
    )


def ctr_columns(frame: pd.DataFrame) -> bool:
    return "ctr" in frame or ("slate_size" in frame and ("clicks" in frame or "reward" in frame))


def round_ctr(frame: pd.DataFrame) -> pd.Series:
    """CTR of each round (Zhang et al. 2022): clicks / slate size."""
    if "ctr" in frame:
        return frame["ctr"].astype(float)
    clicks = frame["clicks"] if "clicks" in frame else frame["reward"]
    return clicks.astype(float) / frame["slate_size"].astype(float)


@dataclass
class Results:
    """Several experiments, grouped by dataset: the report's input."""

    experiments: list[LoadedExperiment]
    units: pd.DataFrame  # one row per unit: dataset, algorithm, seed, final metrics, costs, final diagnostics
    rounds: pd.DataFrame  # per round, every unit, with ``dataset`` and cumulative metric columns
    kinds: dict[str, str]  # dataset → "regret" (lower is better) or "ctr" (higher is better)
    algorithms: list[str]  # in the order the experiments listed them
    warnings: list[str]

    @property
    def datasets(self) -> list[str]:
        return list(self.kinds)

    @property
    def problems(self) -> list[str]:
        return [f"{e.folder}/{SHARDS}/{p}" for e in self.experiments for p in e.problems]

    @property
    def timing_columns(self) -> list[str]:
        return [c for c in self.units.columns if c.endswith("_seconds") and c != "wall_seconds"]

    @property
    def diagnostic_columns(self) -> list[str]:
        return [c for c in self.units.columns if c.startswith("diag_")]


def _dataset_settings(exp: LoadedExperiment) -> dict:
    return {
        **{k: exp.config.get(k) for k in SETTINGS},
        "dataset_manifest_sha256": exp.config.get("dataset_manifest_sha256"),
    }


def load_results(folders: list[Path], *, allow_mixed: bool = False) -> Results:
    named: dict[str, Path] = {}
    for folder in map(Path, folders):
        where = os.path.realpath(folder)
        if where in named:
            raise UserError(f"{folder} is named twice (also as {named[where]}); name each results folder once")
        named[where] = folder
    experiments = [load_experiment(folder, allow_mixed=allow_mixed) for folder in experiment_folders(folders)]
    warnings = []
    first: dict[str, LoadedExperiment] = {}
    for exp in experiments:
        manifest = read_manifest(exp.folder)
        warnings += [f"{exp.folder}: dataset {exp.dataset}: {line}" for line in manifest.get("dataset_warnings", [])]
        other = first.setdefault(exp.dataset, exp)
        if other is exp:
            continue
        a, b = _dataset_settings(other), _dataset_settings(exp)
        differing = [k for k in a if a[k] != b[k]]
        shared = set(other.config["algorithms"]) & set(exp.config["algorithms"])
        differing += [
            f"{algo} hyper-parameters"
            for algo in sorted(shared)
            if other.config["algorithms"][algo] != exp.config["algorithms"][algo]
        ]
        if differing and not allow_mixed:
            raise UserError(
                f"{other.folder} and {exp.folder} both hold dataset {exp.dataset!r} but differ in "
                f"{', '.join(differing)}; pass --allow-mixed to aggregate them anyway"
            )
        if differing:
            warnings.append(
                f"aggregating {other.folder} and {exp.folder} although they differ in {', '.join(differing)}"
            )
    frames, units, kinds, algorithms = [], [], {}, []
    seen: dict[tuple, Path] = {}
    for exp in experiments:
        rounds = exp.rounds.copy()
        for key in rounds[["algorithm", "seed"]].drop_duplicates().itertuples(index=False):
            where = seen.setdefault((exp.dataset, *key), exp.folder)
            if where != exp.folder:
                raise UserError(f"{key[0]} seed {key[1]} on {exp.dataset!r} is in both {where} and {exp.folder}")
        rounds.insert(0, "dataset", exp.dataset)
        is_ctr = ctr_columns(rounds)
        kinds[exp.dataset] = "ctr" if is_ctr and kinds.get(exp.dataset, "ctr") == "ctr" else "regret"
        rounds = rounds.sort_values(["algorithm", "seed", "t"], kind="stable", ignore_index=True)
        by_unit = rounds.groupby(["algorithm", "seed"], sort=False)
        if "regret" in rounds:
            rounds["cumulative_regret"] = by_unit["regret"].cumsum()
        if is_ctr:
            rounds["cumulative_ctr"] = round_ctr(rounds).groupby([rounds["algorithm"], rounds["seed"]]).cumsum()
            rounds["ctr_regret"] = exp.ctr_optimum * (rounds["t"] + 1) - rounds["cumulative_ctr"]
        frames.append(rounds)
        units.append(_unit_rows(rounds, exp.timing, exp.dataset))
        algorithms += [a for a in exp.timing["algorithm"].unique() if a not in algorithms]  # run order
    rounds = pd.concat(frames, ignore_index=True)
    units = pd.concat(units, ignore_index=True)
    return Results(experiments, units, rounds, kinds, algorithms, warnings)


def _unit_rows(rounds: pd.DataFrame, timing: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Final values of one experiment's units, with their costs."""
    by_unit = rounds.groupby(["algorithm", "seed"], sort=False)
    finals = {"rounds": by_unit["t"].size()}
    if "regret" in rounds:
        finals["final_regret"] = by_unit["regret"].sum()
    if "reward" in rounds:
        finals["mean_reward"] = by_unit["reward"].mean()
    for column in ("cumulative_ctr", "ctr_regret"):
        if column in rounds:
            finals[column] = by_unit[column].last()
    for column in sorted(c for c in rounds if c.startswith("diag_")):
        finals[column] = by_unit[column].last()  # last non-NaN sample: the final diagnostic
    table = pd.DataFrame(finals).reset_index()
    costs = timing.drop(columns=["unit", "rounds"])
    table = table.merge(costs, on=["algorithm", "seed"], how="left")
    table["rounds_per_second"] = table["rounds"] / table["wall_seconds"]
    table.insert(0, "dataset", dataset)
    return table
