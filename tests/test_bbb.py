"""Bayes by Backprop: the closed-form KL, the reparameterised draws' mean and variance (of the weights, and of the
outputs under the local reparameterisation), the authors' prior and point-estimate biases, the greedy choice of a
posterior without spread, and a loss whose expected gradient vanishes at the mean-field optimum of a linear-Gaussian
model, which training approaches. Reproducibility and groups: tests/test_showdown_networks.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from test_thompson import K, W, group_of, play, random_rounds

from banditbench.algos.bbb import gaussian_kl, local_forward
from banditbench.algos.neural import MLP
from banditbench.algos.showdown_network import forward
from banditbench.envs.round import Budget

PROBLEM = {"n_users": 1, "n_arms": K, "dim": K * W}
NO_TRAINING = {"training_freq": 10**6}


def test_the_closed_form_kl_is_torch_distributions_kl_of_the_diagonal_gaussians():
    generator = torch.Generator().manual_seed(0)
    mean, std = torch.randn(3, 7, generator=generator), torch.rand(3, 7, generator=generator) + 0.1
    prior_std = torch.rand(7, generator=generator) + 0.5
    q, p = torch.distributions.Normal(mean, std), torch.distributions.Normal(0.0, prior_std)
    np.testing.assert_allclose(gaussian_kl(mean, std, prior_std), torch.distributions.kl_divergence(q, p).sum(-1), 1e-5)
    assert gaussian_kl(torch.zeros(4), torch.ones(4), torch.ones(4)) == 0  # q = p
    assert (gaussian_kl(mean, std, 2 * prior_std) != gaussian_kl(mean, std, prior_std)).all()  # the prior counts


def policy_with(params: dict, mean: torch.Tensor, rho: torch.Tensor):
    policy = group_of("bbb", [{**NO_TRAINING, **params}], [0], **PROBLEM)
    policy.posterior[0, 0], policy.posterior[0, 1] = mean, rho
    return policy


@pytest.mark.parametrize("sigma", ["softplus", "exp"])
def test_a_drawn_network_has_the_posteriors_mean_and_deviation(sigma):
    p = group_of("bbb", [{}], [0], **PROBLEM).mlp.p
    mean, rho = torch.linspace(-1, 1, p), torch.linspace(-3, 1, p)
    policy = policy_with({"sigma": sigma}, mean, rho)
    draws = torch.cat([policy.sampled_networks() for _ in range(2000)])  # [2000, p]
    std = torch.nn.functional.softplus(rho) if sigma == "softplus" else rho.exp()
    z = ((draws - mean) / std).double()
    assert z.mean(0).abs().max() < 5 / np.sqrt(2000)  # each parameter's mean: 5 standard errors
    assert abs(float(z.var()) - 1) < 5 * np.sqrt(2 / z.numel())  # the pooled variance: 5 standard errors
    assert stats.kstest(z.flatten().numpy()[::50], "norm").pvalue > 1e-3
    other = rho.exp() if sigma == "softplus" else torch.nn.functional.softplus(rho)  # the other transform's σ
    assert abs(float(((draws - mean) / other).double().var()) - 1) > 0.1


def test_under_the_local_reparameterisation_each_output_has_a_weight_draws_mean_and_variance():
    mlp = MLP(5, 1, depth=1, bias=True)  # f(x) = w·x + b
    generator = torch.Generator().manual_seed(1)
    mean, std = torch.randn(mlp.p, generator=generator), torch.rand(mlp.p, generator=generator)
    x = torch.randn(4, 5, generator=generator)
    noise = torch.randn(20000, 4, 1, generator=generator)
    f = local_forward(mlp, mean, std, x.expand(20000, 4, 5), [noise]).double()  # [20000, 4]
    expected_mean = (x @ mean[:5] + mean[5]).double()
    expected_variance = (x.square() @ std[:5].square() + std[5].square() + 1e-6).double()
    standard_error = float(expected_variance.max().sqrt()) / np.sqrt(20000)
    np.testing.assert_allclose(f.mean(0), expected_mean, atol=5 * standard_error)
    np.testing.assert_allclose(f.var(0), expected_variance, rtol=5 * np.sqrt(2 / 20000))


def test_a_fan_in_prior_sets_each_layers_deviation_and_the_authors_code_keeps_biases_at_their_means():
    policy = group_of("bbb", [{"sample_biases": False, "prior": "fan-in"}], [0], **PROBLEM)
    (W1, _), (W2, _) = policy.mlp.layers(policy.prior_std)
    assert (W1 == np.float32(np.sqrt(2 / (K * W)))).all() and (W2 == np.float32(np.sqrt(2 / 50))).all()
    draw = policy.sampled_networks()[0]
    (_, draw_b1), (_, draw_b2) = policy.mlp.layers(draw)
    (mean_W1, mean_b1), (_, mean_b2) = policy.mlp.layers(policy.posterior[0, 0])
    assert torch.equal(draw_b1, mean_b1) and torch.equal(draw_b2, mean_b2)
    assert not torch.equal(policy.mlp.layers(draw)[0][0], mean_W1)  # the weights are drawn
    paper = group_of("bbb", [{}], [0], **PROBLEM)
    assert paper.prior_std.eq(1).all() and not torch.equal(paper.sampled_networks()[0, -1], paper.posterior[0, 0, -1])
    both = group_of("bbb", [{"sample_biases": True, "prior": "fan-in"}], [0], **PROBLEM)
    (_, b1), (_, b2) = both.mlp.layers(both.prior_std)  # drawn biases take their layer's fan-in deviation
    assert (b1 == np.float32(np.sqrt(2 / (K * W)))).all() and (b2 == np.float32(np.sqrt(2 / 50))).all()


def test_without_spread_the_drawn_network_plays_the_mean_networks_greedy_arm():
    rounds = random_rounds(40, seed=5)
    policy = group_of("bbb", [{"init_std": 0.5, "rho_init": -60.0, **NO_TRAINING}], [0], **PROBLEM)
    chosen = play(policy, rounds)
    mean = policy.posterior[:, 0]
    for rnd, arm in list(zip(rounds, chosen))[2 * K :]:
        x = torch.tensor(rnd.arms, dtype=torch.float32)[None]
        assert arm == int(forward(policy.mlp, mean, x).argmax())
    view = rounds[-1].view(Budget())
    assert torch.equal(policy.scores([view]), forward(policy.mlp, mean, torch.tensor(view.arms[None]).float()))
    spread = group_of("bbb", [{"init_std": 0.5, "rho_init": 0.0, **NO_TRAINING}], [0], **PROBLEM)
    x = torch.tensor(view.arms[None]).float()
    assert not torch.allclose(spread.scores([view]), forward(spread.mlp, spread.posterior[:, 0], x), atol=0.1)


def linear_gaussian(correlated: bool, n: int = 20, dim: int = 3, s: float = 1.0):
    """Samples of f(x) = w·x + b plus N(0, s²) noise, and the mean-field optimum of their ELBO under the prior
    N(0, I): the posterior is N(m, Λ⁻¹) with Λ = I + X₁ᵀX₁/s² (X₁ = [X, 1]), and the Gaussian q of diagonal
    covariance closest to it in KL(q ‖ posterior) has μ = m and σ_j² = 1/Λ_jj."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, dim))
    if correlated:  # the mean field's σ is then well below the posterior's marginal deviation
        x[:, 1] += 2 * x[:, 0]
    r = x @ np.array([1.0, -2.0, 0.5]) + 0.3 + s * rng.standard_normal(n)
    x1 = np.c_[x, np.ones(n)]
    precision = np.eye(dim + 1) + x1.T @ x1 / s**2
    return x, r, np.linalg.solve(precision, x1.T @ r / s**2), 1 / np.sqrt(np.diag(precision)), precision


def fitted_linear(x, r, params: dict):
    """A linear BBB (``depth`` 1, the noise of ``linear_gaussian``) holding the samples x, r, untrained."""
    n, dim = x.shape
    params = {"depth": 1, "batch_size": n, "noise_sigma": 1.0, **NO_TRAINING, **params}
    policy = group_of("bbb", [params], [0], n_users=1, n_arms=2, dim=dim)
    policy._build_once(None)  # plain contexts, as a round without a block encoding would build it
    policy.x[0, :n], policy.r[0, :n], policy.included[0, :n] = torch.tensor(x), torch.tensor(r), True
    policy.rounds = n
    return policy


@pytest.mark.parametrize("local_reparam", [False, True])
def test_the_expected_gradient_of_the_loss_vanishes_at_the_mean_field_optimum(local_reparam):
    """The loss on all n samples, its KL divided by n, is the negative ELBO over n: its gradient, averaged over
    draws, is zero at the mean-field optimum, and not where σ is the posterior's marginal deviation."""
    x, r, mean, std, precision = linear_gaussian(correlated=True)
    policy = fitted_linear(x, r, {"local_reparam": local_reparam})
    draws, n = 20000, len(r)
    generator = torch.Generator().manual_seed(0)
    noise = torch.randn((draws, n, 1) if local_reparam else (draws, 4), generator=generator)
    inputs = torch.tensor(x, dtype=torch.float32).expand(draws, -1, -1), torch.tensor(r).float().expand(draws, -1)

    def mean_gradient(std):
        rho = torch.tensor(std).float().expm1().log()  # softplus⁻¹
        leaf = torch.stack([torch.tensor(mean).float(), rho]).expand(draws, -1, -1).clone().requires_grad_(True)
        (gradient,) = torch.autograd.grad(policy.loss(leaf, *inputs, noise).sum(), leaf)
        return gradient.double().mean(0), gradient.double().std(0) / np.sqrt(draws)

    gradient, standard_error = mean_gradient(std)
    assert (gradient.abs() < 5 * standard_error + 1e-4).all(), gradient  # within 5 standard errors (and rounding)
    gradient, standard_error = mean_gradient(np.sqrt(np.diag(np.linalg.inv(precision))))
    assert (gradient[1].abs() > 5 * standard_error[1] + 1e-4).any()  # σ away from the optimum is told apart


def test_the_loss_divides_the_kl_by_the_samples_held_not_by_the_minibatch():
    """On a minibatch of B = 5 of the n = 20 samples held: the misfit's mean over the B, over 2s² (s = 2), plus
    KL(q ‖ p) / n."""
    x, r, *_ = linear_gaussian(correlated=False)
    policy = fitted_linear(x, r, {"batch_size": 5, "noise_sigma": 2.0})
    mean, rho = policy.posterior.unbind(1)
    std = policy.std(rho)
    noise = torch.randn(1, policy.mlp.p, generator=torch.Generator().manual_seed(1))
    x5, r5 = torch.tensor(x[None, :5], dtype=torch.float32), torch.tensor(r[None, :5], dtype=torch.float32)
    misfit = (forward(policy.mlp, mean + std * noise, x5) - r5).square().mean() / (2 * 2.0**2)
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(mean, std), torch.distributions.Normal(0, 1))
    np.testing.assert_allclose(policy.loss(policy.posterior, x5, r5, noise), misfit + kl.sum() / 20, rtol=1e-5)


def test_training_approaches_the_mean_field_optimum_with_one_optimiser_across_trainings():
    x, r, mean, std, _ = linear_gaussian(correlated=False)
    policy = fitted_linear(x, r, {"lr": 0.03, "train_steps": 600})
    policy._train()
    policy.optimiser.lr = 0.003  # a smaller step settles the stochastic iterates near the optimum
    policy._train()
    np.testing.assert_allclose(policy.posterior[0, 0].numpy(), mean, atol=0.08)
    np.testing.assert_allclose(policy.std(policy.posterior[0, 1]).numpy(), std, rtol=0.15)
    assert int(policy.optimiser.t) == 1200  # its step count carried from the first training to the second
