"""NeuralTS: its draws against N(f, ν²λ gᵀU⁻¹g/m) computed directly from autograd's gradients, diagonal against full
U, reproducibility by seed, and its hyper-parameters refused where they enter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditbench.algos import ALGORITHMS
from banditbench.envs.round import Budget, Round
from banditbench.errors import UserError
from banditbench.runner import grid

K, D = 4, 5  # arms and context width


def neuralts(seed=0, **params):
    params = {"width": 8, "nu": 0.7, "lam": 0.5, "gradients": "batched", **params}
    seeds = [np.random.SeedSequence(seed)]
    return ALGORITHMS["neuralts-one"].build_members(n_users=1, n_arms=K, dim=D, seeds=seeds, params=[params])


def views(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    rounds = [Round(t, 0, rng.standard_normal((K, D)), rng.standard_normal(K), np.zeros(K)) for t in range(n)]
    return [rnd.view(Budget()) for rnd in rounds]


def gradients(policy, view) -> tuple[torch.Tensor, torch.Tensor]:
    """f(x_k; θ) and ∇_θ f(x_k; θ) of every arm, by autograd on the policy's network."""
    theta = policy.theta[0, 0].detach().clone().requires_grad_(True)
    x = torch.tensor(np.asarray(view.arms), dtype=torch.float32)
    f = policy.mlp.forward(theta, x)
    rows = [torch.autograd.grad(f[k], theta, retain_graph=True)[0] for k in range(K)]
    return f.detach().double(), torch.stack(rows).double()


@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_scores_are_the_mean_plus_nu_sqrt_lambda_times_the_gradient_width_times_the_members_normals(covariance):
    """Before the first training (round 10) θ = θ_0, so U = λI + Σ g_t g_tᵀ/m is known from the played arms' gradients;
    the score of arm k is f_k + ν·sqrt(λ g_kᵀU⁻¹g_k/m)·z_k, z the member generator's next K normals."""
    policy, lam, nu = neuralts(covariance=covariance), 0.5, 0.7
    m = policy.mlp.width
    U = lam * torch.eye(policy.mlp.p, dtype=torch.float64)
    for view in views(6):
        f, G = gradients(policy, view)
        state = policy.generators[0].get_state()
        z = torch.randn(K, generator=policy.generators[0], dtype=torch.float64)
        policy.generators[0].set_state(state)
        U_used = U if covariance == "full" else torch.diag(torch.diagonal(U))
        variance = lam * ((G @ torch.linalg.inv(U_used)) * G).sum(1) / m
        expected = f + nu * variance.sqrt() * z
        torch.testing.assert_close(policy.scores([view])[0], expected, rtol=1e-5, atol=1e-6)
        policy.generators[0].set_state(state)
        arm = policy.select([view], [Budget()])[0]
        assert arm == int(torch.argmax(expected))
        policy.update([view], [arm], [1.0 - arm])
        U += torch.outer(G[arm], G[arm]) / m


def test_scores_over_many_draws_have_the_closed_form_mean_and_variance():
    policy, (view,) = neuralts(), views(1)
    f, G = gradients(policy, view)
    variance = 0.7**2 * 0.5 * (G * G).sum(1) / 0.5 / policy.mlp.width  # U_0 = λI
    draws = torch.stack([policy.scores([view])[0] for _ in range(1000)])
    torch.testing.assert_close(draws.mean(0), f, atol=4 * float(variance.max().sqrt()) / 1000**0.5, rtol=0)
    np.testing.assert_allclose(draws.var(0).numpy(), variance.numpy(), rtol=0.2)


def test_diagonal_and_full_u_draw_alike_from_lambda_i_and_apart_once_gradients_correlate():
    diagonal, full = neuralts(covariance="diagonal"), neuralts(covariance="full")
    first, *rest = views(6)
    torch.testing.assert_close(diagonal.scores([first])[0], full.scores([first])[0])
    for view in [first, *rest[:-1]]:
        for policy in (diagonal, full):
            policy.select([view], [Budget()])
            policy.update([view], [1], [1.0])
    assert not torch.allclose(diagonal.scores([rest[-1]])[0], full.scores([rest[-1]])[0], rtol=1e-3)


def test_same_seed_same_choices_and_another_seed_others():
    def play(seed):
        policy = neuralts(seed, nu=5.0, gradients="closed")
        chosen = []
        for view in views(30):
            arm = policy.select([view], [Budget()])[0]
            policy.update([view], [arm], [float(view.arms[arm].sum())])
            chosen.append(arm)
        return chosen

    assert play(1) == play(1) and play(1) != play(2)


@pytest.mark.parametrize("name", ["neuralts-one", "neuralts-ind"])
@pytest.mark.parametrize("param,value", [("nu", "-1"), ("lam", "0"), ("covariance", "dense")])
def test_bad_hyper_parameters_are_refused_in_one_line(name, param, value):
    with pytest.raises(UserError) as error:
        grid.resolve({name: {param: [value]}}, [name])
    assert "\n" not in str(error.value) and param in str(error.value)
