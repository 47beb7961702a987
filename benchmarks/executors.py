"""Throughput of the executors: one process vs a local pool of N workers vs Ray, on the same equal units.

    .venv/bin/python benchmarks/executors.py [--units 8] [--rounds 10000] [--algo club] [--jobs 2]
        [--repeat 3] [--no-ray]

Each repetition runs the same experiment (``--units`` seeds of one algorithm on the default synthetic
data: N = 100 users in M = 5 clusters, d = 15, K = 25) with ``--jobs 1``, with ``--jobs N``, as N bare
processes with no executor, and with ``--backend ray`` on a local Ray of N CPUs, each into a fresh folder.
Default units: club, T = 10 000 rounds — the horizon of the papers' presets, and a clustering-of-bandits
unit (what banditbench mostly runs) of a few seconds, as in a real preset run; linear baselines run
shorter units and neural ones far longer (the longer the units, the closer every executor gets to N×).

Columns: wall seconds of ``execute`` (worker start-up and shutdown included); CPU seconds of this
process plus its workers; "in units", the seconds spent inside the units' round loops (summed over
units: grows when units running at once slow each other down); "to 1st", the seconds until the first
unit started; speed-up in throughput over ``--jobs 1``; whether the shards are byte-identical to the
one-process run. "N bare processes" runs the same units split over N plain ``python`` processes started
together (imports included, no pool, no result transfer, no shards): what the machine allows without
any executor. Ray's line includes ``ray.init`` and ``ray.shutdown``, Ray's own fixed cost, which the
next line shows apart (with the time of the units on the running Ray). The load average is printed
before and after: other work on the machine lowers every speed-up.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One bare process: run the given seeds of one algorithm one after the other, print the seconds spent in units.
BARE = """
import sys, time
from banditbench.algos import ALGORITHMS
from banditbench.data import load_dataset
from banditbench.runner.executors import limit_threads, run_one
from banditbench.runner.unit import Unit
limit_threads()
data_dir, algo, rounds, *seeds = sys.argv[1:]
dataset = load_dataset(data_dir, "synthetic")
started = time.perf_counter()
for seed in seeds:
    run_one(Unit("synthetic", "linear", algo, ALGORITHMS[algo].defaults(), 0, int(seed), int(rounds), None), dataset)
print(time.perf_counter() - started)
"""


# The synthetic instance these figures were measured on (the generator's defaults when they were taken).
INSTANCE = {"users": 100, "clusters": 5, "dim": 15, "arms": 25, "noise": 0.1, "z": 0.0, "seed": 0}


def shards(folder: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted((folder / "shards").glob("*.parquet"))
        if not p.name.endswith(".timing.parquet")
    }


def seconds_in_units(folder: Path) -> float:
    from banditbench.results.shards import read_timing

    return sum(
        read_timing(p)["wall_seconds"]
        for p in (folder / "shards").glob("*.parquet")
        if not p.name.endswith(".timing.parquet")
    )


def cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children (the pool's fork server, with its workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed_run(data_dir: Path, out: Path, executor, args) -> dict:
    from banditbench.runner.experiment import execute, plan, prepare_output
    from banditbench.runner.settings import RunSettings

    experiment = plan(
        RunSettings.with_defaults(
            dataset="synthetic", algos=[args.algo], rounds=args.rounds, seeds=args.units, seed=0, budget=None, params=[]
        ),
        data_dir=data_dir,
    )
    first_start = []
    cpu, started = cpu_seconds(), time.perf_counter()
    execute(
        experiment,
        prepare_output(out, experiment, overwrite=False, resume=False),
        out,
        executor=executor,
        on_unit_start=lambda unit: first_start or first_start.append(time.perf_counter() - started),
    )
    wall = time.perf_counter() - started
    stop_forkserver()
    return {
        "wall": wall,
        "cpu": cpu_seconds() - cpu,
        "units": seconds_in_units(out),
        "first": first_start[0],
        "shards": shards(out),
    }


def stop_forkserver() -> None:
    """Stop the local pool's fork server (multiprocessing's own test hook), so that every run starts it cold,
    as a command-line run does, and its CPU time and its workers' are counted once it is reaped."""
    from multiprocessing import forkserver

    if hasattr(forkserver, "_forkserver"):
        forkserver._forkserver._stop()


def bare_processes(data_dir: Path, args) -> dict:
    """The same units split over ``--jobs`` plain processes started together."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH")])),
    }
    cpu, started = cpu_seconds(), time.perf_counter()
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                BARE,
                str(data_dir),
                args.algo,
                str(args.rounds),
                *map(str, range(i, args.units, args.jobs)),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(args.jobs)
    ]
    in_units = [float(p.communicate()[0]) for p in processes]
    if any(p.returncode for p in processes):
        raise SystemExit("a bare process failed")
    return {
        "wall": time.perf_counter() - started,
        "cpu": cpu_seconds() - cpu,
        "units": sum(in_units),
        "first": None,
        "shards": None,
    }


def ray_run(data_dir: Path, out: Path, args) -> dict:
    """Ray, with its own fixed cost (import, ray.init, ray.shutdown) also timed apart."""
    from banditbench.runner.executors import RayExecutor

    started = time.perf_counter()
    import ray  # noqa: F401  (the first import of Ray in this process is part of its fixed cost)

    executor = RayExecutor(jobs=args.jobs)
    with executor:  # ray.init here; execute's own `with executor` reuses this Ray
        initialised = time.perf_counter()
        result = timed_run(data_dir, out, executor, args)
        stopping = time.perf_counter()
    stopped = time.perf_counter()
    result["ray"] = {"init": initialised - started, "shutdown": stopped - stopping, "on ray": result["wall"]}
    return {**result, "wall": stopped - started, "cpu": None}  # Ray's workers are not our children: no CPU figure


def figure(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def main() -> None:
    from banditbench.data import synthetic
    from banditbench.runner.executors import LocalExecutor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--algo", default="club")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    if importlib.util.find_spec("ray") is None:
        print("ray skipped: Ray is not installed (pip install 'banditbench-lab[ray]')")
        args.no_ray = True
    print(
        f"{args.units} units of {args.algo}, T = {args.rounds}; {os.cpu_count()} cores; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'run':<4} {'executor':<22} {'wall s':>7} {'CPU s':>7} {'in units':>9} {'to 1st':>7} {'speed-up':>9} "
        f"{'same shards':>12}"
    )
    speedups: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        synthetic.prepare(tmp / "datasets", **INSTANCE)
        data = tmp / "datasets"
        runs = {
            "local --jobs 1": lambda out: timed_run(data, out, LocalExecutor(1), args),
            f"local --jobs {args.jobs}": lambda out: timed_run(data, out, LocalExecutor(args.jobs), args),
            f"{args.jobs} bare processes": lambda out: bare_processes(data, args),
        }
        if not args.no_ray:
            runs[f"ray ({args.jobs} CPUs)"] = lambda out: ray_run(data, out, args)
        for repetition in range(1, args.repeat + 1):
            baseline = None
            for i, (name, run) in enumerate(runs.items()):
                result = run(tmp / f"run{repetition}-{i}")
                baseline = baseline or result
                speedup = baseline["wall"] / result["wall"]
                speedups.setdefault(name, []).append(speedup)
                same = "–" if result["shards"] is None else str(result["shards"] == baseline["shards"])
                print(
                    f"{repetition:<4} {name:<22} {result['wall']:>7.1f} {figure(result['cpu'], '.1f'):>7} "
                    f"{result['units']:>9.1f} {figure(result['first'], '.2f'):>7} {speedup:>8.2f}× {same:>12}",
                    flush=True,
                )
                if "ray" in result:
                    ray = result["ray"]
                    speedups.setdefault("ray without init/shutdown", []).append(baseline["wall"] / ray["on ray"])
                    print(
                        f"     Ray's own fixed cost: import + ray.init {ray['init']:.1f} s, ray.shutdown "
                        f"{ray['shutdown']:.1f} s; the experiment on the running Ray {ray['on ray']:.1f} s "
                        f"({baseline['wall'] / ray['on ray']:.2f}×)"
                    )
            print(f"     load average {os.getloadavg()[0]:.1f}", flush=True)
    print("speed-up over --jobs 1, median (min–max) of", args.repeat, "runs:")
    for name, values in speedups.items():
        print(f"  {name:<28} {statistics.median(values):.2f}× ({min(values):.2f}–{max(values):.2f})")


if __name__ == "__main__":
    main()
