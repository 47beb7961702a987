"""SNAP ego-Facebook (McAuley & Leskovec 2012) as recommendation data (M-CNB §5.2: "88234 links").

Users and items are both the 4,039 people; an undirected link u–v is a positive for u (item v) and for
v (item u); non-links are the negatives (``negatives = unrated`` in the recommendation protocol).
Then the rating-matrix pipeline: top users/items by degree, SVD features, K-means groups. SNAP
publishes no checksum; the decompressed ``facebook_combined.txt`` is pinned to the sha256 of the
genuine file.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import ratings as pipeline
from banditbench.data import rows
from banditbench.data.fetch import UNVERIFIED, VERIFIED, Download, RawSpec, mismatch, open_bytes, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, register

SPEC = RawSpec(
    "facebook",
    (Download("https://snap.stanford.edu/data/facebook_combined.txt.gz", "facebook_combined.txt.gz"),),
    {"edges": ("facebook_combined.txt.gz", "facebook_combined.txt")},
)
EDGES_SHA256 = "f41c026ed8af3cc3359f1ca5573d0605fb09ae0eefa34544b820fd8c6e2ef296"


EXPECTED = "the SNAP edge list: two node ids per line, space-separated"


def read_edges(path: Path, verify: bool = True) -> pd.DataFrame:
    with reading(path, EXPECTED), open_bytes(path) as f:
        data = f.read()
        found = hashlib.sha256(data).hexdigest()
        if verify and found != EDGES_SHA256:
            raise mismatch(
                path, f"sha256 {EDGES_SHA256} for the decompressed edge list (88,234 edges)", f"sha256 {found}"
            )
    edges = rows.read_fields(path, EXPECTED, ["u", "v"], sep=" ", text=data)
    return pd.DataFrame(
        {end: rows.numbers(edges[end], path, "node id", low=0, step=1).astype(np.int64) for end in "uv"}
    )


def links_as_ratings(edges: pd.DataFrame) -> pd.DataFrame:
    """Both directions of every link, each a rating of 1 (a positive under positive_above = 0)."""
    both = pd.concat(
        [
            edges.rename(columns={"u": "raw_user", "v": "raw_item"}),
            edges.rename(columns={"v": "raw_user", "u": "raw_item"}),
        ],
        ignore_index=True,
    )
    both = both.drop_duplicates()
    both["rating"] = np.float32(1.0)
    return both


def prepare(
    data_dir: Path,
    *,
    options: pipeline.RatingOptions | None = None,
    serve: str = "groups",
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
) -> Path:
    pipeline.check_protocol("paper", serve)
    options = replace(options or pipeline.RatingOptions(), positive_above=0.0, negative_below=None)
    parameters = {
        **options.as_dict(),
        "mode": "paper",
        "serve": serve,
        "arms": 10,
        "negatives": "unrated",
        "verify": verify,
    }
    folder = Path(data_dir) / "facebook"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(SPEC, source, offline, cache, verify) as raw:
        edges = read_edges(raw["edges"], verify)
    tables, counts, rows = pipeline.build(links_as_ratings(edges), options, str(raw["edges"]))
    counts = {"edges": len(edges), **counts}
    del counts["negatives"]  # non-links: every item a user did not link to
    return write_dataset(
        folder,
        "facebook",
        tables,
        parameters,
        protocol="recommendation",
        raw_files=raw.records,
        counts=counts,
        force=force,
        rows=rows,
        verification=VERIFIED if verify else UNVERIFIED,
    )


register(
    Dataset(
        "facebook",
        "SNAP ego-Facebook, 4039 people, 88,234 links: a link is a positive, non-links negatives; "
        "SVD features, K-means groups",
        "McAuley & Leskovec 2012; M-CNB §5.2",
        "recommendation",
        pipeline.with_rating_options(prepare),
        (
            *pipeline.rating_options(without=("positive_above", "negative_below", "positive_below")),
            pipeline.PROTOCOL_OPTIONS[1],
        ),
        raw=lambda: SPEC,
        files="facebook_combined.txt(.gz) or a folder holding it",
    )
)
