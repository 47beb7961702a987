"""Readers for the files users actually have: notMNIST in IDX form, Amazon 2014 and 2018 5-core reviews JSON."""

import gzip
import json

import numpy as np
import pytest
from fixtures_raw import ratings_table, write_idx

from banditbench.data import amazon, classification, load_dataset
from banditbench.data.ratings import RatingOptions
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=40, top_items=60, groups=4)


def test_notmnist_in_idx_form(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "notMNIST-to-MNIST"
    folder.mkdir()
    images = {"train": rng.integers(0, 256, (30, 28, 28)), "t10k": rng.integers(0, 256, (12, 28, 28))}
    for stem, x in images.items():
        write_idx(folder / f"{stem}-images-idx3-ubyte.gz", x)
        write_idx(folder / f"{stem}-labels-idx1-ubyte.gz", np.arange(len(x)) % 10)
    classification.prepare(tmp_path / "ds", "notmnist", source=str(folder), offline=True, normalise="none")
    samples = load_dataset(tmp_path / "ds", "notmnist").table("samples")
    assert len(samples) == 42 and samples["label"].max() == 9
    np.testing.assert_allclose(
        samples.filter(like="x_").to_numpy()[30], images["t10k"][0].reshape(-1) / 255.0, rtol=1e-6
    )


def test_notmnist_folder_with_neither_form_names_both(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"notMNIST_small.tar.gz .* or the IDX files train-images-idx3-ubyte"):
        classification.prepare(tmp_path / "ds", "notmnist", source=str(tmp_path / "empty"), offline=True)


def review_lines(rows, python_literal):
    for user, item, rating, when in rows:
        review = {
            "reviewerID": f"A{user:04d}",
            "asin": f"B{item:05d}",
            "reviewerName": "O'Neil",
            "helpful": [0, 0],
            "reviewText": "fine",
            "overall": float(rating),
            "summary": "ok",
            "unixReviewTime": int(when),
            "reviewTime": "01 1, 2014",
        }
        yield repr(review) if python_literal else json.dumps(review)


@pytest.mark.parametrize(
    "version, name, python_literal",
    [
        ("2014", "reviews_Musical_Instruments_5.json.gz", True),  # the 2014 files' dict-literal lines
        ("2014", "reviews_Musical_Instruments_5.json", False),
        ("2018", "Musical_Instruments_5.json.gz", False),
    ],
)
def test_amazon_five_core_reviews(tmp_path, version, name, python_literal):
    rows = ratings_table()
    text = "\n".join(review_lines(rows, python_literal)) + "\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    amazon.prepare(
        tmp_path / "ds", version=version, category="Musical_Instruments", options=SMALL, source=str(path), offline=True
    )
    dataset = load_dataset(tmp_path / "ds", "amazon")
    assert dataset.manifest["counts"]["raw_ratings"] == len(rows)
    assert dataset.manifest["counts"]["positives"] == int((rows[:, 2] > 4).sum())
    assert set(dataset.table("users")["raw_user"]) == {f"A{u:04d}" for u in np.unique(rows[:, 0])}


def test_amazon_reviews_line_without_a_rating_is_one_line(tmp_path):
    path = tmp_path / "reviews_Musical_Instruments_5.json"
    path.write_text(
        json.dumps({"reviewerID": "A1", "asin": "B1", "overall": 5.0})
        + "\n"
        + json.dumps({"reviewerID": "A2", "asin": "B2"})
        + "\n"
    )
    with pytest.raises(UserError, match=r"_5.json, line 2: not a review with reviewerID, asin, overall"):
        amazon.prepare(
            tmp_path / "ds",
            version="2014",
            category="Musical_Instruments",
            options=SMALL,
            source=str(path),
            offline=True,
        )
