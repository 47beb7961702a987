"""Tiny raw MIND and MovieLens files in their real formats (see tests/test_logged.py), with a planted taste:
user u clicks items of topic u % topics, so a click model has something to learn."""

from __future__ import annotations

import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

WORDS = ["game", "vote", "rain", "market", "film", "music", "space", "health", "travel", "food", "school", "car"]
SUBCATEGORIES = ["football_nfl", "newsus", "weathertopstories", "markets"]


def mind_news(n_items: int, rng: np.random.Generator) -> list[str]:
    lines = []
    for i in range(1, n_items + 1):
        topic = i % len(SUBCATEGORIES)
        words = [WORDS[topic * 3 + k] for k in rng.integers(0, 3, size=3)] + list(rng.choice(WORDS, size=2))
        title = " ".join(words).capitalize() + ("!" if i % 5 == 0 else "")
        lines.append(f"N{i}\tcat{topic}\t{SUBCATEGORIES[topic]}\t{title}\tabstract\thttps://x/{i}\t[]\t[]")
    return lines


def mind_behaviors(
    n_users: int, n_items: int, impressions: int, rng: np.random.Generator, start: int, day: datetime
) -> list[str]:
    lines = []
    for k in range(impressions):
        u = int(rng.integers(0, n_users))
        taste = u % len(SUBCATEGORIES)
        liked = [i for i in range(1, n_items + 1) if i % len(SUBCATEGORIES) == taste]
        history = rng.choice(liked, size=int(rng.integers(0, 6)), replace=False)
        shown = rng.choice(np.arange(1, n_items + 1), size=int(rng.integers(4, 10)), replace=False)
        clicks = [int(i % len(SUBCATEGORIES) == taste and rng.random() < 0.8) for i in shown]
        if not any(clicks):
            shown[0], clicks[0] = liked[int(rng.integers(len(liked)))], 1
        when = (day + timedelta(minutes=int(rng.integers(0, 24 * 60)))).strftime("%m/%d/%Y %I:%M:%S %p")
        pairs = " ".join(f"N{i}-{c}" for i, c in zip(shown, clicks))
        lines.append(f"{start + k}\tU{u}\t{when}\t{' '.join(f'N{i}' for i in history)}\t{pairs}")
    return lines


def write_mind_fixture(
    folder: Path, n_users: int = 12, n_items: int = 40, train: int = 160, dev: int = 60, seed: int = 0
) -> Path:
    """MINDsmall_{train,dev}.zip in ``folder`` (prepare with verify=False: the sha256 pins are MINDsmall's)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    news = mind_news(n_items, rng)
    for part, count, start, day in (
        ("train", train, 1, datetime(2019, 11, 12)),
        ("dev", dev, train + 1, datetime(2019, 11, 15)),
    ):
        with zipfile.ZipFile(folder / f"MINDsmall_{part}.zip", "w") as z:
            z.writestr("news.tsv", "\n".join(news) + "\n")
            z.writestr("behaviors.tsv", "\n".join(mind_behaviors(n_users, n_items, count, rng, start, day)) + "\n")
    return folder


def write_movielens_fixture(folder: Path, n_users: int = 10, n_items: int = 30, seed: int = 0) -> Path:
    """ml-20m style ratings.csv / movies.csv with ratings before 2010, in 2010–2014 and after 2014-06."""
    rng = np.random.default_rng(seed)
    genres = ["Drama", "Comedy|Romance", "Action|Thriller"]
    periods = (1_200_000_000, 1_300_000_000, 1_420_000_000)  # 2008, 2011, 2015
    rows = []
    for u in range(1, n_users + 1):
        for start in periods:
            for i in rng.choice(np.arange(1, n_items + 1), size=8, replace=False):
                rating = 5.0 if i % 3 == u % 3 else float(rng.choice([1.0, 2.0, 3.0]))
                rows.append((u, int(i), rating, start + int(rng.integers(0, 10_000_000))))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n" + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in rows)
    )
    (folder / "movies.csv").write_text(
        "movieId,title,genres\n"
        + "".join(
            f'{i},"Film {WORDS[i % len(WORDS)]} {i} (199{i % 10})",{genres[i % 3]}\n' for i in range(1, n_items + 1)
        )
    )
    return folder


def prepare_both(root: Path) -> Path:
    """The MIND and MovieLens fixtures written under ``root`` and prepared into ``root / "ds"`` (returned)."""
    from banditbench.data import logged

    write_mind_fixture(root / "mind-raw")
    logged.prepare_mind(root / "ds", source=str(root / "mind-raw"), offline=True, verify=False)
    write_movielens_fixture(root / "ml-raw")
    logged.prepare_movielens_logged(root / "ds", source=str(root / "ml-raw"), offline=True)
    return root / "ds"
