"""Result shards (DESIGN.md, "Result shard"): their schema, writing, verifying and reading.

Each unit writes two Parquet files under ``<experiment>/shards/``:
- ``<unit>.parquet``: the per-round outcome (t, user, group, chosen, reward, expected_reward,
  best_expected_reward, regret, budget_spent; slate protocols: t, user, slate, clicked, slate_size, clicks, ctr,
  expected_reward, best_expected_reward, regret, budget_spent) with the unit's resolved config, the schema
  version and provenance in the file metadata. It is a pure function of the inputs and seed, hence
  bit-identical across runs.
- ``<unit>.timing.parquet``: per-round select/update seconds, wall time and peak memory. Timing
  differs on every run, so it lives apart to keep the outcome shard reproducible byte for byte.
Both are written to a temporary name and renamed; the outcome shard is written last, so a shard that
passes :func:`verify_shard` means the unit is complete (what ``--resume`` relies on).
"""

from __future__ import annotations

import errno
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

from banditbench.errors import UserError
from banditbench.results.units import Unit, UnitResult
from banditbench.version import __version__

METADATA_KEY = b"banditbench"
SHARDS = "shards"
SCHEMA_VERSION = 1  # bump when the outcome columns or their meaning change
REQUIRED_COLUMNS = ("t", "expected_reward", "best_expected_reward", "regret")  # every protocol's outcome has them
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


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
    return {
        "banditbench": __version__,
        "python": platform.python_version(),
        "libraries": libraries,
        "git_sha": git_sha,
        "device": "cpu",
    }


def disk_full(error: OSError, folder: Path, needed_bytes: int | None = None) -> UserError | None:
    """The one-line error for a full disk or quota while writing under ``folder``; None for other errors."""
    if error.errno not in DISK_FULL:
        return None
    need = f"; about {needed_bytes / 1e6:.1f} MB more are needed" if needed_bytes else ""
    return UserError(f"no space left writing to {folder} ({os.strerror(error.errno)}){need}")


def replace_atomically(path: Path, write) -> None:
    """``write(partial)`` then rename the partial file to ``path``; a failed write leaves neither file."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        write(partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def shard_path(folder: Path, unit: Unit) -> Path:
    return Path(folder) / SHARDS / f"{unit.id}.parquet"


def timing_path(shard: Path) -> Path:
    return shard.with_name(shard.name.replace(".parquet", ".timing.parquet"))


def write_shard(folder: Path, unit: Unit, result: UnitResult, dataset_sha256: str) -> Path:
    path = shard_path(folder, unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    peak_rss_mb = result.peak_rss_mb  # measured by the worker that ran the unit, else this process's peak so far
    if peak_rss_mb is None:
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    timing_meta = {"unit": unit.id, "wall_seconds": result.wall_seconds, "peak_rss_mb": peak_rss_mb}
    timing = result.timing.replace_schema_metadata({METADATA_KEY: json.dumps(timing_meta)})
    replace_atomically(timing_path(path), lambda p: pq.write_table(timing, p))
    meta = {
        "unit": unit.config(),
        "dataset_manifest_sha256": dataset_sha256,
        "schema_version": SCHEMA_VERSION,
        **provenance(),
        **(result.metadata or {}),
    }
    outcome = result.outcome.replace_schema_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True)})
    replace_atomically(path, lambda p: pq.write_table(outcome, p))
    return path


def verify_shard(path: Path, unit: Unit, dataset_sha256: str | None = None) -> str | None:
    """Why the outcome shard at ``path`` is not the complete result of ``unit`` (None when it is): it must
    read as Parquet from end to end, belong to this unit and dataset, and hold one row per round."""
    try:
        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[METADATA_KEY])
    except FileNotFoundError:
        return "missing"
    except Exception as e:  # a truncated or overwritten file fails in many ways, all of them "unreadable"
        return f"unreadable ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''})"
    if meta.get("unit") != unit.config():
        return "it holds another unit's configuration"
    if dataset_sha256 is not None and meta.get("dataset_manifest_sha256") != dataset_sha256:
        return "it was run on another version of the dataset"
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        return f"it lacks the column {missing[0]!r}"
    if table.num_rows != unit.rounds:
        return f"it has {table.num_rows} rows for {unit.rounds} rounds"
    return None


def read_shard(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    table = pq.read_table(path)
    return table.to_pandas(), json.loads(table.schema.metadata[METADATA_KEY])


def read_timing(shard: Path) -> dict[str, Any] | None:
    path = timing_path(shard)
    if not path.exists():
        return None
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["algorithm_seconds"] = pc.sum(table["select_seconds"]).as_py() + pc.sum(table["update_seconds"]).as_py()
    # Every per-round timing column (select, update, and any an algorithm adds, e.g. M-CNB's split), summed.
    meta["totals"] = {
        name: pc.sum(table[name]).as_py()
        for name in table.column_names
        if name != "t" and pa.types.is_floating(table.schema.field(name).type)
    }
    return meta


def estimated_bytes(rounds: int) -> int:
    """Disk size of one unit's two files, roughly: ten 8-byte columns per round, before compression."""
    return 8 * 10 * rounds + 64 * 1024
