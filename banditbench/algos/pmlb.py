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
from banditbench.algos.base import MemberPolicy
from banditbench.algos.cmlb import StepAverages, current_step
from banditbench.algos.oful import mean_radius, oful_choices
from banditbench.algos.ridge import RidgeStats, ridge_bytes


class PMLB(MemberPolicy):
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
        seeds,
        horizon: int = 1000,
        delta: float = 0.4,
        ridge: float = 1.0,
        sigma: float = 1.0,
        S: float = 1.0,
        averaged_noise: bool = True,
        literal: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.delta, self.ridge, self.sigma, self.S = delta, ridge, sigma, S
        M = len(self.members)
        self.radius_total, self.selections = np.zeros(M), np.zeros(M, np.int64)  # the diagnostic ``radius``
        self.averaged_noise, self.literal = averaged_noise, literal
        self.common_steps = int(np.sqrt(horizon))  # √T, rounded down
        self.common = RidgeStats(M, 1, dim, ridge)
        self.personal = RidgeStats(M, n_users, dim, ridge)
        self.averages = StepAverages(M)  # the common OFUL's rewards of a step
        self.common_step, self.common_arm = -1, np.zeros(M, dtype=np.int64)  # the common OFULs' choices and step

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users + 1, dim)  # the common OFUL and every user's personal one

    def select(self, views, budgets):
        step = current_step(views[0])
        self.averages.learn(step, self.common)  # Alg. 4 line 5: one update with the previous step's average reward
        if step < self.common_steps:
            return self._common(views, step)
        arms, served = self.read_arms(views)
        at, personal = self.at(served), self.personal
        mean = personal.theta[at] if self.literal else personal.theta[at] + self.common.theta[:, 0]
        A_inv, logdet = personal.A_inv[at], personal.logdet[at]
        return oful_choices(self, self.members, mean, A_inv, logdet, arms, self.sigma, self.delta)

    def _common(self, views, step: int) -> list[int]:
        """The common phase: at a step's first round (the same round for every member) the common OFULs choose, and
        the step's other rounds replay that choice without reading the arms."""
        if self.common_step != step:
            arms, _ = self.read_arms(views)
            # σ/√N in the common OFUL's radius when it is fed the mean of the N agents' rewards of a step
            sigma = self.sigma / (np.sqrt(self.n_users) if self.averaged_noise and views[0].step is not None else 1.0)
            theta, A_inv, logdet = self.common.theta[:, 0], self.common.A_inv[:, 0], self.common.logdet[:, 0]
            self.common_arm[:] = oful_choices(self, self.members, theta, A_inv, logdet, arms, sigma, self.delta)
            self.common_step = step
        return self.common_arm.tolist()

    def update(self, views, chosen, rewards):
        step = current_step(views[0])
        served, x, reward = self.played(views, chosen, rewards)
        if step < self.common_steps:  # noted now, learnt when the next step begins
            self.averages.note(step, [0] * len(self.members), x, reward)
            return
        # Alg. 4 line 12: the shifted reward ỹ = y − ⟨x, θ̂*⟩
        shifted = reward - (x[:, None, :] @ self.common.theta[:, 0, :, None])[:, 0, 0]
        self.personal.update(self.members, served, x, shifted)

    def diagnostics(self, m):
        return mean_radius(self, m)
