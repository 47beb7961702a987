"""LinUCB (Li, Chu, Langford & Schapire, WWW 2010, Algorithm 1 with disjoint models).

Score of arm x for user u:  p = xᵀθ_u + α·sqrt(xᵀ A_u⁻¹ x),  θ_u = A_u⁻¹ b_u,  A_u = λI + Σ x xᵀ.
``per_user=False`` ("linucb-one") keeps one model shared by every user; ``per_user=True``
("linucb-ind", LinUCB-Ind of Ghosh et al. 2021 and BASS's "Ind") keeps one model per user.
λ = 1 as in Ghosh et al.; α = 1 (the papers line-search it; set it with ``--param``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Policy
from banditbench.algos.ridge import RidgeStats


class LinUCB(Policy):
    domains = {"alpha": d.NON_NEGATIVE, "ridge": d.POSITIVE}

    def __init__(self, *, n_users, n_arms, dim, seed, per_user: bool = True, alpha: float = 1.0, ridge: float = 1.0):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.per_user = per_user
        self.alpha = alpha
        self.ridge = ridge
        self.stats = RidgeStats(n_users if per_user else 1, dim, ridge, raw_sums=False, logdet=False)
        self._chosen_terms = (-1, None)  # (round, (A⁻¹x, xᵀA⁻¹x, xᵀθ) of the arm select chose)

    def _learner(self, user: int) -> int:
        return user if self.per_user else 0

    def select(self, view, budget):
        arms = view.arms[:]
        learner = self._learner(view.user)
        A_inv_arms = arms @ self.stats.A_inv[learner]  # row i = (A⁻¹x_i)ᵀ, A⁻¹ being symmetric
        quad = np.add.reduce(A_inv_arms * arms, axis=1)  # x_iᵀA⁻¹x_i
        means = arms @ self.stats.theta[learner]
        chosen = int((means + self.alpha * np.sqrt(np.maximum(quad, 0.0))).argmax())
        # Sherman–Morrison in update needs A⁻¹x, xᵀA⁻¹x and xᵀθ of the chosen arm: computed here already
        self._chosen_terms = view.t, (A_inv_arms[chosen], quad[chosen], means[chosen])
        return chosen

    def update(self, view, chosen, reward):
        t, known = self._chosen_terms  # from this round's select (recomputed when update comes without one)
        self.stats.update(self._learner(view.user), view.arms[chosen], reward, known if t == view.t else None)

    def clusters(self):
        return np.arange(self.n_users) if self.per_user else np.zeros(self.n_users, dtype=np.int64)
