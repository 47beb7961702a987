"""The oracle: plays the arm of highest expected reward, so its pseudo-regret is exactly 0.

It is the only privileged policy: the runner hands it the full Round, expected rewards included.
It spends the whole pool from the budget, since it scores every arm.
"""

from __future__ import annotations

import numpy as np

from banditbench.algos.base import Policy


class Oracle(Policy):
    privileged = True

    def select(self, round, budget):
        budget.spend(len(round.expected))
        return int(np.argmax(round.expected))

    def update(self, round, chosen, reward):
        pass
