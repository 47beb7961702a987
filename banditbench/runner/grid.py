"""Hyper-parameter assignments and grids: ``ALGO.NAME=V1,V2,…`` (``--set``) or ``{ALGO: {NAME: [V1, V2]}}``
(the ``[set]`` table of an experiment file). One value is an override, several are a grid whose
Cartesian product expands into one cell per combination, each run on every seed."""

from __future__ import annotations

import itertools
from typing import Any

from banditbench import names
from banditbench.algos import ALGORITHMS
from banditbench.algos.domains import Domain
from banditbench.errors import SettingError, UserError

Assignments = dict[str, dict[str, list[Any]]]  # algorithm → hyper-parameter → values (one value: an override)


def parse_assignments(texts: list[str]) -> Assignments:
    """``["club.alpha=0.01,0.1", "club.ridge=1"]`` → ``{"club": {"alpha": ["0.01", "0.1"], "ridge": ["1"]}}``."""
    assignments: Assignments = {}
    for text in texts:
        key, sep, raw = text.partition("=")
        algo, dot, name = key.strip().partition(".")
        if not sep or not dot or not name or not raw.strip():
            raise SettingError("{params} expects ALGO.NAME=VALUE or ALGO.NAME=VALUE,VALUE,…, got {text!r}", text=text)
        values = [v.strip() for v in raw.split(",")]
        given = assignments.setdefault(algo, {})
        if name in given:  # keeping the last would silently drop a value the user meant to run
            raise SettingError(
                "{params} {key} is given twice ({first} and {second}); give it once, "
                "with a comma-separated list for a grid: {params} {key}={both}",
                key=f"{algo}.{name}",
                first=",".join(given[name]),
                second=",".join(values),
                both=",".join(given[name] + values),
            )
        given[name] = values
    return assignments


def merge(*layers: Assignments) -> Assignments:
    """Later layers override earlier ones, hyper-parameter by hyper-parameter."""
    merged: Assignments = {}
    for layer in layers:
        for algo, values in layer.items():
            merged.setdefault(algo, {}).update(values)
    return merged


def cast(algo: str, name: str, value: Any, default: Any, setting: str = "params", domain: Domain | None = None) -> Any:
    """A CLI string or a TOML value → a value of the hyper-parameter's ``domain`` (its type, range or allowed
    values), or without one, of the type of the default (an int is accepted where a float is expected).
    ``setting`` is the run setting the value came in (``params``, or ``env`` for a protocol's settings)."""

    def refuse(problem: str) -> SettingError:
        where = f"{algo}.{name}={value!r}" if setting == "params" else f"{name}={value!r}"
        return SettingError("{" + setting + "} {where}: {problem}", where=where, problem=problem)

    if domain is not None:
        try:
            return domain.parse(value)
        except ValueError:
            raise refuse(f"{name} must be {domain.describe()}") from None
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "1", "false", "0"):
            return str(value).lower() in ("true", "1")
        raise refuse("expected a bool (true or false)")
    if default is None:  # no type to go by: TOML values as they are, strings as numbers where they parse
        if not isinstance(value, str):
            return value
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
        return None if value.lower() == "none" else value
    if isinstance(value, str):
        try:
            return type(default)(value)
        except ValueError:
            raise refuse(f"expected a {type(default).__name__}") from None
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not type(default):
        raise refuse(f"expected a {type(default).__name__}")
    return value


def resolve(assignments: Assignments, algorithms: list[str]) -> dict[str, dict[str, Any]]:
    """Every algorithm's hyper-parameters, defaults filled in; a grid keeps its list of values."""
    for algo in assignments:
        if algo not in algorithms:
            hint = names.did_you_mean(algo, algorithms)
            raise SettingError(
                "{params} {algo}.…: {algo!r} is not among {algos}" + ("; {hint}" if hint else ""), algo=algo, hint=hint
            )
    resolved = {}
    for algo in algorithms:
        defaults = ALGORITHMS[algo].defaults()
        domains = ALGORITHMS[algo].domains()  # a plug-in without declared domains is cast by its defaults' types
        params: dict[str, Any] = dict(defaults)
        for name, values in assignments.get(algo, {}).items():
            if name not in defaults:
                hint = names.did_you_mean(name, defaults) or f"it has: {', '.join(defaults) or 'none'}"
                raise UserError(f"{algo} has no hyper-parameter {name!r}; {hint}")
            values = [cast(algo, name, v, defaults[name], domain=domains.get(name)) for v in values]
            if len(set(map(repr, values))) != len(values):
                raise SettingError("{params} {algo}.{name} lists a value twice", algo=algo, name=name)
            params[name] = values[0] if len(values) == 1 else values
        resolved[algo] = params
    return resolved


def grid_keys(params: dict[str, Any]) -> list[str]:
    return [name for name, value in params.items() if isinstance(value, list)]


def cells(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The Cartesian product of the grid, in the order the values were given (last name varies fastest)."""
    keys = grid_keys(params)
    return [{**params, **dict(zip(keys, combination))} for combination in itertools.product(*(params[k] for k in keys))]


def cell_label(algo: str, cell: dict[str, Any], keys: list[str]) -> str:
    """``club[alpha=0.1,ridge=1]``: the algorithm and the grid coordinates of one cell."""
    return f"{algo}[{','.join(f'{k}={cell[k]}' for k in keys)}]" if keys else algo
