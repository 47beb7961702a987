"""Linear Thompson sampling (Agrawal & Goyal, ICML 2013, Algorithm 1) as a banditbench plugin."""

import numpy as np

from banditbench.algos.base import Policy


class LinearThompson(Policy):
    """Linear Thompson sampling: θ̃ ~ N(θ̂, v² B⁻¹), play argmax xᵀθ̃; one model shared by all users."""

    name = "lin-ts"
    paper = "Agrawal & Goyal, ICML 2013"
    role = "baseline"

    def __init__(self, *, v: float = 0.1, ridge: float = 1.0, n_users, n_arms, dim, seed):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.v = v
        self.B_inv = np.eye(dim) / ridge  # B = λI + Σ x xᵀ
        self.f = np.zeros(dim)  # Σ r x

    def select(self, view, budget) -> int:
        K = len(view.arms)
        n = int(min(K, budget.remaining))
        candidates = np.arange(K) if n == K else np.sort(self.rng.choice(K, n, replace=False))
        theta_hat = self.B_inv @ self.f
        sample = self.rng.multivariate_normal(theta_hat, self.v**2 * self.B_inv, method="cholesky")  # Alg. 1 l. 3
        return int(candidates[np.argmax(view.arms[candidates] @ sample)])  # Alg. 1 l. 4

    def update(self, view, chosen, reward) -> None:
        x = view.arms[chosen]
        Bx = self.B_inv @ x
        self.B_inv -= np.outer(Bx, Bx) / (1.0 + x @ Bx)  # Alg. 1 l. 5, by Sherman–Morrison
        self.f += reward * x
