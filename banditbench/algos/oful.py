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
from banditbench.algos.base import MemberPolicy
from banditbench.algos.ridge import RidgeStats, means_each, oful_radius, quadratic_forms_each, ridge_bytes


class IndependentOFUL(MemberPolicy):
    member_params = ("delta",)  # per member: its confidence level
    domains = {"delta": d.PROBABILITY, "ridge": d.POSITIVE, "sigma": d.POSITIVE, "S": d.POSITIVE}

    def __init__(self, *, n_users, n_arms, dim, seeds, delta=0.4, ridge=1.0, sigma=1.0, S=1.0):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.delta, self.ridge, self.sigma, self.S = self.per_member(delta), ridge, sigma, S
        self.stats = RidgeStats(len(self.members), n_users, dim, ridge, raw_sums=False)
        self.radius_total, self.selections = np.zeros(len(self.members)), np.zeros(len(self.members), np.int64)

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        at, stats = self.at(served), self.stats
        return oful_choices(
            self, self.members, stats.theta[at], stats.A_inv[at], stats.logdet[at], arms, self.sigma, self.delta
        )

    def update(self, views, chosen, rewards):
        self.stats.update(self.members, *self.played(views, chosen, rewards))

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users, dim, raw_sums=False)

    def clusters(self, m):
        return np.arange(self.n_users)

    def diagnostics(self, m):
        return mean_radius(self, m)


def oful_choices(policy, members, theta, A_inv, logdet, arms, sigma, delta) -> list[int]:
    """The OFUL choice argmax xᵀθ + β·sqrt(xᵀA⁻¹x) of the ``members`` of ``policy`` (θ [P, d], A⁻¹ [P, d, d], log det A
    [P], arms [P, K, d]; σ and δ one value or [P]), with β = ``oful_radius``; each radius joins its member's
    ``radius`` diagnostic (``policy.radius_total`` and ``policy.selections``, [M])."""
    beta = oful_radius(logdet, policy.dim, policy.ridge, sigma, policy.S, delta)
    policy.radius_total[members] += beta
    policy.selections[members] += 1
    widths = np.sqrt(np.maximum(quadratic_forms_each(A_inv, arms), 0.0))
    return (means_each(theta, arms) + beta[:, None] * widths).argmax(axis=1).tolist()


def mean_radius(policy, m: int) -> dict[str, float]:
    """Diagnostic ``radius``: member m's mean OFUL radius β over its selections so far."""
    selections = policy.selections[m]
    return {"radius": policy.radius_total[m] / selections if selections else np.nan}
