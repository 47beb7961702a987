"""A results folder: its manifest, the checks before anything is written into it, its lock, and the
bookkeeping that lets a resumed run (``resume``) finish it.

A folder holds banditbench results when its ``manifest.json`` says so (a JSON object with the run's
``config`` and planned ``units``). Only such a folder may be resumed or replaced (``overwrite``);
anything else non-empty is refused, so no user file is ever deleted or mixed with results. Results never go
into a prepared dataset or a folder of them. While a run writes into a folder it holds an exclusive ``flock``
on ``<folder>/.lock``, so a second run into the same folder is refused instead of racing the first; holding it,
the run also removes what a killed run into the same folder left (partial files, an overwrite's staging
folder). A symlinked ``out`` is followed: the results go where it points, and the link stays a link.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from banditbench.data import prepared_protocol
from banditbench.errors import SettingError, UserError
from banditbench.results.shards import SHARDS, replace_atomically

MANIFEST = "manifest.json"
LOCK = ".lock"
CHECKPOINTS = "checkpoints"
LARGEST_DATASET_MANIFEST = 2**20  # a prepared dataset's manifest is a few kB; a results folder's can be larger


def read_manifest(folder: Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(
            f"{folder} is not a results folder (no {MANIFEST}); run `banditbench run --out {folder}`"
        ) from None
    except (OSError, ValueError) as e:
        raise UserError(f"{path} is corrupt: {e}") from None
    if not isinstance(manifest, dict) or not {"config", "units"} <= set(manifest):
        raise UserError(f"{path} is corrupt: it lacks the run's config or units")
    return manifest


def is_results_folder(folder: Path) -> bool:
    try:
        read_manifest(folder)
    except UserError:
        return False
    return True


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    replace_atomically(Path(folder) / MANIFEST, lambda p: p.write_text(text))


def config_difference(saved: dict[str, Any], current: dict[str, Any], prefix: str = "") -> str | None:
    """The first setting that differs, as ``rounds: 300 in the folder, 301 now``; None if they agree."""
    for key in sorted(set(saved) | set(current)):
        name = f"{prefix}{key}"
        if key not in saved or key not in current:
            return (
                f"{name}: {'absent' if key not in saved else repr(saved[key])} in the folder, "
                f"{'absent' if key not in current else repr(current[key])} now"
            )
        a, b = saved[key], current[key]
        if isinstance(a, dict) and isinstance(b, dict):
            found = config_difference(a, b, f"{name}.")
            if found:
                return found
        elif a != b:
            return f"{name}: {a!r} in the folder, {b!r} now"
    return None


def _contents(folder: Path) -> list[str]:
    """What a folder holds, besides a run's lock and the partial files a killed run may leave."""
    return [p.name for p in folder.iterdir() if p.name != LOCK and not _partial(p.name)]


def _partial(name: str) -> bool:
    return name.startswith(".") and name.endswith(".partial")


def check_output(
    out: Path, config: dict[str, Any], *, overwrite: bool, resume: bool, data_dir: Path | None = None
) -> None:
    """Every refusal of the results folder ``out`` that can be decided without writing anything."""
    if overwrite and resume:
        raise SettingError("{overwrite} and {resume} exclude each other")
    if str(out).strip() == "":
        raise SettingError("{out} is empty; name a results folder")
    out = Path(out)
    where = out.resolve()
    cwd = Path.cwd().resolve()
    if where == cwd or where in cwd.parents:
        raise SettingError(
            "{out} {path} is the current folder or one above it; name a folder of its own for results", path=out
        )
    if data_dir is not None:
        data = Path(data_dir).resolve()
        if where == data or where in data.parents or data in where.parents:
            raise SettingError(
                "{out} {path} is the data folder {data}, inside it or above it; name another folder",
                path=out,
                data=data_dir,
            )
    refuse_data_folder(out, "{out}")
    for parent in reversed(out.parents):  # out = FILE/sub: blame FILE
        if parent.exists() and not parent.is_dir():
            raise SettingError("{out} {path}: {parent} is a file, not a folder", path=out, parent=parent)
    if out.exists() and not out.is_dir():
        raise SettingError("{out} {path} exists and is not a folder", path=out)
    if not out.exists():
        return
    try:
        contents = _contents(out)
    except OSError as e:
        raise SettingError("cannot read {out} {path}: {why}", path=out, why=e.strerror) from None
    if not contents:
        return
    results = is_results_folder(out)
    if not (overwrite or resume):
        if results:
            raise SettingError(
                "{path} already holds results; pass {resume} to finish it or {overwrite} to replace it", path=out
            )
        raise SettingError("{path} holds files but no banditbench results; choose another {out}", path=out)
    if not results:
        option = "{overwrite}" if overwrite else "{resume}"
        raise SettingError(
            "{path} holds files but no banditbench results (no valid {manifest}); "
            + option
            + " only touches a results folder, so choose another {out}",
            path=out,
            manifest=MANIFEST,
        )
    if resume:
        difference = config_difference(read_manifest(out)["config"], config)
        if difference:
            raise SettingError(
                "{resume}: {path} was run with other settings ({difference}); use another {out} or {overwrite}",
                path=out,
                difference=difference,
            )


def data_folder_of(path: Path) -> Path | None:
    """The prepared dataset, or the folder of prepared datasets, that ``path`` is or lies in; None if there is none."""
    path = Path(os.path.realpath(path))
    for folder in (path, *path.parents):
        if _is_dataset(folder):
            return folder
        try:
            # a results folder (it has shards) is skipped unread: a folder of past runs holds many
            children = [c for c in folder.iterdir() if (c / MANIFEST).is_file() and not (c / SHARDS).is_dir()]
        except OSError:  # not there yet, or not readable: holds nothing we could harm
            continue
        if any(_is_dataset(child) for child in children):
            return folder
    return None


def _is_dataset(folder: Path) -> bool:
    manifest = folder / MANIFEST
    try:
        small = manifest.stat().st_size <= LARGEST_DATASET_MANIFEST
    except OSError:
        return False
    return small and prepared_protocol(folder.parent, folder.name) is not None


def refuse_data_folder(path: Path, what: str) -> None:
    """Results and reports never go into prepared data, where they could mix with or replace a dataset's files.
    ``what`` names the folder in the message: a setting in braces (``"{out}"``) or plain words."""
    data = data_folder_of(path)
    if data is not None:
        raise SettingError(
            what + " {path} is in the prepared data under {data}; name a folder outside it", path=path, data=data
        )


def _lock(folder: Path, out: Path):
    handle = open(folder / LOCK, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise SettingError(
            "another banditbench run is writing to {path} (it holds {lock}); wait for it to finish or choose "
            "another {out}",
            path=out,
            lock=out / LOCK,
        ) from None
    return handle


class Output(os.PathLike):
    """Where a run writes: ``out`` itself, or a staging folder beside it when replacing old results, which
    are swapped out only when the new run completes. Holds the folder's lock until :meth:`close`."""

    def __init__(self, out: Path, *, overwrite: bool):
        self.out = Path(os.path.realpath(out))  # a symlink is followed: the swap then replaces its target
        self.created = not self.out.exists()
        self.staged = overwrite and not self.created and bool(_contents(self.out))
        self.locks = []
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.locks.append(_lock(self.out, self.out))
            remove_leftovers(self.out)
            if self.staged:
                self.target = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.", dir=self.out.parent))
                os.chmod(self.target, stat.S_IMODE(self.out.stat().st_mode))  # mkdtemp's 0700 would replace it
                self.locks.append(_lock(self.target, self.out))  # moves with the folder into place
            else:
                self.target = self.out
        except UserError:
            self.close()
            if self.created:
                shutil.rmtree(self.out, ignore_errors=True)
            raise
        except OSError as e:
            self.close()
            raise UserError(f"cannot write results to {out}: {e.strerror}") from None

    def __fspath__(self) -> str:
        return str(self.target)

    def __truediv__(self, name: str) -> Path:
        return self.target / name

    def close(self) -> None:
        for handle in self.locks:
            handle.close()
        self.locks = []

    def commit(self) -> None:
        """A staged run is complete: swap it in for the old results."""
        if self.staged:
            old = self.out.with_name(f".{self.out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.rename(self.out, old)
            os.rename(self.target, self.out)
            shutil.rmtree(old)
            self.target = self.out
            self.staged = False
        self.close()

    def discard(self) -> None:
        """A run failed: drop a staging folder (the old results stay), or a folder this run created that
        holds no finished unit and no checkpoint, so that a failed first attempt leaves nothing behind."""
        if self.staged:
            shutil.rmtree(self.target, ignore_errors=True)
        elif (
            self.created
            and not any((self.out / SHARDS).glob("*.parquet"))
            and not any((self.out / CHECKPOINTS).glob("*"))
        ):
            shutil.rmtree(self.out, ignore_errors=True)
        self.close()


def remove_leftovers(out: Path) -> None:
    """What a killed run into ``out`` left, removed by the next run once it holds ``out``'s lock (so no run is
    writing them now): partial files, an interrupted ``--overwrite``'s staging folder beside ``out`` (named as
    ``tempfile.mkdtemp`` names them, and holding a lock file) and the old results of a swap cut short."""
    for stale in [*out.glob(".*.partial"), *(out / SHARDS).glob(".*.partial")]:
        stale.unlink()
    staging = re.compile(rf"\.{re.escape(out.name)}\.[a-z0-9_]{{8}}")
    for folder in out.parent.iterdir():
        if staging.fullmatch(folder.name) and (folder / LOCK).is_file() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
    old = out.with_name(f".{out.name}.old")
    if old.is_dir() and not old.is_symlink() and is_results_folder(old):
        shutil.rmtree(old, ignore_errors=True)


def latest_experiment(results_dir: Path) -> Path:
    """The newest run under ``results_dir``: an experiment folder, or the folder of a default benchmark's parts."""
    manifests = [*Path(results_dir).glob(f"*/{MANIFEST}"), *Path(results_dir).glob(f"*/*/{MANIFEST}")]
    if not manifests:
        raise UserError(f"no experiments in {results_dir}/; run `banditbench run` first")
    newest = max(manifests, key=lambda p: p.stat().st_mtime)
    return Path(results_dir) / newest.relative_to(results_dir).parts[0]


def experiment_folders(folders: list[Path]) -> list[Path]:
    """``folders`` with each folder that holds no manifest but experiments one level below (a default benchmark's
    parts) replaced by those experiments."""
    found = []
    for folder in map(Path, folders):
        parts = sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))
        found += parts if parts and not (folder / MANIFEST).exists() else [folder]
    return found
