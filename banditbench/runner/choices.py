"""What a policy's ``select`` must return, checked where the round loop takes the choice: one arm index of the
round's pool (one-arm and logged rounds) or a slate of distinct item ids (slate rounds, runner/slate.py). A run and
the contract check of a plug-in (``banditbench.api.check_contract``) stop on the same broken choice, in one line."""

from __future__ import annotations

import numpy as np

from banditbench.errors import UserError


class BrokenChoice(ValueError):
    """A choice that is not what the round asked for, said as the rule select() broke."""


class BrokenContract(UserError):
    """A run stopped on ``algorithm``'s broken choice at round ``t``; ``rule``: the rule select() broke."""

    def __init__(self, algorithm: str, t: int, rule: str):
        super().__init__(algorithm, t, rule)  # all three, so that it crosses from a worker process whole
        self.algorithm, self.t, self.rule = algorithm, t, rule

    def __str__(self) -> str:
        return f"{self.algorithm} breaks the policy contract at round {self.t}: {self.rule}"


def arm_index(selected, n_arms: int) -> int:
    """``selected`` if it is one arm index of a pool of ``n_arms`` (a Python or NumPy integer, not a bool)."""
    if isinstance(selected, (bool, np.bool_)) or not isinstance(selected, (int, np.integer)):
        shape = f" of shape {selected.shape}" if isinstance(selected, np.ndarray) else ""
        raise BrokenChoice(
            f"select() must return one arm index (an int), got {type(selected).__name__}{shape}: {selected!r}"
        )
    if not 0 <= selected < n_arms:
        raise BrokenChoice(
            f"select() chose arm {selected}, outside the round's pool of {n_arms} arms (0..{n_arms - 1})"
        )
    return selected


def slate_of(selected, m: int, n_items: int, algorithm: str) -> np.ndarray:
    """``selected`` as a slate: ``m`` distinct item ids in 1..``n_items``."""
    try:
        slate = np.asarray(selected, dtype=np.int64)
    except (TypeError, ValueError):
        slate = None  # not a sequence of integers
    if slate is None or slate.shape != (m,) or len(np.unique(slate)) != m or slate.min() < 1 or slate.max() > n_items:
        shown = selected if slate is None else slate.tolist()
        raise BrokenChoice(
            f"select() must return a slate of {m} distinct item ids ({algorithm} returned {shown}; a slate is {m} "
            f"distinct item ids in 1..{n_items})"
        )
    return slate
