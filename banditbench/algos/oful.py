"""Independent OFUL: one OFUL learner per user (Abbasi-Yadkori, Pál & Szepesvári 2011, Algorithm 1 with the
confidence set of Theorem 2), the "Ind" baseline of Ghosh, Sankararaman & Ramchandran (2021, §6.1).

User u plays argmax_x ⟨x, θ̂_u⟩ + β_u·‖x‖_{A_u⁻¹} with the self-normalised radius
    β_u(δ) = σ·sqrt(2 log(1/δ) + log det A_u − d log λ) + sqrt(λ)·S,
which is at most σ·sqrt(d log((1 + t_u/λ)/δ)) + sqrt(λ)·S when ‖x‖ ≤ 1 (t_u: the user's pulls). It is the radius
CMLB's individual and cluster OFULs use, with the same defaults (δ = 0.4, λ = 1, σ = 1, S = 1), so that CMLB and
this baseline differ only in whom a learner pools with. LinUCB (``linucb-ind``) is the same learner with a
constant α in place of β_u; at these defaults β_u grows from about 2.4 to 6–7 over 1000 pulls in d = 15.

Diagnostic ``radius``: the mean β over every selection so far (the exploration scale actually used).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.ridge_unit import RidgeStats, means_each, oful_radius, quadratic_forms_each, ridge_bytes, stack


class IndependentOFUL(Policy):
    member_params = ("delta",)  # per member: its confidence level
    domains = {"delta": d.PROBABILITY, "ridge": d.POSITIVE, "sigma": d.POSITIVE, "S": d.POSITIVE}

    def __init__(
        self, *, n_users, n_arms, dim, seed, delta: float = 0.4, ridge: float = 1.0, sigma: float = 1.0, S: float = 1.0
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.delta, self.ridge, self.sigma, self.S = delta, ridge, sigma, S
        self.stats = RidgeStats(n_users, dim, ridge, raw_sums=False)
        self.radius_total, self.selections = 0.0, 0

    def select(self, view, budget):
        u, arms = view.user, view.arms[:]
        beta = float(oful_radius(self.stats.logdet[u], self.dim, self.ridge, self.sigma, self.S, self.delta))
        self.radius_total += beta
        self.selections += 1
        return int((arms @ self.stats.theta[u] + beta * self.stats.widths(u, arms)).argmax())

    def update(self, view, chosen, reward):
        self.stats.update(view.user, view.arms[chosen], reward)

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users, dim, raw_sums=False)

    def clusters(self):
        return np.arange(self.n_users)

    @classmethod
    def lockstep(cls, policies):
        return IndependentOFULLockstep(policies)

    def diagnostics(self):
        return {"radius": self.radius_total / self.selections if self.selections else np.nan}


def oful_choices(policies: list, theta, A_inv, logdet, arms, sigma, delta) -> list[int]:
    """The OFUL choice argmax xᵀθ + β·sqrt(xᵀA⁻¹x) of every member of a lockstep group (θ [S, d], A⁻¹ [S, d, d],
    log det A [S], arms [S, K, d]; σ and δ one value or [S]), each member's bit for bit as alone; each member's
    radius β joins its ``radius`` diagnostic."""
    first = policies[0]
    beta = oful_radius(logdet, first.dim, first.ridge, sigma, first.S, delta)
    for policy, radius in zip(policies, beta.tolist()):
        policy.radius_total += radius
        policy.selections += 1
    widths = np.sqrt(np.maximum(quadratic_forms_each(A_inv, arms), 0.0))
    return (means_each(theta, arms) + beta[:, None] * widths).argmax(axis=1).tolist()


class IndependentOFULLockstep(Lockstep):
    """Independent OFUL's members in lockstep (seeds, and grid cells of δ): their statistics stacked on a leading
    member axis (each member's arrays views of the stack), so a round's radii, scores and Sherman–Morrison updates
    are one numpy call each, every member's computed as alone."""

    def __init__(self, policies: list[IndependentOFUL]):
        super().__init__(policies)
        self.stats = stack([policy.stats for policy in policies])
        self.delta = self.per_member("delta")
        self.members = np.arange(len(policies))

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        stats, at = self.stats, (self.members, served)
        sigma = self.policies[0].sigma
        return oful_choices(self.policies, stats.theta[at], stats.A_inv[at], stats.logdet[at], arms, sigma, self.delta)

    def update(self, views, chosen, rewards):
        self.stats.update_each(*self.played(chosen, rewards))
