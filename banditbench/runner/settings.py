"""The settings of ``banditbench run``, from three layers: a preset, an experiment file, the flags.

Later layers win: built-in defaults < ``--preset`` (or ``preset = "…"`` in the file) < ``--config``
file < flags given on the command line. Hyper-parameter assignments (``--set`` / the ``[set]`` table)
merge name by name, so ``--set club.alpha=1`` overrides the file's ``club.alpha`` and keeps its
``club.ridge``. The experiment file is TOML with the flags' names as keys::

    dataset = "synthetic"
    algos = ["linucb-ind", "oracle"]      # or "linucb-ind,oracle"
    rounds = 2000
    seeds = 5
    tune-seeds = 3
    seed = 0
    budget = "none"                       # or an integer
    out = "results/ind-vs-oracle"
    jobs = 2
    checkpoint-every = 1000

    [set]
    "linucb-ind.alpha" = [0.1, 0.3, 1.0]  # a list is a grid
    [set.linucb-one]
    ridge = 1.0

    [env]                                 # protocol settings (``--env NAME=VALUE``), e.g. twostage's
    users = 100
    slate_size = 5

Protocol settings merge name by name like hyper-parameters; they are checked against the protocol's
``SETTINGS`` (names and defaults) in ``plan``. The preset layer comes from ``banditbench.presets.resolve``, which
sits above this module and stacks the three layers with :func:`combine`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomllib

from banditbench.errors import UserError
from banditbench.runner import grid

DEFAULTS: dict[str, Any] = {
    "dataset": "synthetic",
    "algos": ["random", "linucb-one", "linucb-ind", "oracle"],
    "rounds": 10_000,
    "seeds": 5,
    "tune-seeds": 0,
    "tune-rounds": 0,
    "seed": 0,
    "budget": None,
    "set": {},
    "out": None,
    "jobs": None,
    "backend": "local",
    "address": None,
    "gpus-per-unit": 0.0,
    "checkpoint-every": 0,
    "engine": "units",
    "preset": None,
    "protocol": None,  # a preset's protocol, checked against the prepared dataset's
    "env": {},  # protocol settings, NAME → value
}
KINDS = {
    "dataset": str,
    "rounds": int,
    "seeds": int,
    "tune-seeds": int,
    "tune-rounds": int,
    "seed": int,
    "out": str,
    "jobs": int,
    "backend": str,
    "address": str,
    "gpus-per-unit": (int, float),
    "checkpoint-every": int,
    "engine": str,
    "preset": str,
    "protocol": str,
}


def split_names(value: str | list[str]) -> list[str]:
    names = value.split(",") if isinstance(value, str) else value
    return [n.strip() for n in names if n.strip()]


def table_to_assignments(table: dict[str, Any], where: str) -> grid.Assignments:
    """``{"club.alpha": [..]}`` or ``{"club": {"alpha": [..]}}`` → assignments (one value becomes a list of one)."""
    assignments: grid.Assignments = {}
    for key, value in table.items():
        if isinstance(value, dict):
            for name, values in value.items():
                assignments.setdefault(key, {})[name] = values if isinstance(values, list) else [values]
        else:
            algo, dot, name = key.partition(".")
            if not dot or not name:
                raise UserError(f"{where}: [set] key {key!r} should read ALGO.NAME")
            assignments.setdefault(algo, {})[name] = value if isinstance(value, list) else [value]
    return assignments


def normalise(layer: dict[str, Any], where: str) -> dict[str, Any]:
    """Check a layer's keys and types; algos become a list, budget "none" becomes None, set an assignments table."""
    settings = {}
    for key, value in layer.items():
        key = key.replace("_", "-")
        if key not in DEFAULTS:
            raise UserError(f"{where}: unknown setting {key!r}; known: {', '.join(DEFAULTS)}")
        if key == "algos":
            value = split_names(value)
        elif key == "budget":
            if isinstance(value, str) and value.lower() == "none":
                value = None
            elif not isinstance(value, int) or isinstance(value, bool):
                raise UserError(f'{where}: budget should be an integer or "none", got {value!r}')
        elif key == "env":
            value = parse_env(value, where)
        elif key == "set":
            if isinstance(value, list):  # --set strings
                value = grid.parse_assignments(value)
            elif isinstance(value, dict):
                value = table_to_assignments(value, where)
            else:
                raise UserError(f"{where}: set should be a table of ALGO.NAME = value(s)")
        elif key in KINDS and not (isinstance(value, KINDS[key]) and not isinstance(value, bool)):
            raise UserError(f"{where}: {key} should be a {getattr(KINDS[key], '__name__', 'number')}, got {value!r}")
        settings[key] = value
    return settings


def parse_env(value: list[str] | dict[str, Any], where: str) -> dict[str, Any]:
    """``--env NAME=VALUE`` strings or an ``[env]`` table → ``{NAME: value}`` (cast later, by the protocol)."""
    if isinstance(value, dict):
        return {name.replace("-", "_"): v for name, v in value.items()}
    if not isinstance(value, list):
        raise UserError(f"{where}: env should be a table of NAME = value")
    settings = {}
    for text in value:
        name, sep, raw = text.partition("=")
        if not sep or not name.strip() or not raw.strip():
            raise UserError(f"--env expects NAME=VALUE, got {text!r}")
        name = name.strip().replace("-", "_")
        if name in settings:
            raise UserError(f"--env {name} is given twice ({settings[name]} and {raw.strip()}); give it once")
        settings[name] = raw.strip()
    return settings


def read_config(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as e:
        raise UserError(f"cannot read --config {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise UserError(
            f"--config {path} is not UTF-8 text (byte {e.start} is {e.object[e.start]:#04x}); TOML files "
            "are UTF-8: save it again as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"--config {path} is not valid TOML: {e}") from None


def combine(layers: list[dict[str, Any]], preset: str | None) -> dict[str, Any]:
    """The run's settings: the defaults overridden by each layer in turn (``set`` and ``env`` merged name by
    name), with the preset's name recorded (it ends up in the manifest, where the report finds it)."""
    settings = dict(DEFAULTS)
    for layer in layers:
        for key, value in layer.items():
            if key == "set":
                value = grid.merge(settings["set"], value)
            elif key == "env":
                value = {**settings["env"], **value}
            settings[key] = value
    settings["preset"] = preset
    return settings
