"""Engines: how the units of a run are grouped before the executor runs them (docs/architecture.md, "Engines"). An
engine chooses group sizes, nothing else: one policy object holds every member of a group (runner/unit.py).

- ``units`` (the default): every unit alone, a group of one, the engine the golden digests pin.
- ``lockstep``: the units of one configuration that differ only by seed, or also by the hyper-parameters the policy
  keeps per member (``member_params``: a tuning grid over them), run as one group, round by round together
  (runner/unit.py ``run_group``), for the algorithms whose policy holds every member (``MemberPolicy``,
  ``AlgorithmSpec.takes_members``); other algorithms' units still run alone. A group is one task of the
  executor, so each set is split into one group per worker (where it has members enough).

Lockstep is opt-in: a batched matrix product may round differently from the same product alone, so a unit's shard
can differ in its last bits from the ``units`` engine's, and a tie between arms may then break the other way. Its
choices are the same on the tested problems, and its regret is statistically the same (docs/performance.md).
"""

from __future__ import annotations

import json

from banditbench.algos import ALGORITHMS
from banditbench.envs import PROTOCOLS
from banditbench.errors import SettingError
from banditbench.results.units import Unit

ENGINES = ("units", "lockstep")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise SettingError("{engine} must be one of {engines}, got {value!r}", engines=", ".join(ENGINES), value=engine)
    return engine


def configuration(unit: Unit, varying: tuple[str, ...] = ()) -> tuple:
    """Everything that identifies a unit except its seed index and the hyper-parameters in ``varying``."""
    params = {name: value for name, value in unit.params.items() if name not in varying}
    return (
        unit.dataset,
        unit.protocol,
        unit.algorithm,
        json.dumps(params, sort_keys=True),
        unit.master_seed,
        unit.rounds,
        unit.budget,
        unit.tuning,
        json.dumps(unit.env, sort_keys=True),
    )


def group_units(units: list[Unit], engine: str, workers: int = 1) -> list[list[Unit]]:
    """The executor's tasks, in the units' order: one unit each, or with ``lockstep`` the members of one
    configuration of an algorithm whose policy holds every member (its seeds, and its cells of ``member_params``),
    each such set split into ``workers`` near-equal groups where it has members enough, so that no worker waits
    alone on one large group while the others are idle."""
    if check_engine(engine) == "units":
        return [[unit] for unit in units]
    sets: dict[tuple, list[Unit]] = {}
    for unit in units:
        spec = ALGORITHMS.get(unit.algorithm)
        logged = getattr(PROTOCOLS.get(unit.protocol), "logged", False)  # members would skip different events
        batched = spec is not None and spec.takes_members and not logged
        key = configuration(unit, spec.policy.member_params) if batched else (unit.id,)
        sets.setdefault(key, []).append(unit)
    groups = []
    for members in sets.values():
        n = min(workers, len(members))
        groups += [members[i * len(members) // n : (i + 1) * len(members) // n] for i in range(n)]
    return groups
