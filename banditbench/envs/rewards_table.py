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

The Showdown's samplers give each run its own ``num_contexts`` rows (a shuffle's first ones) and standardise the
features over those rows alone. ``--env contexts=N`` does the same: each run keeps N rows drawn without replacement
from its own stream and, on the problems prepared with standardised features (``STANDARDISED``), standardises them
again over those N; standardisation is affine per feature, so this is the standardisation of the raw rows over the
N. ``contexts=0`` (the default) keeps every prepared row, standardised over the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow.parquet as pq

from banditbench.data.prepared import PreparedDataset
from banditbench.data.showdown import STANDARDISED, TABLE, standardised
from banditbench.envs.round import Round
from banditbench.errors import SettingError


def columns(names: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The context, realised-reward and expected-reward columns of a rewards table, in order."""
    return [[n for n in names if n.startswith(prefix)] for prefix in ("x_", "reward_", "mean_")]


class RewardsTableEnvironment:
    SETTINGS = {"contexts": 0}  # rows each run keeps (the Showdown's num_contexts); 0: every row

    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence, settings: dict | None = None):
        table = dataset.table(TABLE)
        x, realised, expected = columns(list(table.columns))
        self.x = table[x].to_numpy(np.float64)
        self.rewards = table[realised].to_numpy(np.float64)
        self.expected = table[expected].to_numpy(np.float64)
        self.d, self.n_arms = self.x.shape[1], self.rewards.shape[1]
        self.n_users, self.dim = 1, self.d * self.n_arms
        self.true_groups = None
        self.rng = np.random.default_rng(seed)
        contexts = (settings or self.SETTINGS)["contexts"]
        if contexts:  # this run's rows, as the Showdown's sampler draws them
            kept = self.rng.choice(len(self.x), size=contexts, replace=False)
            self.x, self.rewards, self.expected = self.x[kept], self.rewards[kept], self.expected[kept]
            if dataset.name in STANDARDISED:
                self.x = standardised(self.x)

    @staticmethod
    def check(dataset: PreparedDataset, env: dict, budget) -> None:
        rows = dataset.manifest["counts"]["rows"]
        if env["contexts"] > rows:
            raise SettingError(
                "{env} contexts={value}: {dataset!r} holds {rows} rows",
                value=env["contexts"],
                dataset=dataset.name,
                rows=rows,
            )

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
