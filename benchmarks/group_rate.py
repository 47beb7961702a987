"""One lockstep group's time per round on a device, for comparing a GPU with the CPU on the same machine.

    .venv/bin/python benchmarks/group_rate.py [--dataset mnist|movielens] [--algos neuucb-one,neuucb-ind,mcnb]
        [--seeds 10] [--device cpu|cuda] [--seconds 30] [--every 25] [--data-dir PREPARED] [--datasets DIR]

Runs, per algorithm, one lockstep group of ``--seeds`` seeds × 10 000 rounds (default hyper-parameters, ``device``
set where the algorithm has one) in this process and stops it after about ``--seconds``. The runner's progress
calls, every ``--every`` rounds, time it: the first block (the device's start, the first allocations) is left out,
and the script prints the group's milliseconds a round over the blocks after it and the seed-rounds a second. The
rounds timed are early ones, where the neural learners train every 10 rounds (every 100 after round 1 000). Without
``--data-dir`` the dataset is prepared from DATASETS (the MNIST test set in block encoding, or MovieLens-100K); with
it, the prepared folder there is read. The CPU runs with torch's default threads (all cores)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from figure import SHARED, prepare  # noqa: E402

import banditbench.runner.unit as runner  # noqa: E402
from banditbench.algos import ALGORITHMS  # noqa: E402
from banditbench.data import load_dataset  # noqa: E402
from banditbench.runner import Unit  # noqa: E402

ROUNDS = 10_000  # the presets' horizon; a group usually stops long before


class Enough(Exception):
    """Raised from the progress call once the group has run long enough."""


def block_marks(algorithm: str, dataset, seeds: int, device: str, seconds: float) -> list[tuple[int, float]]:
    """(rounds played, seconds from the group's start) at each progress call, every ``runner.PROGRESS_EVERY``
    rounds and at the end of the group."""
    spec = ALGORITHMS[algorithm]
    params = {**spec.defaults(), **({"device": device} if spec.capabilities.device else {})}
    protocol = dataset.manifest["protocol"]
    units = [Unit(dataset.name, protocol, algorithm, params, 0, seed, ROUNDS, None) for seed in range(seeds)]
    marks, started = [], time.perf_counter()

    def progress(seed_rounds):
        if seed_rounds:  # the group's last call reports the rounds since the last full block, maybe none
            marks.append(((marks[-1][0] if marks else 0) + seed_rounds // seeds, time.perf_counter() - started))
        if marks and marks[-1][1] > seconds:
            raise Enough

    try:
        runner.run_group(units, dataset, progress)
    except Enough:
        pass
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("mnist", "movielens"), default="mnist")
    parser.add_argument("--algos", default="neuucb-one,neuucb-ind,mcnb")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=float, default=30.0, help="stop each group after about this long")
    parser.add_argument("--every", type=int, default=25, help="rounds between two timings")
    parser.add_argument("--data-dir", type=Path, help="a folder holding the prepared dataset")
    parser.add_argument("--datasets", type=Path, default=SHARED, help="folder of the raw datasets")
    args = parser.parse_args()
    runner.PROGRESS_EVERY = args.every
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(scratch)
            print(prepare(args.dataset, data_dir, args.datasets))
        dataset = load_dataset(data_dir, args.dataset)
        for algorithm in args.algos.split(","):
            marks = block_marks(algorithm, dataset, args.seeds, args.device, args.seconds)
            if len(marks) < 2:
                print(f"{algorithm:<12} {args.device}: fewer than two timings in {args.seconds:.0f} s; raise --seconds")
                continue
            (first, start), (last, stop) = marks[0], marks[-1]
            per_round = (stop - start) / (last - first)
            print(
                f"{algorithm:<12} {args.device}, {args.seeds} seeds: rounds {first}–{last}: "
                f"{per_round * 1e3:8.2f} ms a round, {args.seeds / per_round:8.1f} seed-rounds/s"
            )


if __name__ == "__main__":
    main()
