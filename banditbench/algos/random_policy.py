"""Uniform random play: the reference every regret table is read against. It scores no arm."""

from __future__ import annotations

from banditbench.algos.base import Policy


class RandomPolicy(Policy):
    def select(self, view, budget):
        return int(self.rng.integers(len(view.arms)))

    def update(self, view, chosen, reward):
        pass
