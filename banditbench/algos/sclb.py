"""SCLB (Ghosh, Sankararaman & Ramchandran 2021, Algorithm 1): successive CMLB refinement.

Phase i = 1, 2, … lasts 2^i steps and runs a *fresh* CMLB (no data carried over) with horizon 2^i,
γ_i = 3/(N·2^i)^α, δ_i = δ/2^i and cluster-size parameter p*_i = i^(−2); T_Explore is capped at the
phase length, and the run simply stops inside the last phase. (With the paper's constants the early
phases never leave individual learning, which is why the paper reports CMLB only.)
"""

from __future__ import annotations

from banditbench.algos.cmlb import CMLB


class SCLB(CMLB):
    # CMLB's domains serve: the registry keeps those of the hyper-parameters SCLB's constructor takes
    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        alpha: float = 0.2,
        C: float = 0.2,
        delta: float = 0.4,
        threshold_scale: float = 3.0,
        ridge: float = 1.0,
        sigma: float = 1.0,
        S: float = 1.0,
        averaged_noise: bool = True,
    ):
        self.phase = 1
        shared = dict(alpha=alpha, C=C, delta=delta, threshold_scale=threshold_scale, ridge=ridge, sigma=sigma, S=S)
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, averaged_noise=averaged_noise, **shared)
        self._start(0, 2, delta / 2, threshold_scale / (n_users * 2) ** alpha, 1.0)  # phase 1 replaces CMLB's start

    def _advance(self, step: int) -> None:
        """CMLB's step (it is called first in ``select``), then the phase of ``step``."""
        super()._advance(step)
        while step >= self.phase_end:  # Algorithm 1 line 3: a fresh CMLB for phase i
            self.phase += 1
            length = 2**self.phase
            gamma = self.threshold_scale / (self.n_users * length) ** self.alpha  # γ_i = 3/(N·2^i)^α
            self._start(self.phase_end, length, self.delta / length, gamma, self.phase**-2.0)
