"""PMLB (Ghosh, Sankararaman & Ramchandran 2021, Algorithm 4): personalised multi-agent learning.

1. Common representation (steps 0 … ⌊√T⌋−1): one common OFUL; every agent plays its arm and it is
   updated with the average reward over all agents, which estimates θ̄* = (1/N) Σ θ_i*.
2. Personal learning: θ̂* is frozen; each agent runs its own OFUL on the shifted reward ỹ = y − ⟨x, θ̂*⟩,
   so it learns ψ_i = θ_i* − θ̂*. As in the paper's experiments, vanilla OFUL/LinUCB replaces ALB-Norm
   (λ = 1, δ = 0.4, CMLB's settings).
Reading of line 11 (the paper is ambiguous): by default arms are chosen by the average plus the personal
offset, argmax ⟨x, θ̂* + ψ̂_i⟩ + bonus (the abstract's "initialised with the global model": ridge centred at
θ̂*); ``literal=True`` takes Algorithm 4 literally, argmax ⟨x, ψ̂_i⟩ + bonus, ignoring θ̂* when choosing.
``averaged_noise``: the common OFUL's radius uses σ/√N, the noise of an average of N rewards (our choice).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.cmlb import current_step
from banditbench.algos.ridge_unit import RidgeStats, oful_choices, oful_radius, ridge_bytes, stack


class PMLB(Policy):
    domains = {
        "horizon": d.COUNT,
        "delta": d.PROBABILITY,
        "ridge": d.POSITIVE,
        "sigma": d.POSITIVE,
        "S": d.POSITIVE,
        "averaged_noise": d.FLAG,
        "literal": d.FLAG,
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        horizon: int = 1000,
        delta: float = 0.4,
        ridge: float = 1.0,
        sigma: float = 1.0,
        S: float = 1.0,
        averaged_noise: bool = True,
        literal: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.delta, self.ridge, self.sigma, self.S = delta, ridge, sigma, S
        self.radius_total, self.selections = 0.0, 0  # for the diagnostic ``radius``: the mean β used
        self.averaged_noise, self.literal = averaged_noise, literal
        self.common_steps = int(np.sqrt(horizon))  # √T, rounded down
        self.common = RidgeStats(1, dim, ridge)
        self.personal = RidgeStats(n_users, dim, ridge)
        self.pending: list = []  # [x, Σ reward, n] of the current common step
        self.pending_step = -1
        self.played = (-1, 0)  # (step, arm) of the common OFUL

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users + 1, dim)  # the common OFUL and every user's personal one

    def _radius(self, stats: RidgeStats, learner: int, sigma: float) -> float:
        beta = oful_radius(stats.logdet[learner], self.dim, self.ridge, sigma, self.S, self.delta)
        self.radius_total += beta
        self.selections += 1
        return beta

    def _common_sigma(self, synchronous: bool) -> float:
        """σ in the common OFUL's radius: σ/√N when it is fed the mean of the N agents' rewards of a step."""
        return self.sigma / (np.sqrt(self.n_users) if self.averaged_noise and synchronous else 1.0)

    def _flush(self, step: int) -> None:
        """Alg. 4 line 5: once a new step begins, the common OFUL's one update with the previous step's average."""
        if self.pending and step != self.pending_step:
            x, total, n = self.pending
            self.common.update(0, x, total / n)
            self.pending = []

    def select(self, view, budget):
        step = current_step(view)
        self._flush(step)
        if step < self.common_steps:
            if self.played[0] == step:
                return self.played[1]
            arms = view.arms[:]
            beta = self._radius(self.common, 0, self._common_sigma(view.step is not None))
            arm = int((arms @ self.common.theta[0] + beta * self.common.widths(0, arms)).argmax())
            self.played = (step, arm)
            return arm
        u, arms = view.user, view.arms[:]
        mean = self.personal.theta[u] if self.literal else self.personal.theta[u] + self.common.theta[0]
        beta = self._radius(self.personal, u, self.sigma)
        return int((arms @ mean + beta * self.personal.widths(u, arms)).argmax())

    def update(self, view, chosen, reward):
        step, x = current_step(view), view.arms[chosen]
        if step < self.common_steps:
            if not self.pending:
                self.pending = [x, 0.0, 0]
            self.pending[1] += reward
            self.pending[2] += 1
            self.pending_step = step
            return
        self.personal.update(view.user, x, reward - x @ self.common.theta[0])  # Alg. 4 line 12: shifted reward

    def diagnostics(self):
        return {"radius": self.radius_total / self.selections if self.selections else np.nan}

    @classmethod
    def lockstep(cls, policies):
        return PMLBLockstep(policies)


class PMLBLockstep(Lockstep):
    """PMLB's seeds in lockstep: their personal and common statistics stacked on a leading member axis. In the
    personal phase (all but the first √T steps) a round's radii, scores and updates are one numpy call each. In the
    common phase a new step's averaged updates of the common OFULs are one call, and so are their choices at the
    step's first round. Every member's numbers are computed as alone."""

    def __init__(self, policies: list[PMLB]):
        super().__init__(policies)
        self.personal = stack([policy.personal for policy in policies])
        self.common = stack([policy.common for policy in policies])
        self.members = np.arange(len(policies))
        self.personal_phase = False  # whether this round is past the common phase

    def _flush(self, step: int) -> None:
        """``PMLB._flush`` of every member, in one batched update of the common OFULs."""
        due = [s for s, policy in enumerate(self.policies) if policy.pending and step != policy.pending_step]
        if not due:
            return
        pending = [self.policies[s].pending for s in due]  # [x, Σ reward, n] of each
        x, reward = np.array([p[0] for p in pending]), np.array([p[1] / p[2] for p in pending])
        self.common.update_each(np.zeros(len(due), dtype=np.int64), x, reward, members=np.array(due))
        for s in due:
            self.policies[s].pending = []

    def select(self, views, budgets):
        policies, first = self.policies, self.policies[0]
        step = current_step(views[0])
        self._flush(step)
        self.personal_phase = step >= first.common_steps
        if not self.personal_phase:
            return self._common(views, step)
        arms, served = self.read_arms(views)
        at = self.members, served
        personal = self.personal
        mean = personal.theta[at] if first.literal else personal.theta[at] + self.common.theta[:, 0]
        return oful_choices(policies, mean, personal.A_inv[at], personal.logdet[at], arms, first.sigma, first.delta)

    def _common(self, views, step: int) -> list[int]:
        """``PMLB.select`` in the common phase: at a step's first round (the same round for every member) the common
        OFULs choose, and the step's other rounds replay that choice."""
        policies, first = self.policies, self.policies[0]
        if first.played[0] != step:
            arms, _ = self.read_arms(views)
            common, at = self.common, (self.members, np.zeros(len(policies), dtype=np.int64))
            sigma = first._common_sigma(views[0].step is not None)
            fresh = oful_choices(
                policies, common.theta[at], common.A_inv[at], common.logdet[at], arms, sigma, first.delta
            )
            for policy, arm in zip(policies, fresh):
                policy.played = (step, arm)
        return [policy.played[1] for policy in policies]

    def update(self, views, chosen, rewards):
        if not self.personal_phase:  # the members note their step's rewards, applied when the next step begins
            return super().update(views, chosen, rewards)
        served, x, reward = self.played(chosen, rewards)
        # the shifted reward ỹ = y − ⟨x, θ̂*⟩ (Alg. 4 line 12), each member's dot product as alone
        shifted = np.array([r - x_s @ theta for r, x_s, theta in zip(reward.tolist(), x, self.common.theta[:, 0])])
        self.personal.update_each(served, x, shifted)
