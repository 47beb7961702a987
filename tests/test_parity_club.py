"""CLUB's edge test against the authors' code (Gentile, Li & Zappella 2014, Algorithm 1; Ban's club.py)."""

import numpy as np

from banditbench.algos import ALGORITHMS
from banditbench.envs import Budget
from banditbench.envs.round import Round


def serve_user_zero(params: dict, rounds: int = 60):
    """User 0 always gets reward 1 on the arm e1; users 1 and 2 are never served."""
    policy = ALGORITHMS["club"].build(n_users=3, n_arms=2, dim=2, seed=np.random.SeedSequence(0), params=params)
    arms = 0.5 * np.eye(2)  # θ_0 → 2·e1: farther from θ_j = 0 than α₂(CB_0 + CB_j) ≈ 1.3
    for t in range(rounds):
        view = Round(t, 0, arms, np.array([1.0, 0.0]), np.array([1.0, 0.0]), None).view(Budget())
        policy.update([view], [0], [1.0])  # a group of one
    return policy


def test_the_paper_cuts_edges_to_users_without_data():
    """‖θ_0 − θ_j‖ ≈ 2 > α₂(CB_0 + CB_j) ≈ 1.3, with θ_j = 0 and CB_j = α₂ for a user with no data."""
    policy = serve_user_zero({})
    assert not policy.graph[0, 0, 1] and not policy.graph[0, 0, 2]
    assert policy.label[0, 0] != policy.label[0, 1]


def test_served_pairs_only_keeps_them_as_the_authors_code_does():
    policy = serve_user_zero({"served_pairs_only": True})
    assert policy.graph[0, 0, 1] and policy.graph[0, 0, 2]
    assert len(set(policy.label[0].tolist())) == 1  # never-served users bridge everyone: one cluster
