"""Errors a user can fix. The CLI prints them as one line and exits non-zero."""


class UserError(Exception):
    """Bad input: an unknown name, a missing dataset, an unusable path or value."""


class Interrupted(Exception):
    """Ctrl-C during a run: which units it planned, where it wrote, and whether it was replacing old results."""

    def __init__(self, units: list, out, staged: bool, done: int | None = None):
        super().__init__("interrupted")
        self.units, self.out, self.staged = units, out, staged
        self.done = done  # units finished, where they lie in several folders below ``out``
