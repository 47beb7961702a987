"""Shortcuts that must not change decisions: NeuralLinear's per-user statistics and cached components, the linear
learners' per-block statistics and the neural learners' per-block first layer on block-encoded contexts."""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy.sparse.csgraph import connected_components

from banditbench.algos import ALGORITHMS
from banditbench.algos.blocks import BlockRidgeStats
from banditbench.algos.neural import (
    MLP,
    ArmGradients,
    BlockRows,
    History,
    TrainingJob,
    group_by_block,
    start_blocks,
    train_jobs,
)
from banditbench.algos.ridge import RidgeStats
from banditbench.data import load_dataset, synthetic
from banditbench.envs import PROTOCOLS, Budget, Round
from banditbench.errors import UserError

sys.path.insert(0, str(Path(__file__).parent))
from one_unit import choose, clusters, learn, scores  # noqa: E402
from ties import assert_first_difference_is_rounding, first_difference, paired_score_pairs  # noqa: E402


def _outer_product_statistics(policy):
    """A_u = λI + Σ φφᵀ and b_u = Σ rφ of member 0, summed one sample at a time (the definition)."""
    x, r = policy.histories[0].all_rows()
    users = policy.user_of_row[0, : len(r)]
    phi = policy._embed(policy.theta[0], x)
    m = phi.shape[1]
    A = torch.eye(m, dtype=torch.float64).mul(float(policy.lam[0])).repeat(policy.n_users, 1, 1)
    A.index_add_(0, users, phi[:, :, None] * phi[:, None, :])
    b = torch.zeros(policy.n_users, m, dtype=torch.float64).index_add_(0, users, r.double()[:, None] * phi)
    return A, b


def _play(policy, env, rounds, after_round=None):
    choices = []
    for rnd in env.rounds(rounds):
        view = rnd.view(Budget())
        chosen = choose(policy, view)
        learn(policy, view, chosen, float(rnd.rewards[chosen]))
        choices.append(chosen)
        if after_round is not None:
            after_round(policy)
    return choices


def _cosine(tmp_path, users=8):
    synthetic.prepare(tmp_path, users=users, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=0, protocol="cosine")
    return load_dataset(tmp_path, "synthetic-cosine")


def _neurallinear(env, seed=4, **params):
    return ALGORITHMS["neurallinear"].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(seed), params=params
    )


def test_neurallinear_per_user_statistics_equal_the_outer_product_sums(tmp_path):
    env = PROTOCOLS["cosine"].environment(_cosine(tmp_path), np.random.SeedSequence(1))
    policy = _neurallinear(env)
    _play(policy, env, 200)  # 20 trainings, each followed by a rebuild
    A, b = _outer_product_statistics(policy)
    torch.testing.assert_close(policy.A[0], A, rtol=1e-12, atol=1e-10)
    torch.testing.assert_close(policy.b[0], b, rtol=0, atol=0)
    assert (policy.count > 0).all() and not torch.allclose(policy.A[0, 0], policy.A[0, 1])


def test_neurallinear_choices_equal_the_definition_and_cached_components_stay_current(tmp_path):
    dataset = _cosine(tmp_path)
    env = PROTOCOLS["cosine"].environment(dataset, np.random.SeedSequence(2))
    fast = _neurallinear(env, alpha2=0.3)

    def check_components(policy):
        assert np.array_equal(policy.clusters(0), connected_components(policy.graph[0], directed=False)[1])

    fast_choices = _play(fast, env, 600, check_components)
    assert len(set(fast.clusters(0).tolist())) > 1  # edges were cut, so the cache was invalidated and rebuilt

    env = PROTOCOLS["cosine"].environment(dataset, np.random.SeedSequence(2))
    reference = _neurallinear(env, alpha2=0.3)

    def rebuild_by_definition(m):
        reference.A[m], reference.b[m] = _outer_product_statistics(reference)
        reference.w[m] = torch.linalg.solve(reference.A[m], reference.b[m])

    def component_sums_by_definition(m, user):
        labels = reference.clusters(m)
        users = torch.as_tensor(np.flatnonzero(labels == labels[user]))
        eye = torch.eye(reference.A.shape[-1], dtype=torch.float64) * float(reference.lam[m])
        return (reference.A[m, users] - eye).sum(0), reference.b[m, users].sum(0)

    reference._rebuild = rebuild_by_definition
    reference.clusters = lambda m: connected_components(reference.graph[m], directed=False)[1]
    reference._component_sums = component_sums_by_definition
    assert _play(reference, env, 600) == fast_choices


def test_neurallinear_scores_through_cholesky_equal_the_formula_with_an_inverse():
    from banditbench.algos.neurallinear import cluster_ucb, spd_solve

    rng = torch.Generator().manual_seed(0)
    S, k, m, t = 3, 5, 8, 41
    phi = torch.rand(S, k, m, generator=rng, dtype=torch.float64)
    rows = torch.rand(S, 20, m, generator=rng, dtype=torch.float64)
    gram, b_C = rows.mT @ rows, torch.rand(S, m, generator=rng, dtype=torch.float64)
    lam, alpha = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64), torch.tensor([0.1, 1.0, 3.0], dtype=torch.float64)
    A_inv = torch.linalg.inv(torch.eye(m, dtype=torch.float64) * lam[:, None, None] + gram)
    w_C = (A_inv @ b_C[..., None])[..., 0]
    width = torch.einsum("skm,smn,skn->sk", phi, A_inv, phi) * np.log(t + 2)
    expected = torch.einsum("skm,sm->sk", phi, w_C) + alpha[:, None] * width.sqrt()
    torch.testing.assert_close(cluster_ucb(phi, gram, b_C, lam, alpha, t), expected, rtol=1e-12, atol=1e-12)
    A = torch.eye(m, dtype=torch.float64) + gram
    torch.testing.assert_close(spd_solve(A, b_C), torch.linalg.solve(A, b_C), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lam, alpha", [(0.5, 0.1), (torch.tensor([0.5, 2.0]), torch.tensor([0.1, 3.0]))])
def test_neurallinear_scores_stay_on_the_device_of_the_embeddings(lam, alpha):
    """Scalar or per-member λ and α given on the CPU join statistics on another device (torch's shape-only meta
    device stands in for a GPU here: it refuses CPU operands just as CUDA does)."""
    from banditbench.algos.neurallinear import cluster_ucb

    S, k, m = 2, 5, 8
    phi, gram, b_C = (
        torch.empty(*shape, dtype=torch.float64, device="meta") for shape in ((S, k, m), (S, m, m), (S, m))
    )
    scores = cluster_ucb(phi, gram, b_C, lam, alpha, t=10)
    assert scores.device.type == "meta" and scores.shape == (S, k)


def test_neurallinear_with_a_ridge_too_small_for_float64_stops_with_a_one_line_error(tmp_path):
    env = PROTOCOLS["cosine"].environment(_cosine(tmp_path), np.random.SeedSequence(1))
    with pytest.raises(UserError, match="set a larger neurallinear.lam"):
        _play(_neurallinear(env, lam=1e-18), env, 200)


class _Samples:
    """A prepared classification dataset held in memory: what ClassificationEnvironment reads."""

    def __init__(self, x, labels, encoding="block"):
        import pandas as pd

        self.frame = pd.DataFrame({f"x_{j}": x[:, j] for j in range(x.shape[1])} | {"label": labels})
        self.parameters = {"encoding": encoding}

    def table(self, name):
        return self.frame


def _classification(encoding="block", n=300, d=6, K=4, seed=0):
    from banditbench.envs.classification import ClassificationEnvironment

    rng = np.random.default_rng(seed)
    labels = np.arange(n) % K
    x = rng.standard_normal((n, d)) + np.eye(K, d)[labels] * 2  # classes separable enough to learn
    return ClassificationEnvironment(_Samples(x, labels, encoding), np.random.SeedSequence(seed))


def _policy(name, env, blocks, **params):
    """Policy ``name`` for an environment's users, arms and dimension, with its ``blocks`` switch set."""
    policy = ALGORITHMS[name].build(
        n_users=env.n_users, n_arms=env.n_arms, dim=env.dim, seed=np.random.SeedSequence(0), params=params
    )
    policy.blocks = blocks
    return policy


def test_classification_rounds_declare_their_block_width():
    rnd = next(_classification("block", d=6, K=4).rounds(1))
    assert rnd.block == 6 and rnd.view(Budget()).block == 6
    for a in range(4):
        outside = np.delete(rnd.arms[a], np.arange(a * 6, a * 6 + 6))
        assert not outside.any() and rnd.arms[a, a * 6 : a * 6 + 6].any()
    assert next(_classification("shift").rounds(1)).block is None


def _block_arms(contexts):
    """Block-encoded arms [K, K·d] from each arm's context [K, d] (arm a in block a)."""
    K, d = contexts.shape
    arms = np.zeros((K, K * d))
    for a in range(K):
        arms[a, a * d : (a + 1) * d] = contexts[a]
    return arms


def _block_and_dense(name, n_users, n_groups, rounds, **params):
    """Policy ``name`` per block and dense (its ``blocks`` switch), playing the same block-encoded rounds whose arms'
    blocks hold different contexts (no exact ties); user t mod n_users, in group user mod n_groups. Returns the
    two policies and their choices, keyed by the switch."""
    K, d = 4, 5
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((n_groups, K, d))
    shape = SimpleNamespace(n_users=n_users, n_arms=K, dim=K * d)
    policies = {blocks: _policy(name, shape, blocks, **params) for blocks in (True, False)}
    choices = {True: [], False: []}
    for t in range(rounds):
        user, contexts = t % n_users, rng.standard_normal((K, d))
        rewards = (contexts * theta[user % n_groups]).sum(1) + 0.1 * rng.standard_normal(K)
        rnd = Round(t, user, _block_arms(contexts), rewards, rewards, block=d)
        for blocks, policy in policies.items():
            view = rnd.view(Budget())
            chosen = choose(policy, view)
            learn(policy, view, chosen, float(rewards[chosen]))
            choices[blocks].append(chosen)
    return policies, choices


@pytest.mark.parametrize("name", ["linucb-one", "linucb-ind"])
def test_block_linucb_choices_equal_the_dense_computation(name):
    policies, choices = _block_and_dense(name, n_users=3, n_groups=1, rounds=600)
    assert choices[True] == choices[False]
    assert len(set(choices[True])) == 4  # every arm played: every block learnt
    assert policies[True].stats.A_inv.shape[2:] == (5, 5) and policies[False].stats.A_inv.shape[2:] == (20, 20)


@pytest.mark.parametrize("name", ["linucb-one", "linucb-ind"])
def test_block_linucb_scores_equal_the_dense_scores_on_the_classification_protocol(name):
    """Every arm shows the same instance, so arms whose blocks are still untouched tie exactly; the per-block
    scores equal the dense ones to rounding, round after round, and the per-block choice is a dense argmax."""
    env = _classification()
    block, dense = (_policy(name, env, blocks) for blocks in (True, False))
    for rnd in env.rounds(300):
        view = rnd.view(Budget())
        fast, slow = scores(block, view), scores(dense, view)
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
        chosen = choose(block, view)
        assert slow[chosen] >= slow.max() - 1e-12 * abs(slow.max())
        for policy in (block, dense):
            learn(policy, view, chosen, float(rnd.rewards[chosen]))
    assert block.block == 6 and dense.block is None
    np.testing.assert_allclose(block.stats.theta[0, :4].ravel(), dense.stats.theta[0, 0], rtol=1e-9, atol=1e-12)


def test_block_ridge_statistics_are_the_blocks_of_the_dense_ones(monkeypatch):
    K, d, n, M = 4, 3, 5, 2
    rng = np.random.default_rng(3)
    dense, block = RidgeStats(M, n, K * d, ridge=0.7), BlockRidgeStats(M, n, K * d, d, ridge=0.7)
    for _ in range(60):
        arms = _block_arms(rng.standard_normal((K, d)))
        x, reward, learner = arms[rng.integers(K)], float(rng.standard_normal()), int(rng.integers(n))
        for stats in (dense, block):
            stats.update(np.array([1]), np.array([learner]), x[None], np.array([reward]))
            pairs = np.array([0, 1, 0]), np.array([learner, (learner + 1) % n, (learner + 2) % n])
            stats.update(*pairs, np.tile(x, (3, 1)), np.full(3, -reward))
    for stats in (dense, block):
        stats.assign(1, 0, *stats.pool(1, np.array([1, 2, 3])))  # a pooled cluster, as CLUB's split builds it
        stats.reset(1, 4)
        stats.update(np.array([1]), np.array([4]), np.zeros((1, K * d)), np.ones(1))  # all-zero: only the count
    close = dict(rtol=1e-10, atol=1e-12)
    for m in range(M):
        for u in range(n):
            for a in range(K):
                span = slice(a * d, (a + 1) * d)
                np.testing.assert_allclose(block.A_inv[m, u, a], dense.A_inv[m, u, span, span], **close)
                np.testing.assert_allclose(block.gram[m, u, a], dense.gram[m, u, span, span], **close)
            off_diagonal = dense.A_inv[m, u] * (1 - np.kron(np.eye(K), np.ones((d, d))))
            assert not off_diagonal.any()  # the dense A⁻¹ is block-diagonal: nothing is lost
    for name in ("theta", "b", "logdet"):
        np.testing.assert_allclose(getattr(block, name), getattr(dense, name), **close)
    assert np.array_equal(block.count, dense.count) and block.count[1, 4] == 1
    arms = _block_arms(rng.standard_normal((K, d)))
    members, learners = np.array([0, 1, 1, 0]), np.array([0, 2, 2, 4])
    for got, want in zip(
        block.means_and_quadratic_forms(members, learners, arms),
        dense.means_and_quadratic_forms(members, learners, arms),
    ):
        np.testing.assert_allclose(got, want, **close)
    np.testing.assert_allclose(block.quadratic_forms_of(1, 2, arms), dense.quadratic_forms_of(1, 2, arms), **close)
    monkeypatch.setattr("banditbench.algos.blocks.GATHER_BYTES", 0)  # as for blocks too large to gather
    np.testing.assert_allclose(block.quadratic_forms_of(1, 2, arms), dense.quadratic_forms_of(1, 2, arms), **close)
    np.testing.assert_allclose(block.quadratic_forms_of_all(1, arms), dense.quadratic_forms_of_all(1, arms), **close)
    each = block.quadratic_forms_of_each(members, arms), dense.quadratic_forms_of_each(members, arms)
    np.testing.assert_allclose(*each, **close)
    for reference in (False, True):
        for t in (0, 7):
            arms_of = np.tile(arms, (4, 1, 1))
            want = dense.cluster_ucb(members, learners, arms_of, np.full(4, 0.3), t, reference)
            np.testing.assert_allclose(
                block.cluster_ucb(members, learners, arms_of, np.full(4, 0.3), t, reference), want, **close
            )
    with pytest.raises(ValueError, match="spans several blocks"):
        block.update(np.array([0]), np.array([0]), (arms[0] + arms[1])[None], np.ones(1))
    grown = block.fresh(2)
    block.grow(2)
    assert type(grown) is BlockRidgeStats and block.A_inv.shape == (M, n + 2, K, d, d) and not block.theta[:, n:].any()


@pytest.mark.parametrize("name", ["club", "sclub", "locb", "cofiba"])
def test_block_linear_clustering_choices_equal_the_dense_computation(name):
    """The same choices and clusters, round after round, from K·d × d statistics instead of (K·d)²."""
    policies, choices = _block_and_dense(name, n_users=6, n_groups=2, rounds=500, alpha=0.3)
    assert choices[True] == choices[False]
    assert len(set(choices[True])) == 4
    assert np.array_equal(clusters(policies[True]), clusters(policies[False]))
    assert len(np.unique(clusters(policies[True]))) > 1  # users were told apart: the edge tests ran on blocks
    assert (policies[True].block, policies[False].block) == (5, None)
    assert policies[True].users.A_inv.shape[-3:] == (4, 5, 5)


def _spread(compact):
    """Block-encoded dense inputs [..., K, K·b] from each arm's block [..., K, b] (arm k in block k)."""
    K, b = compact.shape[-2:]
    dense = torch.zeros(*compact.shape[:-1], K * b)
    for k in range(K):
        dense[..., k, k * b : (k + 1) * b] = compact[..., k, :]
    return dense


def test_grouping_by_block_gives_each_network_block_its_samples_in_order_and_puts_outputs_back_in_place():
    block = torch.tensor([2, 0, 2, 1, 2, 0])
    x = torch.arange(6.0)[:, None].repeat(1, 3)  # row i is (i, i, i)
    rows = torch.tensor([[5, 2, 0, 4, 2], [1, 1, 1, 3, 3]])
    grouped = group_by_block(rows, x, block, n_blocks=3)
    network, blocks, size = grouped.segments
    assert (network, blocks, size) == ([0, 0, 1, 1], [0, 2, 0, 1], [1, 4, 3, 2])  # the pairs with samples
    assert grouped.x[:, 0].tolist() == [5.0, 2.0, 0.0, 4.0, 2.0, 1.0, 1.0, 1.0, 3.0, 3.0]  # each in sample order
    assert torch.equal(rows.flatten()[grouped.order].float(), grouped.x[:, 0])
    W = torch.randn(2, 7, 9)  # two networks' W_1 [m = 7, K·b = 9]
    dense = torch.zeros(2, 5, 9)
    for i in range(2):
        for j, row in enumerate(rows[i].tolist()):
            k = int(block[row])
            dense[i, j, 3 * k : 3 * k + 3] = x[row]
    torch.testing.assert_close(grouped.first_layer(W), dense @ W.mT)
    one = group_by_block(rows[1:], x, block, n_blocks=3)  # one network's W_1 [m, K·b], as NeuralLinear's rebuild
    torch.testing.assert_close(one.first_layer(W[1]), dense[1] @ W[1].T)
    delta, out = torch.randn(2, 5, 7), torch.full((2, 7, 9), float("nan"))
    grouped.weight_gradient(delta, out)
    torch.testing.assert_close(out, delta.mT @ dense)


def test_block_network_scores_gradients_and_training_equal_the_dense_ones_to_rounding():
    K, b = 4, 5
    generator = torch.Generator().manual_seed(0)
    mlp = MLP(K * b, width=16, depth=3, bias=True, init="torch")
    theta = torch.stack([mlp.init(generator, torch.device("cpu")) for _ in range(3)])
    compact = torch.randn(3, K, b, generator=generator)
    blocks, dense = (
        ArmGradients(mlp, theta, BlockRows(compact[..., None, :])),
        ArmGradients(mlp, theta, _spread(compact)),
    )
    D = torch.rand(3, mlp.p, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(blocks.f, dense.f)
    torch.testing.assert_close(blocks.weighted_squares(D), dense.weighted_squares(D))
    chosen = torch.tensor([0, 3, 1])
    torch.testing.assert_close(blocks.picked(chosen), dense.picked(chosen))
    one = ArmGradients(mlp, theta[1], BlockRows(compact[1, :, None, :]))
    torch.testing.assert_close(one.row(2), ArmGradients(mlp, theta[1], _spread(compact[1])).row(2))

    # the same minibatches of the same log, stored per block and dense: the same trained networks
    logs = History(2, b, torch.device("cpu"), n_blocks=K), History(2, K * b, torch.device("cpu"))
    for i in range(40):
        arm, x, r = i % K, torch.randn(b, generator=generator), float(torch.rand(1, generator=generator))
        logs[0].add(torch.tensor([i % 2]), x, r, block=arm)
        logs[1].add(torch.tensor([i % 2]), _spread(x.expand(K, -1))[arm], r)
    rows = logs[0].minibatch_rows(torch.tensor([0, 1]), 8, generator, 5)
    trained = [
        train_jobs(mlp, [TrainingJob(theta[:2].clone(), rows, log, anchor=(torch.ones(2), theta[1:]))], lr=0.01)[0]
        for log in logs
    ]
    torch.testing.assert_close(trained[0], trained[1])
    assert torch.equal(logs[0].inputs(rows), logs[1].x[rows])  # other readers get the samples back dense


def test_gradient_distances_equal_the_norms_of_the_assembled_differences():
    generator = torch.Generator().manual_seed(1)
    mlp = MLP(12, width=8, depth=3, bias=True, init="torch")
    Theta0 = mlp.init(generator, torch.device("cpu"))
    thetas = Theta0 + 0.1 * torch.randn(5, mlp.p, generator=generator)
    x = torch.randn(5, 12, generator=generator)
    adapted, start = ArmGradients(mlp, thetas, x), ArmGradients(mlp, Theta0, x)
    torch.testing.assert_close(adapted.distances(start), (adapted.rows() - start.rows()).norm(dim=1))


def assert_same_choices_until_rounding_parts_them(name, rounds, **params):
    """Block and dense computations choose alike, up to a round at which a summation order's rounding, grown through
    training, flips a near tie (tests/ties.py)."""
    block, dense = (_policy(name, _classification(n=600), blocks, **params) for blocks in (True, False))
    parted = first_difference(*(_play(policy, _classification(n=600), rounds) for policy in (block, dense)))
    assert block.block == 6 and dense.block is None
    if parted is not None:
        fresh = (_policy(name, _classification(n=600), blocks, **params) for blocks in (True, False))
        assert_first_difference_is_rounding(paired_score_pairs(*fresh, _classification(n=600).rounds(rounds), parted))
    return block


@pytest.mark.parametrize("name", ["neuucb-one", "neuucb-ind", "neurallinear"])
def test_block_neural_choices_equal_the_dense_computation(name):
    block = assert_same_choices_until_rounding_parts_them(name, 400)  # 40 trainings
    assert block.histories[0].x.shape[1] == 6


@pytest.mark.parametrize(
    "params,rounds",
    [
        ({}, 200),  # twenty trainings
        ({"code_training": True, "meta_pooled_training": True}, 300),  # training reads the samples back dense
    ],
)
def test_block_mcnb_choices_equal_the_dense_computation(params, rounds):
    block = assert_same_choices_until_rounding_parts_them("mcnb", rounds, **params)
    assert block.users[0].history.x.shape[1] == 6


def test_neural_policies_read_blocks_on_the_cpu_only():
    """On a GPU the dense product is one kernel, the per-block one a kernel per (network, block) pair."""
    K, b = 4, 6
    policy, view = SimpleNamespace(blocks=True, dim=K * b, n_arms=K), SimpleNamespace(block=b)
    width, history = start_blocks(policy, view, History(2, K * b, torch.device("cpu")))
    assert width == b and history.n_blocks == K and history.x.shape[1] == b
    on_gpu = History(2, K * b, torch.device("meta"))  # any device but the CPU, as CUDA
    assert start_blocks(policy, view, on_gpu) == (None, on_gpu)


def test_neuralucb_keeps_the_dense_input_where_a_setting_has_no_per_block_form():
    env = _classification(n=20, d=6, K=4)
    for params in ({"covariance": "full"}, {"code_training": True}, {"gradients": "batched"}):
        policy = _policy("neuucb-one", env, True, **params)
        _play(policy, env, 12)
        assert policy.block is None and policy.histories[0].x.shape[1] == env.dim, params
    shifted = _classification("shift", n=20, d=6, K=4)
    policy = _policy("neuucb-one", shifted, True)
    _play(policy, shifted, 12)
    assert policy.block is None
