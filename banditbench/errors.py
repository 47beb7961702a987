"""Errors a user can fix. The CLI prints them as one line and exits non-zero."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class UserError(Exception):
    """Bad input: an unknown name, a missing dataset, an unusable path or value."""


class Interrupted(Exception):
    """Ctrl-C during a run: which units it planned, where it wrote, and whether it was replacing old results."""

    def __init__(self, units: list, out, staged: bool, done: int | None = None):
        super().__init__("interrupted")
        self.units, self.out, self.staged = units, out, staged
        self.done = done  # units finished, where they lie in several folders below ``out``


class SettingError(UserError):
    """A run setting's bad value. The message names settings in braces, ``"{rounds} must be positive"``:
    ``banditbench.run`` users read the keyword (``rounds``), the CLI prints the flag (``--rounds``) through
    :meth:`naming`, so the runner that raises it never spells a flag."""

    def __init__(self, template: str, **values: Any):
        self.template, self.values = template, values
        super().__init__(self.naming(str))

    def naming(self, name: Callable[[str], str]) -> str:
        """The message, each setting in braces written as ``name(setting)``; ``values`` fill the other braces."""

        class Named(dict):
            def __missing__(self, setting: str) -> str:
                return name(setting)

        return self.template.format_map(Named(self.values))

    def __reduce__(self):
        """Pickled whole (a Ray worker's error reaches the driver), so the CLI can still name flags."""
        return (functools.partial(SettingError, self.template, **self.values), ())
