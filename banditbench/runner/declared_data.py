"""The data an experiment declares it needs, checked against the prepared dataset before anything is written.

A preset declares the preparation parameters of its paper's data (``banditbench/presets.py``): a dataset name and
the values of its ``banditbench prepare`` options. A run compares every declared value with what the prepared
dataset's manifest records. Data prepared otherwise is refused with the one ``banditbench prepare`` command that
builds the declared data; with ``allow_stand_in`` the run goes on and the differences are recorded as the run's
``stand_in``, which the report names in every verdict of its paper-vs-here table.
"""

from __future__ import annotations

import inspect
import shlex
from pathlib import Path
from typing import Any

from banditbench.data import DATASETS, Option, PreparedDataset, load_dataset
from banditbench.data.prepared import MANIFEST
from banditbench.errors import SettingError, UserError

DEFAULT_DATA_DIR = Path("datasets")


def recorded(option: Option, parameters: dict[str, Any]) -> Any:
    """What a manifest records for ``option``: under its flag's name (``--pipeline`` for ``pipeline_name``), or
    the option's default when the manifest leaves it out (options added later are recorded only when set)."""
    for key in (option.name, option.flag.removeprefix("--").replace("-", "_")):
        if key in parameters:
            return parameters[key]
    return option.default


def differences(dataset: str, needs: dict[str, Any], parameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every declared option whose prepared value differs: {option: {"needed": …, "prepared": …}}."""
    options = {o.name: o for o in DATASETS[dataset].options}
    found = {name: recorded(options[name], parameters) for name in needs}
    return {name: {"needed": value, "prepared": found[name]} for name, value in needs.items() if found[name] != value}


def prepared_parameters(prepared: PreparedDataset) -> dict[str, Any]:
    """A prepared dataset's parameters, with the protocol it was prepared for (a manifest keeps it apart)."""
    return {"protocol": prepared.manifest["protocol"], **prepared.parameters}


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return shlex.quote(str(value))


def prepare_command(dataset: str, needs: dict[str, Any], data_dir: Path, *, replace: bool = False) -> str:
    """The ``banditbench prepare`` command line that builds ``dataset`` with the ``needs`` values (options left at
    their defaults are not repeated); ``replace`` adds ``--force`` for a folder that holds other data."""
    spec = DATASETS[dataset]
    words = ["banditbench", "prepare", dataset]
    for option in spec.options:
        value = needs.get(option.name, option.default)
        if value == option.default:
            continue
        if option.type is bool:
            words.append(option.flag if value else f"--no-{option.flag[2:]}")
        else:
            words += [option.flag, _text(value)]
    if gated(dataset, needs):
        words += ["--source", "PATH"]  # data behind a terms form: the user downloads it and names it
    if Path(data_dir) != DEFAULT_DATA_DIR:
        words += ["--data-dir", shlex.quote(str(data_dir))]
    if replace:
        words.append("--force")
    return " ".join(words)


def gated(dataset: str, needs: dict[str, Any]) -> str:
    """Where to get ``dataset``'s raw files when they cannot be downloaded (a terms form), or ""."""
    spec = DATASETS[dataset]
    if spec.raw is None:
        return ""
    options = {o.name: needs.get(o.name, o.default) for o in spec.options}
    raw = spec.raw(**{name: options[name] for name in inspect.signature(spec.raw).parameters if name in options})
    return raw.gated or ""


def listing(values: dict[str, dict[str, Any]], side: str) -> str:
    """``differences``' values on one side ("needed" or "prepared"), as "name = value, …"."""
    return ", ".join(f"{name} = {value[side]}" for name, value in values.items())


def check(
    data_dir: Path, dataset: str, declared: dict[str, Any], *, allow_stand_in: bool, who: str
) -> dict[str, dict[str, Any]]:
    """The stand-in differences of running on ``data_dir/dataset`` when ``declared`` ({"dataset": name,
    "parameters": {option: value}}) is what ``who`` needs: {} when the prepared data is the declared one. Refuses,
    with the command that prepares the declared data, a missing dataset, and any difference unless
    ``allow_stand_in``."""
    needed, needs = declared["dataset"], declared["parameters"]
    folder = Path(data_dir) / needed
    command = prepare_command(needed, needs, data_dir, replace=folder.exists())
    if dataset != needed:
        if not allow_stand_in:
            raise SettingError(
                "{who} runs on {needed} (`{command}`); {dataset} {given} makes it a stand-in: "
                "pass {allow_stand_in} to run it anyway",
                who=who,
                needed=needed,
                command=command,
                given=dataset,
            )
        return {"dataset": {"needed": needed, "prepared": dataset}}
    if not (folder / MANIFEST).is_file():
        raise UserError(f"{who} needs {needed} prepared in {data_dir}/; prepare it with: {command}")
    found = differences(needed, needs, prepared_parameters(load_dataset(data_dir, needed)))
    if found and not allow_stand_in:
        where = gated(needed, needs)
        raise SettingError(
            "{who} needs {needed} prepared with {needs}, but {folder} was prepared with {prepared}; prepare it with: "
            "{command}{where}; or pass {allow_stand_in} to run on the prepared data as a stand-in",
            who=who,
            needed=needed,
            needs=listing(found, "needed"),
            folder=folder,
            prepared=listing(found, "prepared"),
            command=command,
            where=f" (PATH: {where})" if where else "",
        )
    return found
