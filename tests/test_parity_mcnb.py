"""M-CNB against its paper (Ban et al. 2024, Algorithm 1): the behaviours the parity check settled."""

import functools

import numpy as np
import pytest
import torch

from banditbench.algos import ALGORITHMS
from banditbench.envs import PROTOCOLS, Budget


def first_round(dataset, params):
    env = PROTOCOLS["linear"].environment(dataset, np.random.SeedSequence(2))
    policy = ALGORITHMS["mcnb"].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(2), params=params
    )
    rnd = next(env.rounds(1))
    view = rnd.view(Budget())
    chosen = policy.select([view], [Budget()])
    policy.update([view], chosen, [float(rnd.rewards[chosen[0]])])
    return policy, rnd.user


def test_default_gives_the_served_users_feedback_to_every_member_of_the_chosen_arms_cluster(dataset):
    """Alg. 1 lines 14–17: for u ∈ N̂_{u_t}(x_t), μ^u += 1 and T^u gains (x_t, r_t). At round 1 every user-learner
    equals Θ_0 (line 2), so the cluster is every user and all of them receive the sample."""
    policy, user = first_round(dataset, {})
    assert torch.equal(policy.users[0].mu, torch.ones_like(policy.users[0].mu))


def test_served_user_only_is_the_named_alternative(dataset):
    """``share_with_cluster=False``: the authors' code appends (x_t, r_t) to u_t's history only."""
    policy, user = first_round(dataset, {"share_with_cluster": False})
    expected = torch.zeros_like(policy.users[0].mu)
    expected[user] = 1
    assert torch.equal(policy.users[0].mu, expected)


def their_passes(mlp, theta, x, r, orders, max_steps, optimiser):
    """Their loop written out with torch.optim and autograd: single-sample steps over the given pass orders until
    ``max_steps`` steps or a pass whose mean loss is ≤ 1e-3. ``optimiser``: a torch.optim class with its lr."""
    theta = theta.clone().requires_grad_()
    step, steps = optimiser([theta]), 0
    for order in orders:
        pass_loss = 0.0
        for i in order:
            loss = (mlp.forward(theta, x[i][None, None]) - r[i]).square().sum()
            step.zero_grad()
            loss.backward()
            step.step()
            pass_loss += loss.item()
            steps += 1
            if steps >= max_steps:
                return theta.detach()
        if pass_loss / len(order) <= 1e-3:
            return theta.detach()
    raise AssertionError("more passes needed than drawn")


def test_code_adaptation_takes_up_to_100_steps_over_reshuffled_passes_of_a_small_group():
    """Their train_meta(group, t, 100, 1e-2, SGD) keeps passing over a group's data, reshuffled each pass, until
    100 steps: with 3 samples Θ moves 100 steps, not one pass of 3."""
    policy = ALGORITHMS["mcnb"].build(
        n_users=4, n_arms=2, dim=3, seed=np.random.SeedSequence(0), params={"meta_every_10th_in_place": True}
    )
    data = torch.Generator().manual_seed(5)
    x, r = torch.randn(3, 3, generator=data), torch.tensor([1.0, -1.0, 0.5])
    for user, (xi, ri) in enumerate(zip(x, r)):
        policy.users[0].history.add(torch.tensor([user]), xi, float(ri))
    group = torch.tensor([[[True, True, True, False]]])  # member 0's group of its one arm
    state = policy.generators[0].get_state()
    before = policy.Theta[0].clone()
    policy._adapt_code(group)
    replay = torch.Generator().set_state(state)
    orders = [torch.randperm(3, generator=replay).tolist() for _ in range(34)]
    sgd = functools.partial(torch.optim.SGD, lr=1e-2)
    expected = their_passes(policy.mlp, before[None], x, r, orders, 100, sgd)[0]
    torch.testing.assert_close(policy.Theta[0], expected)


def test_code_adaptation_runs_on_the_rounds_whose_zero_based_t_is_a_multiple_of_10():
    """Their runner adapts Θ when t % 10 == 0 (t counted from 0); on the other rounds every arm plays Θ as it is."""
    policy = ALGORITHMS["mcnb"].build(
        n_users=4, n_arms=2, dim=3, seed=np.random.SeedSequence(0), params={"meta_every_10th_in_place": True}
    )
    data = torch.Generator().manual_seed(5)
    for user in range(3):
        policy.users[0].history.add(torch.tensor([user]), torch.randn(3, generator=data), 1.0)
    group = torch.tensor([[[True, True, True, False], [True, True, True, False]]])  # member 0's groups of its 2 arms
    for t in (9, 10, 11, 19, 20):
        before = policy.Theta[0].clone()
        thetas = policy._adapted(t, group)
        assert thetas.shape == (1, 2, policy.mlp.p)
        assert torch.equal(thetas[0, 0], before) == (t % 10 != 0), t


def test_group_cap_draws_n_over_5_members_with_replacement_per_arm_in_arm_order_plus_the_served_user():
    """Their cap: an arm's group of more than n/5 users becomes n/5 draws with replacement from it, in the order of
    the arms, plus u_t; smaller groups stay as they are."""
    policy = ALGORITHMS["mcnb"].build(
        n_users=20, n_arms=4, dim=3, seed=np.random.SeedSequence(0), params={"group_cap": True}
    )
    groups = torch.zeros(4, 20, dtype=torch.bool)
    groups[0, :10] = groups[1, [2, 5, 7]] = groups[3, 5:] = True  # arm 2's group is empty, arm 1's under the cap
    state = policy.generators[0].get_state()
    capped = policy._cap(0, groups.clone(), user=5)
    replay = torch.Generator().set_state(state)
    first = torch.arange(10)[torch.randint(10, (4,), generator=replay)]
    last = torch.arange(5, 20)[torch.randint(15, (4,), generator=replay)]
    assert capped[0].nonzero().flatten().tolist() == sorted(set(first.tolist()) | {5})
    assert torch.equal(capped[1], groups[1]) and not capped[2].any()
    assert capped[3].nonzero().flatten().tolist() == sorted(set(last.tolist()) | {5})
    assert torch.equal(policy.generators[0].get_state(), replay.get_state())


def test_code_training_trains_the_pooled_meta_network_then_the_served_users_learner_alone():
    """Their run.py on a scheduled round: train_meta(all users, t, 1000, lr) by single-sample Adam, then train(u_t)
    by single-sample Adam (≤ 500 steps) on u_t's history only."""
    params = {"code_training": True, "meta_pooled_training": True, "share_with_cluster": False, "schedule": "code"}
    policy = ALGORITHMS["mcnb"].build(n_users=3, n_arms=2, dim=3, seed=np.random.SeedSequence(1), params=params)
    data = torch.Generator().manual_seed(6)
    users = policy.users[0]  # member 0's, the only member's
    for user in (0, 1, 1):
        users.history.add(torch.tensor([user]), torch.randn(3, generator=data), 1.0)
    learners, Theta = users.theta.clone(), policy.Theta.clone()
    policy._train_code([1])
    assert not torch.equal(policy.Theta, Theta)
    assert torch.equal(users.theta[[0, 2]], learners[[0, 2]])  # only u_t's learner trains
    assert not torch.equal(users.theta[1], learners[1]) and int(users.trained_counts[1]) == 2


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_the_single_sample_adam_loop_is_torch_optim_adam_step_for_step(weight_decay):
    """M-CNB's and Meta-Ban's ``code_training`` loops use our Adam on flat θ; their code uses torch.optim.Adam (EE-Net's
    with L2 weight decay, λθ added to each gradient)."""
    from banditbench.algos.neural import MLP, train_passes_each

    mlp = MLP(3, 8, 2, bias=True, init="torch")
    data = torch.Generator().manual_seed(4)
    theta = mlp.init(data, torch.device("cpu"))[None]
    x, r = torch.randn(5, 3, generator=data), torch.randn(5, generator=data)
    generators = [torch.Generator().manual_seed(8)]
    trained = train_passes_each(
        mlp, theta, [(x, r)], generators, lr=1e-2, optimiser="adam", max_steps=37, weight_decay=weight_decay
    )
    order = torch.randperm(5, generator=torch.Generator().manual_seed(8)).tolist()
    adam = functools.partial(torch.optim.Adam, lr=1e-2, weight_decay=weight_decay)
    torch.testing.assert_close(trained, their_passes(mlp, theta, x, r, [order] * 8, 37, adam))


def test_metaban_code_training_trains_theta_on_the_group_every_round_and_the_served_learner_from_theta():
    """Their meta_ban: train_meta(group) by single-sample Adam every round before scoring; on a scheduled round
    train(u_t) copies the meta network into u_t's learner and trains it on u_t's history only."""
    params = {"code_training": True, "group_mode": "last_arm", "user_start": "meta", "schedule": "code", "eta2": 1e-3}
    policy = ALGORITHMS["metaban"].build(n_users=3, n_arms=2, dim=3, seed=np.random.SeedSequence(1), params=params)
    data = torch.Generator().manual_seed(6)
    for user in (0, 1, 1):
        policy.users[0].history.add(torch.tensor([user]), torch.randn(3, generator=data), 1.0)
    from banditbench.envs import Round

    arms = torch.randn(2, 3, generator=data).numpy()
    view = Round(0, 1, arms, np.zeros(2), np.zeros(2)).view(Budget())
    users = policy.users[0]  # member 0's, the only member's
    learners, Theta = users.theta.clone(), policy.Theta[0].clone()
    chosen = policy.select([view], [Budget()])
    assert not torch.equal(policy.Theta[0], Theta)  # trained on the group's data before scoring
    meta = policy.Theta[0].clone()
    policy.update([view], chosen, [0.0])
    assert torch.equal(users.theta[[0, 2]], learners[[0, 2]])
    assert not torch.equal(users.theta[1], meta) and int(users.trained_counts[1]) == 3


@pytest.mark.parametrize("steps", [1, 2])
def test_meta_adaptation_is_alg_2_with_per_user_gradients(steps):
    """Θ_{t,i} = Θ − η₂ Σ_u w_iu ∇ ½(f(x_u; Θ) − r_u)², then from Θ_{t,i} for a second step; members stacked."""
    from banditbench.algos.mcnb import meta_adapt
    from banditbench.algos.neural import MLP

    mlp = MLP(4, 6, 2, bias=True, init="torch")
    data = torch.Generator().manual_seed(3)
    Theta = torch.stack([mlp.init(data, torch.device("cpu")) for _ in range(2)])  # two members
    weights = torch.rand(2, 3, 5, generator=data)  # 3 arms, 5 users
    samples = [(torch.randn(2, 5, 4, generator=data), torch.randn(2, 5, generator=data)) for _ in range(steps)]
    draws = iter(samples)
    adapted = meta_adapt(mlp, Theta, weights, lambda: next(draws), 0.1, steps)

    for s in range(2):
        for i in range(3):
            theta = Theta[s]
            for xs, rs in samples:
                step = torch.zeros_like(theta)
                for u in range(5):
                    at = theta.clone().requires_grad_()
                    loss = 0.5 * (mlp.forward(at, xs[s, u][None]) - rs[s, u]).square().sum()
                    step += weights[s, i, u] * torch.autograd.grad(loss, at)[0]
                theta = theta - 0.1 * step
            torch.testing.assert_close(adapted[s, i], theta)
