"""Logged rounds (the ``logged`` protocol, envs/logged.py): what the one round loop of runner/unit.py needs when the
rounds replay a log.

Every event of the log is one round and one row of the shard, whether or not it counts: the policy picks an arm on
every event, and learns only from the events the evaluator keeps (``revealed``: the loop then calls ``update``,
otherwise not). A log has no expected rewards, so regret is undefined: ``expected_reward``, ``best_expected_reward``
and ``regret`` are NaN, and the report reads the logged columns instead.

Outcome shard, per event: ``t, user, chosen, logged`` (arm indices among the event's arms), ``matched`` (chosen =
logged), ``kept`` (matched and accepted by the evaluator), ``reward`` (the logged reward where kept, NaN elsewhere),
``logged_reward``, ``propensity``, ``acceptance`` (the probability of keeping a matched event), ``estimate_chosen``
and ``estimate_logged`` (the reward model's estimates of both arms), and ``budget_spent``; the metadata key
``logged`` names the evaluator, the reward range and the log's logging policy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditbench.data import PreparedDataset
from banditbench.envs import PROTOCOLS
from banditbench.errors import UserError
from banditbench.results.units import Unit
from banditbench.runner.choices import arm_index

INTEGERS = ("user", "chosen", "logged")
FLAGS = ("matched", "kept")
FLOATS = ("reward", "logged_reward", "propensity", "acceptance", "estimate_chosen", "estimate_logged")


class LoggedRounds:
    """A policy picks one arm of a logged event; it sees the logged reward only when the evaluator keeps the event."""

    def __init__(self, unit: Unit, dataset: PreparedDataset, env_seed):
        self.env = PROTOCOLS[unit.protocol].environment(dataset, env_seed, unit.env)
        self.dataset = dataset
        self.diagnosed = False  # clustering diagnostics score against ground-truth groups, which a log lacks
        self.revealed = True

    def begin(self, policy) -> None:
        if policy.privileged:
            raise UserError(f"{type(policy).__name__} reads expected rewards, which a log does not have")

    def new_columns(self, T: int) -> dict[str, np.ndarray]:
        return {
            **{name: np.empty(T, np.int64) for name in INTEGERS},
            **{name: np.empty(T, bool) for name in FLAGS},
            **{name: np.empty(T) for name in FLOATS},
        }

    def use(self, columns: dict[str, np.ndarray], policy) -> None:
        self.columns = columns

    def view(self, event, budget):
        return event.view(budget)

    def choice(self, selected, event):
        return arm_index(selected, len(event.arms))

    def feedback(self, event, chosen) -> float:
        self.matched = chosen == event.logged
        self.revealed = self.matched and event.draw < event.acceptance
        return event.reward if self.revealed else float("nan")

    def record(self, t: int, event, chosen, reward: float) -> None:
        c = self.columns
        c["user"][t], c["chosen"][t], c["logged"][t] = event.user, chosen, event.logged
        c["matched"][t], c["kept"][t] = self.matched, self.revealed
        c["reward"][t], c["logged_reward"][t] = reward, event.reward
        c["propensity"][t], c["acceptance"][t] = event.propensity, event.acceptance
        c["estimate_chosen"][t], c["estimate_logged"][t] = event.estimates[chosen], event.estimates[event.logged]

    def outcome(self, T: int) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
        """The outcome columns, those that must be finite, and the shard's extra metadata."""
        undefined = np.full(T, np.nan)  # no expected rewards on a log (module docstring)
        columns = {
            **{name: self.columns[name] for name in (*INTEGERS, *FLAGS, *FLOATS)},
            "expected_reward": undefined,
            "best_expected_reward": undefined,
            "regret": undefined,
        }
        finite = {name: self.columns[name] for name in ("logged_reward", "propensity", "estimate_chosen")}
        metadata = {
            "logged": {
                "evaluator": self.env.evaluator,
                "rejection_scale": self.env.scale,
                "reward_range": list(self.env.reward_range),
                "logging": logging_of(self.dataset),
                "reward_model": self.dataset.parameters["reward_model"],
            }
        }
        return columns, finite, metadata


def logging_of(dataset: PreparedDataset) -> str:
    """How the log's propensities came about: ``uniform`` (1/K), ``recorded`` or ``assumed uniform`` (a log that had
    none, data/mind_impressions.py)."""
    if dataset.parameters.get("propensities") == "assumed uniform":
        return "assumed uniform"
    return "uniform" if dataset.manifest["counts"]["uniform_log"] else "recorded"
