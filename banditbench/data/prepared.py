"""Prepared datasets on disk (docs/architecture.md, "Prepared dataset"): Parquet tables plus ``manifest.json``.

A dataset is built in a temporary sibling folder and renamed into place only when complete, so a
crash or a bad input never leaves a half-written ``datasets/<name>/`` and never clobbers a good one.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from banditbench import names
from banditbench.data.fetch import sha256_of
from banditbench.data.registry import DATASETS, prepare_hint
from banditbench.errors import UserError
from banditbench.version import __version__

MANIFEST = "manifest.json"


def physical_memory() -> int | None:
    """This machine's memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def write_parquet(table: pd.DataFrame | pa.Table, path: Path) -> None:
    pq.write_table(table if isinstance(table, pa.Table) else pa.Table.from_pandas(table, preserve_index=False), path)


def existing_parameters(folder: Path) -> dict[str, Any] | None:
    """The preprocessing parameters of a dataset already prepared in ``folder``, if any."""
    manifest = Path(folder) / MANIFEST
    return json.loads(manifest.read_text())["parameters"] if manifest.is_file() else None


def up_to_date(folder: Path, parameters: dict[str, Any], force: bool) -> bool:
    """True when ``folder`` already holds this dataset prepared with ``parameters`` (prepare is idempotent)."""
    return not force and existing_parameters(folder) == json.loads(json.dumps(parameters))


def write_dataset(
    folder: Path,
    name: str,
    tables: dict[str, pd.DataFrame | pa.Table],
    parameters: dict[str, Any],
    *,
    protocol: str,
    raw_files: list[dict[str, Any]] | None = None,
    counts: dict[str, int] | None = None,
    force: bool = False,
    rows: dict[str, Any] | None = None,
    verification: str | None = None,
    allow_unresolved: bool = False,
    reader_warnings: tuple[str, ...] | list[str] = (),
) -> Path:
    """Write ``tables`` and a manifest to ``folder`` atomically; replace an existing one only with ``force``.

    The manifest carries the sanity report (``sanity``: ``rows`` read/kept/dropped and the protocol's
    figures, see data/sanity.py), its ``warnings`` (one-line strings that run and report repeat) and
    ``verification`` (``verified``, ``unverified`` after ``--no-verify``, or ``no published checksum``);
    ``reader_warnings`` (what the readers noticed in the raw files) come first among the warnings."""
    from banditbench.data import sanity

    folder = Path(folder)
    if folder.exists() and not force:
        raise UserError(f"{folder} already exists; pass --force to rebuild it or --data-dir to write elsewhere")
    report, warnings = sanity.analyse(  # may refuse the data
        protocol, tables, allow_unresolved=allow_unresolved, parameters=parameters, name=name
    )
    warnings = [*reader_warnings, *warnings]
    if rows is not None:
        report = {"rows": rows, **report}
    if verification == "unverified":
        warnings = [
            "unverified: prepared with --no-verify from files that do not match (or were not checked "
            "against) the published checksums",
            *warnings,
        ]
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError as e:
        raise UserError(f"cannot write to {folder.parent}: {e.strerror}") from None
    try:
        files = {}
        for table_name, frame in tables.items():
            path = staging / f"{table_name}.parquet"
            write_parquet(frame, path)
            files[table_name] = {"file": path.name, "rows": len(frame), "sha256": sha256_of(path)}
        manifest = {
            "name": name,
            "verification": verification or "no raw files",
            "protocol": protocol,
            "parameters": parameters,
            "raw_files": raw_files or [],
            "counts": counts or {},
            "sanity": report,
            "warnings": warnings,
            "tables": files,
            "banditbench_version": __version__,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp makes it 0700: readable like any folder the user makes
        swap_into_place(staging, folder)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        needed = sum(table_bytes(t) for t in tables.values()) / 1e6
        raise UserError(
            f"{folder.parent}: no space left on the device; the dataset needs about {needed:,.0f} MB "
            "(nothing was written; free some space and prepare again)"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def table_bytes(table: pd.DataFrame | pa.Table) -> int:
    return table.nbytes if isinstance(table, pa.Table) else int(table.memory_usage(deep=True).sum())


def swap_into_place(staging: Path, folder: Path) -> None:
    """Rename a completed staging folder to ``folder``, replacing an existing one only once the new one is whole."""
    if folder.exists():
        old = folder.with_name(f".{folder.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.rename(folder, old)
        os.rename(staging, folder)
        shutil.rmtree(old)
    else:
        os.rename(staging, folder)


@dataclass(frozen=True)
class PreparedDataset:
    name: str
    path: Path
    manifest: dict[str, Any]
    manifest_sha256: str
    # Arrow tables already read (memory-mapped), so the units run by one process read each file once.
    _tables: dict[str, pa.Table] = field(default_factory=dict, compare=False, repr=False)

    @property
    def parameters(self) -> dict[str, Any]:
        return self.manifest["parameters"]

    def arrow(self, table_name: str) -> pa.Table:
        """``table_name`` as an Arrow table (memory-mapped, read once; for vectorised reading of list columns)."""
        if table_name not in self._tables:
            path = self.path / self.manifest["tables"][table_name]["file"]
            self._tables[table_name] = pq.read_table(path, memory_map=True)
        return self._tables[table_name]

    def table(self, table_name: str) -> pd.DataFrame:
        """A fresh DataFrame of ``table_name`` (callers may modify it); the file is read once."""
        return self.arrow(table_name).to_pandas()


def load_dataset(data_dir: Path, name: str) -> PreparedDataset:
    path = Path(data_dir) / name
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise UserError(not_prepared(Path(data_dir), name))
    try:
        manifest = json.loads(manifest_path.read_text())
        return PreparedDataset(name, path, manifest, sha256_of(manifest_path))
    except OSError as e:
        raise UserError(f"cannot read the prepared dataset {path}: {e.strerror}") from None
    except ValueError:
        raise UserError(f"{manifest_path} is not valid JSON; prepare {name} again with --force") from None


def not_prepared(data_dir: Path, name: str) -> str:
    """Why ``name`` cannot be loaded from ``data_dir``, with the prepare command that builds it, or the closest
    names when none does."""
    where = f" --data-dir {data_dir}" if data_dir != Path("datasets") else ""
    hint = prepare_hint(name)
    if hint is not None:
        command, folder = hint
        named = "" if folder == name else f" (under the name {folder!r})"
        return f"dataset {name!r} is not prepared in {data_dir}/; run `banditbench {command}{where}` first{named}"
    prepared = sorted(p.parent.name for p in data_dir.glob(f"*/{MANIFEST}")) if data_dir.is_dir() else []
    hint = names.did_you_mean(name, [*DATASETS, *prepared])
    suggestion = f" ({hint})" if hint else ""
    held = f"; {data_dir}/ holds {', '.join(prepared)}" if prepared else ""
    return (
        f"no dataset {name!r} in {data_dir}/{suggestion}{held}; `banditbench list datasets` shows what prepare builds"
    )
