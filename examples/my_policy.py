"""Your own algorithm: ε-greedy on a ridge-regression estimate of the reward (Sutton & Barto 2018, §2.2, with
the linear reward model of Li et al. 2010 and no confidence bonus). Run it from the repository root::

    banditbench run --algos examples.my_policy:EpsilonGreedy,linucb-one --dataset synthetic --rounds 2000
    banditbench run --algos examples.my_policy:EpsilonGreedy --set eps-greedy.epsilon=0.05 ...
"""

import numpy as np

from banditbench.algos.base import Policy


class EpsilonGreedy(Policy):
    """ε-greedy on one ridge regression of the reward on the arm features, shared by all users."""

    name = "eps-greedy"  # --algos, --set eps-greedy.epsilon=…, shard and report names
    paper = "Sutton & Barto 2018, §2.2"
    role = "baseline"

    def __init__(self, *, epsilon: float = 0.1, ridge: float = 1.0, n_users, n_arms, dim, seed):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.epsilon = epsilon
        self.A_inv = np.eye(dim) / ridge  # (λI + Σ x xᵀ)⁻¹
        self.b = np.zeros(dim)  # Σ r x

    def select(self, view, budget) -> int:
        K = len(view.arms)
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(K))  # explore: scores no arm
        n = int(min(K, budget.remaining))  # under a budget, score a random subset of the arms
        candidates = np.arange(K) if n == K else np.sort(self.rng.choice(K, n, replace=False))
        scores = view.arms[candidates] @ (self.A_inv @ self.b)  # reading the rows spends the budget
        return int(candidates[np.argmax(scores)])

    def update(self, view, chosen, reward) -> None:
        x = view.arms[chosen]  # free: the budget closes before update
        Ax = self.A_inv @ x
        self.A_inv -= np.outer(Ax, Ax) / (1.0 + x @ Ax)  # Sherman–Morrison
        self.b += reward * x
