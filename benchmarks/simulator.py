"""Simulator training on MovieLens-20M-sized logged data, and the simulator's scoring throughput (issue 6).

    PYTHONPATH=. .venv/bin/python benchmarks/simulator.py [--train-impressions 500000] [--users 4000]
        [--epochs 5] [--threads 2] [--keep DIR]

The real ml-20m is not on this machine, so the script writes a prepared ``movielens-logged`` dataset of the
real shape straight into Parquet (what ``prepare movielens-logged`` would produce): the 27,278 movies of
ML-20M with their 20 first genres in the real proportions (twostage.md §5.2), titles of 2–6 words plus a year,
``--users`` users each with a favourite genre, a pre-2010 history of 20–200 positives, one impression per
training-period positive (1 positive + 20 negatives, as movielen2mind) and test impressions a fifth as many,
20 % of them valid. Sizing (twostage.md §5): ML-20M has 20 M ratings of 138,493 users; the paper's filter keeps
only users active before 2010 *and* after 2014-06 with a positive in both periods, a small long-lived minority,
so the default 4,000 users × 125 training positives = 500,000 training impressions (10.5 M logged candidates)
is an upper-end estimate; pass other sizes to rescale.

Prints: the data size, the time to read it into arrays, every epoch, the total training wall and CPU time,
peak memory (ru_maxrss), then scoring throughput: click probabilities of 100,000 items for one user and
``clicks`` of 5-item slates per second. Issue 6's target: training within 30 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

# First-genre counts of ML-20M's 27,278 movies (twostage.md §5.2).
GENRES = {
    "IMAX": 1,
    "War": 35,
    "Film-Noir": 38,
    "Musical": 94,
    "Fantasy": 137,
    "Romance": 145,
    "Mystery": 146,
    "Sci-Fi": 168,
    "Western": 215,
    "(no genres listed)": 246,
    "Thriller": 279,
    "Children": 414,
    "Animation": 571,
    "Adventure": 1357,
    "Horror": 1380,
    "Crime": 1617,
    "Documentary": 2247,
    "Action": 3520,
    "Comedy": 6793,
    "Drama": 7875,
}


def ragged(rng: np.random.Generator, lengths: np.ndarray, pools: list[np.ndarray], owner: np.ndarray):
    """Offsets and values: row r draws lengths[r] items from pools[owner[r]]."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    sizes = np.array([len(p) for p in pools])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    flat_pools = np.concatenate(pools)
    row_owner = np.repeat(owner, lengths)
    values = flat_pools[starts[row_owner] + (rng.random(len(row_owner)) * sizes[row_owner]).astype(np.int64)]
    return offsets, values


def write_logged(data_dir: Path, users: int, train_impressions: int, seed: int = 0) -> None:
    import pandas as pd
    import pyarrow as pa

    from banditbench.data.logged import with_topics
    from banditbench.data.prepared import write_dataset

    rng = np.random.default_rng(seed)
    genre = np.repeat(np.array(list(GENRES)), list(GENRES.values()))
    n = len(genre)
    words = np.array([f"w{k}" for k in range(20_000)])
    titles = [
        " ".join(words[rng.zipf(1.3, size=rng.integers(2, 7)) % len(words)]) + f" ({rng.integers(1920, 2015)})"
        for _ in range(n)
    ]
    news = with_topics(
        pd.DataFrame(
            {
                "news_id": [f"M{i}" for i in range(1, n + 1)],
                "title": titles,
                "category": genre,
                "subcategory": genre,
                "abstract": "",
            }
        )
    )
    names = pa.array(news["news_id"].to_numpy())
    topic = news["topic"].to_numpy()
    by_topic = [np.flatnonzero(topic == t) for t in range(topic.max() + 1)]
    favourite = rng.choice(len(by_topic), size=users, p=np.array([len(b) for b in by_topic]) / n)
    # liked pool of a user: its favourite genre; negatives: the whole catalogue
    test = train_impressions // 5
    total = train_impressions + test
    user = np.sort(rng.integers(0, users, total))
    split = np.where(rng.random(total) < train_impressions / total, "train", "test")
    history_offsets, history = ragged(rng, rng.integers(20, 201, total), by_topic, favourite[user])
    positive = ragged(rng, np.ones(total, np.int64), by_topic, favourite[user])[1]
    negatives = rng.integers(0, n, (total, 20))
    shown = np.column_stack([positive, negatives]).reshape(-1)
    shown_offsets = np.arange(0, 21 * total + 1, 21, dtype=np.int32)
    clicked = np.tile(np.r_[1, np.zeros(20)].astype(np.int8), total)
    valid = (split == "test") & (rng.random(total) < 0.2)
    behaviors = pa.table(
        {
            "impression_id": np.arange(1, total + 1),
            "user_id": np.char.add("U", user.astype(str)),
            "time": 1_262_304_000 + np.sort(rng.integers(0, 140_000_000, total)),
            "split": split,
            "history": pa.ListArray.from_arrays(history_offsets, names.take(history)),
            "shown": pa.ListArray.from_arrays(shown_offsets, names.take(shown)),
            "clicked": pa.ListArray.from_arrays(shown_offsets, pa.array(clicked)),
            "valid": valid,
        }
    )
    write_dataset(
        data_dir / "movielens-logged",
        "movielens-logged",
        {"news": news, "behaviors": behaviors},
        {"generated": "benchmarks/simulator.py", "users": users, "train_impressions": train_impressions},
        protocol="ips-simulator",
        counts={"news": n, "impressions": total},
        force=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-impressions", type=int, default=500_000)
    parser.add_argument("--users", type=int, default=4_000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="Write the data here instead of a temporary folder.")
    args = parser.parse_args()

    from banditbench.data import load_dataset
    from banditbench.simulator.logged import load_logged
    from banditbench.simulator.model import Simulator
    from banditbench.simulator.train import TrainSettings, train_simulator

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.keep or Path(tmp)
        started = time.perf_counter()
        write_logged(data_dir, args.users, args.train_impressions)
        print(
            f"generated {args.train_impressions:,} training impressions (+ {args.train_impressions // 5:,} test) "
            f"of {args.users:,} users over 27,278 movies in {time.perf_counter() - started:.0f} s"
        )
        started, cpu = time.perf_counter(), time.process_time()
        data = load_logged(load_dataset(data_dir, "movielens-logged"))
        print(
            f"read into arrays: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU; "
            f"{len(data.impressions):,} impressions, {len(data.impressions.shown):,} candidates, "
            f"{len(data.vocabulary):,} words"
        )
        settings = TrainSettings(epochs=args.epochs, threads=args.threads)
        done = train_simulator(
            data_dir,
            "movielens-logged",
            settings,
            force=True,
            progress=lambda r: print(
                f"  epoch {r['epoch']}: loss {r['train_loss']:.4f}, AUC/impression {r['auc_mean_per_impression']:.4f}, "
                f"{r['seconds']:.0f} s",
                flush=True,
            ),
        )
        timing = done["timing"]
        print(
            f"training: {timing['wall_seconds'] / 60:.1f} min wall, {timing['cpu_seconds'] / 60:.1f} min CPU, "
            f"{len(done['epochs'])} epochs of {done['training_rows']:,} rows, threads {args.threads}; peak RSS "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB; best AUC/impression "
            f"{done['metrics']['auc_mean_per_impression']:.4f}"
        )

        started = time.perf_counter()
        sim = Simulator.load(load_dataset(data_dir, "movielens-logged"), data)
        print(f"Simulator.load (item vectors of all movies): {time.perf_counter() - started:.2f} s")
        rng = np.random.default_rng(0)
        items = rng.integers(1, data.n_items + 1, 100_000)
        sim.click_probabilities(np.array([0]), items)  # user vector cached
        repeats, started = 50, time.perf_counter()
        for _ in range(repeats):
            sim.click_probabilities(np.array([0]), items)
        print(
            f"click probabilities of 100,000 items for one user: "
            f"{(time.perf_counter() - started) / repeats * 1000:.1f} ms"
        )
        users = rng.integers(0, data.n_users, 2000)
        slates = rng.integers(1, data.n_items + 1, (2000, 5))
        started = time.perf_counter()
        sim.user_vectors(np.unique(users))  # a trial's users, in one batched call
        for u, slate in zip(users, slates):
            sim.clicks(int(u), slate, rng)
        print(
            f"clicks of 5-item slates, 2,000 rounds over {len(np.unique(users))} users (user vectors in "
            f"one call): {2000 / (time.perf_counter() - started):,.0f} rounds/s"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
