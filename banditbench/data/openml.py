"""OpenML classification datasets (Vanschoren et al. 2013) under the classification protocol, by dataset id.

``prepare openml --id N`` downloads the dataset's description from OpenML's API, then its data file (ARFF) with the
md5 the description publishes, and prepares it as ``openml-N``; ``--source`` reads a local ARFF file instead.
OpenML stores datasets as ARFF (Witten & Frank's format): a header of ``@attribute`` lines (numeric, integer, real,
a nominal ``{a, b, c}``, string or date) and ``@data`` rows, dense (comma-separated, ``?`` missing) or sparse
(``{index value, …}``, omitted values 0). The Bake-off's classification-to-bandit conversion (Bietti et al. 2021,
§5) then takes one arm per class: numeric features as they are, nominal features one-hot, string and date features
dropped; missing numeric values take their column's mean and missing nominal values their column's most frequent
category, and rows without a class are dropped; each is counted in the manifest's warnings.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import classification as labelled
from banditbench.data.fetch import Download, RawSpec, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

API = "https://api.openml.org/api/v1/json/data/"
DATA = "https://api.openml.org/data/v1/download/"
ATTRIBUTE = re.compile(r"^@attribute\s+('(?:[^']|\\')*'|\"(?:[^\"]|\\\")*\"|\S+)\s+(.+)$", re.IGNORECASE)
NUMERIC = ("numeric", "integer", "real")


def read_arff(path: Path) -> tuple[pd.DataFrame, dict[str, tuple[str, ...] | str]]:
    """The ARFF file's rows (numeric columns as floats with NaN for '?', nominal ones as text with None) and its
    attributes in order: each name → its nominal categories, or its type ("numeric", "string", "date")."""
    with reading(path, "an ARFF file (@relation, @attribute lines, @data rows)"):
        text = path.read_text(encoding="utf-8")
    attributes: dict[str, tuple[str, ...] | str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        line = line.strip()
        if not line or line.startswith("%") or line.lower().startswith("@relation"):
            continue
        if line.lower() == "@data":
            break
        match = ATTRIBUTE.match(line)
        if match is None:
            raise UserError(f"{path}: not an ARFF header line: {line[:80]!r}")
        name, kind = _unquote(match.group(1)), match.group(2).strip()
        if kind.startswith("{"):
            attributes[name] = tuple(_unquote(v.strip()) for v in _fields(kind.strip("{}")))
        elif kind.split()[0].lower() in (*NUMERIC, "string", "date"):
            attributes[name] = "numeric" if kind.split()[0].lower() in NUMERIC else kind.split()[0].lower()
        else:
            raise UserError(f"{path}: attribute {name!r} has a type ARFF does not define: {kind!r}")
    if not attributes:
        raise UserError(f"{path}: no @attribute lines before @data; is it an ARFF file?")
    names = list(attributes)
    rows = [_row(line.strip(), names, attributes, path) for line in lines if line.strip() and line[0] != "%"]
    frame = pd.DataFrame(rows, columns=names)
    for name, kind in attributes.items():
        if kind == "numeric":
            frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame, attributes


def _fields(text: str) -> list[str]:
    return next(csv.reader(io.StringIO(text), quotechar="'", skipinitialspace=True), [])


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value


def _row(line: str, names: list[str], attributes: dict, path: Path) -> list:
    """One @data row: dense, or sparse {index value, …} whose omitted values are 0 (a nominal's first category)."""
    if line.startswith("{"):
        values = [0 if attributes[n] == "numeric" else attributes[n][0] for n in names]
        for pair in _fields(line.strip("{}")):
            index, _, value = pair.strip().partition(" ")
            if not index.isdigit() or int(index) >= len(names):
                raise UserError(f"{path}: sparse row names attribute {index!r}, which the header does not declare")
            values[int(index)] = _unquote(value.strip())
    else:
        values = [_unquote(v) for v in _fields(line)]
        if len(values) != len(names):
            raise UserError(f"{path}: a row has {len(values)} values for {len(names)} attributes: {line[:80]!r}")
    return [None if v == "?" else v for v in values]


def encode(frame: pd.DataFrame, attributes: dict, target: str, path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(features, classes 0..K−1, what was imputed or dropped) under the rules of the module docstring."""
    notes = []
    unlabelled = frame[target].isna()
    if unlabelled.any():
        notes.append(f"dropped {int(unlabelled.sum())} rows without a class")
        frame = frame[~unlabelled]
    dropped = [n for n, kind in attributes.items() if n != target and kind in ("string", "date")]
    if dropped:
        notes.append(f"dropped {len(dropped)} string or date attribute(s): {', '.join(dropped)}")
    features = frame.drop(columns=[target, *dropped])
    if features.shape[1] == 0:
        raise UserError(f"{path}: no numeric or nominal feature besides the class {target!r}")
    missing = features.isna().sum()
    for name in missing[missing > 0].index:
        is_numeric = attributes[name] == "numeric"
        fill = features[name].mean() if is_numeric else features[name].mode().iloc[0]
        features[name] = features[name].fillna(0.0 if pd.isna(fill) else fill)
    if missing.any():
        notes.append(
            f"imputed {int(missing.sum())} missing values in {int((missing > 0).sum())} attribute(s) "
            "(numeric: the column's mean; nominal: its most frequent category)"
        )
    nominal = [n for n in features.columns if attributes[n] != "numeric"]
    for name in nominal:  # every declared category gets its column, seen in the rows or not
        features[name] = pd.Categorical(features[name], categories=attributes[name])
    x = pd.get_dummies(features, columns=nominal, prefix=nominal).to_numpy(np.float32)
    y = labelled.encode_labels(frame[target].astype(str).to_numpy())
    return x, y, notes


def description_spec(data_id: int) -> RawSpec:
    """OpenML's description of dataset ``data_id``: its data file's id, md5, default target and licence."""
    fname = f"openml-{data_id}.json"
    return RawSpec(f"openml-{data_id}", (Download(f"{API}{data_id}", fname),), {"description": (fname,)})


def data_spec(data_id: int, description: dict) -> RawSpec:
    """The ARFF data file the description names, checked against the md5 it publishes."""
    fname = f"openml-{data_id}.arff"
    md5 = description.get("md5_checksum")
    download = Download(f"{DATA}{description['file_id']}", fname, f"md5:{md5}" if md5 else None)
    return RawSpec(f"openml-{data_id}", (download,), {"data": (fname, "*.arff")})


def read_description(path: Path, data_id: int) -> dict:
    try:
        description = json.loads(path.read_text(encoding="utf-8"))["data_set_description"]
        if int(description["id"]) != data_id or "file_id" not in description:
            raise ValueError(f"it describes dataset {description.get('id')}, or names no data file")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path} is not OpenML's description of dataset {data_id}: {e}") from None
    return description


def prepare_openml(
    data_dir: Path,
    *,
    id: int,  # noqa: A002 (the flag is --id, as OpenML names it)
    target: str | None = None,
    normalise: str = "l2",
    encoding: str = "block",
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    verify: bool = True,
    force: bool = False,
) -> Path:
    description = {}
    if source is None:
        with raw_files(description_spec(id), None, offline, cache, verify) as raw:
            description = read_description(raw["description"], id)
        spec = data_spec(id, description)
    else:
        local = Path(source).expanduser()
        spec = RawSpec(f"openml-{id}", (), {"data": (local.name,) if local.is_file() else ("*.arff",)})
    with raw_files(spec, source, offline, cache, verify) as raw:
        frame, attributes = read_arff(raw["data"])
        records, verification = raw.records, raw.verification
    target = target or description.get("default_target_attribute") or list(attributes)[-1]
    if target not in attributes or attributes[target] == "numeric":
        kind = "is numeric (a regression target)" if target in attributes else "is not an attribute"
        raise UserError(f"{raw['data'].name}: class {target!r} {kind}; name a nominal attribute with --target")
    x, y, notes = encode(frame, attributes, target, raw["data"])
    if y.max() < 1:
        raise UserError(f"{raw['data'].name}: class {target!r} holds one class only; the protocol needs 2 or more")
    parameters = {"id": id, "target": target, "normalise": normalise, "encoding": encoding, "verify": verify}
    parameters |= {"licence": description.get("licence"), "name": description.get("name")} if description else {}
    folder = Path(data_dir) / f"openml-{id}"
    if up_to_date(folder, parameters, force):
        return folder
    x = labelled.apply_normalisation(x, normalise, images=False)
    counts = {"samples": len(y), "features": x.shape[1], "classes": int(y.max()) + 1}
    return write_dataset(
        folder,
        f"openml-{id}",
        {"samples": labelled.samples_table(x, y)},
        parameters,
        protocol="classification",
        raw_files=records,
        counts=counts,
        force=force,
        rows={"read": len(frame), "kept": len(y), "dropped": {}},
        verification=verification,
        reader_warnings=notes,
    )


register(
    Dataset(
        "openml",
        "an OpenML classification dataset by id (ARFF), prepared as openml-ID: nominal features one-hot, "
        "missing values imputed",
        "Bietti et al. 2021 (the Contextual Bandit Bake-off)",
        "classification",
        prepare_openml,
        (
            Option("id", int, None, "OpenML dataset id (e.g. 6 for letter).", required=True, minimum=1),
            Option("target", str, None, "Class attribute [default: OpenML's default target, else the last].",
                   optional=True),
            Option("normalise", str, "l2", "l2 (row unit norm) | none.", choices=("l2", "none")),
            Option("encoding", str, "block", "Arm contexts: block (d·K) | shift (d + K − 1).",
                   choices=labelled.ENCODINGS),
        ),
        files="the dataset's ARFF file (dense or sparse)",
    )
)  # fmt: skip
