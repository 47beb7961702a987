"""The synchronous linear protocol of Ghosh, Sankararaman & Ramchandran (2021, §3 and §6.1).

Each step, K fresh contexts x_k ~ N(0, I/d) are shown to *every* user; all N users act on them, each
receiving ⟨θ_user, x_k⟩ plus its own independent N(0, σ²) noise. A step is emitted as N consecutive
Rounds (users 0 … N−1 in order) sharing the arms and carrying ``step``, so the runner, the shard and
the budget stay per (step, user): ``t = step·N + user``, and the per-agent pseudo-regret is the shard's
regret grouped by ``user``. A run of T rounds covers ⌈T/N⌉ steps (the last one cut short when N ∤ T).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from banditbench.envs.linear import LinearEnvironment
from banditbench.envs.round import Round

STEPS_PER_BLOCK = 64  # steps drawn per call to the generator


class SynchronousEnvironment(LinearEnvironment):
    blocks = None  # a step's N rounds share their arms and carry the step, which Rounds do not hold

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        N = self.n_users
        n_steps = -(-n_rounds // N)
        for first in range(0, n_steps, STEPS_PER_BLOCK):
            size = min(STEPS_PER_BLOCK, n_steps - first)
            arms = self.rng.standard_normal((size, self.n_arms, self.dim)) / np.sqrt(self.dim)
            expected = np.einsum("skd,nd->snk", arms, self.theta)  # [steps, N, K]
            rewards = expected + self.noise * self.rng.standard_normal(expected.shape)
            arms.flags.writeable = False  # shown to policies as is (envs/round.py, ArmPool)
            groups = self.group_of.tolist()
            for s in range(size):
                step, shared = first + s, arms[s]  # one array shown to every user of the step
                for user in range(min(N, n_rounds - step * N)):
                    yield Round(
                        step * N + user, user, shared, rewards[s, user], expected[s, user], groups[user], step=step
                    )
