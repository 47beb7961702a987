"""Throughput and memory of every registered algorithm on the built-in synthetic protocol.

    .venv/bin/python benchmarks/throughput.py [--rounds 10000] [--algos random,linucb-ind]

Each algorithm runs one unit in a fresh process (so peak memory is its own) on synthetic users
(N = 100, M = 5, d = 15, K = 25, σ = 0.1, Ghosh et al.'s sizes) and prints rounds per second for the
whole unit (environment included) and for the algorithm alone (select + update), and peak RSS.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
from pathlib import Path


def measure(algorithm: str, data_dir: str, rounds: int) -> dict:
    from banditbench.data import load_dataset
    from banditbench.runner import Unit, run_unit
    from banditbench.algos import ALGORITHMS

    dataset = load_dataset(Path(data_dir), "synthetic")
    unit = Unit("synthetic", "linear", algorithm, ALGORITHMS[algorithm].defaults(), 0, 0, rounds, None)
    result = run_unit(unit, dataset)
    algorithm_seconds = sum(result.timing.column(c).to_numpy().sum() for c in ("select_seconds", "update_seconds"))
    return {
        "algorithm": algorithm,
        "rounds_per_second": rounds / result.wall_seconds,
        "algorithm_rounds_per_second": rounds / algorithm_seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "final_regret": float(result.outcome.column("regret").to_numpy().sum()),
    }


def main() -> None:
    from banditbench.algos import ALGORITHMS
    from banditbench.data import synthetic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--algos", default=",".join(ALGORITHMS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        synthetic.prepare(data_dir, **{k: v for k, v in synthetic.DEFAULTS.items()})
        context = multiprocessing.get_context("spawn")
        print(f"{'algorithm':<14} {'rounds/s':>10} {'algo-only r/s':>14} {'peak RSS MB':>12} {'regret':>10}")
        for algorithm in args.algos.split(","):
            with context.Pool(1) as pool:
                row = pool.apply(measure, (algorithm, data_dir, args.rounds))
            print(f"{row['algorithm']:<14} {row['rounds_per_second']:>10,.0f} {row['algorithm_rounds_per_second']:>14,.0f} "
                  f"{row['peak_rss_mb']:>12,.0f} {row['final_regret']:>10,.1f}")


if __name__ == "__main__":
    main()
