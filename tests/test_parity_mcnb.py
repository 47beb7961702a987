"""M-CNB against its paper (Ban et al. 2024, Algorithm 1): the behaviours the parity check settled."""

import numpy as np
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
    chosen = policy.select(view, Budget())
    policy.update(view, chosen, float(rnd.rewards[chosen]))
    return policy, rnd.user


def test_default_gives_the_served_users_feedback_to_every_member_of_the_chosen_arms_cluster(dataset):
    """Alg. 1 lines 14–17: for u ∈ N̂_{u_t}(x_t), μ^u += 1 and T^u gains (x_t, r_t). At round 1 every user-learner
    equals Θ_0 (line 2), so the cluster is every user and all of them receive the sample."""
    policy, user = first_round(dataset, {})
    assert torch.equal(policy.users.mu, torch.ones_like(policy.users.mu))


def test_served_user_only_is_the_named_alternative(dataset):
    """``share_with_cluster=False``: the authors' code appends (x_t, r_t) to u_t's history only."""
    policy, user = first_round(dataset, {"share_with_cluster": False})
    expected = torch.zeros_like(policy.users.mu)
    expected[user] = 1
    assert torch.equal(policy.users.mu, expected)
