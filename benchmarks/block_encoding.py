"""MNIST block encoding (d = 784, K = 10, contexts in R^7840): LinUCB with dense and with per-block statistics.

    .venv/bin/python benchmarks/block_encoding.py [--rounds 2000] [--dense-rounds 30] [--neural-rounds 0]
                                                  [--datasets DIR]

Prepares the MNIST test set (10 000 images) from DATASETS/mnist-test with the classification protocol's block
encoding, then plays the same stream of rounds (environment seed 1, policy seed 2) with linucb-one and
linucb-ind, first with ``blocks`` off (one 7840 × 7840 model, the dense computation) for ``--dense-rounds``
rounds, then with the per-block statistics (K models of 784 × 784) for ``--rounds`` rounds. Prints rounds per
wall second and per CPU second of the policy loop (environment included), the speed-up in CPU terms, whether
the two made the same choices over the dense rounds (where they differ: rounds whose best arms tie exactly,
broken by rounding in the dense sums) and the reward. ``--neural-rounds N`` adds neuucb-one (diagonal
NeuralUCB, dense input) for N rounds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

SHARED = next(
    (p / "shared" / "datasets" for p in Path(__file__).resolve().parents if (p / "shared" / "datasets").is_dir()),
    Path("shared/datasets"),
)


def play(dataset, algorithm: str, rounds: int, blocks: bool = True) -> tuple[np.ndarray, float, float, float]:
    """Choices, wall seconds, CPU seconds and total reward of ``rounds`` rounds of one policy."""
    from banditbench.algos import ALGORITHMS
    from banditbench.envs import PROTOCOLS, Budget

    env = PROTOCOLS["classification"].environment(dataset, np.random.SeedSequence(1))
    policy = ALGORITHMS[algorithm].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(2), params={}
    )
    policy.blocks = blocks  # LinUCB's switch between per-block and dense statistics (other policies ignore it)
    choices, reward = [], 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    for rnd in env.rounds(rounds):
        view = rnd.view(Budget())
        chosen = policy.select(view, Budget())
        policy.update(view, chosen, float(rnd.rewards[chosen]))
        choices.append(chosen)
        reward += float(rnd.rewards[chosen])
    return np.array(choices), time.perf_counter() - wall, time.process_time() - cpu, reward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--dense-rounds", type=int, default=30)
    parser.add_argument("--neural-rounds", type=int, default=0)
    parser.add_argument("--datasets", type=Path, default=SHARED, help="folder with mnist-test/")
    args = parser.parse_args()
    from banditbench.data import classification, load_dataset
    from banditbench.runner.executors import limit_threads

    limit_threads()  # as in the executors' workers: one BLAS thread per unit

    with tempfile.TemporaryDirectory() as data_dir:
        classification.prepare(
            Path(data_dir), "mnist", split="test", source=str(args.datasets / "mnist-test"), offline=True
        )
        dataset = load_dataset(Path(data_dir), "mnist")
        print(f"MNIST test set, block encoding (d = 7840), load average {os.getloadavg()[0]:.1f}")
        print(f"{'algorithm':<12} {'statistics':<10} {'rounds':>6} {'r/s wall':>9} {'r/CPU-s':>8} {'reward':>7}")
        for algorithm in ("linucb-one", "linucb-ind"):
            dense, d_wall, d_cpu, d_reward = play(dataset, algorithm, args.dense_rounds, blocks=False)
            block, b_wall, b_cpu, b_reward = play(dataset, algorithm, args.rounds)
            print(
                f"{algorithm:<12} {'dense':<10} {args.dense_rounds:>6} {args.dense_rounds / d_wall:>9.1f} "
                f"{args.dense_rounds / d_cpu:>8.1f} {d_reward:>7.0f}"
            )
            print(
                f"{algorithm:<12} {'per block':<10} {args.rounds:>6} {args.rounds / b_wall:>9.1f} "
                f"{args.rounds / b_cpu:>8.1f} {b_reward:>7.0f}"
            )
            same = dense == block[: len(dense)]
            print(
                f"  speed-up {(args.rounds / b_cpu) / (args.dense_rounds / d_cpu):.0f}× per CPU second; choices "
                f"equal in {same.sum()} of the first {len(dense)} rounds"
                + ("" if same.all() else f" (first difference at round {int(np.flatnonzero(~same)[0])})")
            )
        if args.neural_rounds:
            _, wall, cpu, reward = play(dataset, "neuucb-one", args.neural_rounds)
            print(
                f"{'neuucb-one':<12} {'dense':<10} {args.neural_rounds:>6} {args.neural_rounds / wall:>9.1f} "
                f"{args.neural_rounds / cpu:>8.1f} {reward:>7.0f}"
            )


if __name__ == "__main__":
    main()
