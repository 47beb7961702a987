"""OpenML datasets read from ARFF fixture files built here: nominal features one-hot, missing values imputed and
said, sparse rows, and the download's URL and md5 taken from OpenML's description."""

from __future__ import annotations

import json

import numpy as np
import pytest

import banditbench as bb
from banditbench.data import load_dataset
from banditbench.data.openml import DATA, data_spec, read_description
from banditbench.errors import UserError

HEADER = """% fixture in OpenML's ARFF layout
@relation weather
@attribute outlook {sunny, overcast, 'rainy day'}
@attribute temperature numeric
@attribute humidity REAL
@attribute note string
@attribute play {yes,no}
@data
"""
ROWS = [
    "sunny,85,85,'hot one',no",
    "sunny,80,?,x,no",
    "overcast,83,86,x,yes",
    "'rainy day',70,96,x,yes",
    "?,68,80,x,yes",
    "'rainy day',65,70,x,no",
    "overcast,64,65,x,yes",
    "sunny,72,95,x,no",
    "sunny,69,70,x,yes",
    "'rainy day',75,80,x,yes",
    "sunny,75,70,x,?",
    "overcast,72,90,x,yes",
]


def prepared(tmp_path, text: str, name: str = "weather.arff", **options):
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    folder = bb.prepare("openml", id=41, source=source, normalise="none", data_dir=tmp_path / "datasets", **options)
    dataset = load_dataset(tmp_path / "datasets", folder.name)
    return dataset.table("samples"), dataset.manifest


def test_nominal_features_are_one_hot_and_missing_values_imputed_and_said(tmp_path):
    samples, manifest = prepared(tmp_path, HEADER + "\n".join(ROWS) + "\n")
    assert manifest["name"] == "openml-41" and manifest["protocol"] == "classification"
    assert len(samples) == 11  # the row without a class is dropped
    x = samples.drop(columns="label").to_numpy()
    humidity = [85, 86, 96, 80, 70, 65, 95, 70, 80, 90]  # the labelled rows' known values
    # columns: temperature, humidity, then outlook one-hot in its declared order (sunny, overcast, rainy day)
    assert x.shape == (11, 5)
    assert x[1].tolist() == pytest.approx([80, np.mean(humidity), 1, 0, 0])  # humidity imputed with the mean
    assert x[4].tolist() == [68, 80, 1, 0, 0]  # outlook imputed with its most frequent category, sunny
    assert x[3].tolist() == [70, 96, 0, 0, 1]
    assert samples["label"].tolist() == [0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1]  # no → 0, yes → 1 (sorted names)
    warnings = " ".join(manifest["warnings"])
    assert "dropped 1 rows without a class" in warnings and "attribute(s): note" in warnings
    assert "imputed 2 missing values in 2 attribute(s)" in warnings


def test_a_sparse_arff_file_reads_as_its_dense_twin(tmp_path):
    header = (
        "@relation s\n@attribute a numeric\n@attribute b numeric\n@attribute c {u,v,w}\n@attribute y {p,q}\n@data\n"
    )
    dense = ["0,2.5,u,p", "1,0,v,q", "0,0,u,q", "3,1,w,p"] * 3
    sparse = ["{1 2.5}", "{0 1, 2 v, 3 q}", "{3 q}", "{0 3, 1 1, 2 w}"] * 3  # omitted: 0, or the first category
    one, _ = prepared(tmp_path / "dense", header + "\n".join(dense) + "\n")
    two, _ = prepared(tmp_path / "sparse", header + "\n".join(sparse) + "\n")
    assert one.equals(two)
    assert one.drop(columns="label").to_numpy()[0].tolist() == [0, 2.5, 1, 0, 0]


@pytest.mark.parametrize(
    "text, error",
    [
        (HEADER + "sunny,85,85\n", "a row has 3 values for 5 attributes"),
        (HEADER.replace("REAL", "complex"), "a type ARFF does not define"),
        ("@relation x\n@data\n1,2\n", "no @attribute lines"),
        (HEADER + "{9 1}\n", "sparse row names attribute '9'"),
    ],
)
def test_a_broken_arff_file_is_refused_in_one_line(tmp_path, text, error):
    with pytest.raises(UserError, match=error):
        prepared(tmp_path, text)
    assert not (tmp_path / "datasets" / "openml-41").exists()


def test_a_date_attribute_is_dropped_like_a_string_one(tmp_path):
    header = HEADER.replace("@attribute note string", "@attribute note date 'yyyy-MM-dd'")
    samples, manifest = prepared(tmp_path, header + "\n".join(ROWS).replace(",x,", ",2020-01-01,") + "\n")
    assert samples.drop(columns="label").shape == (11, 5) and "attribute(s): note" in " ".join(manifest["warnings"])


def test_a_class_holding_one_value_is_refused(tmp_path):
    with pytest.raises(UserError, match="class 'play' holds one class only"):
        prepared(tmp_path, HEADER + "\n".join(row.replace(",no", ",yes") for row in ROWS) + "\n")
    assert not (tmp_path / "datasets" / "openml-41").exists()


def test_a_numeric_class_is_refused_as_a_regression_target(tmp_path):
    with pytest.raises(UserError, match="class 'humidity' is numeric"):
        prepared(tmp_path, HEADER + "\n".join(ROWS) + "\n", target="humidity")


def test_the_download_takes_its_url_and_md5_from_openmls_description(tmp_path):
    described = {"data_set_description": {"id": "6", "file_id": "6", "md5_checksum": "a" * 32, "licence": "Public"}}
    path = tmp_path / "openml-6.json"
    path.write_text(json.dumps(described))
    description = read_description(path, 6)
    (download,) = data_spec(6, description).downloads
    assert download.url == f"{DATA}6" and download.known_hash == "md5:" + "a" * 32
    with pytest.raises(UserError, match="not OpenML's description of dataset 7"):
        read_description(path, 7)
