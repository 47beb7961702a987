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
  on the wheel and statlog is 62–87 % higher than their code's (benchmarks/parity_showdown.py).

Block-encoded contexts (one learner per arm, as the Showdown's per-action models): arm a's score xᵀθ̃_a reads only
its own learner's draw, and the learners' draws are independent, so each score is drawn directly from its exact
marginal N(xᵀθ̂_a, s² xᵀA_a⁻¹x) (s = v, or σ̃_a): the same distribution as drawing θ̃_a, at LinUCB's O(K d²) per
round instead of a Cholesky factor's O(K d³). Contexts shared by one learner draw θ̃ = θ̂ + s·R z with R Rᵀ = A⁻¹
once and score every arm as xᵀθ̃, O(d² + K d) a round against LinUCB's O(K d²) (the update then computes the chosen
arm's Rᵀx alone): there the learners keep R instead of A⁻¹, by Potter's O(d²) rank-one update at every sample (the
square-root form of banditbench/algos/ridge.py), so that no round factors A⁻¹ anew.

Every member draws from its own generator, and a group draws for all its members at once: each member's standard
normals and exponentials are drawn a chunk at a time (``MemberStream``), and a round takes one slice of them for
every member. BLR's Gamma(a₀ + n/2) draws, one per scoring learner, come from those variates by Marsaglia & Tsang's
rejection method (2000) in one vectorised pass, instead of one numpy call per learner. Every member takes as many
variates a round, so member m's draws are the same in a group as alone.
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.linucb import LinUCB
from banditbench.algos.ridge import means_each


class LinTS(LinUCB):
    """LinTS: LinUCB's statistics and update; arms scored by a posterior draw (module docstring)."""

    member_params = ("v", "ridge")
    domains = {"v": d.NON_NEGATIVE, "ridge": d.POSITIVE}
    square_roots = True

    def __init__(self, *, n_users, n_arms, dim, seeds, per_user: bool = True, v=1.0, ridge=1.0):
        super().__init__(
            n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, per_user=per_user, alpha=0.0, ridge=ridge
        )
        self.v = self.per_member(v)
        self.normals = MemberStream("standard_normal", len(seeds))

    def scales(self, learners: np.ndarray) -> np.ndarray:
        """The posterior's scale s of every member's scoring learners [M, L] (or [M, 1], one for all): v for LinTS."""
        return self.v[:, None]

    def scores(self, views) -> np.ndarray:
        """A posterior draw of xᵀθ for every member's arms [M, K] (module docstring)."""
        self._prepare(views)
        if self.block is not None:  # one learner per arm: each score from its exact marginal, LinUCB's terms
            means, quad = self.means_and_quadratic_forms(views)
            _, learners, arms, _ = self._terms
            scale = self.scales(learners)
            return means + scale * np.sqrt(np.maximum(quad, 0.0)) * self.normals.take(self.rngs, arms.shape[1])
        # one learner sees every arm: θ̃ = θ̂ + s·R z drawn once, scored as xᵀθ̃
        arms, learners = self._arms_and_learners(views)
        at = self.at(learners[:, 0])
        scale = self.scales(learners)
        z = self.normals.take(self.rngs, arms.shape[2])
        self._terms = views, learners, arms, None  # the update computes the chosen arm's terms alone
        return means_each(self.stats.theta[at] + scale * (self.stats.root[at] @ z[:, :, None])[:, :, 0], arms)


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
        self.exponentials = MemberStream("standard_exponential", len(seeds))  # Marsaglia & Tsang's −log U
        self.rounds = 0

    def _build(self, block: int | None) -> None:
        super()._build(block)
        self.residual = np.zeros(self.stats.count.shape)

    def scales(self, learners: np.ndarray) -> np.ndarray:
        """σ̃ of every member's scoring learners [M, L]: σ̃² ~ IG(a₀ + n/2, b₀ + S/2), drawn as (b₀ + S/2) / Gamma."""
        at = self.members[:, None], learners
        shape = self.prior_a[:, None] + 0.5 * self.stats.count[at]
        rate = self.prior_b[:, None] + 0.5 * self.residual[at]
        return np.sqrt(rate / standard_gammas(shape, self.normals, self.exponentials, self.rngs))

    def select(self, views, budgets):
        if self.rounds < self.initial_pulls * self.n_arms:  # the Showdown's round-robin start
            return [self.rounds % len(view.arms) for view in views]
        return super().select(views, budgets)

    def update(self, views, chosen, rewards):
        x, learner, known = self.chosen_terms(views, chosen)
        if known is None:  # the round-robin start and shared contexts score no quadratic form: the chosen arm's now
            known = self.stats.terms(self.members, learner, x)
        rewards = np.asarray(rewards, dtype=float)
        _, quad, prediction = known
        self.residual[self.members, learner] += (rewards - prediction) ** 2 / (1.0 + quad)
        self.stats.update(self.members, learner, x, rewards, known)
        self.rounds += 1


class MemberStream:
    """One kind of variate of every member (``draw``, a numpy Generator method such as "standard_normal"), drawn from
    each member's own generator ``CHUNK`` at a time and handed out in order. A round's variates for all members are
    then one slice of an array instead of a call per member (or per learner), and member m's are the same whether it
    runs alone or in a group: every member of a group takes as many a round, so each refills when it would alone."""

    CHUNK = 1024

    def __init__(self, draw: str, members: int):
        self.draw = draw
        self.values = np.empty((members, 0))
        self.next = 0  # the first unused column of ``values``

    def take(self, rngs, n: int) -> np.ndarray:
        """The next n variates of every member [M, n]."""
        if self.next + n > self.values.shape[1]:
            fresh = np.stack([getattr(rng, self.draw)(max(self.CHUNK, n)) for rng in rngs])
            self.values = np.concatenate([self.values[:, self.next :], fresh], axis=1)
            self.next = 0
        self.next += n
        return self.values[:, self.next - n : self.next]


def standard_gammas(shape: np.ndarray, normals: MemberStream, exponentials: MemberStream, rngs) -> np.ndarray:
    """Gamma(shape, 1) draws for every member's learners [M, L] (shape > 0), by Marsaglia & Tsang's rejection method
    (ACM TOMS 2000) on one candidate per draw from the members' streams, all members in one pass. A candidate it
    rejects (about 5 % at shape 1, 0.5 % at the Showdown's a₀ = 6, 0.03 % at 100) and a shape below 1, outside the
    method, are drawn by numpy from the member's own generator instead: the accepted candidates are exactly
    Gamma(shape), so the mixture is too. Every member takes L normals and L exponentials a round, whatever it
    accepts."""
    z, e = normals.take(rngs, shape.shape[1]), exponentials.take(rngs, shape.shape[1])
    d = np.maximum(shape, 1.0) - 1.0 / 3.0
    v = 1.0 + z / np.sqrt(9.0 * d)
    v = v * v * v
    # accept iff v > 0 and log U < z²/2 + d − d·v + d·log v, with −log U = e (the clamp only keeps log quiet)
    accept = (v > 0.0) & (d * (v - 1.0 - np.log(np.maximum(v, 1e-300))) < e + 0.5 * z * z)
    gamma = d * v
    if not accept.all() or shape.min() < 1.0:
        for m, learner in zip(*np.nonzero(~accept | (shape < 1.0))):
            gamma[m, learner] = rngs[m].standard_gamma(shape[m, learner])
    return gamma


def inverse_gamma_scales(rngs, shape: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """σ̃ with σ̃² ~ IG(shape, rate) for every member's learners [M, L], one scalar numpy draw per learner from member
    m's ``rngs[m]`` in learner order: NeuralLinear-TS's per-action draws, whose runs reproduce this order."""
    gamma = [rng.standard_gamma(k) for rng, row in zip(rngs, shape.tolist()) for k in row]
    return np.sqrt(rate / np.reshape(gamma, shape.shape))
