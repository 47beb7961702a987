"""The Thompson learners (LinTS, Bayesian linear regression; with ``--algos`` NeuralTS, NeuralLinear-TS and the
Showdown's networks) against LinUCB / NeuralUCB: CPU seconds per 1 000 seed-rounds of a group's select and update,
on block-encoded rewards-table rounds (one linear model per action, as the Showdown's problems), or with ``--dense``
on the same contexts undeclared, so that one model of dimension d·K reads them all (LinTS then draws θ̃ through a
square root of A⁻¹ instead of each score from its marginal).

    .venv/bin/python benchmarks/thompson.py [--members 1,10] [--rounds 2000] [--problems mushroom,wheel]
        [--algos linucb-one,lints-one,blr-one] [--users 1] [--repeats 3] [--dense] [--set ALGO.NAME=VALUE ...]
        [--data-dir DIR --arms K]

Each problem's rounds are drawn once (mushroom-sized: d = 117, K = 2; wheel-sized: d = 2, K = 5; contexts and
rewards N(0, 1); each round serves one of ``--users`` users at random, which only the per-user learners read) and
every algorithm's group of M members plays them with seeds 0 … M−1; the best of ``--repeats`` repetitions is kept;
``--set`` gives an algorithm a hyper-parameter (repeatable). ``--problems movielens`` plays instead the rounds of
the MovieLens dataset prepared in ``--data-dir`` (50 user groups, shared item contexts of its SVD dimension, so one
model of that dimension per user) with ``--arms`` arms a round, every member the same rounds. Prints one line per
problem, group size and algorithm."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from banditbench.algos import ALGORITHMS
from banditbench.envs.round import Budget, Round

PROBLEMS = {"mushroom": (117, 2), "wheel": (2, 5)}
ALGOS = ("linucb-one", "lints-one", "blr-one")


def rounds_of(d: int, K: int, n: int, members: int, users: int = 1, dense: bool = False) -> list[list[Round]]:
    rng = np.random.default_rng(0)
    out = []
    for t in range(n):
        row = []
        for _ in range(members):
            arms = np.zeros((K, d * K))
            for a in range(K):
                arms[a, a * d : (a + 1) * d] = rng.standard_normal(d)
            rewards = rng.standard_normal(K)
            row.append(Round(t, int(rng.integers(users)), arms, rewards, rewards, block=None if dense else d))
        out.append(row)
    return out


def movielens_rounds(data_dir: Path, arms: int, n: int, members: int) -> tuple[list[list[Round]], int, int]:
    """(rounds, users, context dimension) of the prepared MovieLens dataset with ``arms`` arms a round."""
    from banditbench.data.prepared import load_dataset
    from banditbench.envs.recommendation import RecommendationEnvironment

    dataset = load_dataset(data_dir, "movielens")
    dataset.manifest["parameters"]["arms"] = arms  # the preparation fixes K = 10; the environment reads any
    environment = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    rounds = list(environment.rounds(n))
    return [[rnd] * members for rnd in rounds], environment.n_users, rounds[0].arms.shape[1]


def settings(assignments: list[str]) -> dict[str, dict]:
    """{algorithm: {hyper-parameter: value}} from ALGO.NAME=VALUE texts, each value parsed by its domain."""
    params: dict[str, dict] = {}
    for text in assignments:
        target, value = text.split("=", 1)
        name, key = target.split(".", 1)
        params.setdefault(name, {})[key] = ALGORITHMS[name].domains()[key].parse(value)
    return params


def seconds(name: str, dim: int, K: int, rounds: list[list[Round]], params: dict, users: int = 1) -> float:
    members = len(rounds[0])
    seeds = [np.random.SeedSequence(s) for s in range(members)]
    policy = ALGORITHMS[name].build_members(n_users=users, n_arms=K, dim=dim, seeds=seeds, params=[params] * members)
    budgets = [Budget() for _ in range(members)]
    start = time.process_time()
    for row in rounds:
        views = [rnd.view(Budget()) for rnd in row]
        chosen = policy.select(views, budgets)
        policy.update(views, chosen, [float(rnd.rewards[a]) for rnd, a in zip(row, chosen)])
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="1,10")
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--problems", default="mushroom,wheel")
    parser.add_argument("--algos", default=",".join(ALGOS))
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dense", action="store_true", help="contexts not declared as blocks: one d·K model")
    parser.add_argument("--set", action="append", default=[], metavar="ALGO.NAME=VALUE")
    parser.add_argument("--data-dir", type=Path, default=Path("datasets"), help="movielens: its prepared datasets")
    parser.add_argument("--arms", type=int, default=10, help="movielens: arms a round")
    args = parser.parse_args()
    params = settings(args.set)
    for problem in args.problems.split(","):
        for members in map(int, args.members.split(",")):
            if problem == "movielens":
                K = args.arms
                rounds, users, dim = movielens_rounds(args.data_dir, K, args.rounds, members)
            else:
                (d, K), users = PROBLEMS[problem], args.users
                rounds, dim = rounds_of(d, K, args.rounds, members, users, args.dense), d * K
            for name in args.algos.split(","):
                best = min(seconds(name, dim, K, rounds, params.get(name, {}), users) for _ in range(args.repeats))
                per = 1000 * best / (members * args.rounds)
                print(f"{problem:9s} M = {members:3d}  {name:15s} {per:7.4f} CPU s per 1000 seed-rounds")


if __name__ == "__main__":
    main()
