"""Throughput of the executors: one process vs a local pool of N workers vs Ray, on equal units.

    .venv/bin/python benchmarks/executors.py [--units 8] [--rounds 20000] [--algo linucb-ind] [--jobs 2] [--no-ray]

Runs the same experiment (``--units`` seeds of one algorithm on the default synthetic data: N = 100,
M = 5, d = 15, K = 25) with ``--jobs 1``, with ``--jobs N`` and, if Ray is installed, with
``--backend ray`` on a local Ray of N CPUs, each into a fresh folder, and prints the wall time
(start-up of the workers included), the rounds per second over all units, the speed-up over one
process, and whether the shards are byte-identical to the one-process run. Issue 7's targets on
2 cores: the pool ≥ 1.8× one process; Ray within 10 % of the pool. Other load on the machine lowers
the speed-up (the script prints the load average before and after).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def shards(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "shards").glob("*.parquet"))
            if not p.name.endswith(".timing.parquet")}


def timed_run(data_dir: Path, out: Path, executor, args) -> float:
    from banditbench.runner.experiment import execute, plan, prepare_output

    experiment = plan(data_dir=data_dir, dataset="synthetic", algorithms=[args.algo], rounds=args.rounds,
                      seeds=args.units, master_seed=0, budget=None, params=[])
    started = time.perf_counter()
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out, executor=executor)
    return time.perf_counter() - started


def main() -> None:
    from banditbench.data import synthetic
    from banditbench.runner.executors import LocalExecutor, RayExecutor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--algo", default="linucb-ind")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    print(f"{args.units} units of {args.algo}, T = {args.rounds}; {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        synthetic.prepare(tmp / "datasets", **synthetic.DEFAULTS)
        executors = [("local --jobs 1", LocalExecutor(1)), (f"local --jobs {args.jobs}", LocalExecutor(args.jobs))]
        if not args.no_ray:
            try:
                executors.append((f"ray ({args.jobs} CPUs)", RayExecutor(jobs=args.jobs)))
            except Exception as e:  # Ray not installed: say so and measure the rest
                print(f"ray skipped: {e}")
        print(f"{'executor':<18} {'wall s':>8} {'rounds/s':>10} {'speed-up':>9} {'same shards':>12}")
        baseline_seconds, baseline_shards = None, None
        for i, (name, executor) in enumerate(executors):
            seconds = timed_run(tmp / "datasets", tmp / f"run{i}", executor, args)
            written = shards(tmp / f"run{i}")
            baseline_seconds = baseline_seconds or seconds
            baseline_shards = baseline_shards or written
            print(f"{name:<18} {seconds:>8.1f} {args.units * args.rounds / seconds:>10,.0f} "
                  f"{baseline_seconds / seconds:>8.2f}× {str(written == baseline_shards):>12}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
