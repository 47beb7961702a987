"""Yelp Open Dataset reviews through the rating-matrix pipeline (M-CNB §5.2, Meta-Ban §4.1).

Yelp hands the data out only after its terms are accepted in a web form, so there is no URL to fetch:
``--source`` takes ``yelp_dataset.tar``, the folder it was unpacked into, or
``yelp_academic_dataset_review.json`` itself. Reviews are JSON Lines; only ``user_id``,
``business_id``, ``stars`` and ``date`` are parsed (pyarrow, columnar), the text is skipped.
Yelp publishes no checksum and releases differ, so the sha256 of the file read is recorded, not checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson

from banditbench.data import ratings as pipeline
from banditbench.data import rows
from banditbench.data.fetch import RawSpec, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, register
from banditbench.errors import UserError

SPEC = RawSpec(
    "yelp",
    (),
    {"reviews": ("yelp_academic_dataset_review.json",)},
    gated="accept the Yelp Dataset terms at https://www.yelp.com/dataset, download yelp_dataset.tar "
    "(or its JSON files) and pass the tar, its folder or yelp_academic_dataset_review.json "
    "to --source",
)
SCHEMA = pa.schema(
    [("user_id", pa.string()), ("business_id", pa.string()), ("stars", pa.float32()), ("date", pa.string())]
)


FORMAT = "Yelp reviews as JSON Lines with user_id, business_id, stars, date"


def read_reviews(path: Path):
    """Every review's user, business, stars (whole stars 1–5) and date; a line that is no review is refused by
    its number."""
    with reading(path, FORMAT):
        try:
            table = pajson.read_json(
                path, parse_options=pajson.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="ignore")
            )
        except pa.ArrowInvalid as e:  # pyarrow counts rows within its block: find the line itself
            raise first_bad_review(path) or e from None
    frame = table.to_pandas()
    if frame.empty:
        raise UserError(f"{path}: no reviews in the file")
    for column in ("user_id", "business_id", "stars"):
        row = rows.first(frame[column].isna())
        if row is not None:
            raise rows.at_row(path, row, f"the review has no {column}; the format is {FORMAT}")
    frame["stars"] = rows.numbers(frame["stars"], path, "stars", low=1, high=5, step=1).astype(np.float32)
    return frame.rename(columns={"user_id": "raw_user", "business_id": "raw_item", "stars": "rating"})


def first_bad_review(path: Path) -> UserError | None:
    """The first line of ``path`` that is not a JSON object with numeric stars, as a one-line error."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                review = json.loads(line)
            except json.JSONDecodeError as e:
                return UserError(
                    f"{path}, line {number}: not a JSON object ({e.msg}, column {e.colno}); the format is {FORMAT}"
                )
            except UnicodeDecodeError:
                return UserError(f"{path}, line {number}: not UTF-8 text; the format is {FORMAT}")
            stars = review.get("stars") if isinstance(review, dict) else None
            if stars is not None and not isinstance(stars, (int, float)):
                return UserError(f"{path}, line {number}: stars {stars!r} is not a number; the format is {FORMAT}")
    return None


def prepare(
    data_dir: Path,
    *,
    options: pipeline.RatingOptions | None = None,
    mode: str = "paper",
    serve: str = "groups",
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    verify: bool = True,
) -> Path:
    options = options or pipeline.RatingOptions()
    options.validate()
    pipeline.check_protocol(mode, serve)
    parameters = {**options.as_dict(), "mode": mode, "serve": serve, "arms": 10}
    folder = Path(data_dir) / "yelp"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(SPEC, source, offline, cache, verify) as raw:
        reviews = read_reviews(raw["reviews"])
    tables, counts, rows = pipeline.build(reviews, options, str(raw["reviews"]))
    return write_dataset(
        folder,
        "yelp",
        tables,
        parameters,
        protocol="recommendation",
        raw_files=raw.records,
        counts=counts,
        force=force,
        rows=rows,
        verification=raw.verification,
    )


register(
    Dataset(
        "yelp",
        "Yelp Open Dataset reviews (terms-gated, --source): positive = 5 stars, SVD features, K-means groups",
        "M-CNB §5.2; Meta-Ban §4.1",
        "recommendation",
        pipeline.with_rating_options(prepare),
        (*pipeline.RATING_OPTIONS, *pipeline.PROTOCOL_OPTIONS),
        raw=lambda: SPEC,
        files="yelp_dataset.tar, its folder, or yelp_academic_dataset_review.json",
    )
)
