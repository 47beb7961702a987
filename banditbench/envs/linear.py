"""The asynchronous linear protocol on clustered synthetic users (Cherkaoui et al. 2025; Ghosh et al. 2021).

Each round one user, drawn uniformly (BASS's asynchronous setting), faces K fresh contexts
x_k ~ N(0, I/d) (Ghosh et al. §6.1); the expected reward of arm k is ⟨θ_user, x_k⟩ and the realised
reward adds N(0, σ²) noise. Every draw comes from the environment's own stream and never depends on
the policy's choices, so all algorithms of one seed see the same users, arms and noise.

A dataset prepared with ``--arm-set unit`` or ``fixed`` (BASS's setup, ``data/synthetic.py``) carries its K arms
in the table ``arms``; every round then serves exactly those arms and the stream draws only users and noise.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from banditbench.data.prepared import PreparedDataset
from banditbench.envs.round import Round, Rounds, each_round

BLOCK = 1024  # rounds drawn per call to the generator: fewer Python calls, same stream for every policy


class LinearEnvironment:
    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence):
        users = dataset.table("users").sort_values("user")
        self.theta = users.filter(like="theta_").to_numpy()  # [N, d]
        self.group_of = users["cluster"].to_numpy()
        self.true_groups = self.group_of  # hidden ground truth, read only by the runner's diagnostics
        self.n_users, self.dim = self.theta.shape
        self.n_arms = int(dataset.parameters["arms"])
        self.noise = float(dataset.parameters["noise"])
        self.arm_set = None  # [K, d] served every round, or None for fresh contexts
        if dataset.parameters.get("arm_set", "fresh") != "fresh":
            self.arm_set = dataset.table("arms").sort_values("arm").filter(like="x_").to_numpy()
            self.arm_set.flags.writeable = False
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def expected_reward(inner: np.ndarray) -> np.ndarray:
        """Expected reward from ⟨θ_user, x⟩ (a hook for the non-linear protocols of ``envs/nonlinear.py``)."""
        return inner

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        return each_round(self.blocks(n_rounds))

    def blocks(self, n_rounds: int) -> Iterator[Rounds]:
        """The same rounds as ``rounds``, a block of up to BLOCK at a time."""
        for start in range(0, n_rounds, BLOCK):
            size = min(BLOCK, n_rounds - start)
            users = self.rng.integers(self.n_users, size=size)
            if self.arm_set is None:
                arms = self.rng.standard_normal((size, self.n_arms, self.dim)) / np.sqrt(self.dim)
                inner = np.einsum("bkd,bd->bk", arms, self.theta[users])
            else:
                arms = np.broadcast_to(self.arm_set, (size, self.n_arms, self.dim))  # a view: arms[i] is the set
                inner = self.theta[users] @ self.arm_set.T
            expected = self.expected_reward(inner)
            rewards = expected + self.noise * self.rng.standard_normal((size, self.n_arms))
            arms.flags.writeable = False  # shown to policies as is (envs/round.py, ArmPool)
            yield Rounds(start, users, arms, rewards, expected, self.group_of[users])
