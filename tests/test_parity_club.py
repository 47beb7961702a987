"""CLUB's edge test against the authors' code (Gentile, Li & Zappella 2014, Algorithm 1; Ban's club.py)."""

import numpy as np
import pytest

from banditbench.algos import ALGORITHMS
from banditbench.algos.ridge import club_confidence
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


def served_on_e1(params: dict, rounds: int = 20):
    """User 0 has pulled e1 ``rounds`` times with reward 1; e2 is unexplored."""
    policy = ALGORITHMS["club"].build(n_users=1, n_arms=2, dim=2, seed=np.random.SeedSequence(0), params=params)
    arms = np.eye(2)
    for t in range(rounds):
        view = Round(t, 0, arms, np.array([1.0, 0.0]), np.array([1.0, 0.0]), None).view(Budget())
        policy.update([view], [0], [1.0])  # a group of one
    return policy, Round(rounds, 0, arms, np.zeros(2), np.zeros(2), None).view(Budget())


@pytest.mark.parametrize("alpha,explores", [(1.0, True), (0.1, False), (0.0, False)])
def test_their_index_keeps_our_exploration_scale(alpha, explores):
    """xᵀθ + α·β(N, t)·xᵀM⁻¹x: at t = 20, θ ≈ 0.95 e1, β ≈ 5.2, so e2's bonus 5.2α beats e1's 0.95 + 0.25α only for
    α near 1 (α = 1 is their code). The exploration scale is never silently dropped."""
    policy, view = served_on_e1({"reference_ucb": True, "alpha": alpha})
    assert policy.select([view], [Budget()]) == [1 if explores else 0]


def test_cofibas_code_threshold_adds_the_two_users_own_counts():
    """Their threshold α₂·4√d·(F(T_i) + F(T_ℓ)) reads each user's own count: user 1 served once on e2 (w₁ = 0), user
    0 rewarded on e1 n times (w₀ = n/(1 + n)·e1); at α₂ = 0.1 their edge is cut at the first n where
    n/(1 + n) > 0.1·4√2·(F(n) + F(1)), which 2·F(1) alone never allows (0.1·4√2·2F(1) > 1)."""
    F = club_confidence(np.arange(20))
    threshold = 0.1 * 4 * np.sqrt(2) * (F + F[1])
    first = next(n for n in range(1, 20) if n / (1 + n) > threshold[n])
    assert 0.1 * 4 * np.sqrt(2) * 2 * F[1] > 1 and first < 15
    policy = ALGORITHMS["cofiba"].build(
        n_users=2, n_arms=2, dim=2, seed=np.random.SeedSequence(0), params={"reference_threshold": True, "alpha2": 0.1}
    )
    arms = np.eye(2)
    for t, (user, arm, reward) in enumerate([(1, 1, 0.0)] + [(0, 0, 1.0)] * 15):
        view = Round(t, user, arms, np.zeros(2), np.zeros(2), None).view(Budget())
        policy.select([view], [Budget()])
        policy.update([view], [arm], [reward])
        e1_cluster = policy.item_label[0, int(np.flatnonzero((policy.items[0, :2] == arms[0]).all(axis=1))[0])]
        assert policy.user_graph[0][int(e1_cluster)][0, 1] == (t < first), t


def test_cofibas_code_threshold_keeps_our_edge_scale():
    """With ``reference_threshold`` and their frozen counts the edge test is |Δ·x| > α₂·4√d·2, constant: their 4√d
    at α₂ = 1 keeps every edge, α₂ = 0 cuts the first pair whose estimates differ."""
    kept = {"reference_threshold": True, "frozen_counts": True}
    for alpha2, cut in ((1.0, False), (0.0, True)):
        policy = ALGORITHMS["cofiba"].build(
            n_users=2, n_arms=2, dim=2, seed=np.random.SeedSequence(0), params={**kept, "alpha2": alpha2}
        )
        arms = np.eye(2)
        for t, user in enumerate((0, 1, 0, 1)):
            view = Round(t, user, arms, np.array([1.0, 0.0]), np.array([1.0, 0.0]), None).view(Budget())
            policy.select([view], [Budget()])
            policy.update([view], [user], [float(user == 0)])  # user 0 rewarded on e1, user 1 unrewarded on e2
        assert (len(set(policy.clusters(0).tolist())) == 2) == cut
