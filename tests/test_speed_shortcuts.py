"""Shortcuts that must not change decisions: NeuralLinear's per-user statistics and cached components."""

import numpy as np
import torch
from scipy.sparse.csgraph import connected_components

from banditbench.algos import ALGORITHMS
from banditbench.data import load_dataset, synthetic
from banditbench.envs import PROTOCOLS, Budget


def _outer_product_statistics(policy):
    """A_u = λI + Σ φφᵀ and b_u = Σ rφ summed one sample at a time (the definition)."""
    x, r = policy.history.all_rows()
    users = policy.user_of_row[:len(r)]
    phi = policy._embed(x)
    m = phi.shape[1]
    A = torch.eye(m, dtype=torch.float64).mul(policy.lam).repeat(policy.n_users, 1, 1)
    A.index_add_(0, users, phi[:, :, None] * phi[:, None, :])
    b = torch.zeros(policy.n_users, m, dtype=torch.float64).index_add_(0, users, r.double()[:, None] * phi)
    return A, b


def _play(policy, env, rounds, after_round=None):
    choices = []
    for rnd in env.rounds(rounds):
        view = rnd.view(Budget())
        chosen = policy.select(view, Budget())
        policy.update(view, chosen, float(rnd.rewards[chosen]))
        choices.append(chosen)
        if after_round is not None:
            after_round(policy)
    return choices


def _cosine(tmp_path, users=8):
    synthetic.prepare(tmp_path, users=users, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=0, protocol="cosine")
    return load_dataset(tmp_path, "synthetic-cosine")


def _neurallinear(env, seed=4, **params):
    return ALGORITHMS["neurallinear"].build(n_users=env.n_users, n_arms=env.n_arms, dim=env.dim,
                                            seed=np.random.SeedSequence(seed), params=params)


def test_neurallinear_per_user_statistics_equal_the_outer_product_sums(tmp_path):
    env = PROTOCOLS["cosine"].environment(_cosine(tmp_path), np.random.SeedSequence(1))
    policy = _neurallinear(env)
    _play(policy, env, 200)  # 20 trainings, each followed by a rebuild
    A, b = _outer_product_statistics(policy)
    torch.testing.assert_close(policy.A, A, rtol=1e-12, atol=1e-10)
    torch.testing.assert_close(policy.b, b, rtol=0, atol=0)
    assert (policy.count > 0).all() and not torch.allclose(policy.A[0], policy.A[1])


def test_neurallinear_choices_equal_the_definition_and_cached_components_stay_current(tmp_path):
    dataset = _cosine(tmp_path)
    env = PROTOCOLS["cosine"].environment(dataset, np.random.SeedSequence(2))
    fast = _neurallinear(env, alpha2=0.3)

    def check_components(policy):
        assert np.array_equal(policy.clusters(), connected_components(policy.graph, directed=False)[1])

    fast_choices = _play(fast, env, 600, check_components)
    assert len(set(fast.clusters().tolist())) > 1  # edges were cut, so the cache was invalidated and rebuilt

    env = PROTOCOLS["cosine"].environment(dataset, np.random.SeedSequence(2))
    reference = _neurallinear(env, alpha2=0.3)

    def rebuild_by_definition():
        reference.A, reference.b = _outer_product_statistics(reference)
        reference.w = torch.linalg.solve(reference.A, reference.b)

    reference._rebuild = rebuild_by_definition
    reference.clusters = lambda: connected_components(reference.graph, directed=False)[1]
    assert _play(reference, env, 600) == fast_choices
