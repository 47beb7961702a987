"""Checkpoints inside a long unit, so that a resumed unit continues instead of restarting.

What is saved: the unit's configuration, the round reached, the columns recorded so far, the policy's
``state_dict()`` (plain arrays, tensors and numbers: banditbench/algos/state.py) and torch's global RNG state
(for policies that draw from it, e.g. dropout). The environment is not saved: it is rebuilt from its seed and
its stream replayed up to the checkpoint round. Drawing rounds is cheap and, as docs/architecture.md requires, an
environment's rounds do not depend on the policy's choices, so the replayed stream is the one the unit saw.

The format cannot run code: one ``.npz`` file (a zip of ``.npy`` arrays, read with ``allow_pickle=False``)
whose entry ``tree`` is UTF-8 JSON describing the nesting, with the arrays referred to by name, and whose entry
``sha256`` is the checksum of the tree and every array. Nothing is ever unpickled, so a planted file can at worst
be rejected. A checkpoint is written to a temporary name and renamed, so a kill never leaves a torn file. One
that is unreadable anyway (a truncated copy, a foreign file), edited (its checksum no longer matches), of another
run, or whose round, columns or policy state do not fit the unit (:func:`check_state`, and the unit's own
loading) is discarded with a one-line warning, and the unit starts again from round 0. A checkpoint is deleted
once the unit's shard exists. Resuming therefore gives the same shard as an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from banditbench.algos.state import torch_or_none

CHECKPOINTS = "checkpoints"
SUFFIX = ".npz"


class Checkpoints:
    def __init__(self, folder: Path, every: int):
        self.folder = Path(folder) / CHECKPOINTS
        self.every = every

    def path(self, unit) -> Path:
        return self.folder / f"{unit.id}{SUFFIX}"

    def save(self, unit, state: dict[str, Any]) -> None:
        """``state``: plain data; ``policy`` holds the policy's ``state_dict()`` (a policy object given there is
        turned into it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        torch = torch_or_none()
        policy = state.get("policy")
        if hasattr(policy, "state_dict"):
            state = {**state, "policy": policy.state_dict()}
        state = {
            **state,
            "unit": config_text(unit),
            "torch_rng": None if torch is None else torch.get_rng_state().numpy(),
        }
        path = self.path(unit)
        partial = path.with_name(f".{path.name}.partial")
        with open(partial, "wb") as f:
            write(f, state)
        os.replace(partial, path)

    def load(self, unit) -> dict[str, Any] | None:
        """The saved state of ``unit``, or None; a checkpoint that cannot be this unit's is discarded with a
        warning (its columns and policy state are checked further as the unit loads them)."""
        path = self.path(unit)
        if not path.exists():
            return None
        try:
            state = read(path)
            check_state(state, unit)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
            self.discard(unit, str(e).splitlines()[0] if str(e) else type(e).__name__)
            return None
        return state

    def discard(self, unit, reason: str) -> None:
        """Delete ``unit``'s checkpoint, saying why in one line: the unit starts again from round 0."""
        path = self.path(unit)
        print(
            f"warning: checkpoint {path} is unusable ({reason}); unit {unit.id} restarts from round 0", file=sys.stderr
        )
        path.unlink(missing_ok=True)

    def clear(self, unit) -> None:
        self.path(unit).unlink(missing_ok=True)


def restore_rng(state: dict[str, Any]) -> None:
    """Set torch's global RNG as the checkpoint saved it (once the unit has accepted the checkpoint)."""
    if state.get("torch_rng") is not None:
        import torch

        torch.set_rng_state(torch.from_numpy(state["torch_rng"]))


def check_state(state: Any, unit) -> None:
    """Refuse (ValueError, naming what is wrong) a checkpoint that cannot hold ``unit`` after some of its rounds:
    another run's, a round counter that is not an integer in [1, rounds), columns that are not one value per
    round, a wall time or an RNG state of the wrong kind."""
    if not isinstance(state, dict) or not {"t", "policy", "columns", "unit", "wall_seconds"} <= state.keys():
        raise ValueError("entries missing")
    if state["unit"] != config_text(unit):
        raise ValueError("it belongs to another run: its unit's configuration differs")
    t = state["t"]
    if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t < unit.rounds:
        raise ValueError(f"its round {t!r} is not a round between 1 and {unit.rounds - 1}")
    columns, diagnostics = state["columns"], state.get("diagnostics", {})
    if not isinstance(columns, dict) or not columns or not isinstance(diagnostics, dict):
        raise ValueError("its columns are missing")
    for name, values in [*columns.items(), *diagnostics.items()]:
        if not isinstance(values, np.ndarray) or values.ndim < 1 or len(values) != unit.rounds:
            shape = getattr(values, "shape", type(values).__name__)
            raise ValueError(f"its column {name!r} has shape {shape}, not one value for each of {unit.rounds} rounds")
    wall = state["wall_seconds"]
    if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not 0 <= wall < float("inf"):
        raise ValueError(f"its wall time {wall!r} is not a number of seconds")
    rng = state.get("torch_rng")
    if rng is not None and (not isinstance(rng, np.ndarray) or rng.dtype != np.uint8 or rng.ndim != 1):
        raise ValueError("its torch RNG state is not a byte array")


def config_text(unit) -> str:
    return json.dumps(unit.config(), sort_keys=True)


# -- the file format: JSON for the nesting and the numbers, .npy entries for the arrays -------------------------


def write(f, tree: Any) -> None:
    """Write plain data (see banditbench/algos/state.py) to the binary file ``f``."""
    arrays: dict[str, np.ndarray] = {}
    seen: dict[int, dict] = {}  # an array held twice is stored once and comes back as one object

    def encode(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return {"f": repr(value)} if value != value or value in (float("inf"), float("-inf")) else value
        if isinstance(value, list):
            return [encode(v) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [encode(v) for v in value]}
        if isinstance(value, dict):
            return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
        if id(value) in seen:
            return seen[id(value)]
        torch = torch_or_none()
        if isinstance(value, np.ndarray):
            tag, array = "array", value
        elif isinstance(value, np.generic):
            tag, array = "scalar", np.asarray(value)
        elif torch is not None and isinstance(value, torch.Tensor):
            tag, array = "tensor", value.detach().cpu().numpy()
        else:
            raise TypeError(f"cannot checkpoint a {type(value).__name__}")
        if array.dtype.hasobject:
            raise TypeError("cannot checkpoint an array of Python objects")
        name = f"a{len(arrays)}"
        arrays[name] = array
        seen[id(value)] = ref = {tag: name}
        return ref

    text = json.dumps(encode(tree), allow_nan=False).encode()
    digest = np.frombuffer(checksum(text, arrays).encode(), np.uint8)
    np.savez(f, tree=np.frombuffer(text, np.uint8), sha256=digest, **arrays)


def checksum(text: bytes, arrays: dict[str, np.ndarray]) -> str:
    """sha256 of the tree and of every array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256(text)
    for name in sorted(arrays):
        array = arrays[name]
        digest.update(f"{name}:{array.dtype.str}:{array.shape}:".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def read(path: Path) -> Any:
    """Read what ``write`` wrote; never unpickles (``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as npz:
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise ValueError("not a checkpoint archive")
        text = npz["tree"].tobytes()
        arrays = {name: npz[name] for name in npz.files if name not in ("tree", "sha256")}
        if "sha256" not in npz.files or npz["sha256"].tobytes().decode() != checksum(text, arrays):
            raise ValueError("its checksum does not match its contents (edited or corrupted)")
        tree = json.loads(text.decode())
        loaded: dict[str, Any] = {}

        def decode(value: Any) -> Any:
            if isinstance(value, list):
                return [decode(v) for v in value]
            if not isinstance(value, dict):
                return value
            ((tag, inner),) = value.items()
            if tag == "f":
                return float(inner)
            if tag == "tuple":
                return tuple(decode(v) for v in inner)
            if tag == "dict":
                return {decode(k): decode(v) for k, v in inner}
            if inner not in loaded:
                array = arrays[inner]
                if tag == "scalar":
                    loaded[inner] = array[()]
                elif tag == "tensor":
                    import torch

                    loaded[inner] = torch.from_numpy(array)
                elif tag == "array":
                    loaded[inner] = array
                else:
                    raise ValueError(f"unknown entry {tag!r}")
            return loaded[inner]

        return decode(tree)


def to_bytes(tree: Any) -> bytes:
    """``tree`` serialised as ``write`` does (for measuring a state's size)."""
    buffer = io.BytesIO()
    write(buffer, tree)
    return buffer.getvalue()


__all__ = ["CHECKPOINTS", "Checkpoints", "check_state", "read", "restore_rng", "to_bytes", "write"]
