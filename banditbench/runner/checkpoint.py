"""Checkpoints inside a long unit, so that a resumed unit continues instead of restarting.

The contract is small, so that any policy fits it:
- the policy is pickled whole (numpy state, its own ``np.random.Generator``, torch modules and
  optimisers all pickle), together with the columns recorded so far and torch's global RNG state
  (for policies that draw from it, e.g. dropout);
- the environment is not pickled: it is rebuilt from its seed and its stream replayed up to the
  checkpoint round. Drawing rounds is cheap and, as DESIGN.md requires, an environment's rounds do
  not depend on the policy's choices, so the replayed stream is the one the unit saw.
A checkpoint is written to a temporary name and renamed, so a kill never leaves a torn file; it is
deleted once the unit's shard exists. Resuming therefore gives the same shard as an uninterrupted run.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any

CHECKPOINTS = "checkpoints"


class Checkpoints:
    def __init__(self, folder: Path, every: int):
        self.folder = Path(folder) / CHECKPOINTS
        self.every = every

    def path(self, unit) -> Path:
        return self.folder / f"{unit.id}.pkl"

    def save(self, unit, state: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        torch = sys.modules.get("torch")
        state = {**state, "unit": unit.config(), "torch_rng": None if torch is None else torch.get_rng_state()}
        path = self.path(unit)
        partial = path.with_name(f".{path.name}.partial")
        with open(partial, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)

    def load(self, unit) -> dict[str, Any] | None:
        """The saved state of ``unit``, or None; a checkpoint of another configuration is ignored."""
        path = self.path(unit)
        if not path.exists():
            return None
        with open(path, "rb") as f:
            state = pickle.load(f)
        if state["unit"] != unit.config():
            return None
        if state["torch_rng"] is not None:
            import torch

            torch.set_rng_state(state["torch_rng"])
        return state

    def clear(self, unit) -> None:
        self.path(unit).unlink(missing_ok=True)
