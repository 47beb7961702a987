"""One declaration per dataset: what ``banditbench list``, every ``prepare`` command and its ``--help`` read.

A dataset module ends with ``register(Dataset(...))``: its name, a one-line description, the paper, the
protocol it is prepared for, its options (each with type, default, help and domain), the raw files it
reads (a :class:`~banditbench.data.fetch.RawSpec` with URLs and checksums) and the function that
prepares it. The command line adds the same source options to every dataset that reads raw files:
``--source``, ``--offline``, ``--force``, ``--no-verify``, ``--data-dir`` and ``--cache-dir``. A new
dataset is therefore one module (listed in ``banditbench.data.MODULES``) and a test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from banditbench.data.fetch import RawSpec
from banditbench.errors import UserError


@dataclass(frozen=True)
class Option:
    """A preprocessing option: ``name`` is the keyword of the prepare function and, with dashes, the flag."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()  # the allowed values, when the domain is a list
    minimum: float | None = None  # the smallest allowed value, for numbers
    maximum: float | None = None
    optional: bool = False  # None is allowed (and is the default when default is None)
    required: bool = False  # no default: the user must give it
    flag_name: str = ""  # the flag when it is not --name-with-dashes

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")

    def domain(self) -> str:
        if self.choices:
            return " | ".join(map(str, self.choices))
        if self.minimum is not None and self.maximum is not None:
            return f"between {self.minimum:g} and {self.maximum:g}"
        if self.minimum is not None:
            return "non-negative" if self.minimum == 0 else f"at least {self.minimum:g}"
        if self.maximum is not None:
            return f"at most {self.maximum:g}"
        return "a " + self.type.__name__

    def check(self, value: Any) -> Any:
        """``value`` if it lies in the option's domain; otherwise a one-line error naming the flag and domain."""
        if value is None:
            if self.required:
                raise UserError(f"{self.flag} is required ({self.help.rstrip('.')})")
            if self.optional or self.default is None:
                return None
        if self.type in (int, float) and isinstance(value, (int, float)) and not math.isfinite(value):
            raise UserError(f"{self.flag} must be a finite number, got {value}")
        if self.type is int and isinstance(value, float):  # 1e6 from Python or a config file means 1000000
            if not value.is_integer():
                raise UserError(f"{self.flag} must be a whole number, got {value!r}")
            value = int(value)
        outside = (
            (self.choices and value not in self.choices)
            or (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
        )
        if outside:
            raise UserError(f"{self.flag} must be {self.domain()}, got {value!r}")
        return value


@dataclass(frozen=True)
class Dataset:
    """A dataset family as banditbench knows it (see the module docstring)."""

    name: str
    description: str
    paper: str
    protocol: str  # the protocol it is prepared for by default
    # prepare(data_dir, *, force, **options) plus source, offline, cache and verify when it reads raw files
    prepare: Callable[..., Path] | None = None
    options: tuple[Option, ...] = ()
    raw: Callable[..., RawSpec] | None = None  # the raw files (URLs, checksums) for the options' defaults
    other_protocols: tuple[str, ...] = ()  # protocols a prepare option can choose instead
    reads_raw: bool = True  # False: built from nothing (synthetic) or from other prepared datasets
    named: bool = False  # prepared under --name (the user's own data), not under its own name
    files: str = ""  # the raw files it accepts, in words (docs, --help)

    def check(self, values: dict[str, Any]) -> dict[str, Any]:
        """Every option's value checked against its domain, before anything is read or written."""
        return {option.name: option.check(values.get(option.name, option.default)) for option in self.options}


DATASETS: dict[str, Dataset] = {}


def register(dataset: Dataset) -> Dataset:
    if dataset.name in DATASETS:
        raise ValueError(f"dataset {dataset.name!r} is declared twice")
    DATASETS[dataset.name] = dataset
    return dataset


def prepare_hint(name: str) -> tuple[str, str] | None:
    """The ``prepare`` command that builds dataset ``name``, and the name it prepares it under: the dataset's own
    command, or a family's command with one of its options (``movielens-1m``: ``prepare movielens --variant 1m``,
    prepared as ``movielens``). None when no command builds it."""
    dataset = DATASETS.get(name)
    if dataset is not None and dataset.prepare is not None and not dataset.named:
        return f"prepare {name}", name
    for family in DATASETS.values():
        rest = name.removeprefix(family.name + "-")
        if family.prepare is None or family.named or rest == name:
            continue
        option = next((o for o in family.options if rest in map(str, o.choices)), None)
        if option is not None:  # a listing-only declaration (synthetic-cosine) is prepared under its own name
            return f"prepare {family.name} {option.flag} {rest}", name if dataset is not None else family.name
    return None
