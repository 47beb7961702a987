"""Suites: a named list of datasets, each with its protocol settings, that every algorithm of a run is run on.

A suite turns one benchmark question into the field's answer over many problems, as the Contextual Bandit Bake-off
(Bietti, Agarwal & Langford 2021, §5) does over OpenML's classification datasets. ``banditbench run --suite NAME``
runs one experiment per member under the suite's folder (``OUT/DATASET/``), with the run's algorithms, rounds and
seeds; ``banditbench report OUT`` then ranks the algorithms across the members.

Built in: ``papers`` (the datasets of the five papers' presets), ``uci`` (every UCI set the registry knows),
``showdown`` (the problems of Riquelme, Tucker & Snoek's Showdown, 2018) and ``openml-cc18`` (the 72 datasets of the
OpenML-CC18 benchmark, Bischl et al. 2021, by OpenML dataset id). A suite
file is TOML::

    name = "small-uci"
    tune-on = ["letter"]                # optional: the members the Bake-off tuning reads

    [[member]]
    dataset = "shuttle"
    [member.env]                        # protocol settings, as --env
    [member.data]                       # preparation parameters the prepared data must have, as a preset's

    [[member]]
    dataset = "letter"
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from banditbench.errors import UserError

SUITE_FILE = "suite.json"  # written at the top of a suite's results folder; the report finds the suite by it


@dataclass(frozen=True)
class Member:
    """One dataset of a suite: its prepared name, the protocol settings it runs under and the preparation
    parameters it needs (empty: whatever is prepared)."""

    dataset: str
    env: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def prepare_command(self) -> str:
        """The command that prepares this member's data."""
        if self.dataset.startswith("openml-"):
            return f"banditbench prepare openml --id {self.dataset.removeprefix('openml-')}"
        options = "".join(f" --{k.replace('_', '-')} {v}" for k, v in self.data.items())
        return f"banditbench prepare {self.dataset}{options}"


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    members: tuple[Member, ...]
    tune_on: tuple[str, ...] = ()  # a declared tuning split: members that choose configurations, never reported

    @property
    def datasets(self) -> list[str]:
        return [m.dataset for m in self.members]


# The OpenML-CC18 benchmark suite (Bischl et al. 2021, "OpenML Benchmarking Suites", study 99): its 72
# classification datasets by OpenML dataset id.
OPENML_CC18 = (
    3, 6, 11, 12, 14, 15, 16, 18, 22, 23, 28, 29, 31, 32, 37, 38, 44, 46, 50, 54, 151, 182, 188, 300, 307, 458, 469,
    554, 1049, 1050, 1053, 1063, 1067, 1068, 1461, 1462, 1464, 1468, 1475, 1478, 1480, 1485, 1486, 1487, 1489, 1494,
    1497, 1501, 1510, 1590, 4134, 4534, 4538, 6332, 23381, 23517, 40499, 40668, 40670, 40701, 40923, 40927, 40966,
    40975, 40978, 40979, 40982, 40983, 40984, 40994, 40996, 41027,
)  # fmt: skip


def papers_suite() -> Suite:
    """Each dataset a paper's preset runs on, once, with the protocol settings of its first preset."""
    from banditbench.presets import PAPERS, PRESETS

    members: dict[str, Member] = {}
    for spec in PRESETS.values():
        if spec["paper"] in PAPERS:  # not the Showdown's or the logs' presets
            members.setdefault(spec["dataset"], Member(spec["dataset"], dict(spec["env"])))
    return Suite("papers", "The datasets of the five papers' presets.", tuple(members.values()))


def uci_suite() -> Suite:
    from banditbench.data.classification import UCI_SETS

    return Suite("uci", "Every UCI classification set banditbench prepares.", tuple(Member(n) for n in UCI_SETS))


def showdown_suite() -> Suite:
    """Every problem of the Showdown, each with the preparation parameters and protocol settings of its preset where
    it has one."""
    from banditbench.data import DATASETS
    from banditbench.presets import PRESETS, SHOWDOWN

    specs = {spec["dataset"]: spec for spec in PRESETS.values() if spec["paper"] == SHOWDOWN}
    problems = tuple(
        Member(n, dict(specs[n]["env"]), dict(specs[n]["data"])) if n in specs else Member(n)
        for n in DATASETS
        if n.startswith("showdown-")
    )
    return Suite("showdown", "The problems of the Deep Bayesian Bandits Showdown (Riquelme et al. 2018).", problems)


def openml_cc18_suite() -> Suite:
    members = tuple(Member(f"openml-{i}") for i in OPENML_CC18)
    return Suite("openml-cc18", "The 72 classification datasets of OpenML-CC18 (Bischl et al. 2021).", members)


BUILT_IN = {"papers": papers_suite, "uci": uci_suite, "showdown": showdown_suite, "openml-cc18": openml_cc18_suite}


def load_suite(name: str) -> Suite:
    """A built-in suite by name, or a suite file (TOML) by path."""
    if name in BUILT_IN:
        return BUILT_IN[name]()
    path = Path(name).expanduser()
    if not path.is_file():
        raise UserError(f"unknown suite {name!r}: neither a built-in ({', '.join(BUILT_IN)}) nor a suite file")
    return read_suite_file(path)


def read_suite_file(path: Path) -> Suite:
    where = f"suite file {path}"
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {where}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where} is not valid TOML: {e}") from None
    unknown = set(table) - {"name", "description", "member", "tune-on"}
    if unknown:
        raise UserError(f"{where}: unknown key {sorted(unknown)[0]!r}; known: name, description, tune-on, member")
    rows = table.get("member", [])
    if not isinstance(rows, list) or not rows:
        raise UserError(f"{where} declares no [[member]]; give each dataset as a [[member]] with dataset = NAME")
    members = []
    for i, row in enumerate(rows, 1):
        extra = set(row) - {"dataset", "env", "data"}
        if extra or not isinstance(row.get("dataset"), str):
            bad = f"unknown key {sorted(extra)[0]!r}" if extra else "no dataset = NAME"
            raise UserError(f"{where}: member {i} has {bad} (keys: dataset, env, data)")
        for key in ("env", "data"):
            if not isinstance(row.get(key, {}), dict):
                raise UserError(f"{where}: member {i}'s {key} should be a table of NAME = value")
        members.append(Member(row["dataset"], dict(row.get("env", {})), dict(row.get("data", {}))))
    suite = Suite(str(table.get("name", path.stem)), str(table.get("description", "")), tuple(members))
    check_members(suite, where)
    return with_tuning(suite, table.get("tune-on", []), where)


def check_members(suite: Suite, where: str) -> None:
    seen = set()
    for dataset in suite.datasets:
        if dataset in seen:
            raise UserError(f"{where} names dataset {dataset!r} twice; a suite runs each dataset once")
        seen.add(dataset)


def with_tuning(suite: Suite, names: list[str] | str, where: str) -> Suite:
    """``suite`` with its tuning members ``names`` (``--tune-on`` or the file's ``tune-on``), each a member."""
    names = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    unknown = [n for n in names if n not in suite.datasets]
    if unknown:
        raise UserError(f"{where}: tune-on {unknown[0]!r} is not a member of suite {suite.name}: {suite.datasets}")
    if names and len(set(names)) == len(suite.datasets):
        raise UserError(f"{where}: tune-on names every member of suite {suite.name}; leave some to report")
    return Suite(suite.name, suite.description, suite.members, tuple(dict.fromkeys(names)))


def write_suite_record(
    out: Path, suite: Suite, present: list[str], missing: list[str], tuned: list | None = None
) -> Path:
    """``OUT/suite.json``: the suite's members, which ran, which were missing, the tuning split and, after tuning,
    each algorithm's chosen configuration with the scores it was chosen by."""
    record = {
        "suite": suite.name,
        "description": suite.description,
        "members": [{"dataset": m.dataset, "env": m.env, "data": m.data} for m in suite.members],
        "present": present,
        "missing": {name: next(m for m in suite.members if m.dataset == name).prepare_command() for name in missing},
        "tune_on": list(suite.tune_on),
        "tuned": {
            t.algorithm: {"chosen": t.chosen, "cell": t.label, "criterion": t.criterion, "scores": t.scores}
            for t in tuned or []
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    staged = out / f".{SUITE_FILE}.tmp"
    staged.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    staged.replace(out / SUITE_FILE)
    return out / SUITE_FILE


def read_suite_record(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / SUITE_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"{path} is not a suite record ({e}); run the suite again with --resume") from None
