"""Time ``banditbench prepare movielens --variant 25m`` on a synthetic ratings file of ML-25M's size.

Writes ``ratings.csv`` (header ``userId,movieId,rating,timestamp``, half-star ratings 0.5–5.0) with
--rows rows over 162,541 users and 62,423 movies, popularity ∝ rank^(−1) as in real rating data, and
a matching ``movies.csv``; then runs the real command line on that folder (--source) in a fresh process
and prints wall time and peak RSS. Targets (issue 3): ≤ 3 minutes and ≤ 6 GB on 2 cores.

    .venv/bin/python benchmarks/prepare_ml25m.py [--rows 25000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

USERS, MOVIES = 162_541, 62_423


def zipf_ids(rng: np.random.Generator, n_ids: int, size: int) -> np.ndarray:
    """ids 1..n_ids drawn with probability ∝ 1/rank, rank = a fixed random permutation of the ids."""
    weights = 1.0 / np.arange(1, n_ids + 1)
    cdf = np.cumsum(weights / weights.sum())
    ranks = np.minimum(np.searchsorted(cdf, rng.random(size)), n_ids - 1)
    return rng.permutation(n_ids)[ranks] + 1


def write_ratings(folder: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with open(folder / "ratings.csv", "wb") as f:
        f.write(b"userId,movieId,rating,timestamp\n")
        for start in range(0, rows, 5_000_000):
            n = min(5_000_000, rows - start)
            table = pa.table(
                {
                    "userId": zipf_ids(rng, USERS, n),
                    "movieId": zipf_ids(rng, MOVIES, n),
                    "rating": rng.choice(
                        np.arange(1, 11) / 2, size=n, p=np.array([1, 3, 2, 7, 5, 20, 13, 26, 8, 15]) / 100
                    ),
                    "timestamp": rng.integers(789_652_009, 1_574_327_703, size=n),
                }
            )
            pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False))
    movies = [f'{i},"Movie {i}, The (19{i % 100:02d})",Drama|Comedy' for i in range(1, MOVIES + 1)]
    (folder / "movies.csv").write_text("movieId,title,genres\n" + "\n".join(movies) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=25_000_000)
    parser.add_argument("--keep", type=Path, help="Keep the synthetic raw folder here (default: a temporary folder).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ml25m-bench-") as scratch:
        raw = args.keep or Path(scratch) / "raw"
        raw.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        write_ratings(raw, args.rows)
        print(
            f"wrote {args.rows:,} synthetic ratings ({(raw / 'ratings.csv').stat().st_size / 1e6:,.0f} MB) "
            f"in {time.perf_counter() - started:.1f} s"
        )
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "banditbench",
                "prepare",
                "movielens",
                "--variant",
                "25m",
                "--source",
                str(raw),
                "--data-dir",
                str(Path(scratch) / "datasets"),
                "--force",
            ],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2  # kB on Linux
        if done.returncode:
            sys.exit(f"prepare failed: {done.stderr.strip()}")
        print(done.stdout.strip())
        print(
            f"prepare movielens --variant 25m: {wall:.1f} s wall, {peak_gb:.2f} GB peak RSS (targets: ≤ 180 s, ≤ 6 GB)"
        )


if __name__ == "__main__":
    main()
