"""Wall and CPU time of a whole preset, tuning included: one ``banditbench run --preset`` in a fresh process.

    .venv/bin/python benchmarks/figure.py [--preset mcnb-movielens] [--jobs 2] [--seeds S] [--tune-seeds S]
                                          [--rounds T] [--engine units|lockstep] [--project-seeds 10]
                                          [--device cpu|cuda] [--datasets DIR] [--keep DIR]

The preset's dataset is prepared from DATASETS first (not timed): MovieLens from DATASETS/ml-25m (the preset's
25M ratings) when that folder exists, else MovieLens-100K from DATASETS/movielens-100k, and the output says so;
MNIST from DATASETS/mnist-test (its 10 000 test images); Shuttle from DATASETS/uci-shuttle. ``--seeds``,
``--tune-seeds`` and ``--rounds`` shrink the run (default: the preset's own).

Prints the run's wall time and CPU time (the CLI process and its workers, read from /proc every 0.2 s), the load
average before and after, and per algorithm the number of units, their summed unit seconds (each unit's wall time as
its timing shard records it), the share of the total and the mean per unit, separately for tuning and reported
units; then the projection to ``--project-seeds`` reported seeds and the preset's tuning seeds: tuning unit seconds
scaled by the preset's tuning seeds / tuning seeds run, reported unit seconds by project-seeds / seeds run, and the
run's wall and CPU time scaled by the same ratio of unit seconds."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

# the project's shared genuine data: the nearest ancestor folder holding shared/datasets (main checkout or worktree)
SHARED = next(
    (p / "shared" / "datasets" for p in Path(__file__).resolve().parents if (p / "shared" / "datasets").is_dir()),
    Path("shared/datasets"),
)
CLI = [sys.executable, "-m", "banditbench"]


def prepare(dataset: str, data_dir: Path, datasets: Path) -> str:
    """Prepare the preset's dataset under data_dir; return a line saying what was used."""
    if dataset == "movielens":
        if (datasets / "ml-25m").is_dir():
            variant, source, note = "25m", datasets / "ml-25m", "MovieLens-25M (the preset's data)"
        else:
            variant, source = "100k", datasets / "movielens-100k"
            note = f"MovieLens-100K: no {datasets / 'ml-25m'}, so the small ratings stand in for the preset's 25M"
        args = ["prepare", "movielens", "--variant", variant]
    elif dataset in ("mnist", "shuttle"):
        source = datasets / ("mnist-test" if dataset == "mnist" else "uci-shuttle")
        args = ["prepare", dataset] + (["--split", "test"] if dataset == "mnist" else [])
        note = f"{dataset} from {source}" + (" (the 10 000 test images)" if dataset == "mnist" else "")
    else:
        sys.exit(f"figure.py prepares movielens, mnist and shuttle only; {dataset!r} is none of them")
    if not source.is_dir():
        sys.exit(f"no {source}: cannot prepare {dataset}")
    subprocess.run(
        CLI + args + ["--source", str(source), "--data-dir", str(data_dir)], check=True, stdout=subprocess.DEVNULL
    )
    return note


def tree_cpu_seconds(root: int, seen: dict[int, float]) -> None:
    """Record the CPU seconds (user + system) of ``root`` and all its descendants, read from /proc, into ``seen``
    (pid → latest value). Pool workers are not children the CLI waits for, so its rusage does not count them."""
    parents, times = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    family, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in family and pid not in family:
                family.add(pid)
                grew = True
    for pid in family & times.keys():
        seen[pid] = max(seen.get(pid, 0.0), times[pid])


def timed(command: list[str], interval: float = 0.2) -> tuple[float, float, int]:
    """Run ``command`` with its output discarded; return its wall seconds, the CPU seconds of its process tree and
    its exit code. Should this benchmark be stopped (Ctrl-C, or SIGTERM from ``timeout``), the run is stopped too,
    and its workers with it, so that nothing it started goes on loading the machine."""
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    start = time.perf_counter()
    process, seen = subprocess.Popen(command, stdout=subprocess.DEVNULL), {}
    try:
        while process.poll() is None:
            tree_cpu_seconds(process.pid, seen)
            time.sleep(interval)
    finally:
        if process.poll() is None:
            process.kill()
    # each process's last reading: at most one interval of each one's end is missed
    return time.perf_counter() - start, sum(seen.values()), process.returncode


def unit_seconds(out: Path) -> dict[tuple[str, bool], list[float]]:
    """Each finished unit's wall seconds, grouped by (algorithm, tuning)."""
    found: dict[tuple[str, bool], list[float]] = defaultdict(list)
    for timing in sorted((out / "shards").glob("*.timing.parquet")):
        wall = json.loads(pq.read_schema(timing).metadata[b"banditbench"])["wall_seconds"]
        outcome = timing.with_name(timing.name.replace(".timing.parquet", ".parquet"))
        unit = json.loads(pq.read_schema(outcome).metadata[b"banditbench"])["unit"]
        found[unit["algorithm"], bool(unit.get("tuning"))].append(wall)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="mcnb-movielens")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seeds", type=int, help="reported seeds to run (default: the preset's)")
    parser.add_argument("--tune-seeds", type=int, help="tuning seeds to run (default: the preset's)")
    parser.add_argument("--rounds", type=int, help="rounds per unit (default: the preset's)")
    parser.add_argument("--engine", default="units", help="units or lockstep (banditbench run --engine)")
    parser.add_argument("--device", help="cpu, cuda or auto for the neural algorithms (banditbench run --device)")
    parser.add_argument("--project-seeds", type=int, default=10, help="reported seeds the projection is for")
    parser.add_argument("--datasets", type=Path, default=SHARED, help="folder of the raw datasets")
    parser.add_argument("--keep", type=Path, help="keep the prepared data and results in this folder")
    args = parser.parse_args()

    from banditbench.presets import PRESETS

    if args.preset not in PRESETS:
        sys.exit(f"unknown preset {args.preset!r}; see `banditbench list presets`")
    preset = PRESETS[args.preset]
    seeds = args.seeds if args.seeds is not None else preset["seeds"]
    preset_tune_seeds = preset["tune-seeds"]
    tune_seeds = args.tune_seeds if args.tune_seeds is not None else preset_tune_seeds
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        data_dir, out = root / "datasets", root / "results"
        note = prepare(preset["dataset"], data_dir, args.datasets)
        command = CLI + [
            "run",
            "--preset",
            args.preset,
            "--jobs",
            str(args.jobs),
            "--data-dir",
            str(data_dir),
            "--out",
            str(out),
            "--overwrite",
            "--engine",
            args.engine,
            "--allow-stand-in",  # timing only: the data prepared here may be a smaller stand-in (MovieLens-100K)
        ]
        for flag, value in (
            ("--seeds", args.seeds),
            ("--tune-seeds", args.tune_seeds),
            ("--rounds", args.rounds),
            ("--device", args.device),
        ):
            if value is not None:
                command += [flag, str(value)]
        load_before = os.getloadavg()[0]
        wall, cpu, returncode = timed(command)
        if returncode:
            sys.exit(f"the run failed (exit {returncode})")
        load_after = os.getloadavg()[0]
        found = unit_seconds(out)

    print(f"preset {args.preset}: {note}")
    print(f"command: {' '.join(command[2:])}")
    print(
        f"wall {wall:.1f} s, CPU {cpu:.1f} s (CPU/wall {cpu / wall:.2f}), load average {load_before:.1f} before, "
        f"{load_after:.1f} after"
    )
    total = sum(sum(v) for v in found.values())
    algorithms = list(dict.fromkeys(a for a, _ in found))
    print(
        f"{'algorithm':<14} {'tuning units':>12} {'unit s':>8} {'reported':>8} {'unit s':>8} {'share':>6} {'s/unit':>7}"
    )
    for algorithm in sorted(algorithms, key=lambda a: -sum(found[a, False] + found[a, True])):
        tuning, reported = found[algorithm, True], found[algorithm, False]
        both = tuning + reported
        print(
            f"{algorithm:<14} {len(tuning):>12} {sum(tuning):>8.1f} {len(reported):>8} {sum(reported):>8.1f} "
            f"{sum(both) / total:>6.1%} {sum(both) / len(both):>7.2f}"
        )
    tuning_total = sum(sum(found[a, True]) for a in algorithms)
    projected = tuning_total * preset_tune_seeds / max(tune_seeds, 1) + (
        total - tuning_total
    ) * args.project_seeds / max(seeds, 1)
    print(
        f"unit seconds {total:.1f} (tuning {tuning_total:.1f}); projection for {args.project_seeds} reported and "
        f"{preset_tune_seeds} tuning seeds: {projected:.1f} unit seconds, wall ≈ {wall * projected / total:.0f} s "
        f"and CPU ≈ {cpu * projected / total:.0f} s with --jobs {args.jobs}"
    )


if __name__ == "__main__":
    main()
