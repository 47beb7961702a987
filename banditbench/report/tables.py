"""Regret tables and curves from an experiment's shards. The report never re-runs anything."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.errors import UserError
from banditbench.results.shards import SHARDS, read_shard, read_timing
from banditbench.runner.experiment import MANIFEST

FORMATS = ("md", "csv")


@dataclass
class LoadedExperiment:
    folder: Path
    config: dict
    units: list[str]  # every planned unit id, in run order
    rounds: pd.DataFrame  # per-round outcome of the completed units, with ``algorithm`` and ``seed`` columns
    timing: pd.DataFrame  # one row per completed unit: algorithm, seed, wall_seconds, peak_rss_mb

    @property
    def missing(self) -> list[str]:
        done = set(self.timing["unit"])
        return [u for u in self.units if u not in done]


def latest_experiment(results_dir: Path) -> Path:
    candidates = sorted(Path(results_dir).glob(f"*/{MANIFEST}"), key=lambda p: p.stat().st_mtime)
    if not candidates:
        raise UserError(f"no experiments in {results_dir}/; run `banditbench run` first")
    return candidates[-1].parent


def load_experiment(folder: Path) -> LoadedExperiment:
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        raise UserError(f"{folder} is not a results folder (no {MANIFEST}); run `banditbench run --out {folder}`")
    manifest = json.loads((folder / MANIFEST).read_text())
    frames, timings = [], []
    labels = manifest.get("labels", {})  # grid cells reported side by side are named club[alpha=0.1] etc.
    for unit_id in manifest["units"]:
        path = folder / SHARDS / f"{unit_id}.parquet"
        if not path.exists():
            continue
        frame, meta = read_shard(path)
        label = labels.get(unit_id, meta["unit"]["algorithm"])
        frame.insert(0, "algorithm", label)
        frame.insert(1, "seed", meta["unit"]["seed_index"])
        frames.append(frame)
        timing = read_timing(path) or {"wall_seconds": np.nan, "peak_rss_mb": np.nan}
        timings.append({"unit": unit_id, "algorithm": label, "seed": meta["unit"]["seed_index"],
                        "rounds": len(frame), "wall_seconds": timing["wall_seconds"],
                        "peak_rss_mb": timing["peak_rss_mb"]})
    if not frames:
        raise UserError(f"{folder} has no finished units yet; run `banditbench run --out {folder} --resume`")
    return LoadedExperiment(folder, manifest["config"], manifest["units"], pd.concat(frames, ignore_index=True),
                            pd.DataFrame(timings))


def regret_table(exp: LoadedExperiment) -> pd.DataFrame:
    """Final cumulative regret per algorithm: mean ± std (ddof = 1) over seeds, and the seed count."""
    per_unit = exp.rounds.groupby(["algorithm", "seed"], sort=False).agg(
        final_regret=("regret", "sum"), mean_reward=("reward", "mean"))
    table = per_unit.groupby(level="algorithm", sort=False).agg(
        seeds=("final_regret", "size"), regret_mean=("final_regret", "mean"), regret_std=("final_regret", "std"),
        mean_reward=("mean_reward", "mean"))
    speed = exp.timing.groupby("algorithm", sort=False).agg(wall=("wall_seconds", "sum"), rounds=("rounds", "sum"),
                                                            peak_rss_mb=("peak_rss_mb", "max"))
    table["rounds_per_second"] = speed["rounds"] / speed["wall"]
    table["peak_rss_mb"] = speed["peak_rss_mb"]
    return table.reset_index()


def regret_curves(exp: LoadedExperiment) -> pd.DataFrame:
    """Per round t: mean and std over seeds of the cumulative regret, per algorithm."""
    rounds = exp.rounds.sort_values(["algorithm", "seed", "t"], kind="stable")
    rounds = rounds.assign(cumulative_regret=rounds.groupby(["algorithm", "seed"], sort=False)["regret"].cumsum())
    curves = rounds.groupby(["algorithm", "t"], sort=False)["cumulative_regret"].agg(["mean", "std", "size"])
    curves.columns = ["cumulative_regret_mean", "cumulative_regret_std", "seeds"]
    order = {algo: i for i, algo in enumerate(dict.fromkeys(exp.rounds["algorithm"]))}  # run order
    curves = curves.reset_index()
    return curves.sort_values(["algorithm", "t"], key=lambda c: c.map(order) if c.name == "algorithm" else c,
                              kind="stable", ignore_index=True)


def to_markdown(table: pd.DataFrame, config: dict) -> str:
    header = (f"Final cumulative regret after {config['rounds']} rounds on `{config['dataset']}` "
              f"(protocol `{config['protocol']}`, master seed {config['master_seed']}, "
              f"budget {config['budget'] or 'unlimited'}); mean ± std over seeds.\n\n")
    lines = ["| algorithm | seeds | cumulative regret | mean reward | rounds/s |", "|---|---|---|---|---|"]
    for row in table.itertuples():
        lines.append(f"| {row.algorithm} | {row.seeds} | {format_mean_std(row.regret_mean, row.regret_std)} "
                     f"| {row.mean_reward:.4f} | {row.rounds_per_second:,.0f} |")
    return header + "\n".join(lines) + "\n"


def format_mean_std(mean: float, std: float) -> str:
    return f"{mean:.2f} ± {std:.2f}" if np.isfinite(std) else f"{mean:.2f}"


def write_report(exp: LoadedExperiment, out: Path, formats: list[str]) -> list[Path]:
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot write the report to {out}: {e.strerror}") from None
    table = regret_table(exp)
    written = []
    if "md" in formats:
        written.append(out / "report.md")
        written[-1].write_text(to_markdown(table, exp.config))
    if "csv" in formats:
        written.append(out / "report.csv")
        table.to_csv(written[-1], index=False)
        written.append(out / "curves.csv")
        regret_curves(exp).to_csv(written[-1], index=False)
    return written
