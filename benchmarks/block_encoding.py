"""MNIST block encoding (d = 784, K = 10, contexts in R^7840): the linear and neural learners, dense and per block.

    .venv/bin/python benchmarks/block_encoding.py [--rounds 2000] [--dense-rounds 30] [--linear-algos LIST]
                                                  [--neural-rounds 0] [--neural-seeds 3] [--mcnb-rounds 0]
                                                  [--neural-algos LIST] [--datasets DIR]

Prepares the MNIST test set (10 000 images) from DATASETS/mnist-test with the classification protocol's block
encoding, then plays the same stream of rounds (environment seed 1, policy seed 2) with each linear learner
(``--linear-algos``, default linucb-one and linucb-ind; club, sclub, locb and cofiba too): ``--rounds`` rounds with
the per-block statistics (K blocks of 784 × 784 a matrix), and ``--dense-rounds`` rounds with ``blocks`` off (7840 ×
7840 ridge matrices, the dense computation; 0 skips it: dense LOCB does not fit in 24 GB). Prints rounds per
wall second and per CPU second of the policy loop (environment included), the speed-up in CPU terms, whether
the two made the same choices over the dense rounds (where they differ: rounds whose best arms tie exactly,
broken by rounding in the dense sums) and the reward.

``--neural-rounds N`` adds neuucb-one, neuucb-ind and neurallinear, ``--mcnb-rounds N`` M-CNB (``--neural-algos``
picks among them): N rounds with the dense 7840-d input and N per block, for each of ``--neural-seeds`` policy
seeds. Their training amplifies any rounding difference until a choice flips, so the script also plays the dense
computation once more with one initial weight moved by one ulp: the share of equal choices between dense and per
block is to be read against that one. It prints the rates, the rewards of both computations and the paired t-test
between them.
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


def play(
    dataset, algorithm: str, rounds: int, blocks: bool = True, seed: int = 2, nudge: bool = False
) -> tuple[np.ndarray, float, float, float]:
    """Choices, wall seconds, CPU seconds and total reward of ``rounds`` rounds of one policy. ``nudge`` moves the
    initial output weight of the last hidden unit of the (first) network by one ulp (neural policies)."""
    import torch

    from banditbench.algos import ALGORITHMS
    from banditbench.envs import PROTOCOLS, Budget
    from banditbench.runner.unit import group_of_one

    env = PROTOCOLS["classification"].environment(dataset, np.random.SeedSequence(1))
    policy = ALGORITHMS[algorithm].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(seed), params={}
    )
    policy.blocks = blocks  # the policies' switch between per-block and dense computations
    if nudge:
        theta = policy.users[0].theta if algorithm == "mcnb" else policy.theta
        theta = theta.flatten(0, -2)  # one row per network (a view): the first member's first user's is row 0
        theta[0, -1] = torch.nextafter(theta[0, -1], torch.tensor(np.inf))
    choices, reward = [], 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    group = group_of_one(policy)
    for rnd in env.rounds(rounds):
        view = rnd.view(Budget())
        chosen = group.select([view], [Budget()])[0]
        group.update([view], [chosen], [float(rnd.rewards[chosen])])
        choices.append(chosen)
        reward += float(rnd.rewards[chosen])
    return np.array(choices), time.perf_counter() - wall, time.process_time() - cpu, reward


def linear(dataset, args) -> None:
    for algorithm in args.linear_algos.split(","):
        block, b_wall, b_cpu, b_reward = play(dataset, algorithm, args.rounds)
        if args.dense_rounds:
            dense, d_wall, d_cpu, d_reward = play(dataset, algorithm, args.dense_rounds, blocks=False)
            print(
                f"{algorithm:<12} {'dense':<10} {args.dense_rounds:>6} {args.dense_rounds / d_wall:>9.1f} "
                f"{args.dense_rounds / d_cpu:>8.1f} {d_reward:>7.0f}"
            )
        print(
            f"{algorithm:<12} {'per block':<10} {args.rounds:>6} {args.rounds / b_wall:>9.1f} "
            f"{args.rounds / b_cpu:>8.1f} {b_reward:>7.0f}"
        )
        if not args.dense_rounds:
            continue
        same = dense == block[: len(dense)]
        print(
            f"  speed-up {(args.rounds / b_cpu) / (args.dense_rounds / d_cpu):.0f}× per CPU second; choices "
            f"equal in {same.sum()} of the first {len(dense)} rounds"
            + ("" if same.all() else f" (first difference at round {int(np.flatnonzero(~same)[0])})")
        )


def neural(dataset, args) -> None:
    from scipy.stats import ttest_rel

    seeds = range(2, 2 + args.neural_seeds)
    print(f"\npolicy seeds {seeds.start}–{seeds.stop - 1}: rounds per CPU second, reward mean ± sd")
    header = f"{'algorithm':<12} {'dense':>7} {'blocks':>7} {'ratio':>6} {'dense reward':>14} {'block reward':>14}"
    print(header + f" {'p (t)':>6} rounds")
    for algorithm in args.neural_algos.split(","):
        rounds = args.mcnb_rounds if algorithm == "mcnb" else args.neural_rounds
        if not rounds:
            continue
        runs = {blocks: [play(dataset, algorithm, rounds, blocks, seed) for seed in seeds] for blocks in (False, True)}
        rate = {blocks: rounds * len(seeds) / sum(run[2] for run in runs[blocks]) for blocks in runs}
        reward = {blocks: np.array([run[3] for run in runs[blocks]]) for blocks in runs}
        p = ttest_rel(reward[True], reward[False]).pvalue if len(seeds) > 1 else float("nan")
        print(
            f"{algorithm:<12} {rate[False]:>7.1f} {rate[True]:>7.1f} {rate[True] / rate[False]:>5.2f}× "
            + " ".join(
                f"{reward[b].mean():>7.1f} ± {reward[b].std(ddof=1) if len(seeds) > 1 else 0:>4.1f}" for b in runs
            )
            + f" {p:>6.2f} {rounds:>6}"
        )
        nudged = play(dataset, algorithm, rounds, False, seeds.start, nudge=True)[0]
        dense, block = runs[False][0][0], runs[True][0][0]
        for name, other in (("per block", block), ("dense, one weight one ulp off", nudged)):
            same = dense == other
            first = int(np.flatnonzero(~same)[0]) if not same.all() else None
            print(
                f"  seed {seeds.start}, dense against {name}: {same.mean():.1%} equal choices, first difference {first}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--dense-rounds", type=int, default=30)
    parser.add_argument("--linear-algos", default="linucb-one,linucb-ind")
    parser.add_argument("--neural-rounds", type=int, default=0)
    parser.add_argument("--neural-seeds", type=int, default=3)
    parser.add_argument("--mcnb-rounds", type=int, default=0)
    parser.add_argument("--neural-algos", default="neuucb-one,neuucb-ind,neurallinear,mcnb")
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
        linear(dataset, args)
        if args.neural_rounds or args.mcnb_rounds:
            neural(dataset, args)


if __name__ == "__main__":
    main()
