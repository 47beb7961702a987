"""NeuralLinear-TS: every action's normal-inverse-gamma posterior after a rebuild against the closed form computed
from (Φ, y), its draws from each action's marginal, the round-robin start, reproducibility by seed and bad settings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditbench.algos import ALGORITHMS
from banditbench.envs.round import Budget, Round
from banditbench.errors import UserError
from banditbench.runner import grid

K, W = 3, 4  # arms, and the width of one arm's block
SMALL = {"width": 8, "train_every": 10, "train_steps": 5, "batch_size": 16}


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


def test_each_actions_posterior_after_a_rebuild_is_the_normal_inverse_gamma_closed_form():
    """After the training of round 30: Λ = ΦᵀΦ + λI, μ = Λ⁻¹Φᵀy, shape a₀ + n/2 and rate b₀ + (yᵀy − μᵀΛμ)/2, with
    Φ the trained network's embeddings of each action's played contexts (dense input, computed here)."""
    policy, played = policy_of(prior_a=3.0, prior_b=2.0, lam=0.5), rounds(30)
    chosen = play(policy, played)
    L, solved, shape, rate = policy.posterior()
    for a in range(K):
        x = torch.tensor(np.array([r.arms[a] for r, c in zip(played, chosen) if c == a]), dtype=torch.float32)
        y = torch.tensor([r.rewards[a] for r, c in zip(played, chosen) if c == a], dtype=torch.float64)
        phi = policy.mlp.embed(policy.theta[0], x).double()
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
    phi = policy.mlp.embed(policy.theta[0], torch.tensor(played[24].arms, dtype=torch.float32)).double()
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


@pytest.mark.parametrize("param,value", [("prior_a", "0"), ("lam", "-1"), ("train_every", "0")])
def test_bad_hyper_parameters_are_refused_in_one_line(param, value):
    with pytest.raises(UserError) as error:
        grid.resolve({"neurallinear-ts": {param: [value]}}, ["neurallinear-ts"])
    assert "\n" not in str(error.value) and param in str(error.value)
