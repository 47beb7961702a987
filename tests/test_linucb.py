import sys
from pathlib import Path

import numpy as np
import pytest

from banditbench.algos.ridge import RidgeStats
from banditbench.runner import Unit, run_unit

sys.path.insert(0, str(Path(__file__).parent))
from one_unit import choose, learn  # noqa: E402


@pytest.mark.parametrize("pairs", [1, 2])  # one (member, learner) pair a call takes in-place updates of its views
def test_sherman_morrison_inverse_equals_direct_inverse(pairs):
    rng = np.random.default_rng(1)
    d, ridges = 6, [0.5, 2.0]
    stats = RidgeStats(members=2, n_learners=3, dim=d, ridge=ridges)
    X = rng.standard_normal((200, d))
    r = rng.standard_normal(200)
    members, learners = np.array([1, 0])[:pairs], np.array([1, 2])[:pairs]
    for x, reward in zip(X, r):
        stats.update(members, learners, np.tile(x, (pairs, 1)), np.full(pairs, reward))
    for m, u in zip(members, learners):
        A = ridges[m] * np.eye(d) + X.T @ X
        np.testing.assert_allclose(stats.A_inv[m, u], np.linalg.inv(A), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(stats.theta[m, u], np.linalg.solve(A, X.T @ r), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(stats.logdet[m, u], np.linalg.slogdet(A)[1], rtol=1e-12)
    np.testing.assert_array_equal(stats.A_inv[1, 0], np.eye(d) / 2.0)  # other learners untouched
    assert stats.count.tolist() == [[0, 0, 200 * (pairs > 1)], [0, 200, 0]]


def test_quadratic_forms_are_the_squared_mahalanobis_norms():
    rng = np.random.default_rng(2)
    stats = RidgeStats(members=2, n_learners=1, dim=4)
    for x in rng.standard_normal((30, 4)):
        stats.update(np.array([1]), np.array([0]), x[None], np.ones(1))
    arms = rng.standard_normal((7, 4))
    direct = [a @ stats.A_inv[1, 0] @ a for a in arms]
    np.testing.assert_allclose(stats.quadratic_forms_of(1, 0, arms), direct)
    np.testing.assert_allclose(stats.quadratic_forms_of_each(np.array([1]), arms[:1]), [direct[:1]])


def cumulative_regret(algorithm, dataset, rounds, seed_index=0, **params):
    unit = Unit("synthetic", "linear", algorithm, params, 0, seed_index, rounds, None)
    return np.cumsum(run_unit(unit, dataset).outcome["regret"].to_numpy())


def test_linucb_ind_regret_is_sublinear_and_far_below_random(dataset):
    linucb = cumulative_regret("linucb-ind", dataset, 6000, alpha=0.5)
    random = cumulative_regret("random", dataset, 6000)
    assert linucb[-1] < 0.25 * random[-1]
    first, last = linucb[1999], linucb[-1] - linucb[3999]
    assert last < 0.5 * first  # the last third adds far less regret than the first third


def test_one_model_per_user_beats_one_shared_model_on_clustered_users(dataset):
    one = cumulative_regret("linucb-one", dataset, 4000)
    ind = cumulative_regret("linucb-ind", dataset, 4000)
    assert ind[-1] < one[-1]


def test_oracle_regret_is_exactly_zero(dataset):
    assert cumulative_regret("oracle", dataset, 2000)[-1] == 0.0


@pytest.mark.parametrize("algorithm", ["linucb-ind", "linucb-one"])
def test_linucb_scores_every_arm_once(dataset, algorithm):
    unit = Unit("synthetic", "linear", algorithm, {}, 0, 0, 50, None)
    assert set(run_unit(unit, dataset).outcome["budget_spent"].to_pylist()) == {10}


def test_linucb_statistics_built_from_its_selections_equal_the_direct_ridge_solution():
    """update reuses select's A⁻¹x, xᵀA⁻¹x and xᵀθ of the chosen arm: the result must still be the ridge solution."""
    from banditbench.algos import ALGORITHMS
    from banditbench.envs.round import Budget, Round

    rng = np.random.default_rng(4)
    d, ridge = 5, 0.7
    policy = ALGORITHMS["linucb-ind"].build(
        n_users=2, n_arms=6, dim=d, seed=np.random.SeedSequence(0), params={"ridge": ridge, "alpha": 0.3}
    )
    X, r = [], []
    for t in range(300):
        arms = rng.standard_normal((6, d))
        budget = Budget(None)
        view = Round(t, 1, arms, np.zeros(6), np.zeros(6)).view(budget)
        chosen = choose(policy, view, budget)
        budget.close()
        reward = float(arms[chosen] @ np.arange(1, d + 1) + rng.standard_normal())
        learn(policy, view, chosen, reward)
        X.append(arms[chosen]), r.append(reward)
    X, r = np.array(X), np.array(r)
    A = ridge * np.eye(d) + X.T @ X
    np.testing.assert_allclose(policy.stats.A_inv[0, 1], np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(policy.stats.theta[0, 1], np.linalg.solve(A, X.T @ r), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(policy.stats.theta[0, 0], np.zeros(d))  # user 0 never served
