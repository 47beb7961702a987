"""A non-linear protocol on the clustered synthetic users, for the neural bandits
(the reward of Zhou et al. 2020, §7.1).

Same rounds as ``linear`` (one uniform user, K contexts x ~ N(0, I/d), N(0, σ²) noise, the environment's
own stream), but the expected reward is h_u(x) = cos(3⟨θ_u, x⟩), the non-linear reward NeuralUCB's
synthetic study uses (Zhou et al. 2020 §7.1, h(x) = cos(3aᵀx)). cos is even, so E[x·h_u(x)] = 0: no linear
model can do better than random on it, while a network can, and users of one cluster share h_u.
"""

from __future__ import annotations

import numpy as np

from banditbench.envs.linear import LinearEnvironment


class CosineEnvironment(LinearEnvironment):
    @staticmethod
    def expected_reward(inner: np.ndarray) -> np.ndarray:
        return np.cos(3.0 * inner)
