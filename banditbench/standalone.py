"""A registered policy outside any simulation, as a recommender serves one: ``select(user, arms)`` picks an arm of
the context rows at hand, ``update(user, arms, chosen, reward)`` learns from the click, much as mabwiser's
``predict`` / ``partial_fit`` do.

The policy is built by the registry's own ``build`` with its hyper-parameters checked against their domains,
and it sees each round through the same ``RoundView`` and ``Budget`` the runner hands it, so it behaves as it
does in a benchmark run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditbench.algos import ALGORITHMS, plugins
from banditbench.envs.round import ArmPool, Budget, RoundView
from banditbench.errors import UserError
from banditbench.runner import grid
from banditbench.runner.unit import group_of_one


class StandalonePolicy:
    """One policy for ``n_users`` users choosing among up to ``n_arms`` arms of ``dim`` features."""

    def __init__(self, name: str, *, dim: int, n_users: int, n_arms: int, seed: int = 0, **params: Any):
        self.name = plugins.resolve(name)
        spec = ALGORITHMS[self.name]
        if spec.capabilities.slate or spec.capabilities.user_features or spec.policy.privileged:
            raise UserError(
                f"{self.name} needs slates, user features or the hidden rewards of a simulation; "
                "a stand-alone policy picks one arm from context rows"
            )
        for label, value in (("dim", dim), ("n_users", n_users), ("n_arms", n_arms)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise UserError(f"{label} must be a positive integer, got {value!r}")
        cell = grid.resolve({self.name: {k: [v] for k, v in params.items()}}, [self.name])[self.name]
        self.dim, self.n_users, self.n_arms = int(dim), int(n_users), int(n_arms)
        policy = spec.build(
            n_users=self.n_users, n_arms=self.n_arms, dim=self.dim, seed=np.random.SeedSequence(seed), params=cell
        )
        self.policy = group_of_one(policy)
        self.t = 0
        self._last: tuple[int, np.ndarray, RoundView, Budget] | None = None

    def __repr__(self) -> str:
        return f"policy({self.name!r}, dim={self.dim}, n_users={self.n_users}, n_arms={self.n_arms})"

    def _view(self, user, arms) -> tuple[int, np.ndarray, RoundView, Budget]:
        features = np.asarray(arms, dtype=float)
        if features.ndim != 2 or not 1 <= len(features) <= self.n_arms or features.shape[1] != self.dim:
            raise UserError(
                f"arms must be 1 to {self.n_arms} rows of {self.dim} features, got an array of shape {features.shape}"
            )
        if isinstance(user, bool) or not isinstance(user, (int, np.integer)) or not 0 <= user < self.n_users:
            raise UserError(f"user must be an integer id in 0..{self.n_users - 1}, got {user!r}")
        budget = Budget()
        return int(user), features, RoundView(self.t, int(user), ArmPool(features, budget)), budget

    def select(self, user: int, arms) -> int:
        """The index of the arm (a row of ``arms``, one context per candidate) to show ``user``."""
        self._last = self._view(user, arms)
        return int(self.policy.select([self._last[2]], [self._last[3]])[0])

    def update(self, user: int, arms, chosen: int, reward: float) -> None:
        """Learn that showing ``user`` the arm ``chosen`` of ``arms`` earned ``reward``."""
        last = self._last
        same = last is not None and last[0] == user and np.array_equal(last[1], np.asarray(arms, dtype=float))
        _, features, view, budget = last if same else self._view(user, arms)
        if isinstance(chosen, bool) or not isinstance(chosen, (int, np.integer)) or not 0 <= chosen < len(features):
            raise UserError(f"chosen must be a row of arms, 0..{len(features) - 1}, got {chosen!r}")
        budget.close()  # learning from the chosen arm is free, as in a run
        self.policy.update([view], [int(chosen)], [float(reward)])
        self._last = None
        self.t += 1
