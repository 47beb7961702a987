"""The settings of ``banditbench run``, from three layers: a preset, an experiment file, the flags.

Later layers win: built-in defaults < ``--preset`` (or ``preset = "…"`` in the file) < ``--config``
file < flags given on the command line. Hyper-parameter assignments (``--set`` / the ``[set]`` table)
merge name by name, so ``--set club.alpha=1`` overrides the file's ``club.alpha`` and keeps its
``club.ridge``. A preset's layer also carries ``prepared-with``, the data it declares (checked in ``plan``).
The experiment file is TOML with the flags' names as keys::

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

    allow-stand-in = false                # true: run a preset on data prepared otherwise than it declares

    [env]                                 # protocol settings (``--env NAME=VALUE``), e.g. twostage's
    users = 100
    slate_size = 5

Protocol settings merge name by name like hyper-parameters; they are checked against the protocol's
``SETTINGS`` (names and defaults) in ``plan``. The preset layer comes from ``banditbench.presets.resolve``, which
sits above this module and stacks the three layers with :func:`combine`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import tomllib

from banditbench.errors import SettingError, UserError
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
    "allow-stand-in": False,  # run a preset on data prepared otherwise than it declares (runner/declared_data.py)
}
# BASS's relaxation at which sharing stops paying: collaboration helps while ‖θ_i − θ_j‖_V ≤ (2 − √2)β (Cherkaoui
# et al. 2025, Eq. 1), the separation of two ellipsoids of radius γβ (Lemma 5.2) at γ* = 1 − 1/√2. The paper's runs
# take γ = 1 (its presets here too), which separates only agents it is sure of: on σ = 0.1 data, where its radius
# is mostly the ridge term √λ·S, it keeps sharing across clusters for the whole default benchmark.
GAMMA_STAR = 1 - 1 / math.sqrt(2)
# What a run without a preset gives an algorithm unless the file or the flags set it (a preset sets its paper's).
RUN_DEFAULTS: grid.Assignments = {"bass": {"gamma": [GAMMA_STAR]}}
# The default benchmark (``banditbench run`` naming no dataset, algorithms, preset or file), one experiment per
# part: clustering against one LinUCB per user and one for all on clustered linear users, and a neural bandit
# against the linear ones on the same users' non-linear reward (``prepare synthetic`` writes both datasets). The
# flags given apply to every part.
DEFAULT_BENCHMARK = (
    {
        "dataset": "synthetic",
        "algos": ["linucb-one", "linucb-ind", "club", "sclub", "bass", "oracle"],
        "rounds": 5000,
    },
    {"dataset": "synthetic-cosine", "algos": ["linucb-one", "linucb-ind", "neuucb-one", "oracle"], "rounds": 2000},
)
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
FLAGS = ("allow-stand-in",)  # true or false


@dataclass(frozen=True)
class RunSettings:
    """A run's settings, each under ``banditbench.run``'s keyword; the CLI's flag is the name with hyphens
    (``--tune-seeds``), and ``params`` is ``--set``. The flags given are one of these with None where not given;
    resolved over the preset, the file and the defaults (``banditbench.presets.resolve``), every field holds the
    value the run uses: ``rounds`` T per unit, ``seeds`` S reported per algorithm, ``seed`` the master seed,
    ``budget`` the arms scored per round (None: unlimited), ``params`` the hyper-parameter assignments, ``env``
    the protocol's settings, ``protocol`` the one a preset requires, ``prepared_with`` the data a preset or suite
    declares (checked against the prepared dataset's manifest)."""

    dataset: str | None = None
    algos: Any = None  # names: a list, or one comma-separated string among the flags given
    rounds: int | None = None
    seeds: int | None = None
    tune_seeds: int | None = None
    tune_rounds: int | None = None
    seed: int | None = None
    budget: int | str | None = None  # among the flags given, "none" overrides a preset's budget
    params: Any = None  # ``--set`` strings, or an assignments table (runner/grid.py)
    env: Any = None  # ``--env`` strings, or a table NAME → value
    out: str | None = None
    jobs: int | None = None
    backend: str | None = None
    address: str | None = None
    gpus_per_unit: float | None = None
    checkpoint_every: int | None = None
    engine: str | None = None
    allow_stand_in: bool | None = None
    preset: str | None = None
    protocol: str | None = None
    prepared_with: dict[str, Any] | None = None

    def layer(self) -> dict[str, Any]:
        """The settings given, under the experiment file's keys (``tune-seeds``, ``set``), for :func:`combine`."""
        return {key: value for key, value in self.record().items() if value not in (None, [])}

    def record(self) -> dict[str, Any]:
        """Every setting under the experiment file's keys, as the manifest records a run's settings."""
        record = {setting_key(f.name): getattr(self, f.name) for f in fields(self)}
        if self.prepared_with is None:  # only a preset or a suite declares its data
            del record["prepared-with"]
        return record

    @classmethod
    def with_defaults(cls, **given: Any) -> RunSettings:
        """The settings of a run that sets ``given`` and leaves every other setting at its default."""
        return cls.from_record({**DEFAULTS, **cls(**given).layer()})

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RunSettings:
        """The settings held under the experiment file's keys (a :func:`combine` of layers)."""
        return cls(**{f.name: record.get(setting_key(f.name)) for f in fields(cls)})


def setting_key(name: str) -> str:
    """A setting's key in an experiment file (and its flag without the ``--``)."""
    return "set" if name == "params" else name.replace("_", "-")


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
        elif key in FLAGS and not isinstance(value, bool):
            raise UserError(f"{where}: {key} should be true or false, got {value!r}")
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
            raise SettingError("{env} expects NAME=VALUE, got {text!r}", text=text)
        name = name.strip().replace("-", "_")
        if name in settings:
            raise SettingError(
                "{env} {name} is given twice ({first} and {second}); give it once",
                name=name,
                first=settings[name],
                second=raw.strip(),
            )
        settings[name] = raw.strip()
    return settings


def read_config(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as e:
        raise SettingError("cannot read {config} {path}: {why}", path=path, why=e.strerror) from None
    except UnicodeDecodeError as e:
        raise SettingError(
            "{config} {path} is not UTF-8 text (byte {at} is {byte:#04x}); TOML files are UTF-8: save it again "
            "as UTF-8",
            path=path,
            at=e.start,
            byte=e.object[e.start],
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise SettingError("{config} {path} is not valid TOML: {why}", path=path, why=e) from None


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
