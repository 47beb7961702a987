"""Algorithms from outside the package: an import path (``my_pkg.my_module:MyPolicy``), a class, or an
installed plugin that registers through the entry-point group ``banditbench.algorithms``.

A plugin class declares itself with class attributes next to the ordinary policy contract
(banditbench/algos/base.py)::

    class EpsilonGreedy(Policy):
        name = "eps-greedy"                 # short, lower-case: --algos, --set NAME.param, shard and report names
        paper = "Sutton & Barto 2018, §2.2"
        description = "ε-greedy on per-arm mean rewards"   # default: the docstring's first line
        role = "baseline"                   # or "proposed" (the default)
        family = "linear"                   # optional: clustering, linear, neural, baseline [default: other]
        capabilities = ...                  # optional: what it needs from a run, as a registered algorithm declares

        def __init__(self, *, epsilon: float = 0.1, n_users, n_arms, dim, seed): ...

Its hyper-parameters and their defaults are read from the constructor, as for a registered algorithm.
A plugin package declares, in its pyproject.toml::

    [project.entry-points."banditbench.algorithms"]
    eps-greedy = "my_plugin.policy:EpsilonGreedy"

Resolving a plugin adds it to ``ALGORITHMS`` under its name for the rest of the process; worker
processes receive the same entries through :func:`added` and :func:`install`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from importlib import metadata

from banditbench import names
from banditbench.algos import PAPER_NAMES
from banditbench.algos.base import ALGORITHMS, FAMILIES, ROLES, AlgorithmSpec, Capabilities, Policy
from banditbench.errors import SettingError, UserError

GROUP = "banditbench.algorithms"
NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")

#: name → where a plugin came from, in words, for ``banditbench list``
ORIGINS: dict[str, str] = {}


def resolve(reference: str | type) -> str:
    """The registry name of ``reference``: a registered name, an installed plugin's name, an import path
    ``package.module:Class`` or a class. A plugin is added to ``ALGORITHMS`` on first use."""
    if isinstance(reference, type):
        return add(
            reference, f"class {reference.__module__}.{reference.__qualname__}", source=importable_path(reference)
        )
    if not isinstance(reference, str):
        raise UserError(f"an algorithm is a name, a 'package.module:Class' path or a class, got {reference!r}")
    if reference in ALGORITHMS:
        return reference
    if ":" in reference:
        return add(load_path(reference), f"import path {reference}", source=reference)
    for entry in entry_points():
        if entry.name == reference:
            return add_entry_point(entry)
    return names.pick(
        "algorithm",
        reference,
        ALGORITHMS,
        aliases=PAPER_NAMES,
        listing="`banditbench list algorithms` shows them all (or name a plugin's 'package.module:Class')",
    )


def load_path(path: str) -> type:
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise SettingError("{algos} {path!r}: an import path reads package.module:Class", path=path)
    if os.getcwd() not in sys.path and "" not in sys.path:  # as `python -m` does: the user's own modules
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SettingError(
            "{algos} {path!r}: cannot import {module} ({why})", path=path, module=module_name, why=e
        ) from None
    found = getattr(module, class_name, None)
    if not isinstance(found, type):
        raise SettingError(
            "{algos} {path!r}: {module} has no class {name}", path=path, module=module_name, name=class_name
        )
    return found


def entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name)


def add_entry_point(entry: metadata.EntryPoint) -> str:
    dist = f"{entry.dist.name} {entry.dist.version}" if entry.dist is not None else "an installed package"
    try:
        policy = entry.load()
    except Exception as e:  # a broken plugin must not take the others down with a traceback
        raise UserError(
            f"plugin {entry.name!r} ({entry.value}, from {dist}) cannot be loaded: {type(e).__name__}: {e}"
        ) from None
    name = add(policy, f"plugin from {dist}", source=entry.value)
    if name != entry.name:
        raise UserError(f"plugin {entry.value} is registered as {entry.name!r} but its class says name = {name!r}")
    return name


def importable_path(policy: type) -> type | str:
    """``module:Class`` when a worker process can import the class again by that path; the class itself
    otherwise (defined in ``__main__``, a notebook or a function: it runs only in this process)."""
    module = sys.modules.get(policy.__module__)
    if policy.__module__ == "__main__" or getattr(module, policy.__qualname__, None) is not policy:
        return policy
    return f"{policy.__module__}:{policy.__qualname__}"


def add(policy: type, origin: str, *, source: type | str) -> str:
    """Check ``policy``'s declaration and register it; return its name."""
    title = getattr(policy, "__qualname__", repr(policy))
    name = getattr(policy, "name", None)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise UserError(
            f"{title} does not declare a name: give the class a short lower-case `name` attribute "
            f'such as name = "my-policy" (letters, digits, - and _), got {name!r}'
        )
    if not issubclass(policy, Policy):
        raise UserError(f"{name} breaks the policy contract: {title} must subclass banditbench.algos.base.Policy")
    for method in ("select", "update"):
        if getattr(policy, method) is getattr(Policy, method):
            raise UserError(f"{name} breaks the policy contract: {title} has no {method}() method")
    if policy.privileged:
        raise UserError(
            f"{name} breaks the policy contract: only the oracle may see a round's hidden fields (privileged = True)"
        )
    known = ALGORITHMS.get(name)
    if known is not None and not same_class(known.policy, policy):
        raise UserError(
            f"{title} is named {name!r}, which is taken by "
            f"{ORIGINS.get(name, 'a built-in algorithm')}; choose another name"
        )
    if known is not None and known.policy is policy:
        return name
    role = getattr(policy, "role", "proposed")
    if role not in ROLES:
        raise UserError(f"{name}: role must be one of {', '.join(ROLES)}, got {role!r}")
    family = getattr(policy, "family", "other")
    if family not in FAMILIES:
        raise UserError(f"{name}: family must be one of {', '.join(FAMILIES)}, got {family!r}")
    doc = (policy.__doc__ or "").strip().splitlines()
    description = getattr(policy, "description", None) or (doc[0] if doc else title)
    # What the class declares it needs, as registered ones do; else read from its slate flag and defaults
    declared = getattr(policy, "capabilities", None)
    if declared is None:
        takes_device = "device" in inspect.signature(policy.__init__).parameters
        declared = Capabilities(slate=bool(getattr(policy, "slate", False)), device=takes_device)
    paper = getattr(policy, "paper", None) or "plugin"
    ALGORITHMS[name] = AlgorithmSpec(name, source, paper, description, role=role, capabilities=declared, family=family)
    ORIGINS[name] = origin
    return name


def same_class(a: type, b: type) -> bool:
    """The same class, or the same plugin class defined again (a notebook cell run twice replaces it)."""
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__) and issubclass(b, Policy)


def added() -> dict[str, tuple[AlgorithmSpec, str]]:
    """The plugins registered in this process, for :func:`install` in a worker process."""
    return {name: (ALGORITHMS[name], origin) for name, origin in ORIGINS.items()}


def install(specs: dict[str, tuple[AlgorithmSpec, str]]) -> None:
    for name, (spec, origin) in specs.items():
        ALGORITHMS.setdefault(name, spec)
        ORIGINS.setdefault(name, origin)


def discover() -> list[tuple[str, str]]:
    """Every installed plugin, loaded and registered: (name, origin); a plugin that cannot be loaded is
    listed with the reason instead."""
    found = []
    for entry in entry_points():
        try:
            found.append((add_entry_point(entry), ORIGINS.get(entry.name, "")))
        except UserError as e:
            found.append((entry.name, f"broken: {e}"))
    return found
