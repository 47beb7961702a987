"""Logged impressions for the IPS-simulator protocol of the two-stage neural contextual
bandit paper: MIND and MovieLens-20M converted to MIND's form (the authors' movielen2mind).

Two tables, the same for both datasets:

- ``news``: news_id, title, category, subcategory, topic (index of the subcategory, sorted)
- ``behaviors``: impression_id, user_id, time (unix seconds), split, history (list of news ids),
  shown (list of news ids), clicked (list of 0/1, aligned with shown), valid (validation impression)

MIND (Wu et al. 2020): ``MIND{small,large}_{train,dev}.zip`` hold ``behaviors.tsv`` (ImpressionID,
UserID, Time "11/12/2019 2:14:46 PM", History, Impressions "N1-1 N2-0") and ``news.tsv`` (NewsID,
Category, SubCategory, Title, Abstract, URL, entities); topic = subcategory. The official blob
endpoint has been answering HTTP 409, so ``--source`` (a folder with the zips or their unpacked
folders) is the usual way; the extracted MINDsmall files are pinned to their published sha256.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import rows
from banditbench.data.fetch import Download, RawSpec, raw_files
from banditbench.data.prepared import up_to_date, write_dataset
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

MIND_BASE = "https://mind201910small.blob.core.windows.net/release/"
MIND_PARTS = ("train", "dev")
MIND_SHA256 = {  # extracted MINDsmall files (as published in Git-LFS pointers)
    ("small", "train", "behaviors.tsv"): "a424547c8fa17c9ea4879c2110221c2b2f2709f4f7615ede0b0d8e4765158658",
    ("small", "train", "news.tsv"): "cd49d7da275e9c405f627d75a0de9d4ec6ad43ff8a8db5d23a447591676e09d6",
    ("small", "dev", "behaviors.tsv"): "b6c460e33b1a8693252ded6e626da7d3ccf78920eea2ec11889020bb7d8443ef",
    ("small", "dev", "news.tsv"): "e5d144667558c449d16084fe6bfa01940c2f5d5785ea9f9110292bc3b94eb822",
}
NEWS_COLUMNS = ["news_id", "category", "subcategory", "title", "abstract", "url", "title_entities", "abstract_entities"]
BEHAVIOR_COLUMNS = ["impression_id", "user_id", "time", "history", "impressions"]


def mind_spec(variant: str, part: str) -> RawSpec:
    name = f"MIND{variant}_{part}.zip"
    pinned = {file: sha for (v, p, file), sha in MIND_SHA256.items() if (v, p) == (variant, part)}
    return RawSpec(
        f"MIND{variant}_{part}",
        (Download(MIND_BASE + name, name),),
        {"behaviors": ("behaviors.tsv",), "news": ("news.tsv",)},
        member_sha256=pinned,
    )


def mind_sources(source: str | None, variant: str) -> dict[str, str | None]:
    """In a --source folder, each part's zip MIND{variant}_{part}.zip or its unpacked folder; every missing
    part is named at once."""
    if source is None:
        return {part: None for part in MIND_PARTS}
    root = Path(source).expanduser()
    if not root.is_dir():
        raise UserError(
            f"--source {source} must be a folder holding MIND{variant}_train and MIND{variant}_dev "
            "(zips or unpacked folders)"
        )
    found, missing = {}, []
    for part in MIND_PARTS:
        candidates = [c for c in (root / f"MIND{variant}_{part}.zip", root / f"MIND{variant}_{part}") if c.exists()]
        if candidates:
            found[part] = str(candidates[0])
        else:
            missing.append(f"MIND{variant}_{part}.zip (or the folder MIND{variant}_{part}/)")
    if missing:
        raise UserError(
            f"--source {source} lacks {' and '.join(missing)}; download them from "
            "https://msnews.github.io (after accepting the licence) into that folder"
        )
    return found


MIND_TSV = {"sep": "\t", "dtype": str, "quoting": 3}
IMPRESSIONS = r"\S+-[01]( \S+-[01])*"  # "N1-1 N2-0 …": a news id, then 1 if clicked, 0 if not


def read_mind_news(path: Path) -> pd.DataFrame:
    expected = "MIND news.tsv: NewsID, Category, SubCategory, Title, Abstract, URL, TitleEntities, AbstractEntities"
    optional = ("title", "abstract", "url", "title_entities")  # empty in some published lines
    frame = rows.read_fields(path, expected, NEWS_COLUMNS, empty=optional, **MIND_TSV)
    return frame[["news_id", "title", "category", "subcategory", "abstract"]]


def read_mind_behaviors(path: Path, split: str) -> pd.DataFrame:
    """Every impression, each field checked: a whole-number id, a time like "11/12/2019 2:14:46 PM" and at
    least one "<news id>-<0 or 1>" shown; a cut last line is refused."""
    expected = "MIND behaviors.tsv: ImpressionID, UserID, Time, History, Impressions"
    frame = rows.read_fields(path, expected, BEHAVIOR_COLUMNS, empty=("history",), **MIND_TSV)
    impression_id = rows.numbers(frame["impression_id"], path, "impression id", step=1).astype(np.int64)
    time = pd.to_datetime(frame["time"], format="%m/%d/%Y %I:%M:%S %p", errors="coerce")
    row = rows.first(time.isna())
    if row is not None:
        raise rows.at_row(
            path, row, f"time {frame['time'].iloc[row]!r} is not like 11/12/2019 2:14:46 PM; the format is {expected}"
        )
    row = rows.first(~frame["impressions"].str.fullmatch(IMPRESSIONS))
    if row is not None:
        shown = frame["impressions"].iloc[row]
        raise rows.at_row(
            path, row, f"impressions ending {shown[-30:]!r} are not news-id-0/1 pairs; the format is {expected}"
        )
    pairs = frame["impressions"].str.split()
    return pd.DataFrame(
        {
            "impression_id": impression_id,
            "user_id": frame["user_id"],
            "time": time.to_numpy().astype("datetime64[s]").astype(np.int64),
            "split": split,
            "history": frame["history"].str.split(),
            "shown": [[p.rsplit("-", 1)[0] for p in row] for row in pairs],
            "clicked": [np.array([int(p[-1]) for p in row], np.int8) for row in pairs],
            "valid": split == "dev",
        }
    )


def with_topics(news: pd.DataFrame) -> pd.DataFrame:
    news = news.drop_duplicates("news_id").reset_index(drop=True)
    news["topic"] = np.unique(news["subcategory"], return_inverse=True)[1].astype(np.int64)
    return news


def read_mind(
    source: str | None, variant: str, offline: bool, cache: Path | None, verify: bool
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict], str]:
    """MIND's news and impressions of both parts (train, then dev), the records of the files read, and the weakest
    verification among them."""
    news, behaviors, records, verification = [], [], [], []
    sources = mind_sources(source, variant)
    for part in MIND_PARTS:
        with raw_files(mind_spec(variant, part), sources[part], offline, cache, verify) as raw:
            verification.append(raw.verification)
            news.append(read_mind_news(raw["news"]))
            behaviors.append(read_mind_behaviors(raw["behaviors"], part))
            records += [{**r, "part": part} for r in raw.records]
    weakest = min(verification, key=("unverified", "no published checksum", "verified").index)
    return pd.concat(news, ignore_index=True), pd.concat(behaviors, ignore_index=True), records, weakest


def prepare_mind(
    data_dir: Path,
    *,
    variant: str = "small",
    verify: bool = True,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    allow_unresolved: bool = False,
) -> Path:
    if variant not in ("small", "large"):
        raise UserError(f"unknown --variant {variant!r}; choose from: small, large")
    parameters = {"variant": variant, "topic": "subcategory", "verify": verify}
    folder = Path(data_dir) / "mind"
    if up_to_date(folder, parameters, force):
        return folder
    news, behavior_table, records, verification = read_mind(source, variant, offline, cache, verify)
    news_table = with_topics(news)
    counts = {
        "news": len(news_table),
        "topics": int(news_table["topic"].max()) + 1,
        "impressions": len(behavior_table),
        "users": behavior_table["user_id"].nunique(),
        "shown": int(behavior_table["shown"].map(len).sum()),
        "clicks": int(behavior_table["clicked"].map(np.sum).sum()),
    }
    rows = {"read": len(behavior_table), "kept": len(behavior_table), "dropped": {}}
    return write_dataset(
        folder,
        "mind",
        {"news": news_table, "behaviors": behavior_table},
        parameters,
        protocol="ips-simulator",
        raw_files=records,
        counts=counts,
        force=force,
        rows=rows,
        verification=verification,
        allow_unresolved=allow_unresolved,
    )


def _cuts(history_until: str, test_from: str) -> tuple[int, int]:
    """The two dates as UTC timestamps in seconds, or a one-line error."""
    try:
        cut1, cut2 = (int(pd.Timestamp(d, tz="UTC").timestamp()) for d in (history_until, test_from))
    except ValueError:
        raise UserError(
            f"--history-until / --test-from must be dates like 2010-01-01, got {history_until}, {test_from}"
        ) from None
    return cut1, cut2


def _kept_users(ratings: pd.DataFrame) -> list:
    """Users with ratings in the history period and in the test period, and a positive in train and in test."""
    stats = ratings.groupby("raw_user").agg(
        before=("period", lambda p: (p == 0).any()), after=("period", lambda p: (p == 2).any())
    )
    positives = ratings[ratings["positive"]].groupby("raw_user")["period"].agg(lambda p: set(p))
    keep = stats.index[stats["before"] & stats["after"]]
    return [u for u in keep if u in positives.index and {1, 2} <= positives[u]]


def _impressions(ratings: pd.DataFrame, keep: list, negatives: int, rng: np.random.Generator) -> pd.DataFrame:
    """MIND's behaviors from the kept users' ratings: each positive of train and test is one impression, the liked
    movie first, then ``negatives`` drawn with replacement from the user's negatives of that split (or, when it has
    none, from the movies the user never liked); the history is the earlier periods' positives."""
    all_items = np.sort(ratings["raw_item"].unique())
    rows = []
    for user, own in (
        ratings[ratings["raw_user"].isin(keep)].sort_values("timestamp", kind="stable").groupby("raw_user", sort=True)
    ):
        history = own.loc[own["positive"] & (own["period"] == 0), "raw_item"].tolist()
        ever_liked = own.loc[own["positive"], "raw_item"].to_numpy()
        for period, split in ((1, "train"), (2, "test")):
            part = own[own["period"] == period]
            pool = part.loc[~part["positive"], "raw_item"].to_numpy()
            if len(pool) == 0:
                pool = np.setdiff1d(all_items, ever_liked)
            for liked, when in zip(part.loc[part["positive"], "raw_item"], part.loc[part["positive"], "timestamp"]):
                shown = [liked, *rng.choice(pool, size=negatives, replace=True)]
                rows.append((user, int(when), split, list(history), shown))
            history = history + part.loc[part["positive"], "raw_item"].tolist()  # test history adds train positives
    behaviors = pd.DataFrame(rows, columns=["user_id", "time", "split", "history", "shown"])
    behaviors.insert(0, "impression_id", np.arange(1, len(behaviors) + 1, dtype=np.int64))
    behaviors["user_id"] = "U" + behaviors["user_id"].astype(str)
    behaviors["history"] = [["M" + str(i) for i in h] for h in behaviors["history"]]
    behaviors["shown"] = [["M" + str(i) for i in s] for s in behaviors["shown"]]
    behaviors["clicked"] = [np.array([1] + [0] * negatives, np.int8)] * len(behaviors)
    return behaviors


def _movies_as_news(movies: pd.DataFrame) -> pd.DataFrame:
    """Movies as MIND's news items: a movie's topic is its first genre."""
    first_genre = movies["genres"].fillna("(no genres listed)").str.split("|").str[0].replace("", "(no genres listed)")
    news = pd.DataFrame(
        {
            "news_id": "M" + movies["raw_item"].astype(str),
            "title": movies["title"],
            "category": first_genre,
            "subcategory": first_genre,
            "abstract": "",
        }
    )
    return with_topics(news)


def prepare_movielens_logged(
    data_dir: Path,
    *,
    variant: str = "20m",
    history_until: str = "2010-01-01",
    test_from: str = "2014-06-01",
    negatives: int = 20,
    valid_fraction: float = 0.2,
    seed: int = 2021,
    source: str | None = None,
    offline: bool = False,
    cache: Path | None = None,
    force: bool = False,
    verify: bool = True,
) -> Path:
    """MovieLens in MIND's form for the two-stage paper (the authors' movielen2mind): a movie is a "news" item whose
    topic is its first genre; positive = rating ≥ 4; history < history_until ≤ train < test_from ≤ test; each
    positive of train/test is one impression with ``negatives`` items drawn with replacement from the
    user's negatives of that split (or, when it has none, from items never positive for the user); users
    need activity before history_until and from test_from on plus a positive in train and in test; a
    random ``valid_fraction`` of the test impressions is marked valid."""
    from banditbench.data import movielens

    if variant not in movielens.VARIANTS:
        raise UserError(f"unknown --variant {variant!r}; choose from: {', '.join(movielens.VARIANTS)}")
    cut1, cut2 = _cuts(history_until, test_from)
    if not cut1 <= cut2 or negatives < 1 or not 0 <= valid_fraction <= 1:
        raise UserError("need --history-until ≤ --test-from, --negatives ≥ 1 and 0 ≤ --valid-fraction ≤ 1")
    parameters = {
        "variant": variant,
        "history_until": history_until,
        "test_from": test_from,
        "positive_at_least": 4.0,
        "negatives": negatives,
        "valid_fraction": valid_fraction,
        "seed": seed,
        "topic": "first genre",
    }
    folder = Path(data_dir) / "movielens-logged"
    if up_to_date(folder, parameters, force):
        return folder
    with raw_files(movielens.spec(variant, "movielens-logged"), source, offline, cache, verify) as raw:
        ratings = movielens.read_ratings(raw["ratings"], variant)
        movies = movielens.read_movies(raw["movies"], variant)
    ratings["positive"] = ratings["rating"] >= 4.0  # RATING_THRESHOLD = 4 of movielen2mind
    ratings["period"] = np.select([ratings["timestamp"] < cut1, ratings["timestamp"] < cut2], [0, 1], 2)
    keep = _kept_users(ratings)
    if not keep:
        raise UserError(
            f"{raw['ratings']}: no user has ratings before {history_until}, from {test_from} on, and a "
            "positive in between and after; the MovieLens-20M split needs ml-20m or ml-25m"
        )
    rng = np.random.default_rng(seed)
    behaviors = _impressions(ratings, keep, negatives, rng)
    test = np.flatnonzero(behaviors["split"].to_numpy() == "test")
    valid = rng.choice(test, size=int(round(valid_fraction * len(test))), replace=False)
    behaviors["valid"] = np.isin(np.arange(len(behaviors)), valid)
    news = _movies_as_news(movies)
    counts = {
        "news": len(news),
        "topics": int(news["topic"].max()) + 1,
        "impressions": len(behaviors),
        "users": len(keep),
        "train_impressions": int((behaviors["split"] == "train").sum()),
        "test_impressions": len(test),
        "valid_impressions": len(valid),
    }
    return write_dataset(
        folder,
        "movielens-logged",
        {"news": news, "behaviors": behaviors},
        parameters,
        protocol="ips-simulator",
        raw_files=raw.records,
        counts=counts,
        force=force,
        verification=raw.verification,
    )


register(
    Dataset(
        "mind",
        "MIND small | large: news (subcategory = topic) and impression logs with clicks, for an IPS simulator",
        "Wu et al. 2020; Two-stage neural contextual bandits",
        "ips-simulator",
        prepare_mind,
        (
            Option("variant", str, "small", "small | large (train + dev).", choices=("small", "large")),
            Option(
                "allow_unresolved",
                bool,
                False,
                "Prepare even when fewer than half of the impression or history news "
                "ids are in news.tsv (the results would mean little).",
            ),
        ),
        raw=lambda variant="small": mind_spec(variant, "train"),
        other_protocols=("twostage",),
        files="a folder with MIND<variant>_train.zip and MIND<variant>_dev.zip (or their unpacked folders), each "
        "holding behaviors.tsv and news.tsv",
    )
)

register(
    Dataset(
        "movielens-logged",
        "MovieLens-20M in MIND's form: rating ≥ 4 positive, first genre = topic, time split",
        "Two-stage neural contextual bandits (movielen2mind)",
        "ips-simulator",
        prepare_movielens_logged,
        (
            Option("variant", str, "20m", "MovieLens release (the paper: 20m).", choices=("100k", "1m", "20m", "25m")),
            Option("history_until", str, "2010-01-01", "History positives before this date."),
            Option("test_from", str, "2014-06-01", "Train before, test from this date."),
            Option("negatives", int, 20, "Negatives shown with each positive.", minimum=1),
            Option("valid_fraction", float, 0.2, "Share of test impressions marked valid.", minimum=0, maximum=1),
            Option("seed", int, 2021, "Seed of the negative and validation draws.", minimum=0),
        ),
        raw=lambda variant="20m": movielens_spec(variant),
        other_protocols=("twostage",),
        files="as movielens: ml-20m.zip or its folder (ratings.csv, movies.csv)",
    )
)


def movielens_spec(variant: str) -> RawSpec:
    from banditbench.data import movielens

    return movielens.spec(variant, "movielens-logged")
