"""Slate rounds (two-stage neural contextual bandits, ``twostage`` protocol): what the one round loop of
runner/unit.py needs when a policy recommends m items.

Outcome shard, per iteration: ``t, user, slate`` (the m item ids), ``clicked`` (m clicks), ``slate_size`` (m),
``clicks`` (y_t = Σ clicks, the Round's reward), ``ctr`` (y_t / m), ``expected_reward`` (the slate's expected CTR
under the simulator), ``best_expected_reward`` (the optimum 1 − flip = 0.9), ``regret`` (their difference) and
``budget_spent``; the metadata key ``ctr_optimum`` (1 − flip) tells the report the CTR optimum.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from banditbench.data import PreparedDataset
from banditbench.envs import PROTOCOLS
from banditbench.results.units import Unit
from banditbench.runner.choices import slate_of


class SlateRounds:
    """A policy recommends a slate of m distinct items; its feedback is the m simulated clicks."""

    diagnosed = False  # slate policies report no clustering diagnostics
    revealed = True  # the clicks of every slate reach the policy

    def __init__(self, unit: Unit, dataset: PreparedDataset, env_seed):
        self.unit = unit
        self.env = PROTOCOLS[unit.protocol].environment(dataset, env_seed, unit.env, unit.budget)
        self.m = self.env.slate_size
        self.expected_clicks = None

    def begin(self, policy) -> None:
        policy.start(self.env.problem)

    def new_columns(self, T: int) -> dict[str, np.ndarray]:
        return {
            "user": np.empty(T, np.int64),
            "slate": np.empty((T, self.m), np.int64),
            "clicked": np.empty((T, self.m), np.int8),
            "expected_reward": np.empty(T),
        }

    def use(self, columns: dict[str, np.ndarray], policy) -> None:
        self.users, self.slates, self.clicked, self.expected = (
            columns[name] for name in ("user", "slate", "clicked", "expected_reward")
        )

    def view(self, rnd, budget):
        return rnd.view(self.env.catalogue, budget)

    def choice(self, selected, rnd) -> np.ndarray:
        return slate_of(selected, self.m, self.env.n_arms, self.unit.algorithm)

    def feedback(self, rnd, slate):
        clicks, self.expected_clicks = self.env.feedback(rnd, slate)
        return clicks

    def record(self, t: int, rnd, slate, clicks) -> None:
        self.users[t], self.slates[t], self.clicked[t] = rnd.user, slate, clicks
        self.expected[t] = self.expected_clicks.mean()

    def outcome(self, T: int) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
        """The outcome columns, those that must be finite, and the shard's extra metadata."""
        optimum = 1.0 - self.env.flip
        clicks = self.clicked.sum(axis=1).astype(np.int64)
        regret = optimum - self.expected
        columns = {
            "user": self.users,
            "slate": pa.FixedSizeListArray.from_arrays(self.slates.ravel(), self.m),
            "clicked": pa.FixedSizeListArray.from_arrays(self.clicked.ravel(), self.m),
            "slate_size": np.full(T, self.m, np.int64),
            "clicks": clicks,
            "ctr": clicks / self.m,
            "expected_reward": self.expected,
            "best_expected_reward": np.full(T, optimum),
            "regret": regret,
        }
        return columns, {"clicks": clicks, "expected_reward": self.expected, "regret": regret}, {"ctr_optimum": optimum}
