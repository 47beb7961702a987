"""Ridge-regression statistics with Sherman–Morrison updates, for many users at once.

For each of ``n`` learners: A = λI + Σ x xᵀ, b = Σ r x, θ = A⁻¹ b. Only A⁻¹ is kept; a rank-one
update costs O(d²) instead of the O(d³) of a fresh inverse:
    (A + x xᵀ)⁻¹ = A⁻¹ − (A⁻¹ x)(A⁻¹ x)ᵀ / (1 + xᵀ A⁻¹ x)        (Sherman–Morrison)
"""

from __future__ import annotations

import numpy as np


class RidgeStats:
    def __init__(self, n_learners: int, dim: int, ridge: float = 1.0):
        self.A_inv = np.tile(np.eye(dim) / ridge, (n_learners, 1, 1))  # [n, d, d]
        self.b = np.zeros((n_learners, dim))  # [n, d]
        self.theta = np.zeros((n_learners, dim))  # [n, d] = A⁻¹ b
        self.count = np.zeros(n_learners, dtype=np.int64)

    def update(self, learner: int, x: np.ndarray, reward: float) -> None:
        A_inv = self.A_inv[learner]
        A_inv_x = A_inv @ x
        gain = A_inv_x / (1.0 + x @ A_inv_x)
        # θ' = A'⁻¹(b + r x) = θ + gain·(r − xᵀθ): the recursive least-squares form of the same update
        self.theta[learner] += gain * (reward - x @ self.theta[learner])
        A_inv -= np.multiply.outer(gain, A_inv_x)
        self.b[learner] += reward * x
        self.count[learner] += 1

    def widths(self, learner: int, arms: np.ndarray) -> np.ndarray:
        """sqrt(xᵀ A⁻¹ x) for every row x of ``arms`` [K, d]."""
        quad = np.einsum("kd,kd->k", arms @ self.A_inv[learner], arms)
        return np.sqrt(np.maximum(quad, 0.0))
