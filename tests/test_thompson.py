"""LinTS and Bayesian linear regression: their posteriors against the closed forms, their draws against the
posterior's distribution, reproducibility by seed, and a group of members against its members alone."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from banditbench.algos import ALGORITHMS
from banditbench.algos.ridge import RidgeStats, potter_update
from banditbench.algos.thompson import MemberStream, standard_gammas
from banditbench.envs.round import Budget, Round

K, W = 3, 4  # arms, and the context width of one arm's block


def group_of(name: str, params: list[dict], seeds: list[int], **problem):
    seeds = [np.random.SeedSequence(s) for s in seeds]
    return ALGORITHMS[name].build_members(**problem, seeds=seeds, params=params)


def block_round(t: int, contexts: np.ndarray, rewards: np.ndarray, user: int = 0) -> Round:
    """Arm a's context is ``contexts[a]`` in block a of a K·W vector (the rewards-table protocol's encoding)."""
    arms = np.zeros((K, K * W))
    for a in range(K):
        arms[a, a * W : (a + 1) * W] = contexts[a]
    return Round(t, user, arms, rewards, rewards, block=W)


def dense_round(t: int, contexts: np.ndarray, rewards: np.ndarray, user: int = 0) -> Round:
    return Round(t, user, contexts, rewards, rewards)


def play(policy, rounds: list[Round]) -> list[int]:
    chosen = []
    for rnd in rounds:
        view = rnd.view(Budget())
        arm = policy.select([view], [Budget()])[0]
        policy.update([view], [arm], [float(rnd.rewards[arm])])
        chosen.append(arm)
    return chosen


def random_rounds(n: int, make=block_round, seed: int = 0, dim: int = W) -> list[Round]:
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((K, dim))
    rounds = []
    for t in range(n):
        contexts = rng.standard_normal((K, dim))
        rounds.append(make(t, contexts, (contexts * theta).sum(1) + 0.3 * rng.standard_normal(K)))
    return rounds


@pytest.mark.parametrize("name", ["lints-one", "blr-one"])
def test_each_arms_posterior_is_the_closed_form_of_its_samples(name):
    """A = λI + XᵀX, θ̂ = A⁻¹Xᵀy per arm, and for BLR S = yᵀy − θ̂ᵀAθ̂ (the inverse-gamma rate's sum of squares), its
    X ending in the intercept's column of ones."""
    policy = group_of(name, [{"ridge": 0.5}], [0], n_users=1, n_arms=K, dim=K * W)
    rounds = random_rounds(60)
    chosen = play(policy, rounds)
    for a in range(K):
        X = np.array([rnd.arms[a, a * W : (a + 1) * W] for rnd, c in zip(rounds, chosen) if c == a])
        y = np.array([rnd.rewards[a] for rnd, c in zip(rounds, chosen) if c == a])
        if policy.intercept:
            X = np.hstack([X, np.ones((len(X), 1))])
        A = 0.5 * np.eye(X.shape[1]) + X.T @ X
        theta = np.linalg.solve(A, X.T @ y)
        np.testing.assert_allclose(policy.stats.A_inv[0, a], np.linalg.inv(A), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(policy.stats.theta[0, a], theta, rtol=1e-9, atol=1e-12)
        assert policy.stats.count[0, a] == len(y)
        assert X.shape[1] == W + (name == "blr-one")
        if name == "blr-one":
            np.testing.assert_allclose(policy.residual[0, a], y @ y - theta @ A @ theta, rtol=1e-9)


def test_blr_starts_with_the_showdowns_round_robin_pulls():
    policy = group_of("blr-one", [{"initial_pulls": 2}], [0], n_users=1, n_arms=K, dim=K * W)
    assert play(policy, random_rounds(2 * K))[: 2 * K] == [0, 1, 2, 0, 1, 2]


def fitted(name: str, params: dict, make=block_round, dim: int = K * W, width: int = W):
    policy = group_of(name, [params], [0], n_users=1, n_arms=K, dim=dim)
    play(policy, random_rounds(40, make, dim=width))
    return policy


def test_blr_draws_sigma_squared_from_its_inverse_gamma_posterior():
    policy = fitted("blr-one", {"prior_a": 3.0, "prior_b": 2.0})
    learners = np.arange(K)[None]
    draws = np.array([policy.scales(learners)[0] ** 2 for _ in range(3000)])
    for a in range(K):
        shape = 3.0 + 0.5 * policy.stats.count[0, a]
        rate = 2.0 + 0.5 * policy.residual[0, a]
        assert stats.kstest(draws[:, a], stats.invgamma(shape, scale=rate).cdf).pvalue > 1e-3
        # a wrong rate (the prior's alone) is told apart
        assert stats.kstest(draws[:, a], stats.invgamma(shape, scale=2.0).cdf).pvalue < 1e-3


@pytest.mark.parametrize("shape", [0.4, 1.0, 6.5, 300.0])
def test_the_batched_gamma_draws_are_gamma_distributed_at_every_shape(shape):
    """Marsaglia & Tsang's candidates from the members' variates, numpy's own draw where a candidate is rejected or
    the shape is below 1 (0.4: every draw; 1.0: about 5 % of them)."""
    rngs = [np.random.default_rng(s) for s in range(3)]
    streams = MemberStream("standard_normal", 3), MemberStream("standard_exponential", 3)
    # one draw per member and call, so that a call whose candidates are all accepted is common
    draws = np.concatenate([standard_gammas(np.full((3, 1), shape), *streams, rngs).ravel() for _ in range(2000)])
    assert stats.kstest(draws, stats.gamma(shape).cdf).pvalue > 1e-3
    assert stats.kstest(draws, stats.gamma(shape * 1.1).cdf).pvalue < 1e-3


def test_a_member_stream_hands_out_its_generators_variates_in_order_none_skipped():
    stream, rng = MemberStream("standard_normal", 2), [np.random.default_rng(5), np.random.default_rng(6)]
    sizes = [3, MemberStream.CHUNK - 3, 5, 2 * MemberStream.CHUNK + 1, 7]  # an exact fit, then more than a chunk
    taken = np.concatenate([stream.take(rng, n) for n in sizes], axis=1)
    expected = [np.random.default_rng(s).standard_normal(sum(sizes)) for s in (5, 6)]
    np.testing.assert_array_equal(taken, expected)


def test_lints_scores_are_drawn_from_each_arms_posterior_marginal():
    policy = fitted("lints-one", {"v": 0.7})
    rnd = random_rounds(1, seed=5)[0]
    draws = np.array([policy.scores([rnd.view(Budget())])[0] for _ in range(3000)])
    for a in range(K):
        x = rnd.arms[a, a * W : (a + 1) * W]
        mean, A_inv = x @ policy.stats.theta[0, a], policy.stats.A_inv[0, a]
        sd = 0.7 * np.sqrt(x @ A_inv @ x)
        assert stats.kstest(draws[:, a], stats.norm(mean, sd).cdf).pvalue > 1e-3
        assert stats.kstest(draws[:, a], stats.norm(mean, 2 * sd).cdf).pvalue < 1e-3


@pytest.mark.parametrize("name", ["lints-one", "blr-one"])
def test_one_shared_models_posterior_is_the_closed_form_of_its_samples(name):
    """Without blocks one model learns from every played arm, in square-root form: R Rᵀ = (λI + XᵀX)⁻¹, θ̂ = A⁻¹Xᵀy,
    and BLR's S = yᵀy − θ̂ᵀAθ̂ (its update computes the chosen arm's terms alone: the scores draw θ̃ once)."""
    policy = group_of(name, [{"ridge": 0.5}], [0], n_users=1, n_arms=K, dim=W)
    rounds = random_rounds(60, dense_round)
    chosen = play(policy, rounds)
    X = np.array([rnd.arms[c] for rnd, c in zip(rounds, chosen)])
    y = np.array([rnd.rewards[c] for rnd, c in zip(rounds, chosen)])
    if policy.intercept:
        X = np.hstack([X, np.ones((len(X), 1))])
    A = 0.5 * np.eye(X.shape[1]) + X.T @ X
    R, theta = policy.stats.root[0, 0], np.linalg.solve(A, X.T @ y)
    np.testing.assert_allclose(R @ R.T, np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(policy.stats.theta[0, 0], theta, rtol=1e-9, atol=1e-12)
    if name == "blr-one":
        np.testing.assert_allclose(policy.residual[0, 0], y @ y - theta @ A @ theta, rtol=1e-9)


def test_lints_on_shared_contexts_draws_one_theta_for_every_arm():
    """Without blocks the arms' scores are xᵀθ̃ of one draw θ̃ ~ N(θ̂, v²A⁻¹): covariance v² X A⁻¹ Xᵀ."""
    policy = fitted("lints-one", {"v": 0.5}, make=dense_round, dim=W, width=W)
    rnd = random_rounds(1, dense_round, seed=7)[0]
    draws = np.array([policy.scores([rnd.view(Budget())])[0] for _ in range(4000)])
    R, theta = policy.stats.root[0, 0], policy.stats.theta[0, 0]
    X, A_inv = rnd.arms, R @ R.T
    np.testing.assert_allclose(draws.mean(0), X @ theta, atol=4 * 0.5 * np.sqrt(np.diag(X @ A_inv @ X.T)).max() / 60)
    np.testing.assert_allclose(np.cov(draws.T), 0.25 * X @ A_inv @ X.T, rtol=0.1, atol=1e-3)
    # exactly: with z = e_i the scores move by v·X R e_i, so the draw's map from z is read off column by column, and
    # v² (X R)(X R)ᵀ must be v² X A⁻¹ Xᵀ (a draw through Rᵀ instead has X RᵀR Xᵀ, within the sampling check's rtol)
    units = iter(np.eye(W))
    policy.normals.take = lambda rngs, n: next(units)[None, :n]
    moved = np.array([policy.scores([rnd.view(Budget())])[0] - X @ theta for _ in range(W)]).T
    np.testing.assert_allclose(moved @ moved.T, 0.25 * X @ A_inv @ X.T, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("pulls", [1, 2])
def test_blr_plays_every_arm_in_turn_for_initial_pulls_rounds_each_and_then_its_draws(pulls, monkeypatch):
    policy = group_of("blr-one", [{"initial_pulls": pulls}], [0], n_users=1, n_arms=K, dim=K * W)
    rounds = random_rounds(pulls * K + 1)
    assert play(policy, rounds[:-1]) == list(range(K)) * pulls
    favoured = K - 1  # the round robin would play arm 0 next
    monkeypatch.setattr(policy, "scores", lambda views: np.eye(K)[None, favoured])
    assert play(policy, rounds[-1:]) == [favoured]


@pytest.mark.parametrize("name", ["lints-one", "blr-one", "lints-ind"])
def test_draws_are_reproducible_by_seed_and_differ_between_seeds(name):
    def choices(seed):
        return play(group_of(name, [{}], [seed], n_users=2, n_arms=K, dim=K * W), random_rounds(80))

    assert choices(3) == choices(3)
    assert choices(3) != choices(4)


@pytest.mark.parametrize("make", [block_round, dense_round])
@pytest.mark.parametrize(
    "name,params",
    [
        ("lints-one", [{"v": 0.2}, {"v": 1.0}, {"v": 1.0, "ridge": 3.0}]),
        ("lints-ind", [{"v": 0.5}, {"v": 0.5}, {"v": 2.0}]),
        ("blr-one", [{"prior_a": 2.0}, {"prior_b": 1.0}, {"ridge": 1.0}]),
        ("blr-ind", [{}, {}, {"prior_a": 3.0}]),
    ],
)
def test_a_group_draws_and_learns_bit_for_bit_as_its_members_alone(name, params, make, monkeypatch):
    """Variates refilled every few rounds (chunks of 7), so that refills fall mid-round in the group and alone."""
    monkeypatch.setattr(MemberStream, "CHUNK", 7)
    seeds, users = [0, 1, 2], 3
    dim = K * W if make is block_round else W
    problem = {"n_users": users, "n_arms": K, "dim": dim}
    group = group_of(name, params, seeds, **problem)
    alone = [group_of(name, [p], [s], **problem) for p, s in zip(params, seeds)]
    streams = [random_rounds(120, make, seed=10 + m, dim=W) for m in range(len(params))]
    users_of = np.random.default_rng(3).integers(users, size=120)
    for t in range(120):
        rounds = [stream[t] for stream in streams]
        for rnd in rounds:
            rnd.user = int(users_of[t])
        views = [rnd.view(Budget()) for rnd in rounds]
        chosen = group.select(views, [Budget()] * len(params))
        group.update(views, chosen, [float(rnd.rewards[arm]) for rnd, arm in zip(rounds, chosen)])
        for policy, view, rnd, arm in zip(alone, views, rounds, chosen):
            assert policy.select([view], [Budget()]) == [arm]
            policy.update([view], [arm], [float(rnd.rewards[arm])])
    inverse = "A_inv" if group.stats.root is None else "root"  # A⁻¹, or its square root R on shared contexts
    for m, policy in enumerate(alone):
        assert np.array_equal(getattr(group.stats, inverse)[m], getattr(policy.stats, inverse)[0])
        assert np.array_equal(group.stats.theta[m], policy.stats.theta[0])


def test_potters_update_keeps_a_square_root_of_each_learners_a_inverse():
    """One pair at a time and three at once, then one context 2 000 times more on one learner, until its A⁻¹'s
    smallest eigenvalue is under 1e-5 of its largest: R Rᵀ stays (λI + Σ x xᵀ)⁻¹, and a reset learner starts again
    from I / √λ."""
    ridge, d = np.array([1.0, 0.25]), 4
    stats = RidgeStats(2, 3, d, ridge, raw_sums=False, logdet=False, root=True)
    A = ridge[:, None, None, None] * np.broadcast_to(np.eye(d), (2, 3, d, d))
    rng = np.random.default_rng(0)
    for t in range(2100):
        pairs = [(0, 0)] if t >= 100 else [(t % 2, t % 3)] if t % 4 else [(0, 0), (1, 2), (0, 1)]
        members, learners = (np.array(column) for column in zip(*pairs))
        x = np.array([[30.0, 60.0, 0.0, -30.0]]) if t >= 100 else rng.normal(size=(len(pairs), d))
        stats.update(members, learners, x, np.zeros(len(pairs)))
        A[members, learners] += x[:, :, None] * x[:, None, :]
    eigenvalues = np.linalg.eigvalsh(A[0, 0])
    assert eigenvalues[0] / eigenvalues[-1] < 1e-5
    R = stats.root
    np.testing.assert_allclose(R @ np.swapaxes(R, 2, 3), np.linalg.inv(A), rtol=1e-6, atol=1e-12)
    stats.reset(1, 2)
    np.testing.assert_allclose(stats.root[1, 2], np.eye(d) / np.sqrt(0.25), atol=1e-15)


def test_a_wrong_square_root_update_fails_that_check():
    """The control: R ← R − (R u) uᵀ / (1 + q), Sherman–Morrison's coefficient on the root, leaves R Rᵀ off A⁻¹."""
    d = 3
    R, x = np.eye(d), np.array([1.0, 0.5, -2.0])
    u = R.T @ x
    wrong = R - np.outer(R @ u, u) / (1.0 + u @ u)
    assert not np.allclose(wrong @ wrong.T, np.linalg.inv(np.eye(d) + np.outer(x, x)), rtol=1e-7)
    potter_update(R[None], np.zeros((1, d)), x[None], np.zeros(1))
    np.testing.assert_allclose(R @ R.T, np.linalg.inv(np.eye(d) + np.outer(x, x)), rtol=1e-12)
