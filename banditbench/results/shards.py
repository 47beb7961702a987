"""Result shards (docs/architecture.md, "Result shard"): their schema, writing, verifying and reading.

Each unit writes three files under ``<experiment>/shards/``:
- ``<unit>.parquet``: the per-round outcome (t, user, group, chosen, reward, expected_reward,
  best_expected_reward, regret, budget_spent; slate protocols: t, user, slate, clicked, slate_size, clicks, ctr,
  expected_reward, best_expected_reward, regret, budget_spent) with the unit's resolved config, its id and the
  sha256 of that config, the schema version and provenance in the file metadata. It is a pure function of the
  inputs and seed, hence bit-identical across runs.
- ``<unit>.timing.parquet``: per-round select/update seconds, wall time and peak memory. Timing
  differs on every run, so it lives apart to keep the outcome shard reproducible byte for byte.
- ``<unit>.sha256.json``: the unit's identity (id, algorithm, seed, sha256 of its config) and the sha256 of the
  two Parquet files, written last. A unit is complete when its record is there and both files still hash to it:
  a shard copied over another unit's, edited or with a flipped bit is then named and refused, by ``report`` and
  by ``--resume`` alike. One small record per unit, rather than checksums in the shared manifest, keeps every
  write atomic (each file is written to a temporary name and renamed) and costs the same for the ten-thousandth
  unit as for the first; a run killed between the shard and its record leaves a unit that ``--resume`` runs again.

Paths reach pyarrow absolute, so that it never expands a ``~`` of ours into the home folder.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import platform
import resource
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
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
UNDEFINED_ON_LOGS = ("expected_reward", "best_expected_reward", "regret")
RECORD_SUFFIX = ".sha256.json"
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


@cache
def machine() -> str:
    """The processor model and core count of this machine, for the timing sidecar: seconds depend on both."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    except OSError:
        pass
    model = model or platform.processor() or platform.machine() or "unknown processor"
    return f"{model} ({os.cpu_count()} cores)"


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


def record_path(shard: Path) -> Path:
    return shard.with_name(shard.name.replace(".parquet", RECORD_SUFFIX))


def config_sha256(config: dict[str, Any]) -> str:
    """The identity of a unit's configuration: sha256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _write_parquet(path: Path, table: pa.Table) -> str:
    """Write ``table`` atomically to ``path``; the sha256 of the bytes written."""
    digest = []

    def write(partial: Path) -> None:
        pq.write_table(table, os.path.abspath(partial))
        digest.append(file_sha256(partial))

    replace_atomically(path, write)
    return digest[0]


def write_shard(folder: Path, unit: Unit, result: UnitResult, dataset_sha256: str) -> Path:
    path = shard_path(folder, unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    peak_rss_mb = result.peak_rss_mb  # measured by the worker that ran the unit, else this process's peak so far
    if peak_rss_mb is None:
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    timing_meta = {
        "unit": unit.id,
        "wall_seconds": result.wall_seconds,
        "peak_rss_mb": peak_rss_mb,
        "machine": machine(),
    }
    timing = result.timing.replace_schema_metadata({METADATA_KEY: json.dumps(timing_meta)})
    config = unit.config()
    identity = {"unit_id": unit.id, "unit_sha256": config_sha256(config)}
    meta = {
        "unit": config,
        **identity,
        "dataset_manifest_sha256": dataset_sha256,
        "schema_version": SCHEMA_VERSION,
        **provenance(),
        **(result.metadata or {}),
    }
    outcome = result.outcome.replace_schema_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True)})
    sums = {timing_path(path).name: _write_parquet(timing_path(path), timing), path.name: _write_parquet(path, outcome)}
    record = {
        **identity,
        "algorithm": unit.algorithm,
        "seed_index": unit.seed_index,
        "tuning": unit.tuning,
        "sha256": sums,
    }
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    replace_atomically(record_path(path), lambda p: p.write_text(text))
    return path


def remove_shard(path: Path) -> None:
    """Remove a unit's files, its record first: a unit without a record is unfinished whatever else is left."""
    for name in (record_path(path), path, timing_path(path)):
        name.unlink(missing_ok=True)


class BrokenShard(Exception):
    """Why a unit's files are not its complete result, in words fit for a one-line error."""


def _read_verified(path: Path, expected: str, what: str = "its bytes") -> pa.Table:
    """The Parquet table at ``path`` whose bytes hash to ``expected``: read once, then hashed and parsed."""
    data = Path(os.path.abspath(path)).read_bytes()
    if hashlib.sha256(data).hexdigest() != expected:
        raise BrokenShard(f"{what} do not match its checksum record (edited, replaced or corrupted)")
    try:
        return pq.read_table(pa.BufferReader(data))
    except Exception as e:  # a file can match a checksum and still not be Parquet (its record written to match)
        raise BrokenShard(f"{what} are not Parquet ({type(e).__name__}: {_first_line(e)})") from None


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:120] if str(error) else ""


def read_record(path: Path) -> dict[str, Any]:
    """The checksum record of the shard at ``path`` (its unit id is the file name's)."""
    record_file = record_path(path)
    try:
        record = json.loads(record_file.read_text())
    except FileNotFoundError:
        raise BrokenShard(
            f"it has no checksum record {record_file.name}: its unit did not finish, or an older banditbench wrote it"
        ) from None
    except (OSError, ValueError) as e:
        raise BrokenShard(f"its checksum record {record_file.name} is unreadable ({_first_line(e)})") from None
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), dict):
        raise BrokenShard(f"its checksum record {record_file.name} is not one")
    if record.get("unit_id") != path.name.removesuffix(".parquet"):
        raise BrokenShard(
            f"it holds unit {record.get('unit_id')!r}, not {path.name.removesuffix('.parquet')!r} "
            "(copied over another unit's shard?)"
        )
    return record


def read_verified(path: Path) -> tuple[pa.Table, dict[str, Any]]:
    """The outcome table of the shard at ``path`` and its metadata, once both agree with the shard's checksum
    record and the outcome columns are finite; :class:`BrokenShard` says why not."""
    record = read_record(path)
    table = _read_verified(path, record["sha256"].get(path.name))
    try:
        meta = json.loads(table.schema.metadata[METADATA_KEY])
        unit = meta["unit"]
    except (TypeError, KeyError, ValueError):
        raise BrokenShard("its metadata lacks the unit's configuration") from None
    if config_sha256(unit) != record.get("unit_sha256") or meta.get("unit_sha256") != record.get("unit_sha256"):
        raise BrokenShard("its configuration does not match its checksum record")
    non_finite(table, logged="logged" in meta)
    return table, meta


def non_finite(table: pa.Table, *, logged: bool = False) -> None:
    """A NaN or infinite value in an outcome column (diagnostics excepted: NaN between their samples) is named.
    A log's shard (runner/logged.py) has no expected rewards, hence no regret, and no reward on the events its
    evaluator skipped: NaN there is its format; a kept event's reward must be finite."""
    for name in table.column_names:
        column = table[name]
        if name.startswith("diag_") or not pa.types.is_floating(column.type):
            continue
        if logged and name in UNDEFINED_ON_LOGS:
            continue
        values = column.to_numpy()
        bad = ~np.isfinite(values)
        if logged and name == "reward":
            if "kept" not in table.column_names:
                raise BrokenShard("its logged events lack the column 'kept'")
            bad &= table["kept"].to_numpy(zero_copy_only=False)
        if bad.any():
            t = int(np.argmax(bad))
            raise BrokenShard(f"its column {name!r} holds {values[t]} at round {t}")


def verify_shard(path: Path, unit: Unit, dataset_sha256: str | None = None) -> str | None:
    """Why the outcome shard at ``path`` is not the complete result of ``unit`` (None when it is): its files must
    match their checksum record, belong to this unit and dataset, hold one row per round and finite outcomes."""
    if not path.exists():
        return "missing"
    try:
        table, meta = read_verified(path)
        read_timing(path)  # checked against the record too
    except BrokenShard as e:
        return str(e)
    if meta.get("unit") != unit.config():
        return "it holds another unit's configuration"
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        return f"it lacks the column {missing[0]!r}"
    if dataset_sha256 is not None and meta.get("dataset_manifest_sha256") != dataset_sha256:
        return "it was run on another version of the dataset"
    if table.num_rows != unit.rounds:
        return f"it has {table.num_rows} rows for {unit.rounds} rounds"
    return None


def read_shard(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The verified outcome of the shard at ``path`` and its metadata (:class:`BrokenShard` if it fails)."""
    table, meta = read_verified(path)
    return table.to_pandas(), meta


def read_timing(shard: Path) -> dict[str, Any]:
    """The timing sidecar of ``shard``, checked against the shard's record: wall time, peak memory, and every
    per-round float column summed."""
    record = read_record(shard)
    path = timing_path(shard)
    if not path.exists():
        raise BrokenShard(f"its timing sidecar {path.name} is missing")
    table = _read_verified(path, record["sha256"].get(path.name), f"the bytes of its timing sidecar {path.name}")
    try:
        meta = json.loads(table.schema.metadata[METADATA_KEY])
        meta["algorithm_seconds"] = pc.sum(table["select_seconds"]).as_py() + pc.sum(table["update_seconds"]).as_py()
    except (TypeError, KeyError, ValueError):
        raise BrokenShard(f"its timing sidecar {path.name} lacks its metadata or seconds") from None
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
