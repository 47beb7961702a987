"""Datasets: each family is one module here that declares itself with ``register(Dataset(...))``.

``banditbench list``, the ``prepare`` commands and their options are generated from ``DATASETS``
(data/registry.py). Adding a dataset: write its module and add its name to ``MODULES``.
"""

import importlib
import json
from pathlib import Path

from banditbench import names
from banditbench.data.prepared import MANIFEST, PreparedDataset, load_dataset
from banditbench.data.registry import DATASETS, Dataset, Option, register
from banditbench.errors import UserError

MODULES = (
    "synthetic",
    "movielens",
    "classification",
    "facebook",
    "lastfm",
    "yelp",
    "amazon",
    "logged",
    "own",
    "movielens_small",
    "authors",
    "yahoo",
    "openml",
)

for _module in MODULES:
    importlib.import_module(f"banditbench.data.{_module}")


def DatasetInfo(
    name: str,
    description: str,
    paper: str,
    protocol: str,  # noqa: N802
    other_protocols: tuple[str, ...] = (),
) -> Dataset:
    """A listing-only declaration (no prepare command), in the registry's earlier signature."""
    return Dataset(name, description, paper, protocol, other_protocols=other_protocols)


def prepared_protocol(data_dir: Path, name: str) -> str | None:
    """The protocol named in ``data_dir/name/manifest.json``, or None when there is no readable manifest."""
    manifest = Path(data_dir) / name / MANIFEST
    try:
        return json.loads(manifest.read_text())["protocol"] if manifest.is_file() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_plain_name(name: str) -> None:
    """A dataset is named, never given as a path: the name is one folder under the data folder."""
    if not name or name in (".", "..") or Path(name).name != name or name.startswith("~"):
        raise UserError(
            f"dataset {name!r} is a path, not a name; name a registered dataset or a folder directly under --data-dir"
        )


def check_dataset_name(data_dir: Path, name: str, protocols) -> None:
    """A registered dataset, or a folder under ``data_dir`` prepared (e.g. from the user's own data with
    ``prepare interactions --name``) for a protocol in ``protocols``; otherwise a one-line error."""
    check_plain_name(name)
    if name in DATASETS:
        return
    protocol = prepared_protocol(data_dir, name)
    if protocol is not None and protocol in protocols:
        return
    prepared = sorted(p.parent.name for p in data_dir.glob(f"*/{MANIFEST}")) if data_dir.is_dir() else []
    hint = names.did_you_mean(name, [*DATASETS, *prepared])
    raise UserError(
        f"unknown dataset {name!r}; {hint or '`banditbench list datasets` shows them.'} Data of your own: "
        f"`banditbench prepare interactions --name {name} --data-dir {data_dir}`"
    )


__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetInfo",
    "Option",
    "PreparedDataset",
    "check_dataset_name",
    "check_plain_name",
    "load_dataset",
    "prepared_protocol",
    "register",
]
