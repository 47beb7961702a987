"""The values a hyper-parameter may take. Every policy declares one domain per hyper-parameter, beside its
default (``domains`` on the class), and ``--set`` / ``[set]`` values are checked against it before anything
runs, so that a value the algorithm is not defined for (a negative exploration scale, a zero ridge that makes
A⁻¹ infinite, NaN) is an error and not a column of NaN regret.

``parse(value)`` takes a CLI string or a TOML value and returns the typed value, or raises ``ValueError`` whose
message names the domain (``describe()``); the caller adds where the value came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class Domain:
    def parse(self, value: Any) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def short(self) -> str:
        """A compact form for tables: ``>0``, ``[0, 1]``, ``int ≥1``, ``paper|bandpy``, ``bool``."""
        raise NotImplementedError

    def contains(self, value: Any) -> bool:
        try:
            return self.parse(value) == value
        except ValueError:
            return False


def number(value: Any, kind: type) -> Any:
    """``value`` as an int or a float; strings are parsed, bools refused (TOML's true is not a number)."""
    if isinstance(value, str):
        return kind(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError
    return kind(value)


@dataclass(frozen=True)
class Interval(Domain):
    """Finite numbers between ``low`` and ``high`` (None: unbounded), each end closed unless marked open."""

    kind: type = float
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def parse(self, value: Any) -> Any:
        try:
            parsed = number(value, self.kind)
        except (ValueError, TypeError):
            raise ValueError(f"expected {self.describe()}") from None
        if not math.isfinite(parsed) or not self.holds(parsed):
            raise ValueError(f"expected {self.describe()}")
        return parsed

    def holds(self, x: float) -> bool:
        if self.low is not None and (x < self.low or (self.low_open and x == self.low)):
            return False
        return not (self.high is not None and (x > self.high or (self.high_open and x == self.high)))

    def short(self) -> str:
        kind = "int " if self.kind is int else ""
        if self.high is None:
            return f"{kind}{'>' if self.low_open else '≥'}{self.low:g}" if self.low is not None else kind or "real"
        if self.low is None:
            return f"{kind}{'<' if self.high_open else '≤'}{self.high:g}"
        return f"{kind}{'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a finite real number"
        if self.low is None and self.high is None:
            return what
        if self.high is None:
            return f"{what} {'>' if self.low_open else '≥'} {self.low:g}"
        if self.low is None:
            return f"{what} {'<' if self.high_open else '≤'} {self.high:g}"
        return f"{what} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"


@dataclass(frozen=True)
class Choice(Domain):
    values: tuple[str, ...]

    def parse(self, value: Any) -> Any:
        if not isinstance(value, str) or value not in self.values:
            raise ValueError(f"expected {self.describe()}")
        return value

    def describe(self) -> str:
        return f"one of {', '.join(self.values)}"

    def short(self) -> str:
        return "|".join(self.values)


@dataclass(frozen=True)
class Flag(Domain):
    def parse(self, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
            return value.lower() in ("true", "1")
        raise ValueError(f"expected {self.describe()}")

    def describe(self) -> str:
        return "a bool (true or false)"

    def short(self) -> str:
        return "bool"


@dataclass(frozen=True)
class Optional(Domain):
    """``inner``, or None (written ``none``): "not set, use the rule the paper gives"."""

    inner: Domain

    def parse(self, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            return None
        try:
            return self.inner.parse(value)
        except ValueError:
            raise ValueError(f"expected {self.describe()}") from None

    def describe(self) -> str:
        return f"none or {self.inner.describe()}"

    def short(self) -> str:
        return f"none|{self.inner.short()}"


def real(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> Interval:
    return Interval(float, low, high, low_open, high_open)


def integer(low: int | None = None, high: int | None = None) -> Interval:
    return Interval(int, low, high)


# The domains most hyper-parameters have.
POSITIVE = real(0, low_open=True)  # ridge λ, noise σ, learning rates: zero or less is undefined or does nothing
NON_NEGATIVE = real(0)  # exploration scales α, β, ν: 0 turns exploration off
PROBABILITY = real(0, 1, low_open=True, high_open=True)  # confidence δ
FRACTION = real(0, 1)
COUNT = integer(1)  # sizes and numbers of things: at least one
STEPS = integer(0)  # numbers of steps or rounds: zero skips
FLAG = Flag()
