"""LinUCB (Li, Chu, Langford & Schapire, WWW 2010, Algorithm 1 with disjoint models).

Score of arm x for user u:  p = xᵀθ_u + α·sqrt(xᵀ A_u⁻¹ x),  θ_u = A_u⁻¹ b_u,  A_u = λI + Σ x xᵀ.
``per_user=False`` ("linucb-one") keeps one model shared by every user; ``per_user=True``
("linucb-ind", LinUCB-Ind of Ghosh et al. 2021 and BASS's "Ind") keeps one model per user.
λ = 1 as in Ghosh et al.; α = 1 (the papers line-search it; set it with ``--set``).

Block-encoded contexts (banditbench/algos/blocks.py): A is block-diagonal, so the model is K independent
d-dimensional ridge problems, block a scoring arm a: the same scores from K d×d matrices instead of one dK×dK.
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy, same_views
from banditbench.algos.blocks import BuiltAtFirstRound
from banditbench.algos.ridge import RidgeStats, means_each, ridge_bytes


class LinUCB(BuiltAtFirstRound, MemberPolicy):
    member_params = ("alpha", "ridge")  # per member: its exploration and ridge
    domains = {"alpha": d.NON_NEGATIVE, "ridge": d.POSITIVE}
    transient = ("_terms",)  # this round's products, from ``scores`` to ``update``
    intercept = False  # a constant 1 after every context, fitted as one more weight (Bayesian linear regression's)
    square_roots = False  # R with R Rᵀ = A⁻¹ instead of A⁻¹ on shared contexts (LinTS's posterior draws)

    def __init__(self, *, n_users, n_arms, dim, seeds, per_user: bool = True, alpha=1.0, ridge=1.0):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.per_user = per_user
        self.alpha = self.per_member(alpha)
        self.ridge = self.per_member(ridge)
        self.stats: RidgeStats | None = None  # built at the first round, when the encoding is known (blocks.py)
        self._terms = None  # the last ``scores``' (views, learners, contexts, (A⁻¹x, xᵀA⁻¹x, xᵀθ) of every arm or None)

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, per_user=True, block=None, **params):
        return ridge_bytes(n_users if per_user else 1, dim, raw_sums=False, block=block)

    def _build(self, block: int | None) -> None:
        models = self.n_users if self.per_user else 1
        blocks, width = (1, self.dim) if block is None else (self.dim // block, block)
        width += self.intercept
        root = self.square_roots and block is None
        self.stats = RidgeStats(
            len(self.members), models * blocks, width, self.ridge, raw_sums=False, logdet=False, root=root
        )

    def scores(self, views) -> np.ndarray:
        """The LinUCB score of every member's arms [M, K] (what ``select`` maximises): xᵀθ_u + α·sqrt(xᵀA_u⁻¹x)."""
        means, quad = self.means_and_quadratic_forms(views)
        return means + self.alpha[:, None] * np.sqrt(np.maximum(quad, 0.0))

    def means_and_quadratic_forms(self, views) -> tuple[np.ndarray, np.ndarray]:
        """xᵀθ_u and xᵀA_u⁻¹x of every member's arms [M, K], kept with A⁻¹x (Rᵀx in square-root form) for this round's
        ``update``."""
        self._prepare(views)
        arms, learners = self._arms_and_learners(views)
        stats = self.stats
        if self.block is None:
            at = self.at(learners[:, 0])
            means = means_each(stats.theta[at], arms)
            if stats.root is not None:  # square-root form (shared contexts only): u = Rᵀx, xᵀA⁻¹x = uᵀu
                u = arms @ stats.root[at]
                quad = np.add.reduce(u * u, axis=2)
                self._terms = views, learners, arms, (u, quad, means)
                return means, quad
            A_inv_arms = arms @ stats.A_inv[at]  # row i = (A⁻¹x_i)ᵀ, A⁻¹ being symmetric
        else:  # each member's learners of blocks 0 … K−1 read in place: a gather would copy K blocks of w × w
            rows = zip(self.members, learners[:, 0].tolist(), arms)  # (member, its first learner, its arms)
            A_inv_arms = np.stack([np.einsum("kij,kj->ki", stats.A_inv[m, u : u + len(x)], x) for m, u, x in rows])
            means = np.add.reduce(stats.theta[self.members[:, None], learners] * arms, axis=2)
        quad = np.add.reduce(A_inv_arms * arms, axis=2)  # x_iᵀA⁻¹x_i
        self._terms = views, learners, arms, (A_inv_arms, quad, means)
        return means, quad

    def _arms_and_learners(self, views) -> tuple[np.ndarray, np.ndarray]:
        """Every member's arms in its learners' coordinates [M, K, ·] and the learners scoring them: its user's model
        (or the one shared model) [M, 1], or in block mode that model's learners of blocks 0 … K−1 [M, K], each
        reading its arm's own block; a constant 1 after each context where the learners fit an intercept."""
        arms, served = self.read_arms(views)
        M, K = arms.shape[:2]
        models = served if self.per_user else np.zeros_like(served)
        if self.block is None:
            learners = models[:, None]
        else:
            arms = arms.reshape(M, K, -1, self.block)[:, np.arange(K), np.arange(K)]
            learners = models[:, None] * (self.dim // self.block) + np.arange(K)
        if self.intercept:
            arms = np.concatenate([arms, np.ones((M, K, 1))], axis=2)
        return arms, learners

    def select(self, views, budgets):
        return self.scores(views).argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        x, learner, known = self.chosen_terms(views, chosen)
        self.stats.update(self.members, learner, x, np.asarray(rewards, dtype=float), known)

    def chosen_terms(self, views, chosen):
        """Every member's chosen context [M, ·], its learner [M] and, where this round's ``scores`` computed them, the
        (A⁻¹x, xᵀA⁻¹x, xᵀθ) of it that Sherman–Morrison needs (Rᵀx first in square-root form), else None."""
        self._prepare(views)
        pick = self.at(chosen)  # every member's chosen arm
        if self._terms is not None and same_views(self._terms[0], views):
            _, learners, arms, products = self._terms
        else:
            (arms, learners), products = self._arms_and_learners(views), None
        learner = learners[:, 0] if self.block is None else learners[pick]
        return arms[pick], learner, None if products is None else tuple(product[pick] for product in products)

    def clusters(self, m):
        return np.arange(self.n_users) if self.per_user else np.zeros(self.n_users, dtype=np.int64)
