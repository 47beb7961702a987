"""Names a user types: algorithms, datasets, presets, protocols, hyper-parameters, formats.

One place resolves a typed name to a registered one and, when none fits, words the one-line error with the
closest valid names, so that every command and the Python API answer a typo the same way. A name matches
ignoring case and the separators ``-``, ``_``, ``+``, ``.`` and spaces when exactly one registered name does
(``CLUB`` → club, ``Meta-Ban`` → metaban); a paper's name maps to the registry's through ``aliases``, and an
alias that stands for several names (``NeuralUCB``: one network, or one per user) becomes a hint naming each.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from banditbench.errors import UserError

# An alias maps a paper's name to the registered names it may mean, each with a few words saying which is which.
Aliases = Mapping[str, tuple[tuple[str, str], ...]]

CLOSEST = 3  # names a suggestion offers at most: enough to catch a typo, never a dump of the registry
SHORT_LIST = 8  # choices few enough to name them all in the error


def folded(name: str) -> str:
    """``name`` without case and separators, the form two spellings of one name share."""
    return re.sub(r"[-_+.\s]", "", name).lower()


def closest(name: str, choices: Iterable[str], n: int = CLOSEST) -> list[str]:
    """Up to ``n`` of ``choices`` closest to ``name`` by difflib's ratio, compared in folded form."""
    by_fold: dict[str, str] = {}
    for choice in choices:
        by_fold.setdefault(folded(choice), choice)
    near = difflib.get_close_matches(folded(name), list(by_fold), n=n, cutoff=0.6)
    if not near:  # a prefix (``neural`` for ``neurallinear``) is closer than the ratio says
        near = [fold for fold in by_fold if folded(name) and fold.startswith(folded(name))][:n]
    return [by_fold[fold] for fold in near]


def resolve(name: str, choices: Iterable[str], aliases: Aliases | None = None) -> str | None:
    """The registered name ``name`` means, or None: itself, the one choice equal to it once folded, or the one
    name an alias stands for."""
    choices = list(choices)
    if name in choices:
        return name
    same = [choice for choice in choices if folded(choice) == folded(name)]
    if len(same) == 1:
        return same[0]
    meant = alias_targets(name, aliases)
    if len(meant) == 1 and meant[0][0] in choices:
        return meant[0][0]
    return None


def alias_targets(name: str, aliases: Aliases | None) -> tuple[tuple[str, str], ...]:
    for alias, targets in (aliases or {}).items():
        if folded(alias) == folded(name):
            return targets
    return ()


def did_you_mean(name: str, choices: Iterable[str], aliases: Aliases | None = None) -> str:
    """``did you mean a, b or c?``, the hint for an alias of several names, or "" when nothing is close."""
    meant = alias_targets(name, aliases)
    if len(meant) > 1:
        return f"{name} is {or_list([f'{target} ({gloss})' for target, gloss in meant])}"
    near = closest(name, choices)
    return f"did you mean {or_list(near)}?" if near else ""


def or_list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def unknown(
    kind: str, name: str, choices: Iterable[str], *, aliases: Aliases | None = None, listing: str | None = None
) -> UserError:
    """The one-line error for a ``kind`` (e.g. "algorithm") named ``name`` that is not among ``choices``:
    the closest names; when none is close, every choice if there are only a few, else ``listing`` (where to see
    them all)."""
    choices = list(choices)
    hint = did_you_mean(name, choices, aliases)
    if not hint:
        hint = f"choose from: {', '.join(choices)}" if len(choices) <= SHORT_LIST or not listing else listing
    return UserError(f"unknown {kind} {name!r}; {hint}")


def pick(
    kind: str, name: str, choices: Iterable[str], *, aliases: Aliases | None = None, listing: str | None = None
) -> str:
    """The registered name ``name`` means (see :func:`resolve`), or the :func:`unknown` error."""
    choices = list(choices)
    found = resolve(name, choices, aliases)
    if found is None:
        raise unknown(kind, name, choices, aliases=aliases, listing=listing)
    return found
