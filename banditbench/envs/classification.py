"""Online classification with bandit feedback (M-CNB §5.3; Meta-Ban §4.3; NeuralUCB's Bandit_multi).

Each round shows one instance x ∈ R^d; arm a stands for class a and reward is 1 iff a is its class.
Instances are streamed in the order of a seeded shuffle (a fresh one each pass), or, for a dataset prepared with
``order = "stored"`` (a recorded stream, such as the parity harness's replay of another implementation's draws),
in the order of its rows. Arm contexts:

- ``block`` (M-CNB, NeuralUCB): x_{t,a} = (0, …, x, …, 0) ∈ R^{dK}, x in the a-th block;
- ``shift`` (Meta-Ban's code): x_{t,a} ∈ R^{d+K−1} holds x at coordinates [a, a + d), copies overlapping.

As in both papers the *user* of a round is the instance's class ("we formulate one class as a user"),
so a per-user learner is told the label through the user id: results of per-user policies on this
protocol measure how fast they learn that, not classification skill. A ``source`` column (the
MNIST + notMNIST mixture) makes the user ``source·K + class`` and the source the ground-truth group.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow.parquet as pq

from banditbench.data.prepared import PreparedDataset
from banditbench.envs.round import Round


def sizes(n_classes: int, n_sources: int, d: int, encoding: str) -> tuple[int, int, int]:
    """(users, arms, context dimension): a user per class of each source, an arm per class, block (dK) or
    shift (d + K − 1) contexts."""
    return n_classes * n_sources, n_classes, d * n_classes if encoding == "block" else d + n_classes - 1


class ClassificationEnvironment:
    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence):
        samples = dataset.table("samples")
        self.x = samples[[c for c in samples.columns if c.startswith("x_")]].to_numpy(np.float64)
        self.y = samples["label"].to_numpy(np.int64)
        self.source = samples["source"].to_numpy(np.int64) if "source" in samples else np.zeros(len(self.y), np.int64)
        self.encoding = dataset.parameters.get("encoding", "block")
        n_sources = int(self.source.max()) + 1
        self.d = self.x.shape[1]
        self.n_users, self.n_arms, self.dim = sizes(int(self.y.max()) + 1, n_sources, self.d, self.encoding)
        self.true_groups = np.repeat(np.arange(n_sources), self.n_arms) if n_sources > 1 else None
        self.stored_order = dataset.parameters.get("order") == "stored"
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def dimensions(dataset: PreparedDataset) -> tuple[int, int, int, int | None]:
        """(users, arms, context dimension, block width or None) of the rounds, from the table's schema and its
        label and source columns only, so that ``plan`` can size the policies without loading the features."""
        path = dataset.path / dataset.manifest["tables"]["samples"]["file"]
        names = pq.read_schema(path).names
        columns = pq.read_table(path, columns=[c for c in ("label", "source") if c in names])
        n_classes = int(columns["label"].to_numpy().max()) + 1
        n_sources = int(columns["source"].to_numpy().max()) + 1 if "source" in names else 1
        d = sum(name.startswith("x_") for name in names)
        encoding = dataset.parameters.get("encoding", "block")
        return *sizes(n_classes, n_sources, d, encoding), d if encoding == "block" else None

    def order(self, n_rounds: int) -> np.ndarray:
        """Instance indices for n rounds: passes over a fresh random permutation of the data. With several
        sources (the mixture) each round first picks a source with equal probability (Meta-Ban §4.3)."""
        if self.stored_order:
            return np.resize(np.arange(len(self.y)), n_rounds)
        if self.true_groups is None:
            return self.stream(np.arange(len(self.y)), n_rounds)
        sources = self.rng.integers(self.true_groups.max() + 1, size=n_rounds)
        order = np.empty(n_rounds, np.int64)
        for s in range(self.true_groups.max() + 1):
            order[sources == s] = self.stream(np.flatnonzero(self.source == s), int((sources == s).sum()))
        return order

    def stream(self, members: np.ndarray, n: int) -> np.ndarray:
        passes = max(1, -(-n // len(members)))
        return np.concatenate([members[self.rng.permutation(len(members))] for _ in range(passes)])[:n]

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        K, d = self.n_arms, self.d
        block = d if self.encoding == "block" else None  # told to policies, which may keep per-block statistics
        for t, i in enumerate(self.order(n_rounds)):
            arms = np.zeros((K, self.dim))
            for a in range(K):
                start = a * d if self.encoding == "block" else a
                arms[a, start : start + d] = self.x[i]
            rewards = np.zeros(K)
            rewards[self.y[i]] = 1.0
            source = int(self.source[i])
            yield Round(
                t,
                source * K + int(self.y[i]),
                arms,
                rewards,
                rewards.copy(),
                source if self.true_groups is not None else -1,
                block=block,
            )
