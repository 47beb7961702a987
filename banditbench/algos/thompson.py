"""Linear Thompson sampling: LinTS (Agrawal & Goyal, ICML 2013) and Bayesian linear regression with a
normal-inverse-gamma prior (the "LinFullPost" of Riquelme, Tucker & Snoek, ICLR 2018, §3).

Both keep LinUCB's ridge statistics per learner, A = λI + Σ x xᵀ, θ̂ = A⁻¹ Σ r x, and score every arm by a draw
from a posterior instead of an upper confidence bound:

- LinTS draws θ̃ ~ N(θ̂, v² A⁻¹) (Agrawal & Goyal 2013, Algorithm 1, B = A with λ = 1); their theorem's
  v = R·sqrt(24 d ln(1/δ)/ε) is far larger than works in practice, so v is a hyper-parameter (default 1);
- BLR puts σ² ~ IG(a₀, b₀) and β | σ² ~ N(0, σ²/λ I) on each learner's weights, so that after n samples
  (X, y) the posterior is exactly σ² ~ IG(a₀ + n/2, b₀ + S/2), β | σ² ~ N(θ̂, σ² A⁻¹), with
  S = yᵀy − θ̂ᵀAθ̂ (Bishop 2006, §3.3; Murphy 2012, §7.6.3). S is kept recursively: adding (x, r) adds
  (r − xᵀθ̂)² / (1 + xᵀA⁻¹x) (the recursive least-squares identity), so each update stays O(d²). The prior
  a₀ = b₀ = 6, λ = 0.25, two initial round-robin pulls of each arm and an intercept (a constant 1 appended to each
  learner's context, ``intercept=True``) are the Showdown's LinFullPost settings; without the intercept its regret
  on the wheel and statlog is 53–86 % higher than their code's (benchmarks/parity_showdown.py).

Block-encoded contexts (one learner per arm, as the Showdown's per-action models): arm a's score xᵀθ̃_a reads only
its own learner's draw, and the learners' draws are independent, so each score is drawn directly from its exact
marginal N(xᵀθ̂_a, s² xᵀA_a⁻¹x) (s = v, or σ̃_a): the same distribution as drawing θ̃_a, at LinUCB's O(K d²) per
round instead of a Cholesky factor's O(K d³). Contexts shared by one learner draw θ̃ = θ̂ + s·L z, L Lᵀ = A⁻¹.
Each member draws from its own generator, in the same order alone as in a group, so a group equals its units.
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import same_views
from banditbench.algos.linucb import LinUCB


class LinTS(LinUCB):
    """LinTS: LinUCB's statistics and update; arms scored by a posterior draw (module docstring)."""

    member_params = ("v", "ridge")
    domains = {"v": d.NON_NEGATIVE, "ridge": d.POSITIVE}

    def __init__(self, *, n_users, n_arms, dim, seeds, per_user: bool = True, v=1.0, ridge=1.0):
        super().__init__(
            n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, per_user=per_user, alpha=0.0, ridge=ridge
        )
        self.v = self.per_member(v)

    def scales(self, learners: np.ndarray) -> np.ndarray:
        """The posterior's scale s of every member's scoring learners [M, L] (or [M, 1], one for all): v for LinTS."""
        return self.v[:, None]

    def normals(self, n: int) -> np.ndarray:
        """n standard normal draws of every member [M, n], each from its own generator."""
        if len(self.rngs) == 1:
            return self.rngs[0].standard_normal((1, n))  # the same numbers as a draw of n
        return np.array([rng.standard_normal(n) for rng in self.rngs])

    def scores(self, views) -> np.ndarray:
        """A posterior draw of xᵀθ for every member's arms [M, K]: LinUCB's means xᵀθ̂ (α = 0) plus the noise."""
        means = super().scores(views)
        _, learners, arms, (_, quad, _) = self._terms
        scale = self.scales(learners)
        if self.block is not None:  # one learner per arm: each score from its exact marginal
            z = self.normals(arms.shape[1])
            return means + scale * np.sqrt(np.maximum(quad, 0.0)) * z
        factor = posterior_factors(self.stats.A_inv[self.at(learners[:, 0])])
        z = self.normals(arms.shape[2])
        return means + scale * (arms @ (factor @ z[:, :, None]))[:, :, 0]


class BayesianLinearRegression(LinTS):
    """Bayesian linear regression with exact normal-inverse-gamma posterior sampling (module docstring)."""

    member_params = ("prior_a", "prior_b", "ridge")
    domains = {
        "prior_a": d.POSITIVE,
        "prior_b": d.POSITIVE,
        "ridge": d.POSITIVE,
        "initial_pulls": d.STEPS,
        "intercept": d.FLAG,
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        per_user: bool = True,
        prior_a=6.0,
        prior_b=6.0,
        ridge=0.25,
        initial_pulls: int = 2,
        intercept: bool = True,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, per_user=per_user, ridge=ridge)
        self.prior_a = self.per_member(prior_a)
        self.prior_b = self.per_member(prior_b)
        self.initial_pulls = initial_pulls
        self.intercept = intercept
        self.residual: np.ndarray | None = None  # S = yᵀy − θ̂ᵀAθ̂ of every learner [M, n], built with the stats
        self.rounds = 0

    def _build(self, block: int | None) -> None:
        super()._build(block)
        self.residual = np.zeros(self.stats.count.shape)

    def scales(self, learners: np.ndarray) -> np.ndarray:
        """σ̃ of every member's scoring learners [M, L]: σ̃² ~ IG(a₀ + n/2, b₀ + S/2), drawn as (b₀ + S/2) / Gamma."""
        at = self.members[:, None], learners
        shape = self.prior_a[:, None] + 0.5 * self.stats.count[at]
        rate = self.prior_b[:, None] + 0.5 * self.residual[at]
        return inverse_gamma_scales(self.rngs, shape, rate)

    def select(self, views, budgets):
        if self.rounds < self.initial_pulls * self.n_arms:  # the Showdown's round-robin start
            return [self.rounds % len(view.arms) for view in views]
        return super().select(views, budgets)

    def update(self, views, chosen, rewards):
        self._prepare(views)
        pick = self.members, np.asarray(chosen)
        if self._terms is not None and same_views(self._terms[0], views):  # this round's draw computed both
            _, learners, _, (_, quad, prediction) = self._terms
            quad, prediction = quad[pick], prediction[pick]
        else:  # the round-robin start draws nothing
            arms, learners = self._arms_and_learners(views)
            learner = learners[:, 0] if self.block is None else learners[pick]
            prediction, quad = self.stats.means_and_quadratic_forms(self.members, learner, arms[pick])
        learner = learners[:, 0] if self.block is None else learners[pick]
        error = np.asarray(rewards, dtype=float) - prediction
        self.residual[self.members, learner] += error * error / (1.0 + quad)
        super().update(views, chosen, rewards)
        self.rounds += 1


def inverse_gamma_scales(rngs, shape: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """σ̃ with σ̃² ~ IG(shape, rate) for every member's learners [M, L], member m drawing from ``rngs[m]``: the
    normal-inverse-gamma posterior's noise scale, drawn as sqrt(rate / Gamma(shape))."""
    # one scalar draw per learner: numpy validates an array of shapes at ten times the cost of a draw
    gamma = [rng.standard_gamma(k) for rng, row in zip(rngs, shape.tolist()) for k in row]
    return np.sqrt(rate / np.reshape(gamma, shape.shape))


def posterior_factors(A_inv: np.ndarray) -> np.ndarray:
    """L with L Lᵀ = A⁻¹ for every member's A⁻¹ [M, d, d] (symmetrised: Sherman–Morrison keeps it so only up to
    rounding); a member whose A⁻¹ rounding has made slightly indefinite alone takes ``eigen_factor``."""
    symmetric = 0.5 * (A_inv + np.swapaxes(A_inv, 1, 2))
    try:
        return np.linalg.cholesky(symmetric)
    except np.linalg.LinAlgError:
        return np.stack([eigen_factor(matrix) for matrix in symmetric])


def eigen_factor(matrix: np.ndarray) -> np.ndarray:
    """The Cholesky factor of a symmetric matrix, or V·diag(sqrt(max(λ, 0))) from its eigen-decomposition when it is
    not positive definite: the factor of the nearest positive semi-definite matrix."""
    try:
        return np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(matrix)
        return vectors * np.sqrt(np.maximum(values, 0.0))
