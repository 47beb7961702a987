"""Amazon reviews (McAuley lab) ratings-only files through the rating-matrix pipeline (M-CNB §5.2).

M-CNB's "883636 review ratings" match the 2018 ``AMAZON_FASHION`` ratings file, so ``--version 2018
--category AMAZON_FASHION`` is the default; both are recorded in the manifest. Column order differs by
release and is pinned here: 2014 ``user,item,rating,timestamp``; 2018 ``item,user,rating,timestamp``
(both without header); 2023 ``user_id,parent_asin,rating,timestamp`` with a header (gzip'ed).
The 5-core reviews files the M-CNB and Meta-Ban authors used are read as well: 2014
``reviews_<Category>_5.json(.gz)`` and 2018 ``<Category>_5.json(.gz)``, one review per line with
``reviewerID``, ``asin``, ``overall`` and ``unixReviewTime`` (the 2014 lines are Python dict literals,
not strict JSON).
The McAuley lab publishes no checksums; the 2018 files are pinned to the sha256 listed by the omnirec
loaders (third party) and ``--no-verify`` skips the check for a re-issued file.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import ratings as pipeline
from banditbench.data import rows
from banditbench.data.fetch import Download, RawSpec, cause, open_bytes, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

VERSIONS = ("2014", "2018", "2023")
DEFAULT_VERSION, DEFAULT_CATEGORY = "2018", "AMAZON_FASHION"
SHA256_2018 = {
    "AMAZON_FASHION": "c72e84207601cd00840a91b9b4433c60b8be800a27aa86991f5cb57f29b99825",
    "All_Beauty": "b3d9260771f9fe489a61180b9ff407e15e10f481a287848f69bc4709b669246f",
    "Appliances": "35af90b093508f4a811d259b71b94d45b2f67b0daf3d702203d29ff6b16b1e28",
    "Digital_Music": "a73f1504ed58fdc3533a6817b4c89fc4f722eb46dc18f94a4566a4b171439c9c",
    "Luxury_Beauty": "5e1ab08a0147412d6a15ab4b8259df7fbc1fe09c747ba5c46486081ee4d68d24",
    "Musical_Instruments": "8933b17434e4984bcce8cf4ec43d847e0af6aa6d46add28bbb37b80e06da1b06",
    "Software": "86d2ec7712b4c979bf7e7e984d39989b610c9f0e4ba4fc02c6aac7dcd9a15583",
    "Video_Games": "c3fec1cce4ee67f0d51f8b53a7e294d8bbe6f75ca1d8732256e900b3c46606d8",
}


def spec(version: str, category: str, verify: bool) -> RawSpec:
    if version == "2014":
        fname = f"ratings_{category}.csv"
        url = f"https://snap.stanford.edu/data/amazon/productGraph/categoryFiles/{fname}"
        known = None
    elif version == "2018":
        fname = f"{category}.csv"
        url = f"https://mcauleylab.ucsd.edu/public_datasets/data/amazon_v2/categoryFilesSmall/{fname}"
        known = f"sha256:{SHA256_2018[category]}" if verify and category in SHA256_2018 else None
    else:
        fname = f"{category}.csv.gz"
        url = f"https://mcauleylab.ucsd.edu/public_datasets/data/amazon_2023/benchmark/0core/rating_only/{fname}"
        known = None
    return RawSpec(
        f"amazon-{version}-{category}",
        (Download(url, fname, known),),
        {"ratings": (fname, *(f"{stem}{ext}" for stem in five_core_names(version, category) for ext in (".gz", "")))},
    )


def five_core_names(version: str, category: str) -> tuple[str, ...]:
    """The 5-core reviews files the M-CNB and Meta-Ban authors used, one JSON object per line."""
    return {"2014": (f"reviews_{category}_5.json",), "2018": (f"{category}_5.json",), "2023": (f"{category}.jsonl",)}[
        version
    ]


# Keys of a review in each release's JSON: user, item, rating, time.
REVIEW_KEYS = {
    "2014": ("reviewerID", "asin", "overall", "unixReviewTime"),
    "2018": ("reviewerID", "asin", "overall", "unixReviewTime"),
    "2023": ("user_id", "parent_asin", "rating", "timestamp"),
}


def parse_review_line(line: str) -> dict:
    """One review: strict JSON, or the Python dict literal of the 2014 files (single quotes)."""
    try:
        return json.loads(line)
    except ValueError:
        return ast.literal_eval(line)


def read_reviews(path: Path, version: str) -> pd.DataFrame:
    """5-core reviews JSON(.gz): reviewerID / asin / overall / unixReviewTime (2014, 2018), one review per line."""
    keys = REVIEW_KEYS[version]
    reviews = []
    with (
        reading(path, f"Amazon {version} reviews, one JSON object per line with {', '.join(keys[:3])}"),
        open_bytes(path) as f,
    ):
        for number, raw in enumerate(f, 1):
            line = raw.decode("utf-8").strip()
            if not line:
                continue
            try:
                review = parse_review_line(line)
                reviews.append(
                    (str(review[keys[0]]), str(review[keys[1]]), float(review[keys[2]]), int(review.get(keys[3]) or 0))
                )
            except (ValueError, SyntaxError, KeyError, TypeError) as e:
                raise UserError(
                    f"{path}, line {number}: not a review with {', '.join(keys[:3])} "
                    f"({type(e).__name__}: {cause(e, 80)})"
                ) from None
    if not reviews:
        raise UserError(f"{path}: no reviews in the file")
    frame = pd.DataFrame(reviews, columns=["raw_user", "raw_item", "rating", "timestamp"])
    frame["rating"] = checked_stars(frame["rating"], path, header=0)
    return frame


def checked_stars(values: pd.Series, path: Path, header: int) -> np.ndarray:
    """Ratings as float32, each a whole number of stars from 1 to 5 (every release rates so)."""
    return rows.numbers(values, path, "rating", header=header, low=1, high=5, step=1).astype(np.float32)


CSV_COLUMNS = {
    "2014": ["raw_user", "raw_item", "rating", "timestamp"],
    "2018": ["raw_item", "raw_user", "rating", "timestamp"],
    "2023": ["raw_user", "raw_item", "rating", "timestamp"],
}
HEADER_2023 = ("user_id", "parent_asin", "rating", "timestamp")
CSV_LAYOUT = {
    "2014": "user,item,rating,timestamp without a header",
    "2018": "item,user,rating,timestamp without a header",
    "2023": f"a header {','.join(HEADER_2023)}, gzip'ed",
}


def read_ratings(path: Path, version: str) -> pd.DataFrame:
    """The ratings-only CSV of ``version`` (or its 5-core reviews JSON): every line's user, item, rating (whole
    stars 1–5) and time (whole seconds, or milliseconds in 2023), checked."""
    if ".json" in path.name:
        return read_reviews(path, version)
    frame = rows.read_fields(
        path,
        f"the Amazon {version} ratings-only CSV: {CSV_LAYOUT[version]}",
        CSV_COLUMNS[version],
        header=HEADER_2023 if version == "2023" else (),
        dtype={"raw_user": str, "raw_item": str},
    )
    header = int(version == "2023")
    frame["rating"] = checked_stars(frame["rating"], path, header)
    frame["timestamp"] = rows.numbers(frame["timestamp"], path, "timestamp", header=header, step=1).astype(np.int64)
    return frame[["raw_user", "raw_item", "rating", "timestamp"]]


def prepare(
    data_dir: Path,
    *,
    version: str = DEFAULT_VERSION,
    category: str = DEFAULT_CATEGORY,
    verify: bool = True,
    options: pipeline.RatingOptions | None = None,
    mode: str = "paper",
    serve: str = "groups",
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    if version not in VERSIONS:
        raise UserError(f"unknown --version {version!r}; choose from: {', '.join(VERSIONS)}")
    options = options or pipeline.RatingOptions()
    options.validate()
    pipeline.check_protocol(mode, serve)
    parameters = {
        "version": version,
        "category": category,
        **options.as_dict(),
        "mode": mode,
        "serve": serve,
        "arms": 10,
    }
    folder = Path(data_dir) / "amazon"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(spec(version, category, verify), source, offline, cache, verify) as raw:
        ratings = read_ratings(raw["ratings"], version)
    tables, counts, report = pipeline.build(ratings, options, str(raw["ratings"]))
    return write_dataset(
        folder,
        "amazon",
        tables,
        parameters,
        protocol="recommendation",
        raw_files=raw.records,
        counts=counts,
        force=force,
        rows=report,
        verification=raw.verification,
    )


register(
    Dataset(
        "amazon",
        "Amazon reviews, --version 2014 | 2018 | 2023 and --category (default 2018 AMAZON_FASHION); "
        "ratings-only CSV or 5-core reviews JSON",
        "Ni, Li & McAuley 2019; M-CNB §5.2",
        "recommendation",
        pipeline.with_rating_options(prepare),
        (
            Option("version", str, DEFAULT_VERSION, "Release: 2014 | 2018 | 2023.", choices=VERSIONS),
            Option(
                "category",
                str,
                DEFAULT_CATEGORY,
                "Category file, e.g. AMAZON_FASHION (M-CNB's 883,636 ratings), Video_Games.",
            ),
            *pipeline.RATING_OPTIONS,
            *pipeline.PROTOCOL_OPTIONS,
        ),
        raw=lambda version=DEFAULT_VERSION, category=DEFAULT_CATEGORY: spec(version, category, True),
        files="ratings_<Category>.csv or reviews_<Category>_5.json(.gz) (2014); <Category>.csv or "
        "<Category>_5.json(.gz) (2018); <Category>.csv.gz (2023)",
    )
)
