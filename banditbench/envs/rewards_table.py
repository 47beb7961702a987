"""The rewards-table protocol of the Deep Bayesian Bandits Showdown (Riquelme, Tucker & Snoek, ICLR 2018, §4).

A prepared problem is a table of rows, each a context x ∈ R^d with a reward for every one of the K actions
(``reward_a``, what the Showdown's samplers draw once per row) and its expectation (``mean_a``). Each round shows
one row's context; the played action's realised reward is observed, and regret is measured against the row's best
expected reward. Rows are streamed in the order of a seeded shuffle, a fresh one each pass.

The Showdown fits one linear model per action on the plain context. Here arm a's context is the block encoding
x_{t,a} = (0, …, x, …, 0) ∈ R^{dK} of the classification protocol, and the round declares ``block = d``: a linear
policy keeps one d-dimensional model per block, that is per action, which is exactly the Showdown's per-action
model, while every other policy of banditbench (which scores arms by their contexts) runs unchanged. There are no
users: every round is user 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow.parquet as pq

from banditbench.data.prepared import PreparedDataset
from banditbench.data.showdown import TABLE
from banditbench.envs.round import Round


def columns(names: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The context, realised-reward and expected-reward columns of a rewards table, in order."""
    return [[n for n in names if n.startswith(prefix)] for prefix in ("x_", "reward_", "mean_")]


class RewardsTableEnvironment:
    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence):
        table = dataset.table(TABLE)
        x, realised, expected = columns(list(table.columns))
        self.x = table[x].to_numpy(np.float64)
        self.rewards = table[realised].to_numpy(np.float64)
        self.expected = table[expected].to_numpy(np.float64)
        self.d, self.n_arms = self.x.shape[1], self.rewards.shape[1]
        self.n_users, self.dim = 1, self.d * self.n_arms
        self.true_groups = None
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def dimensions(dataset: PreparedDataset) -> tuple[int, int, int, int]:
        """(users, arms, context dimension, block width), from the table's schema alone."""
        path = dataset.path / dataset.manifest["tables"][TABLE]["file"]
        x, realised, _ = columns(pq.read_schema(path).names)
        return 1, len(realised), len(x) * len(realised), len(x)

    def order(self, n_rounds: int) -> np.ndarray:
        passes = max(1, -(-n_rounds // len(self.x)))
        return np.concatenate([self.rng.permutation(len(self.x)) for _ in range(passes)])[:n_rounds]

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        K, d = self.n_arms, self.d
        for t, i in enumerate(self.order(n_rounds)):
            arms = np.zeros((K, self.dim))
            for a in range(K):
                arms[a, a * d : (a + 1) * d] = self.x[i]
            yield Round(t, 0, arms, self.rewards[i].copy(), self.expected[i].copy(), block=d)
