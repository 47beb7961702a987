"""Regret arithmetic on hand-made rounds, through the real runner."""

import numpy as np
import pytest

from banditbench.algos import ALGORITHMS, Policy, register
from banditbench.algos.base import AlgorithmSpec
from banditbench.envs import PROTOCOLS, ProtocolInfo, Round
from banditbench.runner import Unit, run_unit

EXPECTED = np.array([[0.1, 0.5, 0.3], [0.9, 0.2, 0.4], [0.0, 0.0, 1.0], [0.6, 0.6, 0.1]])
REALISED = EXPECTED + np.array([[0.05, -0.1, 0.0], [0.0, 0.1, 0.0], [0.3, 0.0, -0.2], [0.0, 0.0, 0.0]])
SCRIPT = [0, 0, 1, 1]  # chosen arm per round


class HandMadeEnvironment:
    n_users, n_arms, dim = 2, 3, 2

    def __init__(self, dataset, seed):
        pass

    def rounds(self, n_rounds):
        for t in range(n_rounds):
            yield Round(t, t % 2, np.eye(3, 2), REALISED[t], EXPECTED[t], group=t % 2)


class Scripted(Policy):
    def select(self, view, budget):
        view.arms[:2]
        return SCRIPT[view.t]

    def update(self, view, chosen, reward):
        pass


@pytest.fixture
def hand_made(monkeypatch):
    monkeypatch.setitem(PROTOCOLS, "hand-made", ProtocolInfo("hand-made", HandMadeEnvironment, "", ""))
    monkeypatch.setitem(ALGORITHMS, "scripted", AlgorithmSpec("scripted", Scripted, "", ""))


def test_regret_is_best_expected_minus_chosen_expected(hand_made):
    unit = Unit("none", "hand-made", "scripted", {}, 0, 0, rounds=4, budget=None)
    out = run_unit(unit, dataset=None).outcome.to_pydict()
    assert out["regret"] == pytest.approx([0.5 - 0.1, 0.0, 1.0 - 0.0, 0.0])
    assert sum(out["regret"]) == pytest.approx(1.4)
    assert out["reward"] == pytest.approx([0.15, 0.9, 0.0, 0.6])  # realised, noise included
    assert out["best_expected_reward"] == pytest.approx([0.5, 0.9, 1.0, 0.6])
    assert out["user"] == [0, 1, 0, 1] and out["group"] == [0, 1, 0, 1] and out["chosen"] == SCRIPT
    assert out["budget_spent"] == [2, 2, 2, 2]


def test_a_tie_for_the_best_arm_costs_nothing(hand_made):
    unit = Unit("none", "hand-made", "scripted", {}, 0, 0, rounds=4, budget=None)
    assert run_unit(unit, dataset=None).outcome.to_pydict()["regret"][3] == 0.0


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        register("random", Scripted, paper="", description="")
