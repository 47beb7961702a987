"""Last.fm HetRec 2011 (lastfm-2k, Cantador, Brusilovsky & Kuflik 2011): 1,892 users, 17,632 artists.

A (user, artist) pair in ``user_artists.dat`` is a listen, i.e. a positive; artists a user never
listened to are the negatives (``negatives = unrated``). Two pipelines:

- ``svd`` (default): the rating-matrix pipeline of the recommendation papers (top users/items by count,
  10-d SVD features, K-means groups), K = 10 arms per round.
- ``ghosh`` (Ghosh et al. 2021 §6.2 after Gentile et al. 2014 / Cesa-Bianchi et al. 2013): tags broken
  into single words (stop words dropped), each artist's document = the words of every tag any user gave
  it, artist × word tf-idf, the top 25 principal components as the artist contexts; only tagged
  artists are items; real users, run under the ``round-robin`` protocol (envs/roundrobin.py): users in
  turn, K = 25 random artists per step shared by all users, reward 1 if listened; ``guaranteed_positive``
  gives every round one listened artist (the paper's protocol for CLUB).

Raw pitfalls: every file is TAB-separated with a header; ``tags.dat`` is Latin-1 with CRLF line ends.
The HetRec zip has no published checksum, so its sha256 is recorded, not checked.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import ratings as pipeline
from banditbench.data import rows
from banditbench.data.fetch import Download, RawSpec, raw_files, reading
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

ZIP = Download("https://files.grouplens.org/datasets/hetrec2011/hetrec2011-lastfm-2k.zip", "hetrec2011-lastfm-2k.zip")
# Each pipeline asks only for the files it reads: svd the listens; ghosh also the tag assignments and names.
MEMBERS = {
    "svd": {"listens": ("user_artists.dat",)},
    "ghosh": {"listens": ("user_artists.dat",), "tagged": ("user_taggedartists.dat",), "tags": ("tags.dat",)},
}


def spec(pipeline_name: str) -> RawSpec:
    return RawSpec(f"lastfm --pipeline {pipeline_name}", (ZIP,), MEMBERS[pipeline_name])


PIPELINES = ("svd", "ghosh")
PCA_DIM = 25


def read_tsv(path: Path, columns: list[str], expected: str, encoding: str = "utf-8") -> pd.DataFrame:
    """``columns`` of a TAB-separated file with a header, every line holding each of them."""
    with reading(path, expected):
        frame = pd.read_csv(path, sep="\t", encoding=encoding, dtype=str, keep_default_na=False, quoting=3)
        frame.columns = [c.strip() for c in frame.columns]
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"no column {missing[0]!r} in the header")
    frame = frame.apply(lambda col: col.str.strip("\r "))
    rows.complete(frame, path, expected, header=1, sep="\t")
    return frame[columns]


def listens(path: Path) -> pd.DataFrame:
    frame = read_tsv(path, ["userID", "artistID", "weight"], "TAB-separated userID artistID weight with a header")
    ids = {name: rows.numbers(frame[name], path, name, header=1, step=1) for name in ("userID", "artistID")}
    plays = rows.numbers(frame["weight"], path, "weight (a play count)", header=1, low=0, step=1)
    out = pd.DataFrame(
        {
            "raw_user": ids["userID"].astype(np.int64),
            "raw_item": ids["artistID"].astype(np.int64),
            "plays": plays.astype(np.int64),
        }
    )
    out["rating"] = np.float32(1.0)  # a listen is a positive under positive_above = 0
    return out


def artist_words(tagged_path: Path, tags_path: Path) -> pd.Series:
    """artist id → list of atomic tag words, over every (user, artist, tag) assignment."""
    tagged = read_tsv(tagged_path, ["artistID", "tagID"], "TAB-separated userID artistID tagID … with a header")
    tags = read_tsv(tags_path, ["tagID", "tagValue"], "TAB-separated tagID tagValue (Latin-1)", encoding="latin-1")
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = {
        tag: [w for w in re.findall(r"[^\W_]+", value.lower()) if w not in ENGLISH_STOP_WORDS]
        for tag, value in zip(tags["tagID"], tags["tagValue"])
    }
    tagged["artistID"] = rows.numbers(tagged["artistID"], tagged_path, "artistID", header=1, step=1).astype(np.int64)
    assigned = tagged.assign(words=tagged["tagID"].map(words)).dropna(subset=["words"])
    return assigned.groupby("artistID")["words"].sum()


def tfidf_pca(documents: pd.Series, dim: int) -> np.ndarray:
    from sklearn.decomposition import PCA
    from sklearn.feature_extraction.text import TfidfVectorizer

    tfidf = TfidfVectorizer(analyzer=lambda words: words).fit_transform(documents.to_list())
    k = min(dim, min(tfidf.shape) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # explained_variance_ratio_ (unused) may divide by 0
        scores = PCA(n_components=k, svd_solver="arpack", random_state=0).fit_transform(tfidf)
    return np.pad(scores, ((0, 0), (0, dim - k)))


def prepare(
    data_dir: Path,
    *,
    pipeline_name: str = "svd",
    options: pipeline.RatingOptions | None = None,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    guaranteed_positive: bool = False,
    verify: bool = True,
) -> Path:
    if pipeline_name not in PIPELINES:
        raise UserError(f"unknown --pipeline {pipeline_name!r}; choose from: {', '.join(PIPELINES)}")
    ghosh = pipeline_name == "ghosh"
    if guaranteed_positive and not ghosh:
        raise UserError("--guaranteed-positive belongs to the round-robin protocol of --pipeline ghosh")
    options = replace(options or pipeline.RatingOptions(top_items=20_000), positive_above=0.0, negative_below=None)
    parameters = {
        "pipeline": pipeline_name,
        **options.as_dict(),
        "mode": "paper",
        "negatives": "unrated",
        "serve": "users" if ghosh else "groups",
        "arms": 25 if ghosh else 10,
    }
    if ghosh:
        parameters["guaranteed_positive"] = guaranteed_positive
    folder = Path(data_dir) / "lastfm"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(spec(pipeline_name), source, offline, cache, verify) as raw:
        played = listens(raw["listens"])
        words = artist_words(raw["tagged"], raw["tags"]) if ghosh else None
    if ghosh:  # only artists with tag words have a context
        words = words[words.map(len) > 0]
        played = played[played["raw_item"].isin(words.index)]
    tables, counts, rows = pipeline.build(played, options, str(raw["listens"]))
    del counts["negatives"]
    if ghosh:
        items = tables["items"][["item", "raw_item"]].copy()
        items[[f"f_{j}" for j in range(PCA_DIM)]] = tfidf_pca(words.loc[items["raw_item"]], PCA_DIM)
        tables["items"] = items
    return write_dataset(
        folder,
        "lastfm",
        tables,
        parameters,
        protocol="round-robin" if ghosh else "recommendation",
        raw_files=raw.records,
        counts=counts,
        force=force,
        rows=rows,
        verification=raw.verification,
    )


register(
    Dataset(
        "lastfm",
        "Last.fm HetRec 2011, 1892 users × 17632 artists: a listen is a positive; --pipeline svd | ghosh "
        "(tag tf-idf + PCA-25 contexts, 25 random artists per round-robin step)",
        "Cantador et al. 2011; Ghosh et al. 2021 §6.2",
        "recommendation",
        pipeline.with_rating_options(prepare),
        (
            Option(
                "pipeline_name",
                str,
                "svd",
                "svd (rating-matrix pipeline, K = 10) | ghosh (tag tf-idf + PCA-25 artist "
                "contexts, real users, round-robin protocol, K = 25).",
                choices=PIPELINES,
                flag_name="--pipeline",
            ),
            Option(
                "guaranteed_positive",
                bool,
                False,
                "ghosh: one listened artist in every round (the paper's CLUB protocol) instead of 25 random ones.",
            ),
            *pipeline.rating_options(without=("positive_above", "negative_below", "positive_below"), top_items=20_000),
        ),
        raw=lambda pipeline_name="svd": spec(pipeline_name),
        other_protocols=("round-robin",),
        files="hetrec2011-lastfm-2k.zip or its folder: user_artists.dat (svd); also user_taggedartists.dat and "
        "tags.dat (ghosh)",
    )
)
