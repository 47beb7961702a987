"""Throughput and memory of every registered algorithm on the built-in synthetic protocol or on MovieLens.

    .venv/bin/python benchmarks/throughput.py [--rounds 10000] [--algos random,linucb-ind]
        [--users 100 --clusters 5 --dim 15 --arms 25 --noise 0.1 --centres sphere --protocol linear]
    .venv/bin/python benchmarks/throughput.py --movielens [../shared/datasets/movielens-100k] [--algos club,locb]

``--movielens FOLDER`` prepares MovieLens-100K from that folder (``prepare movielens --variant 100k --groups 50
--dim 10``: the recommendation protocol, n = 50 user groups, K = 10, d = 10) and runs on it; when the folder is
absent it says so and falls back to the synthetic stand-in ``--users 50 --arms 10 --dim 10``.

Each algorithm runs one unit in a fresh process (so peak memory is its own) with one BLAS thread, ``--repeat``
times (default 3; the fastest run is printed: on a shared virtual machine the same run varies by up to 2× with the
neighbours' load), on synthetic users (default N = 100, M = 5, d = 15, K = 25, σ = 0.1, Ghosh et al.'s sizes)
and prints rounds per second for the whole unit (environment included: by wall clock and per CPU-second of the
process) and for the algorithm alone (select + update), peak RSS (and the RSS before the unit, which is mostly the
imported libraries), and the ratio of the whole-unit speed to the authors' code (../shared/specs/reference-speed.md)
where it was measured.
Setups of issue 4: BASS's ``--users 18 --clusters 2 --arms 10 --dim 5 --centres bass --noise 1``, the stand-in
for the recommendation protocol ``--users 50 --arms 10 --dim 10``, memory with ``--users 10000``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# ../shared/datasets/movielens-100k beside the checkout (a worktree sits one level deeper)
MOVIELENS_100K = next(
    (
        p / "shared" / "datasets" / "movielens-100k"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "datasets" / "movielens-100k").is_dir()
    ),
    Path("movielens-100k"),
)


# Rounds per second of the authors' code, environment included (reference-speed.md; 10 000 rounds):
# CLUB/LOCB/SCLUB/COFIBA on the recommendation protocol, BASS/DynUCB/CMLB on bandpy's N = 18 synthetic example.
REFERENCE = {"club": 1300, "locb": 950, "sclub": 240, "cofiba": 77, "bass": 2100, "dynucb": 21500, "cmlb": 17700}


# The synthetic instance these figures were measured on (the generator's defaults when they were taken).
INSTANCE = {"users": 100, "clusters": 5, "dim": 15, "arms": 25, "noise": 0.1, "z": 0.0, "seed": 0}


def measure(algorithm: str, data_dir: str, name: str, rounds: int) -> dict:
    from banditbench.algos import ALGORITHMS
    from banditbench.data import load_dataset
    from banditbench.runner import Unit, run_unit
    from banditbench.runner.executors import limit_threads

    limit_threads()  # one BLAS thread, as in the executors' workers: OpenBLAS threads only slow down d = 10 products
    dataset = load_dataset(Path(data_dir), name)
    unit = Unit(name, dataset.manifest["protocol"], algorithm, ALGORITHMS[algorithm].defaults(), 0, 0, rounds, None)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu = time.process_time()
    result = run_unit(unit, dataset)
    cpu = time.process_time() - cpu
    algorithm_seconds = sum(result.timing.column(c).to_numpy().sum() for c in ("select_seconds", "update_seconds"))
    return {
        "algorithm": algorithm,
        "rounds_per_second": rounds / result.wall_seconds,
        "rounds_per_cpu_second": rounds / cpu,
        "algorithm_rounds_per_second": rounds / algorithm_seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_mb": rss_before,
        "final_regret": float(result.outcome.column("regret").to_numpy().sum()),
    }


def prepare_movielens(source: Path, data_dir: str) -> bool:
    if not (source / "u.data").is_file():
        print(f"no MovieLens-100K at {source}: using the synthetic stand-in --users 50 --arms 10 --dim 10")
        return False
    subprocess.run(
        [
            sys.executable,
            "-m",
            "banditbench",
            "prepare",
            "movielens",
            "--variant",
            "100k",
            "--source",
            str(source),
            "--groups",
            "50",
            "--dim",
            "10",
            "--data-dir",
            data_dir,
            "--offline",
        ],
        check=True,
        capture_output=True,
    )
    return True


def main() -> None:
    from banditbench.algos import ALGORITHMS
    from banditbench.data import synthetic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--algos", default=",".join(ALGORITHMS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per algorithm; the fastest is printed")
    parser.add_argument(
        "--movielens",
        nargs="?",
        const=str(MOVIELENS_100K),
        default=None,
        metavar="FOLDER",
        help="MovieLens-100K raw folder (u.data): run on the recommendation protocol",
    )
    for name, default in INSTANCE.items():
        if name != "seed":
            parser.add_argument(f"--{name}", type=type(default), default=default)
    parser.add_argument("--centres", default="sphere", choices=synthetic.CENTRES)
    parser.add_argument("--protocol", default="linear", choices=synthetic.SYNTHETIC_PROTOCOLS)
    args = parser.parse_args()
    options = {name: getattr(args, name) for name in INSTANCE if name != "seed"}
    with tempfile.TemporaryDirectory() as data_dir:
        if args.movielens is not None and prepare_movielens(Path(args.movielens), data_dir):
            name, setup = "movielens", "MovieLens-100K, recommendation protocol (paper mode), 50 groups, K = 10, d = 10"
        else:
            if args.movielens is not None:
                options.update(users=50, arms=10, dim=10)
            synthetic.prepare(data_dir, **options, seed=0, centres=args.centres, protocol=args.protocol)
            name, setup = "synthetic", f"{options} centres={args.centres} protocol={args.protocol}"
        context = multiprocessing.get_context("spawn")
        print(f"{setup} T={args.rounds}")
        print(
            f"{'algorithm':<14} {'rounds/s':>10} {'r/CPU-s':>10} {'algo-only r/s':>14} {'× ref':>7} "
            f"{'peak RSS MB':>12} {'(before)':>9} {'regret':>10}"
        )
        for algorithm in args.algos.split(","):
            rows = []
            for _ in range(args.repeat):
                with context.Pool(1) as pool:
                    rows.append(pool.apply(measure, (algorithm, data_dir, name, args.rounds)))
            row = max(rows, key=lambda r: r["rounds_per_second"])  # the run least disturbed by the machine's neighbours
            ratio = row["rounds_per_second"] / REFERENCE[algorithm] if algorithm in REFERENCE else float("nan")
            print(
                f"{row['algorithm']:<14} {row['rounds_per_second']:>10,.0f} {row['rounds_per_cpu_second']:>10,.0f} "
                f"{row['algorithm_rounds_per_second']:>14,.0f} {ratio:>7.2f} {row['peak_rss_mb']:>12,.0f} "
                f"{row['rss_before_mb']:>9,.0f} {row['final_regret']:>10,.1f}"
            )


if __name__ == "__main__":
    main()
