"""NeuralLinear-TS: every action's normal-inverse-gamma posterior after a rebuild against the closed form computed
from (Φ, y), its draws from each action's marginal, the round-robin start, reproducibility by seed and bad settings."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from banditbench.algos import ALGORITHMS, neurallinear_ts
from banditbench.envs.round import Budget, Round
from banditbench.errors import UserError
from banditbench.runner import grid

sys.path.insert(0, str(Path(__file__).parent))
from ties import ROUNDING, assert_same_choice, relative_difference  # noqa: E402

K, W = 3, 4  # arms, and the width of one arm's block
SMALL = {"width": 8, "training_freq": 10, "train_steps": 5, "batch_size": 16}


def policy_of(seed=0, **params):
    seeds = [np.random.SeedSequence(seed)]
    params = {**SMALL, **params}
    return ALGORITHMS["neurallinear-ts"].build_members(n_users=1, n_arms=K, dim=K * W, seeds=seeds, params=[params])


def rounds(n: int, seed: int = 0) -> list[Round]:
    """Arm a's context in block a of a K·W vector; its reward a linear function of it plus noise."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((K, W))
    out = []
    for t in range(n):
        contexts = rng.standard_normal((K, W))
        arms = np.zeros((K, K * W))
        for a in range(K):
            arms[a, a * W : (a + 1) * W] = contexts[a]
        rewards = (contexts * theta).sum(1) + 0.3 * rng.standard_normal(K)
        out.append(Round(t, 0, arms, rewards, rewards, block=W))
    return out


def play(policy, played: list[Round]) -> list[int]:
    chosen = []
    for rnd in played:
        view = rnd.view(Budget())
        arm = policy.select([view], [Budget()])[0]
        policy.update([view], [arm], [float(rnd.rewards[arm])])
        chosen.append(arm)
    return chosen


@pytest.mark.parametrize("chunked", [False, True])
def test_each_actions_posterior_after_a_rebuild_is_the_normal_inverse_gamma_closed_form(chunked, monkeypatch):
    """After the training of round 30 and four samples added since: Λ = ΦᵀΦ + λI, μ = Λ⁻¹Φᵀy, shape a₀ + n/2 and
    rate b₀ + (yᵀy − μᵀΛμ)/2, with Φ the trained network's embeddings of each action's played contexts (computed
    here): the rebuild and the samples added one at a time under the same φ; also when the rebuild embeds the
    stored samples a few rows at a time."""
    if chunked:
        monkeypatch.setattr(neurallinear_ts, "REBUILD_FLOATS", 7 * K * W)  # 7 rows at a time
    policy, played = policy_of(prior_a=3.0, prior_b=2.0, lam=0.5), rounds(34)
    chosen = play(policy, played)
    L, solved, shape, rate = policy.posterior()
    for a in range(K):
        x = torch.tensor(np.array([r.arms[a] for r, c in zip(played, chosen) if c == a]), dtype=torch.float32)
        y = torch.tensor([r.rewards[a] for r, c in zip(played, chosen) if c == a], dtype=torch.float64)
        phi = policy.mlp.embed(policy.theta[0, 0], x).double()
        precision = phi.T @ phi + 0.5 * torch.eye(phi.shape[1], dtype=torch.float64)
        mu = torch.linalg.solve(precision, phi.T @ y)
        torch.testing.assert_close(L[0, a] @ L[0, a].T, precision, rtol=1e-5, atol=1e-5)
        # L⁻¹Φᵀy = Lᵀμ, to the rounding of the float32 embeddings, which differs between CPU kernels
        torch.testing.assert_close(torch.linalg.solve(precision, L[0, a] @ solved[0, a]), mu, rtol=1e-5, atol=1e-5)
        assert float(shape[0, a]) == 3.0 + len(y) / 2
        torch.testing.assert_close(rate[0, a], 2.0 + (y @ y - mu @ precision @ mu) / 2, rtol=1e-5, atol=1e-5)


def test_scores_are_drawn_from_each_actions_marginal_with_the_members_own_draws():
    """score_a = φ_aᵀμ_a + σ̃_a·sqrt(φ_aᵀΛ_a⁻¹φ_a)·z_a, σ̃_a² = rate / Gamma(shape), from the member's generator."""
    policy, played = policy_of(), rounds(25)
    play(policy, played[:24])
    view = played[24].view(Budget())
    rng = np.random.default_rng()
    rng.bit_generator.state = policy.rngs[0].bit_generator.state
    L, solved, shape, rate = policy.posterior()
    phi = policy.mlp.embed(policy.theta[0, 0], torch.tensor(played[24].arms, dtype=torch.float32)).double()
    sigma = np.sqrt(rate[0].numpy() / np.array([rng.standard_gamma(k) for k in shape[0].tolist()]))
    z = rng.standard_normal(K)
    expected = []
    for a in range(K):
        precision = L[0, a] @ L[0, a].T
        mu = torch.linalg.solve(precision, L[0, a] @ solved[0, a])
        spread = (phi[a] @ torch.linalg.solve(precision, phi[a])).sqrt()
        expected.append(float(phi[a] @ mu + sigma[a] * spread * z[a]))
    np.testing.assert_allclose(policy.scores([view])[0].numpy(), expected, rtol=1e-4, atol=1e-5)


def test_every_arm_is_pulled_twice_in_turn_first():
    assert play(policy_of(), rounds(8))[:6] == [0, 1, 2, 0, 1, 2]


def test_same_seed_same_choices_and_another_seed_others():
    played = rounds(60)
    assert play(policy_of(1), played) == play(policy_of(1), played) != play(policy_of(2), played)


@pytest.mark.parametrize("param,value", [("prior_a", "0"), ("lam", "-1"), ("training_freq", "0")])
def test_bad_hyper_parameters_are_refused_in_one_line(param, value):
    with pytest.raises(UserError) as error:
        grid.resolve({"neurallinear-ts": {param: [value]}}, ["neurallinear-ts"])
    assert "\n" not in str(error.value) and param in str(error.value)


def pool_rounds(n: int, seed: int = 0) -> list[Round]:
    """Item pools: K fresh items a round as dense vectors, the reward one linear function of an item's vector."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(W)
    out = []
    for t in range(n):
        items = rng.standard_normal((K, W))
        rewards = items @ theta + 0.3 * rng.standard_normal(K)
        out.append(Round(t, 0, items, rewards, rewards))
    return out


def pool_policy(seeds=(0,), params=None):
    params = params or [{}] * len(seeds)
    params = [{**SMALL, "posterior": "shared", **p} for p in params]
    seeds = [np.random.SeedSequence(s) for s in seeds]
    return ALGORITHMS["neurallinear-ts"].build_members(n_users=1, n_arms=K, dim=W, seeds=seeds, params=params)


def test_the_shared_posterior_after_a_rebuild_is_the_closed_form_over_every_played_arm():
    """One Λ = ΦᵀΦ + λI, μ = Λ⁻¹Φᵀy, shape a₀ + n/2 and rate b₀ + (yᵀy − μᵀΛμ)/2 over all n = 34 samples (30 at the
    last training's rebuild, four added since), whichever arm position each was played at."""
    policy, played = pool_policy(params=[{"prior_a": 3.0, "prior_b": 2.0, "lam": 0.5}]), pool_rounds(34)
    chosen = play(policy, played)
    assert len(set(chosen)) == K  # samples from every position, all in the one posterior
    L, solved, shape, rate = policy.posterior()
    assert L.shape[1] == 1
    x = torch.tensor(np.array([r.arms[c] for r, c in zip(played, chosen)]), dtype=torch.float32)
    y = torch.tensor([r.rewards[c] for r, c in zip(played, chosen)], dtype=torch.float64)
    phi = policy.mlp.embed(policy.theta[0, 0], x).double()
    precision = phi.T @ phi + 0.5 * torch.eye(phi.shape[1], dtype=torch.float64)
    mu = torch.linalg.solve(precision, phi.T @ y)
    torch.testing.assert_close(L[0, 0] @ L[0, 0].T, precision, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.linalg.solve(precision, L[0, 0] @ solved[0, 0]), mu, rtol=1e-5, atol=1e-5)
    assert float(shape[0, 0]) == 3.0 + 34 / 2
    torch.testing.assert_close(rate[0, 0], 2.0 + (y @ y - mu @ precision @ mu) / 2, rtol=1e-5, atol=1e-5)


def test_shared_scores_are_one_draw_of_beta_from_the_members_own_generator():
    """score_a = φ_aᵀβ̃ for every arm with one β̃ = μ + σ̃·L⁻ᵀz, σ̃² = rate / Gamma(shape), z ~ N(0, I)."""
    policy, played = pool_policy(), pool_rounds(25)
    play(policy, played[:24])
    rng = np.random.default_rng()
    rng.bit_generator.state = policy.rngs[0].bit_generator.state
    L, solved, shape, rate = policy.posterior()
    sigma = np.sqrt(float(rate[0, 0]) / rng.standard_gamma(float(shape[0, 0])))
    z = torch.from_numpy(rng.standard_normal(L.shape[-1]))
    mu = torch.linalg.solve(L[0, 0] @ L[0, 0].T, L[0, 0] @ solved[0, 0])
    beta = mu + sigma * torch.linalg.solve(L[0, 0].T, z)
    phi = policy.mlp.embed(policy.theta[0, 0], torch.tensor(played[24].arms, dtype=torch.float32)).double()
    scores = policy.scores([played[24].view(Budget())])[0]
    torch.testing.assert_close(scores, phi @ beta, rtol=1e-4, atol=1e-5)
    # a draw with covariance σ̃²Λ instead of σ̃²Λ⁻¹ (noise L·z) is told apart
    assert not torch.allclose(scores, phi @ (mu + sigma * L[0, 0] @ z), rtol=1e-4, atol=1e-5)


def draw_again(policy, draw):
    """``draw()``'s posterior draw, with the policy's generators put back where they were: its next draw is the same."""
    states = [rng.bit_generator.state for rng in policy.rngs]
    scores = draw()
    for rng, state in zip(policy.rngs, states):
        rng.bit_generator.state = state
    return scores


def test_a_shared_posterior_group_scores_as_its_members_alone_and_by_seed():
    """Two members with different priors, fed the group's choices: every round's scores equal those of each member
    alone up to the rounding of batched products (tests/ties.py), so do its choices but where a near tie may break
    the other way, and a member's choices repeat by seed and differ across seeds."""
    params = [{"prior_a": 2.0, "lam": 0.5}, {"prior_b": 3.0}]
    group = pool_policy((4, 5), params)
    alone = [pool_policy((4,), params[:1]), pool_policy((5,), params[1:])]
    for rnd, other in zip(pool_rounds(40), pool_rounds(40, seed=1)):
        views = [rnd.view(Budget()), other.view(Budget())]
        scores = draw_again(group, lambda: group.scores(views))  # the draw ``select`` then takes
        chosen = group.select(views, [Budget()] * 2)
        for m, policy in enumerate(alone):
            alone_scores = draw_again(policy, lambda: policy.scores([views[m]])[0])
            assert relative_difference(alone_scores, scores[m]) <= ROUNDING
            assert_same_choice(policy.select([views[m]], [Budget()])[0], chosen[m], scores[m])
            policy.update([views[m]], [chosen[m]], [float((rnd, other)[m].rewards[chosen[m]])])
        group.update(views, chosen, [float(r.rewards[c]) for r, c in zip((rnd, other), chosen)])
    played = pool_rounds(60)
    assert play(pool_policy((1,)), played) == play(pool_policy((1,)), played) != play(pool_policy((2,)), played)
