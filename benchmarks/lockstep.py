"""The lockstep engine against the units engine: time, and whether the results differ.

    .venv/bin/python benchmarks/lockstep.py [--algos neuucb-one,neuucb-ind] [--seeds 10] [--rounds 3000] [--jobs 1]
                                            [--seed 0] [--datasets DIR] [--set ALGO.NAME=VALUE ...]

Prepares MovieLens-100K from DATASETS/movielens-100k (the recommendation protocol, 50 groups, K = 10, d = 10), then
per algorithm runs ``banditbench run --engine units`` and ``--engine lockstep`` in fresh processes (A B, then B A
again, the best of the two kept), and prints for each engine the wall and CPU seconds of the process tree and the
CPU seconds per 1 000 seed-rounds; then the speed-up, the share of rounds whose choice is the same under both
engines, the mean final regret of each and the paired t-test and Wilcoxon p-values between them over the seeds
(the report's tests: seeds pair up, as they share users and rewards). ``--set`` passes hyper-parameters to both
engines' runs, as ``banditbench run --set`` does."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from figure import CLI, SHARED, prepare, timed  # noqa: E402

ENGINES = ("units", "lockstep")


def timed_run(algorithm: str, engine: str, args, data_dir: Path, out: Path) -> tuple[float, float]:
    command = CLI + [
        "run",
        "--dataset",
        "movielens",
        "--algos",
        algorithm,
        "--seeds",
        str(args.seeds),
        "--seed",
        str(args.seed),
        "--rounds",
        str(args.rounds),
        "--jobs",
        str(args.jobs),
        "--engine",
        engine,
        "--data-dir",
        str(data_dir),
        "--out",
        str(out),
        "--overwrite",
    ]
    for setting in args.set:
        command += ["--set", setting]
    wall, cpu, returncode = timed(command, interval=0.1)
    if returncode:
        sys.exit(f"{' '.join(command[2:])} failed (exit {returncode})")
    return wall, cpu


def outcomes(out: Path, algorithm: str, seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """Chosen arms [seeds, T] and final cumulative regret [seeds]."""
    # a run with --set names its shards ALGO-<settings digest>-seedI
    tables = [pq.read_table(next((out / "shards").glob(f"{algorithm}*-seed{i}.parquet"))) for i in range(seeds)]
    chosen = np.stack([t["chosen"].to_numpy() for t in tables])
    return chosen, np.array([t["regret"].to_numpy().sum() for t in tables])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="neuucb-one,neuucb-ind")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="master seed")
    parser.add_argument("--datasets", type=Path, default=SHARED, help="folder of the raw datasets")
    parser.add_argument("--set", action="append", default=[], help="hyper-parameter ALGO.NAME=VALUE (repeatable)")
    args = parser.parse_args()

    from banditbench.report.stats import paired_pvalues

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        note = prepare("movielens", root / "datasets", args.datasets)
        print(f"{note}; {args.seeds} seeds × {args.rounds} rounds, master seed {args.seed}, --jobs {args.jobs}")
        print(
            f"{'algorithm':<12} {'engine':<9} {'wall s':>7} {'CPU s':>7} {'CPU s/1000':>10} {'speed-up':>8} "
            f"{'same choice':>11} {'final regret':>13} {'p (t)':>6} {'p (W)':>6}"
        )
        for algorithm in args.algos.split(","):
            best = {engine: (np.inf, np.inf) for engine in ENGINES}
            for order in (ENGINES, ENGINES[::-1]):
                for engine in order:
                    wall, cpu = timed_run(algorithm, engine, args, root / "datasets", root / engine)
                    best[engine] = min(best[engine], (wall, cpu))
            (units_chosen, units_regret), (lock_chosen, lock_regret) = (
                outcomes(root / engine, algorithm, args.seeds) for engine in ENGINES
            )
            t_p, w_p, _ = paired_pvalues(units_regret, lock_regret)  # NaN where no test applies (identical runs)
            seed_rounds = args.seeds * args.rounds / 1000
            for engine, regret in zip(ENGINES, (units_regret, lock_regret)):
                wall, cpu = best[engine]
                lockstep = engine == "lockstep"
                print(
                    f"{algorithm:<12} {engine:<9} {wall:>7.2f} {cpu:>7.2f} {cpu / seed_rounds:>10.3f} "
                    f"{best['units'][1] / cpu if lockstep else 1.0:>7.2f}× "
                    f"{f'{(units_chosen == lock_chosen).mean():.1%}' if lockstep else '':>11} "
                    f"{regret.mean():>7.1f} ± {regret.std(ddof=1):>4.0f} "
                    f"{f'{t_p:.2f}' if lockstep else '':>6} {f'{w_p:.2f}' if lockstep else '':>6}"
                )


if __name__ == "__main__":
    main()
