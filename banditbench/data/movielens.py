"""MovieLens (Harper & Konstan 2015) through the rating-matrix pipeline (``data/ratings.py``).

The recommendation papers use ML-25M ("25 million reviews between 1.6×10^5 users and 6×10^4
movies", M-CNB §5.2 and Meta-Ban §4.1), so ``25m`` is the default variant; the authors' notebook ran
on ML-20M. URLs and sha256 from tensorflow/datasets ``url_checksums/movielens.txt``.
Raw formats: ml-100k ``u.data`` is TAB-separated and ``u.item`` ``|``-separated Latin-1; ml-1m uses the
two-character separator ``::`` and Latin-1; ml-20m/25m are CSV files with a header.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import ratings as pipeline
from banditbench.data import rows
from banditbench.data.fetch import Download, RawSpec, raw_files
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

BASE = "https://files.grouplens.org/datasets/movielens/"
VARIANTS = {
    "100k": Download(
        BASE + "ml-100k.zip", "ml-100k.zip", "sha256:50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229"
    ),
    "1m": Download(
        BASE + "ml-1m.zip", "ml-1m.zip", "sha256:a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20"
    ),
    "20m": Download(
        BASE + "ml-20m.zip", "ml-20m.zip", "sha256:96f243c338a8665f6bcc89c53edf6ee39162a846940de6b7c8c48aeada765ff3"
    ),
    "25m": Download(
        BASE + "ml-25m.zip", "ml-25m.zip", "sha256:8b21cfb7eb1706b4ec0aac894368d90acf26ebdfb6aced3ebd4ad5bd1eb9c6aa"
    ),
}
DEFAULT_VARIANT = "25m"
FILES = {
    "100k": ("u.data", "u.item"),
    "1m": ("ratings.dat", "movies.dat"),
    "20m": ("ratings.csv", "movies.csv"),
    "25m": ("ratings.csv", "movies.csv"),
}
GENRES_100K = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)
# Per-file sha256 of the files inside the published ml-100k.zip (genuine copy hashed):
# a folder --source is verified file by file, so a truncated u.data is refused.
MEMBER_SHA256 = {
    "100k": {
        "u.data": "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
        "u.item": "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701",
    }
}
RATING_COLUMNS = ["raw_user", "raw_item", "rating", "timestamp"]
# (lowest, highest, step) of each release's ratings: whole stars in 100k and 1m, half stars from ml-20m on (and in
# ml-latest-small, read as 25m); the README of each release states its scale.
RATING_SCALES = {"100k": (1.0, 5.0, 1.0), "1m": (1.0, 5.0, 1.0)}
HALF_STARS = (0.5, 5.0, 0.5)


def spec(variant: str, command: str = "movielens") -> RawSpec:
    """The files of ``variant``; ``command``, the prepare command reading them, names them in messages."""
    ratings_file, movies_file = FILES[variant]
    return RawSpec(
        f"{command} --variant {variant}",
        (VARIANTS[variant],),
        {"ratings": (ratings_file,), "movies": (movies_file,)},
        member_sha256=MEMBER_SHA256.get(variant, {}),
    )


def read_ratings(path: Path, variant: str) -> pd.DataFrame:
    """(raw_user, raw_item, rating, timestamp) of every line, each value checked: whole-number ids and times,
    a rating on the release's scale."""
    expected = {
        "100k": "TAB-separated user item rating timestamp (ml-100k u.data)",
        "1m": "UserID::MovieID::Rating::Timestamp (ml-1m ratings.dat)",
    }.get(variant, "CSV userId,movieId,rating,timestamp with a header (ml-20m/25m ratings.csv)")
    header = () if variant in RATING_SCALES else ("userId", "movieId", "rating", "timestamp")
    if variant == "1m":  # "::" would need pandas' slow python engine: turn it into one tab instead
        frame = rows.read_fields(path, expected, RATING_COLUMNS, sep="\t", text=path.read_bytes().replace(b"::", b"\t"))
    else:
        frame = rows.read_fields(path, expected, RATING_COLUMNS, header=header, sep="\t" if variant == "100k" else ",")
    low, high, step = RATING_SCALES.get(variant, HALF_STARS)
    lines = len(header) > 0
    checked = {
        name: rows.numbers(frame[name], path, name.replace("raw_", ""), header=lines, step=1)
        for name in ("raw_user", "raw_item", "timestamp")
    }
    rating = rows.numbers(frame["rating"], path, "rating", header=lines, low=low, high=high, step=step)
    return pd.DataFrame(
        {
            "raw_user": checked["raw_user"].astype(np.int64),
            "raw_item": checked["raw_item"].astype(np.int64),
            "rating": rating.astype(np.float32),
            "timestamp": checked["timestamp"].astype(np.int64),
        }
    )


MOVIE_FILES = {
    "100k": "ml-100k u.item: movie id|title|release date|video release date|IMDb URL|19 genre flags 0/1",
    "1m": "ml-1m movies.dat: MovieID::Title::Genres",
}


def read_movies(path: Path, variant: str) -> pd.DataFrame:
    """raw_item, title, genres ('|'-joined, in the file's order; the first is the two-stage paper's topic); every
    line checked to hold all its fields and a whole-number movie id."""
    expected = MOVIE_FILES.get(variant, "a CSV movieId,title,genres with a header (ml-20m/25m movies.csv)")
    if variant == "100k":
        names = ["raw_item", "title", "release", "video_release", "url", *GENRES_100K]
        frame = rows.read_fields(
            path, expected, names, sep="|", encoding="latin-1", dtype=str, empty=("release", "video_release", "url")
        )
        values = frame[list(GENRES_100K)].to_numpy()
        bad = ~np.isin(values, ("0", "1"))
        if bad.any():
            movie = frame["raw_item"].iloc[int(np.flatnonzero(bad.any(axis=1))[0])]
            raise UserError(f"{path}: movie {movie}'s genre flags hold {values[bad][0]!r}, not 0 or 1")
        flags = values == "1"
        frame["genres"] = ["|".join(g for g, on in zip(GENRES_100K, row) if on) for row in flags]
    elif variant == "1m":
        text = path.read_bytes().replace(b"::", b"\t")
        columns = ["raw_item", "title", "genres"]
        frame = rows.read_fields(path, expected, columns, sep="\t", text=text, encoding="latin-1", dtype=str, quoting=3)
    else:
        header = ("movieId", "title", "genres")
        frame = rows.read_fields(path, expected, ["raw_item", "title", "genres"], header=header, dtype=str)
    ids = rows.numbers(frame["raw_item"], path, "movie id", header=int(variant not in MOVIE_FILES), step=1)
    return pd.DataFrame({"raw_item": ids.astype(np.int64), "title": frame["title"], "genres": frame["genres"]})


def prepare(
    data_dir: Path,
    *,
    variant: str = DEFAULT_VARIANT,
    options: pipeline.RatingOptions | None = None,
    mode: str = "paper",
    serve: str = "groups",
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    verify: bool = True,
) -> Path:
    if variant not in VARIANTS:
        raise UserError(f"unknown --variant {variant!r}; choose from: {', '.join(VARIANTS)}")
    options = options or pipeline.RatingOptions()
    options.validate()
    pipeline.check_protocol(mode, serve)
    parameters = {"variant": variant, **options.as_dict(), "mode": mode, "serve": serve, "arms": 10}
    folder = Path(data_dir) / "movielens"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(spec(variant), source, offline, cache, verify) as raw:
        ratings = read_ratings(raw["ratings"], variant)
        movies = read_movies(raw["movies"], variant)
        tables, counts, rows = pipeline.build(ratings, options, f"{raw['ratings']}")
    tables["items"] = tables["items"].merge(movies, on="raw_item", how="left")
    return write_dataset(
        folder,
        "movielens",
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
        "movielens",
        "MovieLens 100k | 1m | 20m | 25m (default 25m): top users × items by count, positive = rating > 4, "
        "10-d SVD features, 50 K-means user groups",
        "Harper & Konstan 2015; M-CNB §5.2, Meta-Ban §4.1",
        "recommendation",
        pipeline.with_rating_options(prepare),
        (
            Option(
                "variant", str, DEFAULT_VARIANT, "100k | 1m | 20m | 25m (the papers: ML-25M).", choices=tuple(VARIANTS)
            ),
            *pipeline.RATING_OPTIONS,
            *pipeline.PROTOCOL_OPTIONS,
        ),
        raw=lambda variant=DEFAULT_VARIANT: spec(variant),
        files="ml-<variant>.zip, or its folder: u.data + u.item (100k), ratings.dat + movies.dat (1m), ratings.csv + "
        "movies.csv (20m, 25m)",
    )
)
