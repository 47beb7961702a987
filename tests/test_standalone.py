"""A registered policy outside any simulation: it learns from the rows it is given, reproducibly, and bad calls
are one line."""

from __future__ import annotations

import numpy as np
import pytest

import banditbench as bb
from banditbench.errors import UserError


def served(name: str, rounds: int = 300, seed: int = 0) -> tuple[list[int], float]:
    """The arms ``name`` chose and its regret on two clusters of users with opposite θ, unit-norm contexts."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=5)
    theta = np.stack([theta, -theta]) / np.linalg.norm(theta)
    policy = bb.policy(name, dim=5, n_users=6, n_arms=8, seed=seed)
    chosen, regret = [], 0.0
    for _ in range(rounds):
        user = int(rng.integers(6))
        arms = rng.normal(size=(8, 5))
        arms /= np.linalg.norm(arms, axis=1, keepdims=True)
        arm = policy.select(user, arms)
        expected = arms @ theta[user % 2]
        policy.update(user, arms, arm, float(expected[arm] + 0.1 * rng.normal()))
        chosen.append(arm)
        regret += expected.max() - expected[arm]
    return chosen, regret


def test_a_standalone_policy_learns_and_random_does_not():
    assert served("club")[1] < served("random")[1] / 3


def test_the_same_seed_gives_the_same_choices():
    assert served("linucb-ind", rounds=50)[0] == served("linucb-ind", rounds=50)[0]


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: bb.policy("oracle", dim=2, n_users=1, n_arms=2), "oracle needs slates, user features"),
        (lambda: bb.policy("clubb", dim=2, n_users=1, n_arms=2), "unknown algorithm 'clubb'; did you mean club"),
        (lambda: bb.policy("club", dim=2, n_users=1, n_arms=2, alhpa=1), "club has no hyper-parameter 'alhpa'"),
        (lambda: bb.policy("club", dim=2, n_users=1, n_arms=2, alpha=-1.0), "club.alpha"),
        (lambda: bb.policy("club", dim=0, n_users=1, n_arms=2), "dim must be a positive integer, got 0"),
        (lambda: bb.policy("club", dim=2, n_users=1, n_arms=2).select(0, np.ones((3, 2))), "arms must be 1 to 2 rows"),
        (lambda: bb.policy("club", dim=2, n_users=1, n_arms=2).select(1, np.ones((2, 2))), "user must be an integer"),
        (lambda: bb.policy("club", dim=2, n_users=1, n_arms=2).update(0, np.ones((2, 2)), 2, 1.0), "chosen must be"),
    ],
)
def test_bad_calls_are_one_line(build, message):
    with pytest.raises(UserError, match=message) as error:
        build()
    assert "\n" not in str(error.value)
