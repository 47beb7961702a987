"""Result shards (DESIGN.md, "Result shard").

Each unit writes two Parquet files under ``<experiment>/shards/``:
- ``<unit>.parquet``: the per-round outcome (t, user, group, chosen, reward, expected_reward,
  best_expected_reward, regret, budget_spent) with the unit's resolved config and provenance in the
  file metadata. It is a pure function of the inputs and seed, hence bit-identical across runs.
- ``<unit>.timing.parquet``: per-round select/update seconds, wall time and peak memory. Timing
  differs on every run, so it lives apart to keep the outcome shard reproducible byte for byte.
Both are written to a temporary name and renamed; the outcome shard is written last, so its
presence means the unit is complete (what ``--resume`` relies on).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from banditbench import __version__
from banditbench.runner.unit import Unit, UnitResult

METADATA_KEY = b"banditbench"
SHARDS = "shards"


@cache
def provenance() -> dict[str, Any]:
    """Package and library versions and the git commit of the banditbench source, if it is a checkout."""
    libraries = {}
    for name in ("numpy", "pandas", "pyarrow", "torch", "scikit-learn", "scipy"):
        try:
            libraries[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            libraries[name] = None
    try:
        git_sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        git_sha = None
    return {"banditbench": __version__, "python": platform.python_version(), "libraries": libraries,
            "git_sha": git_sha, "device": "cpu"}


def _write_atomically(table: pa.Table, path: Path) -> None:
    partial = path.with_name(f".{path.name}.partial")
    pq.write_table(table, partial)
    os.replace(partial, path)


def shard_path(folder: Path, unit: Unit) -> Path:
    return Path(folder) / SHARDS / f"{unit.id}.parquet"


def write_shard(folder: Path, unit: Unit, result: UnitResult, dataset_sha256: str) -> Path:
    path = shard_path(folder, unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    peak_rss_mb = result.peak_rss_mb  # measured by the worker that ran the unit, else this process's peak so far
    if peak_rss_mb is None:
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    timing_meta = {"unit": unit.id, "wall_seconds": result.wall_seconds, "peak_rss_mb": peak_rss_mb}
    timing = result.timing.replace_schema_metadata({METADATA_KEY: json.dumps(timing_meta)})
    _write_atomically(timing, path.with_name(f"{unit.id}.timing.parquet"))
    meta = {"unit": unit.config(), "dataset_manifest_sha256": dataset_sha256, **provenance(), **(result.metadata or {})}
    outcome = result.outcome.replace_schema_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True)})
    _write_atomically(outcome, path)
    return path


def read_shard(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    table = pq.read_table(path)
    return table.to_pandas(), json.loads(table.schema.metadata[METADATA_KEY])


def read_timing(shard: Path) -> dict[str, Any] | None:
    path = shard.with_name(shard.name.replace(".parquet", ".timing.parquet"))
    if not path.exists():
        return None
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["algorithm_seconds"] = pc.sum(table["select_seconds"]).as_py() + pc.sum(table["update_seconds"]).as_py()
    # Every per-round timing column (select, update, and any an algorithm adds, e.g. M-CNB's split), summed.
    meta["totals"] = {name: pc.sum(table[name]).as_py() for name in table.column_names
                      if name != "t" and pa.types.is_floating(table.schema.field(name).type)}
    return meta
