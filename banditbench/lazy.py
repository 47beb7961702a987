"""Registry entries named by ``"module:Class"`` strings, imported when first used.

A worker process that runs linucb units must not pay for importing torch, scikit-learn or
scipy.stats (seconds each, in every worker) because some other algorithm or protocol needs them, so
the algorithm and protocol registries name their classes by import path and import one only when a
unit, ``banditbench list`` or a report asks for it. A class object is accepted as well (tests,
plug-ins).
"""

from __future__ import annotations

import importlib
from typing import Any


def resolve(reference: type | str, package: str) -> Any:
    """The class itself, or ``module:Class`` imported (``.module`` is relative to ``package``); Python
    caches the module, so only the first call imports."""
    if not isinstance(reference, str):
        return reference
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module, package), name)
