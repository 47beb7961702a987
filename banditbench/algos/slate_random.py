"""Random and 2-Random of Zhang et al. 2022: the reference rows of Tables 4 and 5.

- ``slate-random``: m items uniformly without replacement from the iteration's sampled candidates (in
  expectation uniform over the catalogue); scores nothing, so it spends no budget.
- ``2-slate-random``: m topics uniformly without replacement from all q topics, then one item uniformly from each
  (the authors' code: whole topics, no budget, no dynamic topics).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos.slate import SlatePolicy
from banditbench.envs.round import Budget, RoundView


class SlateRandom(SlatePolicy):
    def __init__(self, *, two_stage: bool = False, n_users: int, n_arms: int, dim: int, seed: np.random.SeedSequence):
        super().__init__(two_stage=two_stage, n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)

    def select(self, view: RoundView, budget: Budget) -> np.ndarray:
        if not self.two_stage:
            return self.rng.choice(view.arms.candidates, self.m, replace=False)
        topics = self.rng.choice(self.catalogue.n_topics, self.m, replace=False)
        return np.array([self.rng.choice(self.catalogue.topic_items[v]) for v in topics], np.int64)
