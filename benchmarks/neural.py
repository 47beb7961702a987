"""Speed of the neural bandits on the issue's protocols, against the authors' code (specs/reference-speed.md).

    .venv/bin/python benchmarks/neural.py [--rounds 10000] [--algos neuucb-one,neuucb-ind,mcnb,metaban]
                                          [--mnist-rounds 10000] [--datasets ../shared/datasets]

Recommendation protocol: MovieLens-100K prepared as ``banditbench prepare movielens --variant 100k --source
DATASETS/movielens-100k --groups 50 --dim 10`` (n = 50 K-means groups, K = 10, d = 10, paper mode); when that
folder is absent, the synthetic stand-in of the same shape (``synthetic --protocol cosine``: 50 users in 5
clusters, K = 10, d = 10), said so in the output. Classification protocol: the MNIST test set (10 000 images)
from DATASETS/mnist-test, block encoding (d = 7840), with the diagonal NeuralUCB (``--mnist-rounds 0`` skips it).
Default hyper-parameters, one unit per algorithm, each in a fresh process.

Prints per run: rounds/s (wall), CPU seconds per 10 000 rounds (the process's CPU time; on a machine shared
with other jobs it is what the code costs with a core to itself; torch runs single-threaded, ``threads=1``), the
ratio of the wall rounds/s to the authors' code (M-CNB 31, Meta-Ban 2.7, NeuUCB-ONE 280, NeuUCB-IND 209 r/s;
the 20× goal is 620, 54, 5 600 and 4 200), the issue's floor in seconds per 10 000 rounds, final cumulative
regret and the policy's own time split where it reports one (M-CNB: clustering, meta adaptation, user-learner
training, the timing sidecar's columns), and the load average when the run started.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

REFERENCE = {"mcnb": 31.0, "metaban": 2.7, "neuucb-one": 280.0, "neuucb-ind": 209.0}
FLOOR_SECONDS = {"mcnb": 60.0, "metaban": 60.0, "neuucb-one": 30.0, "neuucb-ind": 30.0}
MNIST_FLOOR_SECONDS = 300.0
STAND_IN = {"users": 50, "clusters": 5, "dim": 10, "arms": 10, "noise": 0.1, "z": 0.0, "seed": 0}
# the project's shared genuine data: the nearest ancestor folder holding shared/datasets (main checkout or worktree)
SHARED = next(
    (p / "shared" / "datasets" for p in Path(__file__).resolve().parents if (p / "shared" / "datasets").is_dir()),
    Path("shared/datasets"),
)


def measure(algorithm: str, data_dir: str, name: str, protocol: str, rounds: int) -> dict:
    from banditbench.algos import ALGORITHMS
    from banditbench.data import load_dataset
    from banditbench.runner import Unit, run_unit

    dataset = load_dataset(Path(data_dir), name)
    unit = Unit(name, protocol, algorithm, ALGORITHMS[algorithm].defaults(), 0, 0, rounds, None)
    cpu = time.process_time()
    result = run_unit(unit, dataset)
    cpu = time.process_time() - cpu
    timing = result.timing.to_pandas()
    split = {
        c.removesuffix("_seconds"): float(timing[c].sum())
        for c in timing.columns
        if c not in ("t", "select_seconds", "update_seconds")
    }
    return {
        "rate": rounds / result.wall_seconds,
        "cpu_per_10k": cpu * 10_000 / rounds,
        "split": split,
        "regret": float(result.outcome.column("regret").to_numpy().sum()),
    }


def prepare(data_dir: str, datasets: Path) -> tuple[str, str]:
    """The recommendation dataset: MovieLens-100K when its folder exists, else the synthetic stand-in."""
    from banditbench.data import movielens, synthetic

    if (datasets / "movielens-100k" / "u.data").is_file():
        movielens.prepare(Path(data_dir), variant="100k", source=str(datasets / "movielens-100k"), offline=True)
        return "movielens", "recommendation"
    synthetic.prepare(data_dir, **STAND_IN, protocol="cosine")
    return "synthetic-cosine", "cosine"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--algos", default=",".join(REFERENCE))
    parser.add_argument("--mnist-rounds", type=int, default=10_000)
    parser.add_argument("--datasets", type=Path, default=SHARED, help="folder with movielens-100k/ and mnist-test/")
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as data_dir:
        name, protocol = prepare(data_dir, args.datasets)
        if name != "movielens":
            print(f"no {args.datasets / 'movielens-100k'}: the synthetic stand-in (50 users, K = 10, d = 10) instead")
        runs += [
            (algorithm, name, protocol, args.rounds, REFERENCE.get(algorithm), FLOOR_SECONDS.get(algorithm))
            for algorithm in args.algos.split(",")
        ]
        if args.mnist_rounds and (args.datasets / "mnist-test" / "t10k-images-idx3-ubyte.gz").is_file():
            from banditbench.data import classification

            classification.prepare(
                Path(data_dir), "mnist", split="test", source=str(args.datasets / "mnist-test"), offline=True
            )
            runs.append(("neuucb-one", "mnist", "classification", args.mnist_rounds, None, MNIST_FLOOR_SECONDS))
        elif args.mnist_rounds:
            print(f"no {args.datasets / 'mnist-test'}: MNIST figure skipped")
        context = multiprocessing.get_context("spawn")
        print(
            f"{'dataset':<17} {'algorithm':<11} {'rounds':>6} {'rounds/s':>8} {'CPU s/10k':>9} {'× ref':>6} "
            f"{'floor s':>7} {'regret':>8} {'load':>5}  time split (s)"
        )
        for algorithm, name, protocol, rounds, reference, floor in runs:
            load = os.getloadavg()[0]
            with context.Pool(1) as pool:
                row = pool.apply(measure, (algorithm, data_dir, name, protocol, rounds))
            ratio = f"{row['rate'] / reference:.1f}" if reference else "–"
            split = ", ".join(f"{k} {v:.1f}" for k, v in row["split"].items())
            print(
                f"{name:<17} {algorithm:<11} {rounds:>6} {row['rate']:>8,.0f} {row['cpu_per_10k']:>9.1f} {ratio:>6} "
                f"{floor:>7.0f} {row['regret']:>8.1f} {load:>5.1f}  {split}",
                flush=True,
            )


if __name__ == "__main__":
    main()
