"""Rounds per second of the neural bandits against the authors' code (specs/reference-speed.md).

    .venv/bin/python benchmarks/neural.py [--rounds 10000] [--algos neuucb-one,neuucb-ind,mcnb,metaban]

Setting: K = 10 arms, d = 10, 50 users in 5 clusters, the non-linear ``cosine`` protocol (a stand-in for the
recommendation protocol, n = 50 groups, K = 10, d = 10, until that protocol exists), default hyper-parameters,
one unit per algorithm, each in a fresh process. Prints rounds/s, the ratio to the reference rounds/s of the
authors' code (M-CNB 31, Meta-Ban 2.7, NeuUCB-ONE 280, NeuUCB-IND 209), the seconds a 10 000-round run takes
at that speed against the issue's floor (60 s for M-CNB and Meta-Ban, 30 s for NeuralUCB), final regret, and
the policy's own time split where it reports one (M-CNB: clustering, meta adaptation, user training).
"per CPU s" divides by the process's CPU time instead of wall time: on a machine shared with other jobs it
shows what the code costs when it has a core to itself (torch runs single-threaded here, ``threads=1``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
from pathlib import Path

REFERENCE = {"mcnb": 31.0, "metaban": 2.7, "neuucb-one": 280.0, "neuucb-ind": 209.0}
FLOOR_SECONDS = {"mcnb": 60.0, "metaban": 60.0, "neuucb-one": 30.0, "neuucb-ind": 30.0}
SETTING = {"users": 50, "clusters": 5, "dim": 10, "arms": 10, "noise": 0.1, "z": 0.0, "seed": 0}


def measure(algorithm: str, data_dir: str, rounds: int) -> dict:
    from banditbench.algos import ALGORITHMS
    from banditbench.data import load_dataset
    from banditbench.runner import Unit, run_unit

    import time

    dataset = load_dataset(Path(data_dir), "synthetic-cosine")
    unit = Unit("synthetic-cosine", "cosine", algorithm, ALGORITHMS[algorithm].defaults(), 0, 0, rounds, None)
    cpu = time.process_time()
    result = run_unit(unit, dataset)
    cpu = time.process_time() - cpu
    timing = result.timing.to_pandas()
    split = {c.removesuffix("_seconds"): float(timing[c].sum()) for c in timing.columns
             if c not in ("t", "select_seconds", "update_seconds")}
    return {"rounds_per_second": rounds / result.wall_seconds, "cpu_rate": rounds / cpu, "split": split,
            "regret": float(result.outcome.column("regret").to_numpy().sum())}


def main() -> None:
    from banditbench.data import synthetic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--algos", default=",".join(REFERENCE))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        synthetic.prepare(data_dir, **SETTING, protocol="cosine")
        context = multiprocessing.get_context("spawn")
        print(f"{'algorithm':<12} {'rounds/s':>9} {'per CPU s':>9} {'× ref':>7} {'s/10k':>7} {'floor':>6} {'regret':>8}  "
              "time split (s)")
        for algorithm in args.algos.split(","):
            with context.Pool(1) as pool:
                row = pool.apply(measure, (algorithm, data_dir, args.rounds))
            rate = row["rounds_per_second"]
            ref = REFERENCE.get(algorithm)
            split = ", ".join(f"{k} {v:.1f}" for k, v in row["split"].items())
            print(f"{algorithm:<12} {rate:>9,.0f} {row['cpu_rate']:>9,.0f} {rate / ref if ref else float('nan'):>7.1f} "
                  f"{10_000 / rate:>7.1f} {FLOOR_SECONDS.get(algorithm, float('nan')):>6.0f} {row['regret']:>8.1f}  "
                  f"{split}", flush=True)


if __name__ == "__main__":
    main()
