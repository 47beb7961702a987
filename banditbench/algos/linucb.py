"""LinUCB (Li, Chu, Langford & Schapire, WWW 2010, Algorithm 1 with disjoint models).

Score of arm x for user u:  p = xᵀθ_u + α·sqrt(xᵀ A_u⁻¹ x),  θ_u = A_u⁻¹ b_u,  A_u = λI + Σ x xᵀ.
``per_user=False`` ("linucb-one") keeps one model shared by every user; ``per_user=True``
("linucb-ind", LinUCB-Ind of Ghosh et al. 2021 and BASS's "Ind") keeps one model per user.
λ = 1 as in Ghosh et al.; α = 1 (the papers line-search it; set it with ``--param``).

Block-encoded contexts (the classification protocol's x_{t,a} = (0, …, x, …, 0), x in block a, as the round
declares): every played context lies in one block, so A is block-diagonal and b block-wise, and the model is
K independent d-dimensional ridge problems, block a scoring arm a with x: the same scores from K d×d matrices
instead of one dK×dK (MNIST: 10 × 784² instead of 7 840²). Setting the attribute ``blocks`` to False before
the first round keeps the dense computation (what the tests and benchmarks compare against).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.blocks import BuiltAtFirstRound
from banditbench.algos.ridge import RidgeStats, ridge_bytes, stack


class LinUCB(BuiltAtFirstRound, Policy):
    member_params = ("alpha", "ridge")  # per member: its exploration and ridge
    domains = {"alpha": d.NON_NEGATIVE, "ridge": d.POSITIVE}

    def __init__(self, *, n_users, n_arms, dim, seed, per_user: bool = True, alpha: float = 1.0, ridge: float = 1.0):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.per_user = per_user
        self.alpha = alpha
        self.ridge = ridge
        self.stats: RidgeStats | None = None  # built at the first round, when the encoding is known (blocks.py)
        self._terms = None  # (A⁻¹x, xᵀA⁻¹x, xᵀθ) of every arm, from the last ``scores``
        self._chosen_terms = (-1, -1, None)  # (round, arm, (A⁻¹x, xᵀA⁻¹x, xᵀθ)) of the arm select chose

    def _models(self) -> int:
        return self.n_users if self.per_user else 1

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, per_user=True, block=None, **params):
        return ridge_bytes(n_users if per_user else 1, dim, raw_sums=False, block=block)

    def _build(self, block: int | None) -> None:
        if block is None:
            self.stats = RidgeStats(self._models(), self.dim, self.ridge, raw_sums=False, logdet=False)
        else:
            n_blocks = self.dim // block
            self.stats = RidgeStats(self._models() * n_blocks, block, self.ridge, raw_sums=False, logdet=False)

    def _learners(self, user: int, n_arms: int) -> slice:
        """The learners scoring this round's arms: one model, or in block mode its learners of blocks 0 … K−1."""
        model = user if self.per_user else 0
        if self.block is None:
            return slice(model, model + 1)
        first = model * (self.dim // self.block)
        return slice(first, first + n_arms)

    def _contexts(self, arms: np.ndarray) -> np.ndarray:
        """Each arm's context in its learner's coordinates: the arm's own block [K, block] in block mode."""
        if self.block is None:
            return arms
        K = len(arms)
        return arms.reshape(K, -1, self.block)[np.arange(K), np.arange(K)]

    def scores(self, view) -> np.ndarray:
        """The LinUCB score of every arm of the round (what ``select`` maximises)."""
        self._prepare(view)
        arms = self._contexts(view.arms[:])
        learners = self._learners(view.user, len(arms))
        A_inv, theta = self.stats.A_inv[learners], self.stats.theta[learners]  # views, one learner per arm in blocks
        if self.block is None:
            A_inv_arms = arms @ A_inv[0]  # row i = (A⁻¹x_i)ᵀ, A⁻¹ being symmetric
            means = arms @ theta[0]
        else:
            A_inv_arms = np.einsum("kij,kj->ki", A_inv, arms)  # a stacked matvec (np.matmul's is 25× slower)
            means = np.add.reduce(theta * arms, axis=1)
        quad = np.add.reduce(A_inv_arms * arms, axis=1)  # x_iᵀA⁻¹x_i
        self._terms = A_inv_arms, quad, means
        return means + self.alpha * np.sqrt(np.maximum(quad, 0.0))

    def select(self, view, budget):
        chosen = int(self.scores(view).argmax())
        # Sherman–Morrison in update needs A⁻¹x, xᵀA⁻¹x and xᵀθ of the chosen arm: computed here already
        A_inv_arms, quad, means = self._terms
        self._chosen_terms = view.t, chosen, (A_inv_arms[chosen], quad[chosen], means[chosen])
        return chosen

    def update(self, view, chosen, reward):
        self._prepare(view)
        t, selected, known = self._chosen_terms  # from this round's select (recomputed if update comes without it)
        learner = self._learners(view.user, chosen + 1).stop - 1
        x = view.arms[chosen]
        if self.block is not None:
            x = x[chosen * self.block : (chosen + 1) * self.block]
        self.stats.update(learner, x, reward, known if (t, selected) == (view.t, chosen) else None)

    def clusters(self):
        return np.arange(self.n_users) if self.per_user else np.zeros(self.n_users, dtype=np.int64)

    @classmethod
    def lockstep(cls, policies):
        return LinUCBLockstep(policies)


class LinUCBLockstep(Lockstep):
    """LinUCB's members in lockstep (seeds, and grid cells of α and λ): their statistics stacked on a leading member
    axis once built at the first round (each member's arrays become views of the stack), so a round's scores and
    Sherman–Morrison updates are one numpy call each for the group. Every product is computed per member exactly
    as ``scores`` and ``update`` compute it alone (stacked matmuls; in block mode the same einsum, row by row)."""

    def __init__(self, policies: list[LinUCB]):
        super().__init__(policies)
        self.stats: RidgeStats | None = None
        self.alpha = self.per_member("alpha")[:, None]
        self.members = np.arange(len(policies))
        self._chosen = None  # (round, choices, their learners, contexts and (A⁻¹x, xᵀA⁻¹x, xᵀθ)) from select

    def select(self, views, budgets):
        policies, first = self.policies, self.policies[0]
        if self.stats is None:
            for policy, view in zip(policies, views):
                policy._prepare(view)
            self.stats = stack([policy.stats for policy in policies])
        arms = np.stack([first._contexts(view.arms[:]) for view in views])  # [S, K, d], each arm's block in blocks
        slices = [policy._learners(view.user, arms.shape[1]) for policy, view in zip(policies, views)]
        learners = np.array([np.arange(learners.start, learners.stop) for learners in slices])  # [S, 1] or [S, K]
        at = self.members[:, None], learners
        A_inv, theta = self.stats.A_inv[at], self.stats.theta[at]
        if first.block is None:
            A_inv_arms = arms @ A_inv[:, 0]
            means = (arms @ theta[:, 0, :, None])[:, :, 0]
        else:
            A_inv_arms = np.einsum("skij,skj->ski", A_inv, arms)
            means = np.add.reduce(theta * arms, axis=2)
        quad = np.add.reduce(A_inv_arms * arms, axis=2)
        chosen = (means + self.alpha * np.sqrt(np.maximum(quad, 0.0))).argmax(axis=1)
        pick = self.members, chosen
        learner = learners[pick] if first.block is not None else learners[:, 0]
        self._chosen = views[0].t, chosen, learner, arms[pick], (A_inv_arms[pick], quad[pick], means[pick])
        return chosen.tolist()

    def update(self, views, chosen, rewards):
        t, selected, learners, x, known = self._chosen
        if t != views[0].t or selected.tolist() != list(chosen):  # not this round's choices: step one by one
            for policy, view, arm, reward in zip(self.policies, views, chosen, rewards):
                policy.update(view, arm, reward)
            return
        self.stats.update_each(learners, x, np.asarray(rewards, dtype=float), known=known)
