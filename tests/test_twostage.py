"""Zhang et al. 2022's two-stage protocol: its draws, the computational budget, DynaTopicRec, the budgeted two-stage
allocation, the users' click histories, the GLM-UCB models (Eqs. 2–4), what the neural and GLM slate policies
learn from, the slate / CTR shard columns, and the whole pipeline (prepare → simulator train → run → report) on
tiny MIND and MovieLens-20M fixtures."""

import copy
import shutil
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from conftest import banditbench
from fixtures_logged import prepare_both
from scipy import stats
from test_reliability_integrity import forge_record, with_metadata

import banditbench as bb
from banditbench.algos.glm import DisjointGLM, InverseGram, SharedGLM, adam_fit, balanced_rows
from banditbench.algos.slate import SlatePolicy, dyna_topic_rec, item_budgets, top_topic_groups
from banditbench.algos.slate_glm import GLMUCB, SNGALM, SNGBLM, NeuralGLMUCB, title_features
from banditbench.algos.slate_neural import NeuralDropoutUCB, NeuralGreedy
from banditbench.algos.slate_random import SlateRandom
from banditbench.data import load_dataset
from banditbench.envs import Budget, BudgetExceeded
from banditbench.envs.learners import TopicModel, new_item_model
from banditbench.envs.round import CatalogPool, RoundView
from banditbench.envs.twostage import Catalogue, Problem, TwoStageEnvironment
from banditbench.errors import SettingError, UserError
from banditbench.runner.slate import SlateRounds
from banditbench.simulator.logged import known_split

SIZES = [5, 1, 2, 8, 3, 4, 6]  # items of topics 0..6; topic v owns the items numbered from 100·v


def topic_items(sizes=SIZES):
    return [np.arange(100 * v, 100 * v + n) for v, n in enumerate(sizes)]


def topic_of_items(items):
    """The topic of each of ids 0..699 (−1 outside every topic)."""
    topic_of = np.full(700, -1)
    for v, its in enumerate(items):
        topic_of[its] = v
    return topic_of


# -- the budget ------------------------------------------------------------------------------------------------


def test_scoring_spends_the_budget_before_computing_and_overspending_stops_the_policy():
    budget = Budget(10)
    pool = CatalogPool(None, np.arange(1, 9), budget)
    scored = []
    pool.score(np.arange(1, 7), lambda items: scored.append(items))
    pool.score_topics(np.arange(3), lambda topics: scored.append(topics))
    assert budget.spent == 9 and len(scored) == 2
    with pytest.raises(BudgetExceeded, match="tried to score 11 arms this round; the budget is 10"):
        pool.score(np.arange(1, 3), lambda items: scored.append(items))
    assert len(scored) == 2  # nothing was computed past the budget


# -- DynaTopicRec (Algorithm 2) ----------------------------------------------------------------------------------


def test_dyna_topic_rec_paper_reading_on_a_hand_made_topic_list():
    order = np.array([3, 1, 0, 2, 6, 4, 5])  # topics by descending score
    groups = dyna_topic_rec(order, topic_items(), m=2, p=6)
    # seeds {3} (8 items) and {1} (1); only group 2 holds ≤ 6: it takes 0 (→ 6), still ≤ 6, takes 2 (→ 8)
    assert [sorted(set(g // 100)) for g in groups] == [[3], [0, 1, 2]]
    assert [len(g) for g in groups] == [8, 8]


def test_dyna_topic_rec_hands_the_next_best_topic_to_the_short_groups_in_slot_order():
    """Zhang et al. 2022, Algorithm 2 lines 5–11: the remaining topics go round-robin, slot 1 first."""
    groups = dyna_topic_rec(np.array([1, 2, 0, 4, 3, 5, 6]), topic_items(), m=2, p=3)
    # seeds {1} (1 item) and {2} (2) both hold ≤ 3: slot 1 takes the best remaining topic 0, slot 2 the next, 4
    assert [sorted(set(g // 100)) for g in groups] == [[0, 1], [2, 4]]


def test_dyna_topic_rec_code_variant_subsamples_to_exactly_p_and_differs_from_the_paper():
    order = np.array([3, 1, 0, 2, 6, 4, 5])
    groups = dyna_topic_rec(order, topic_items(), m=2, p=6, variant="code", rng=np.random.default_rng(0))
    # group 2 needs 5 more: topic 0 has exactly 5, so it stops at 6 (< p is strict) — whereas the paper's ≤ p
    # goes on to add topic 2
    assert [len(g) for g in groups] == [8, 6] and sorted(set(groups[1] // 100)) == [0, 1]
    groups = dyna_topic_rec(
        np.array([1, 3, 6, 0, 2, 4, 5]), topic_items(), m=2, p=4, variant="code", rng=np.random.default_rng(0)
    )
    # group 1 = {1} needs 3: topic 6 (6 items) is sub-sampled to 3 of its items
    assert len(groups[0]) == 4 and np.isin(groups[0][1:], topic_items()[6]).all()


def test_dynamic_groups_reach_size_p_unless_topics_run_out():
    rng = np.random.default_rng(1)
    sizes = list(rng.integers(1, 40, size=60))
    for p in (10, 50, 120):
        groups = dyna_topic_rec(rng.permutation(60), topic_items(sizes), m=5, p=p)
        assert all(len(g) > p for g in groups)  # the paper's loop stops once every group holds more than p
        assert len(np.unique(np.concatenate(groups))) == sum(len(g) for g in groups)  # disjoint groups
    groups = dyna_topic_rec(np.arange(7), topic_items(), m=3, p=1000)  # too few items: every topic is used
    assert sum(len(g) for g in groups) == sum(SIZES)


def test_no_dynamic_topic_fills_the_top_topics_with_distinct_outside_items():
    items = topic_items()
    topic_of = topic_of_items(items)
    groups = top_topic_groups(np.array([1, 2, 0, 3, 4, 5, 6]), items, topic_of, m=2, p=4, rng=np.random.default_rng(0))
    assert [len(g) for g in groups] == [4, 4]
    filled = np.concatenate([groups[0][1:], groups[1][2:]])
    assert len(np.unique(filled)) == 5 and not np.isin(topic_of[filled], [1, 2]).any()


def test_no_dynamic_topic_leaves_a_top_topic_larger_than_p_as_it_is():
    items = topic_items()
    topic_of = topic_of_items(items)
    groups = top_topic_groups(np.array([3, 1, 0, 2, 4, 5, 6]), items, topic_of, m=2, p=4, rng=np.random.default_rng(0))
    # topic 3 (8 items) needs nothing; topic 1 (1 item) gets 3 items from outside topics 3 and 1
    np.testing.assert_array_equal(groups[0], items[3])
    assert len(groups[1]) == 4 and not np.isin(topic_of[groups[1][1:]], [1, 3]).any()


def test_item_budget_goes_to_groups_in_ascending_size_with_carry_over():
    # B − q = 90 over groups of 3, 100 and 50 items: 3 (all), then 50 → min(50, 87 // 2 = 43), then 100 → 44
    assert item_budgets([3, 100, 50], 90) == {0: 3, 2: 43, 1: 44}
    assert item_budgets([3, 100, 50], float("inf")) == {0: 3, 2: 50, 1: 100}


# -- the two-stage policy spends q topic scores plus items ------------------------------------------------------


class Recorder(SlatePolicy):
    """A policy whose scores are fixed: topic v scores −v, item i scores i; it records what it scored."""

    def item_scores(self, user, items):
        self.scored.append(items)
        return items.astype(float)

    def topic_scores(self, user, topics):
        return -topics.astype(float)

    def learn(self, t, user, slate, clicks, history):
        self.learned_with = history


def catalogue(sizes):
    """Items 1..Σ sizes, topic by topic."""
    topic = np.concatenate([[-1], np.repeat(np.arange(len(sizes)), sizes)])
    items = [np.flatnonzero(topic == v) for v in range(len(sizes))]
    return Catalogue(np.zeros((len(topic), 3), np.int32), topic, items, 10)


def problem(cat, history=()):
    """A slate of 3 for user 0 alone, whose logged history is ``history`` (padded with 0 to 50)."""
    histories = np.zeros((1, 50), np.int64)
    histories[0, : len(history)] = history
    return Problem(cat, 3, np.array([0]), histories, None)


def run_select(policy, cat, limit, candidates=None):
    policy.start(problem(cat))
    policy.scored = []
    budget = Budget(limit)
    pool = CatalogPool(cat, candidates if candidates is not None else np.arange(1, 40), budget)
    return policy.select(RoundView(0, 0, pool), budget), budget


def recorder(**kw):
    return Recorder(n_users=1, n_arms=1, dim=0, seed=np.random.SeedSequence(0), **kw)


def test_two_stage_scores_q_topics_plus_item_allowances_and_one_item_per_group():
    cat = catalogue([40, 30, 25, 20, 10])
    policy = recorder(two_stage=True)
    slate, budget = run_select(policy, cat, 35)
    assert budget.spent == 5 + 30  # q topic scores + B − q items
    assert [len(s) for s in policy.scored] == [10, 10, 10]
    assert [sorted(set(cat.topic[s])) for s in policy.scored] == [[2], [1], [0]]  # smallest group first
    for s, chosen in zip(policy.scored[::-1], slate):  # each slot recommends the best item it scored
        assert chosen == s.max()


def test_one_stage_scores_every_candidate_and_returns_the_top_m():
    cat = catalogue([40, 30, 25, 20, 10])
    slate, budget = run_select(recorder(), cat, 39)
    assert budget.spent == 39 and list(slate) == [39, 38, 37]
    with pytest.raises(BudgetExceeded):  # 39 candidates do not fit a budget of 20
        run_select(recorder(), cat, 20)


def test_with_no_budget_left_for_items_each_slot_recommends_a_random_item_of_its_group():
    """B < q + m leaves some slot nothing to score with: it recommends an unscored item of its group, at random."""
    cat = catalogue([4, 4, 4, 4, 4])
    policy = recorder(two_stage=True)
    slates = []
    for _ in range(10):
        slate, budget = run_select(policy, cat, 5)  # B = q: every topic scored, no item
        assert budget.spent == 5 and policy.scored == [] and list(cat.topic[slate]) == [0, 1, 2]
        slates.append(slate)
    assert len({tuple(s) for s in slates}) > 1


def test_without_a_budget_two_stage_scores_whole_groups_of_at_least_items_per_topic():
    cat = catalogue([40, 30, 25, 20, 10])
    policy = recorder(two_stage=True)
    slate, budget = run_select(policy, cat, None)  # p = 125 items / 5 topics = 25
    assert budget.spent == 5 + 115 and sorted(len(s) for s in policy.scored) == [30, 40, 45]  # topic 4 unused
    assert np.isin(slate, cat.topic_items[4]).sum() == 0


def group_topics(cat, scored):
    """The topics each scored group drew its items from, groups by ascending size (the order they are scored in)."""
    return [sorted(set(cat.topic[s])) for s in scored]


def test_topic_min_size_sets_p_of_dyna_topic_rec():
    cat = catalogue([40, 30, 25, 20, 10])
    policy = recorder(two_stage=True, topic_min_size=30)
    run_select(policy, cat, None)
    # p = 30, not #items / #topics = 25: the seed of 30 items now takes topic 3 too, the one of 25 takes topic 4
    assert [len(s) for s in policy.scored] == [35, 40, 50]
    assert group_topics(cat, policy.scored) == [[2, 4], [0], [1, 3]]


def test_no_dynamic_topics_recommends_from_the_top_topics_filled_from_outside():
    """Zhang et al. 2022, Fig. 3's "No Dynamic Topic": group j is the j-th best topic, filled up to p."""
    cat = catalogue([40, 30, 25, 20, 10])
    policy = recorder(two_stage=True, dynamic_topics=False, topic_min_size=35)
    run_select(policy, cat, None)
    assert [len(s) for s in policy.scored] == [35, 35, 40]
    # ties in size are scored in slot order; the fill comes from topics 3 and 4, outside the three chosen
    assert [sorted(set(cat.topic[s]) - {3, 4}) for s in policy.scored] == [[1], [2], [0]]
    assert len(np.unique(np.concatenate(policy.scored))) == 110  # 15 distinct fill items


def test_the_code_topic_groups_top_up_to_exactly_p():
    cat = catalogue([40, 30, 25, 20, 10])
    policy = recorder(two_stage=True, topic_groups="code", topic_min_size=35)
    run_select(policy, cat, None)
    # the group of 30 needs 5 more: topic 3 (20 items) is sub-sampled to 5; the group of 25 takes all of topic 4
    assert [len(s) for s in policy.scored] == [35, 35, 40]
    assert group_topics(cat, policy.scored) == [[1, 3], [2, 4], [0]]


def test_random_recommends_distinct_candidates_and_2_random_one_item_of_each_of_m_distinct_topics():
    """Zhang et al. 2022's Random (m of the sampled items, without replacement) and 2-Random (m topics without
    replacement, an item of each); neither scores anything."""
    cat = catalogue([4, 4, 4, 4])
    one, two = (
        SlateRandom(two_stage=s, n_users=1, n_arms=1, dim=0, seed=np.random.SeedSequence(0)) for s in (False, True)
    )
    for _ in range(20):
        slate, budget = run_select(one, cat, 4, candidates=np.array([2, 5, 9, 13]))
        assert len(set(slate)) == 3 and set(slate) <= {2, 5, 9, 13} and budget.spent == 0
        slate, budget = run_select(two, cat, None)
        assert len(set(cat.topic[slate])) == 3 and budget.spent == 0


# -- the users' click histories -------------------------------------------------------------------------------


def test_a_users_history_starts_as_the_logged_one_without_padding_and_grows_by_new_clicks_only():
    policy = recorder()
    policy.start(problem(catalogue([5, 5, 5]), history=[4, 7]))
    assert policy.histories[0] == [4, 7]
    budget = Budget(None)
    view = RoundView(0, 0, CatalogPool(policy.catalogue, np.arange(1, 16), budget))
    policy.update(view, np.array([7, 9, 11]), np.array([1, 1, 0]))
    assert policy.histories[0] == [4, 7, 9]  # 7 was clicked before, 11 was not clicked
    np.testing.assert_array_equal(policy.learned_with[:3], [4, 7, 0])  # learn sees the history the slate used


def test_the_history_a_policy_reads_is_the_last_50_clicks_padded_at_the_end():
    policy = recorder()
    policy.start(problem(catalogue([5, 5, 5]), history=[4, 7]))
    np.testing.assert_array_equal(policy.history_of([0])[0], [4, 7] + [0] * 48)
    policy.histories[0] = list(range(1, 61))
    np.testing.assert_array_equal(policy.history_of([0])[0], np.arange(11, 61))


# -- the GLM-UCB models -------------------------------------------------------------------------------------------


def rows(rng, n, d):
    return torch.as_tensor(rng.normal(size=(n, d)))


def width(X, *Vs):
    """‖x‖_{A⁻¹} of every row of X, A = I + Σ vᵀv over the rows of Vs, by a direct inverse."""
    A = np.eye(X.shape[1]) + sum(V.T @ V for V in map(np.asarray, Vs))
    X = np.asarray(X, np.float64)
    return np.sqrt(np.einsum("ij,jk,ik->i", X, np.linalg.inv(A), X))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_woodbury_updates_equal_the_direct_inverse():
    rng = np.random.default_rng(0)
    vs = [torch.as_tensor(rng.normal(size=(5, 12))) for _ in range(4)]
    gram = InverseGram(12)
    for V in vs:
        gram.add(V)
    A = np.eye(12) + sum(V.numpy().T @ V.numpy() for V in vs)
    np.testing.assert_allclose(gram.A_inv.numpy(), np.linalg.inv(A), rtol=1e-9, atol=1e-12)


def test_glm_samples_are_a_rounds_clicks_and_one_and_a_half_times_as_many_non_clicks():
    """The authors' code: int(min(1.5·#clicks, #non-clicks)) non-clicks per round with a click, none without."""
    labels = [np.array(y) for y in ([1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0], [1] * 4 + [0] * 6)]
    chosen = balanced_rows(labels, np.random.default_rng(0))
    assert [len(k) for k in chosen] == [1 + 1, 2 + 3, 3 + 1, 0, 4 + 6]
    for y, k in zip(labels, chosen):
        assert len(set(k)) == len(k) and set(np.flatnonzero(y)) <= set(k)


def test_adam_fit_takes_steps_of_size_lr_against_a_constant_gradient():
    """A fresh Adam's bias-corrected step is lr · g / |g| while the gradient stays g: `steps` of them."""
    linear = torch.nn.Linear(3, 1, bias=False).double()
    with torch.no_grad():
        linear.weight.zero_()
    slope = torch.tensor([[2.0, -0.5, 1e-3]], dtype=torch.float64)
    adam_fit(linear, lambda: (linear.weight * slope).sum(), steps=4, lr=0.01)
    np.testing.assert_allclose(linear.weight.detach().numpy(), [[-0.04, 0.04, -0.04]], rtol=1e-4)


def test_glm_ucb_scores_a_new_users_items_by_the_width_alone_then_by_its_fitted_mean():
    """Zhang et al. 2022, Eq. (2): α = ρ(θ_uᵀx + b_u) + β‖x‖_{M_u⁻¹}, M_u = I + Σ x xᵀ of u's recommended items; θ_u
    starts at 0, so before any fit ρ(0) = ½."""
    rng = np.random.default_rng(2)
    glm = DisjointGLM(4, beta=0.1, lr=0.01, steps=5)
    shown, X = rows(rng, 3, 4), rows(rng, 6, 4)
    glm.observe(0, shown, torch.tensor([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(glm.scores(0, X), 0.5 + 0.1 * width(X, shown), rtol=1e-9)
    np.testing.assert_allclose(glm.scores(1, X), 0.5 + 0.1 * np.linalg.norm(X, axis=1), rtol=1e-9)  # M_1 = I
    glm.fit(0, shown, torch.tensor([1.0, 0.0, 0.0]))
    linear = glm.model[0]
    mean = sigmoid(X.numpy() @ linear.weight.detach().numpy()[0] + linear.bias.item())
    assert not np.allclose(mean, 0.5)
    np.testing.assert_allclose(glm.scores(0, X), mean + 0.1 * width(X, shown), rtol=1e-9)


def test_n_linucb_scores_by_the_ridge_estimate():
    """The authors' LinUCB: α = xᵀθ_u + β‖x‖_{M_u⁻¹} with θ_u = M_u⁻¹ Σ x r."""
    rng = np.random.default_rng(3)
    glm = DisjointGLM(4, beta=0.1, lr=0.01, steps=5, link="identity")
    shown, X, r = rows(rng, 5, 4), rows(rng, 6, 4), torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    glm.observe(0, shown[:3], r[:3])
    glm.observe(0, shown[3:], r[3:])
    glm.fit(0, shown, r)  # nothing to fit: the identity link's estimate is the ridge one
    M = np.eye(4) + shown.numpy().T @ shown.numpy()
    theta = np.linalg.solve(M, shown.numpy().T @ r.numpy())
    np.testing.assert_allclose(glm.scores(0, X), X.numpy() @ theta + 0.1 * width(X, shown), rtol=1e-9)


def additive_mean(glm, X, z, item_weight, user_weight):
    item, user = glm.model.item, glm.model.user
    logit_x = X.numpy() @ item.weight.detach().numpy()[0] + item.bias.item()
    logit_z = z.numpy() @ user.weight.detach().numpy()[0] + user.bias.item()
    return sigmoid(item_weight * logit_x + user_weight * logit_z)


def test_s_n_galm_scores_by_eq_3_with_global_item_and_user_matrices():
    """Zhang et al. 2022, Eq. (3): α = ρ(γ(w_xᵀx + b_x) + (1 − γ)(w_zᵀz + b_z)) + β(γ‖x‖_{A_x⁻¹} + (1 − γ)‖z‖_{A_z⁻¹}),
    A_x and A_z over every recommended item and the user vector it was shown to."""
    rng = np.random.default_rng(4)
    glm = SharedGLM("additive", 4, 3, beta=0.1, lr=0.01, steps=1, gamma=0.3)
    shown, z_shown = [rows(rng, 2, 4), rows(rng, 2, 4)], [rows(rng, 1, 3)[0], rows(rng, 1, 3)[0]]
    for X, z in zip(shown, z_shown):
        glm.observe(X, z)
    X, z = rows(rng, 5, 4).float(), rows(rng, 1, 3)[0].float()  # the item model's dtype
    users = [u.expand(2, -1) for u in z_shown]  # each user vector once per item it was shown with
    expected = additive_mean(glm, X, z, 0.3, 0.7) + 0.1 * (0.3 * width(X, *shown) + 0.7 * width(z[None], *users))
    np.testing.assert_allclose(glm.scores(X, z), expected, rtol=1e-6)


def test_s_n_galm_with_item_only_ci_is_the_authors_code():
    """The authors' code: σ(w_xᵀx + b_x + w_zᵀz + b_z) + β‖x‖_{A_x⁻¹}, no γ and no user width."""
    rng = np.random.default_rng(5)
    glm = SharedGLM("additive", 4, 3, beta=0.1, lr=0.01, steps=1, gamma=0.3, item_only_ci=True)
    shown = rows(rng, 3, 4)
    glm.observe(shown, rows(rng, 1, 3)[0])
    X, z = rows(rng, 5, 4).float(), rows(rng, 1, 3)[0].float()  # the item model's dtype
    expected = additive_mean(glm, X, z, 1.0, 1.0) + 0.1 * width(X, shown)
    np.testing.assert_allclose(glm.scores(X, z), expected, rtol=1e-6)


def test_s_n_gblm_folds_row_major_vec_x_z_into_w():
    """Zhang et al. 2022, Eq. (4): W = I + Σ vec(x zᵀ) vec(x zᵀ)ᵀ, vec row-major as in the authors' code."""
    rng = np.random.default_rng(6)
    glm = SharedGLM("bilinear", 4, 3, beta=0.1, lr=1e-3, steps=1)
    X, z = rows(rng, 5, 4).float(), rows(rng, 1, 3)[0].float()
    glm.observe(X, z)
    vec = np.stack([np.outer(x, z).ravel() for x in X.numpy()]).astype(np.float64)
    np.testing.assert_allclose(glm.W.A_inv.numpy(), np.linalg.inv(np.eye(12) + vec.T @ vec), atol=1e-5)


def test_bilinear_width_is_the_norm_of_vec_x_z_under_the_inverse():
    """α = ρ(xᵀΘz + b) + β‖vec(x zᵀ)‖_{W⁻¹} after every observation (the width is computed without vec)."""
    rng = np.random.default_rng(1)
    glm = SharedGLM("bilinear", 4, 3, beta=0.5, lr=1e-3, steps=1)
    X, z = rows(rng, 6, 4).float(), rows(rng, 1, 3)[0].float()
    with torch.no_grad():
        mean = torch.sigmoid(glm.model(X, z.expand(6, -1))).numpy()
    vec = np.einsum("ia,b->iab", X.numpy(), z.numpy()).reshape(6, 12).astype(np.float64)
    for _ in range(3):
        glm.scores(X, z)  # a width computed before the observation must not be reused after it
        glm.observe(rows(rng, 5, 4).float(), rows(rng, 1, 3)[0].float())
        direct = np.sqrt(np.einsum("ij,jk,ik->i", vec, glm.W.A_inv.numpy(), vec))
        np.testing.assert_allclose(glm.scores(X, z) - mean, 0.5 * direct, rtol=1e-5)


# -- the neural and GLM slate policies' learning ----------------------------------------------------------------


def titled(sizes=(4, 4, 4, 4)):
    """``catalogue(sizes)`` with three random words (of 9) per title, so that items have distinct vectors."""
    cat = catalogue(list(sizes))
    titles = np.random.default_rng(0).integers(1, 10, size=cat.titles.shape).astype(np.int32)
    titles[0] = 0
    return Catalogue(titles, cat.topic, cat.topic_items, 10)


def started(cls, **kw):
    """A policy of ``cls`` started on ``titled()`` for users 0 (history 1, 5) and 1 (history 9), slates of 3, from
    "pre-trained" item and topic models of their own seeds (so that the two towers differ)."""
    histories = np.zeros((2, 50), np.int64)
    histories[0, :2], histories[1, 0] = [1, 5], 9
    pretrained = {"item": new_item_model(10, 4, seed=1).state_dict(), "topic": TopicModel(10, 4, seed=2).state_dict()}
    policy = cls(n_users=2, n_arms=1, dim=0, seed=np.random.SeedSequence(0), **kw)
    policy.start(Problem(titled(), 3, np.array([0, 1]), histories, pretrained))
    return policy


def feed(policy, t, user, slate, clicks):
    """Iteration t as the runner plays it once ``slate`` is chosen: prepare, then update with its clicks."""
    policy.prepare(user)
    view = RoundView(t, user, CatalogPool(policy.catalogue, np.arange(1, 17), Budget(None)))
    policy.update(view, np.array(slate), np.array(clicks))


def assert_fitted(model, before, logits, y, steps, lr):
    """``model`` is ``before`` after ``steps`` fresh-Adam steps of BCE of ``logits()`` (of ``before``) against y."""
    adam_fit(before, lambda: torch.nn.functional.binary_cross_entropy_with_logits(logits(), y), steps, lr)
    for expected, fitted in zip(before.parameters(), model.parameters()):
        np.testing.assert_allclose(fitted.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_n_glm_folds_every_recommended_item_and_its_topic_and_fits_each_once_at_lr_0_01():
    """Zhang et al. 2022: M_u gains every recommended x, clicked or not, and the item and topic GLMs take one Adam
    step (the authors' N-GLM) at lr 0.01 on the round's clicks and 1.5× non-clicks: from θ = 0 that step is
    −0.01 · sign(∇BCE) = 0.01 · sign(Σ (y − ½) x)."""
    policy = started(NeuralGLMUCB, two_stage=True)
    feed(policy, 0, 0, [1, 5, 9], [1, 1, 0])  # items of topics 0, 1, 2; two clicks keep the one non-click
    X, V = policy.item_vectors[[1, 5, 9]].double().numpy(), policy.topic_vectors[[0, 1, 2]].double().numpy()
    np.testing.assert_allclose(policy.item_glm.gram[0].A_inv.numpy(), np.linalg.inv(np.eye(64) + X.T @ X), atol=1e-9)
    np.testing.assert_allclose(policy.topic_glm.gram[0].A_inv.numpy(), np.linalg.inv(np.eye(64) + V.T @ V), atol=1e-9)
    for glm, F in ((policy.item_glm, X), (policy.topic_glm, V)):
        linear = glm.model[0]
        np.testing.assert_allclose(linear.weight.detach().numpy()[0], 0.01 * np.sign(F[0] + F[1] - F[2]), atol=1e-5)
        np.testing.assert_allclose(linear.bias.item(), 0.01, rtol=1e-5)  # Σ (y − ½) = ½


def test_n_glm_fits_each_user_on_that_users_rounds_alone():
    """Eq. (2)'s θ_u is per user: user 1's first step sees only user 1's round, 0.01 · sign(Σ (y − ½) x)."""
    policy = started(NeuralGLMUCB)
    feed(policy, 0, 0, [1, 5, 9], [0, 1, 1])
    feed(policy, 1, 1, [2, 6, 10], [1, 1, 0])
    X = policy.item_vectors[[2, 6, 10]].double().numpy()
    weight = policy.item_glm.model[1].weight.detach().numpy()[0]
    np.testing.assert_allclose(weight, 0.01 * np.sign(X[0] + X[1] - X[2]), atol=1e-5)


def test_n_glm_refits_a_user_on_all_that_users_rounds_since_the_item_update():
    """Each iteration the user's θ_u takes its step on all of the user's rounds buffered since the item update."""
    policy = started(NeuralGLMUCB)
    model = torch.nn.Linear(64, 1).double()
    with torch.no_grad():  # θ_u starts at 0
        model.weight.zero_()
        model.bias.zero_()
    feed(policy, 0, 0, [1, 5, 9], [0, 1, 1])
    feed(policy, 1, 1, [3, 7, 11], [1, 0, 1])
    feed(policy, 2, 0, [2, 6, 10], [1, 1, 0])
    X = policy.item_vectors[[1, 5, 9, 2, 6, 10]].double()  # clicks and 1.5× non-clicks: every item of both rounds
    y = torch.tensor([0.0, 1.0, 1.0, 1.0, 1.0, 0.0], dtype=torch.float64)
    adam_fit(model, lambda: torch.nn.functional.binary_cross_entropy_with_logits(model(X[:3])[:, 0], y[:3]), 1, 0.01)
    assert_fitted(policy.item_glm.model[0], model, lambda: model(X)[:, 0], y, 1, 0.01)  # user 1's round left out


def test_glm_ucb_scores_a_new_users_unit_title_features_one_half_plus_beta():
    """GLM (Eq. 2) on unit-norm title features: before any feedback ρ(0) + β‖x‖_I = ½ + 0.1."""
    policy = started(GLMUCB)
    np.testing.assert_allclose(policy.item_scores(0, np.arange(1, 17)), 0.6, rtol=1e-9)


@pytest.mark.parametrize(("cls", "lr"), [(SNGALM, 0.01), (SNGBLM, 0.001)])
def test_a_shared_glm_fits_from_the_second_iteration_on_every_buffered_round_with_each_users_current_z(cls, lr):
    """Zhang et al. 2022: the shared GLMs take 5 Adam steps at lr 0.01 (bilinear 0.001) per iteration from t = 1,
    on the rounds since the item-model update, with z from each round's user's current history (the authors'
    code); the topic GLM fits the same samples mapped to their topics, with the topic-user vectors."""
    policy = started(cls, two_stage=True)
    items, topics = copy.deepcopy(policy.item_glm.model), copy.deepcopy(policy.topic_glm.model)
    feed(policy, 0, 0, [2, 3, 4], [1, 1, 0])
    assert all(torch.equal(a, b) for a, b in zip(items.parameters(), policy.item_glm.model.parameters()))
    feed(policy, 1, 1, [6, 7, 8], [0, 1, 1])
    histories = policy.history_of([0, 0, 0, 1, 1, 1])  # 1, 5, 2, 3 and 9, 7, 8
    y = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    X, Z = policy.item_vectors[[2, 3, 4, 6, 7, 8]], policy.user_vectors(histories)
    assert_fitted(policy.item_glm.model, items, lambda: items(X, Z), y, 5, lr)
    with torch.no_grad():
        Z = policy.topic_model.user_vectors(policy.topic_item_vectors, torch.as_tensor(histories))
    V = policy.topic_vectors[[0, 0, 0, 1, 1, 1]]  # items 1–4 are topic 0, 5–8 topic 1
    assert_fitted(policy.topic_glm.model, topics, lambda: topics(V, Z), y, 5, lr)


def test_2_s_n_galm_folds_the_recommended_topics_with_the_topic_user_vector():
    """The topic stage is S-N-GALM on (topic vector, topic-user vector), with its own A_x and A_z."""
    policy = started(SNGALM, two_stage=True)
    feed(policy, 0, 0, [1, 5, 6], [1, 0, 0])
    V, z = policy.topic_vectors[[0, 1, 1]].double().numpy(), policy.z_topic.double().numpy()
    glm = policy.topic_glm
    np.testing.assert_allclose(glm.A_x.A_inv.numpy(), np.linalg.inv(np.eye(64) + V.T @ V), atol=1e-9)
    np.testing.assert_allclose(glm.A_z.A_inv.numpy(), np.linalg.inv(np.eye(64) + 3 * np.outer(z, z)), atol=1e-9)


@pytest.mark.parametrize("cls", [NeuralGLMUCB, SNGALM])
def test_the_glm_samples_are_cleared_when_the_item_model_updates(cls):
    """The authors' code clears the GLM buffer at every item-model update (t > 0, t % l_n = 0)."""
    policy = started(cls, item_update_every=2)
    for t, n in ((0, 1), (1, 2), (2, 1), (3, 2)):
        feed(policy, t, 0, [1, 5, 9], [1, 0, 0])
        buffered = policy.samples if cls is SNGALM else policy.samples[0]  # shared, or user 0's
        assert len(buffered) == n, t


def test_the_neural_models_update_every_l_t_and_l_n_iterations_after_the_first():
    """Zhang et al. 2022: the topic model updates every l_t iterations, the item model every l_n (t > 0)."""
    policy = started(NeuralDropoutUCB, two_stage=True, item_update_every=4, topic_update_every=2)
    changed = []
    for t in range(5):
        items, topics = policy.item_vectors, policy.topic_vectors
        feed(policy, t, 0, [1, 5, 9], [1, 0, 0])
        changed.append((not torch.equal(items, policy.item_vectors), not torch.equal(topics, policy.topic_vectors)))
    assert changed == [(False, False), (False, False), (False, True), (False, False), (True, True)]


def test_the_item_model_trains_on_each_click_against_four_non_clicks_padded_with_item_0(monkeypatch):
    """The authors' NRMS update: per click of a round with a non-click, the click, up to 4 of the round's non-clicks
    and padding, with the history the slate was chosen with; the rounds are dropped after each update."""
    from banditbench.algos import slate_neural

    seen = []
    monkeypatch.setattr(slate_neural, "train_items", lambda model, titles, topic_of, h, c, **kw: seen.append((h, c)))
    policy = started(NeuralDropoutUCB, item_update_every=2)
    feed(policy, 0, 0, [2, 3, 4], [1, 0, 0])
    feed(policy, 1, 0, [6, 7, 8], [1, 1, 1])  # no non-click: no sample
    feed(policy, 2, 1, [10, 11, 12], [0, 1, 0])
    feed(policy, 3, 0, [13, 14, 15], [1, 1, 0])
    feed(policy, 4, 0, [2, 6, 10], [0, 0, 1])
    (histories, candidates), (later, _) = seen
    assert [c[0] for c in candidates] == [2, 11]
    assert [sorted(c[1:3]) for c in candidates] == [[3, 4], [10, 12]] and not candidates[:, 3:].any()
    np.testing.assert_array_equal(histories[:, :2], [[1, 5], [9, 0]])  # before the rounds' clicks
    assert len(later) == 2 + 1  # rounds 3 and 4 only: one sample per click


def test_the_topic_model_trains_on_a_clicked_topic_against_a_non_clicked_one_of_the_same_round(monkeypatch):
    """Zhang et al. 2022's topic model: BCE on (topic of a click, topic of a non-click of the same round); a round
    all clicked or without a click gives no pair."""
    from banditbench.algos import slate_neural

    seen = {}
    monkeypatch.setattr(
        slate_neural, "train_topics", lambda model, titles, topic_of, h, pos, neg, **kw: seen.update(pos=pos, neg=neg)
    )
    policy = started(NeuralDropoutUCB, two_stage=True, topic_update_every=3)
    for t, (slate, clicks) in enumerate(
        [([1, 5, 9], [1, 0, 0]), ([2, 6, 10], [1, 1, 1]), ([3, 7, 11], [0, 0, 0]), ([13, 14, 4], [0, 1, 0])]
    ):
        feed(policy, t, 0, slate, clicks)
    np.testing.assert_array_equal(seen["pos"], [0, 3])
    assert seen["neg"][0] in (1, 2) and seen["neg"][1] in (3, 0)


def test_n_greedy_scores_items_and_topics_by_their_dot_product_with_the_users_vectors():
    """Zhang et al. 2022, N-Greedy: α(u, i) = x_iᵀz_u, z_u from u's last clicks by the item model; 2-N-Greedy's topic
    stage: α1(u, v) = vᵀz_u from the topic model's user tower."""
    policy = started(NeuralGreedy, two_stage=True)
    policy.prepare(0)
    history = policy.history_of([0])
    with torch.no_grad():
        z = policy.item_model.user_vectors(policy.item_vectors, history)[0].numpy()
        z_topic = policy.topic_model.user_vectors(policy.topic_item_vectors, torch.as_tensor(history))[0].numpy()
    items = np.array([2, 7, 11])
    np.testing.assert_allclose(policy.item_scores(0, items), policy.item_vectors[items].numpy() @ z, rtol=1e-5)
    np.testing.assert_allclose(policy.topic_scores(0, np.arange(4)), policy.topic_vectors.numpy() @ z_topic, rtol=1e-5)


def test_n_dropout_ucb_scores_the_mean_plus_beta_population_std_of_its_dropout_passes():
    """Zhang et al. 2022, N-Dropout: α = mean(Y) + β std(Y) over the 5 passes ŷ^k = x^kᵀz^k (population std)."""
    policy = started(NeuralDropoutUCB, beta=0.3)
    policy.prepare(0)
    items = np.array([2, 7, 11])
    passes = np.stack([policy.item_banks[k, items].numpy() @ policy.z_banks[k].numpy() for k in range(5)])
    assert passes.std(0).min() > 0  # the passes differ
    np.testing.assert_allclose(policy.item_scores(0, items), passes.mean(0) + 0.3 * passes.std(0), rtol=1e-5)


def test_n_dropout_ucb_takes_each_passs_user_vector_from_that_passs_item_vectors():
    """Zhang et al. 2022: "the dropout uncertainty includes both the user and item uncertainty": z^k from bank k."""
    policy = started(NeuralDropoutUCB)
    policy.prepare(0)
    history = policy.history_of([0])
    for k in range(5):
        z = policy.item_model.user_vectors(policy.item_banks[k], history)[0]
        np.testing.assert_allclose(policy.z_banks[k].numpy(), z.numpy(), rtol=1e-5, atol=1e-7)
    assert not torch.allclose(policy.z_banks[0], policy.z_banks[1])


def test_2_n_dropout_ucb_scores_topics_by_the_mean_plus_beta_std_of_the_topic_passes():
    policy = started(NeuralDropoutUCB, two_stage=True, beta=0.3)
    policy.prepare(0)
    passes = policy.topic_banks.numpy() @ policy.z_topic.numpy()  # [5 passes, 4 topics]
    expected = passes.mean(0) + 0.3 * passes.std(0)
    np.testing.assert_allclose(policy.topic_scores(0, np.arange(4)), expected, rtol=1e-5)


def test_title_features_are_unit_rows_of_the_words_alone_and_a_topics_the_normalised_mean():
    """GLM's GloVe stand-in: unit-norm LSA rows of the titles' bags of words; padding (word 0) counts for nothing."""
    titles = np.array([[0, 0, 0], [3, 4, 0], [0, 4, 3], [5, 6, 6], [3, 3, 7], [1, 2, 8], [2, 9, 1], [8, 8, 5]])
    features = title_features(titles, 10, 2)  # rank 6 in 2 dimensions: the raw rows are shorter than 1
    np.testing.assert_allclose(features[0], 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(features[1:], axis=1), 1, rtol=1e-9)
    np.testing.assert_allclose(features[1], features[2], atol=1e-9)  # the same words
    policy = started(GLMUCB, two_stage=True)
    mean = policy.features[policy.catalogue.topic_items[2]].numpy().mean(0)
    np.testing.assert_allclose(policy.topic_features[2].numpy(), mean / np.linalg.norm(mean), rtol=1e-9)


# -- the protocol's draws -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mind(tmp_path_factory):
    return load_dataset(prepare_both(tmp_path_factory.mktemp("draws")), "mind")


def environment(dataset, budget, seed=123, users=4):
    """The protocol's draws alone: no pre-training, and a simulator that only names its flip rate."""
    settings = {"users": users, "pretrain": False, "slate_size": 2}
    return TwoStageEnvironment(dataset, np.random.SeedSequence(seed), settings, budget, SimpleNamespace(flip=0.1))


def test_a_trial_draws_its_users_from_its_own_stream_and_serves_each_of_them(mind):
    """U_τ is the first ``users`` of a permutation of the known split's candidate users by the trial's own child of
    the seed (the rounds draw from the other child); each round serves one of them, uniformly."""
    env = environment(mind, budget=3)
    trial, _ = np.random.SeedSequence(123).spawn(2)
    candidates = known_split(env.data, 0.2).candidate_users
    np.testing.assert_array_equal(env.users, np.sort(np.random.default_rng(trial).permutation(candidates)[:4]))
    served = np.array([r.user for r in env.rounds(400)])
    counts = np.array([(served == u).sum() for u in env.users])
    assert counts.sum() == 400 and stats.chisquare(counts).pvalue > 1e-3


def test_topic_pretraining_leaves_out_clicks_without_a_non_clicked_item(mind, monkeypatch):
    """A click whose impression shows no other item has only padding (item 0) as its negative: the item model
    trains on it, the topic model's pairs (clicked topic against a non-clicked one) leave it out."""
    from banditbench.envs import learners
    from banditbench.envs.twostage import logged_data

    real, seen = learners.click_rows, {}

    def half_padded(*args, **kwargs):
        rows = real(*args, **kwargs)
        rows.candidates[::2, 1] = 0
        seen.update(rows=len(rows.candidates), real=int((rows.candidates[:, 1] > 0).sum()))
        return rows

    def topic_pairs(model, titles, topic_of, histories, clicked, other, **settings):
        seen.update(pairs=len(histories), other=len(other))

    monkeypatch.setattr(learners, "click_rows", half_padded)
    monkeypatch.setattr(learners, "train_topics", topic_pairs)
    learners.pretrain(logged_data(mind), np.array([], np.int64), fraction=0.2, epochs=1, seed=0, topics=True)
    assert seen["pairs"] == seen["other"] == seen["real"] and 0 < seen["real"] < seen["rows"]


def test_candidates_are_budget_distinct_items_or_the_whole_catalogue_in_order(mind):
    n = environment(mind, budget=None).catalogue.n_items
    for budget in (None, n, n + 5):
        assert all(np.array_equal(r.candidates, np.arange(1, n + 1)) for r in environment(mind, budget).rounds(5))
    drawn = [r.candidates for r in environment(mind, budget=3).rounds(300)]
    assert all(len(set(c)) == 3 and 1 <= c.min() and c.max() <= n for c in drawn)
    assert set(np.concatenate(drawn)) == set(range(1, n + 1))


def test_a_budget_as_large_as_the_slate_is_accepted(tmp_path):
    dataset = SimpleNamespace(path=tmp_path, name="fake")  # no trained simulator: the check after the budget's
    with pytest.raises(UserError, match="no trained simulator"):
        TwoStageEnvironment.check(dataset, {**TwoStageEnvironment.SETTINGS, "slate_size": 5}, budget=5)
    with pytest.raises(SettingError, match="smaller than the slate"):
        TwoStageEnvironment.check(dataset, {**TwoStageEnvironment.SETTINGS, "slate_size": 5}, budget=4)


def test_a_slate_rounds_outcome_is_its_clicks_ctr_and_regret_against_one_minus_the_flip():
    """Zhang et al. 2022: CTR y_t / m; regret against the optimum 1 − flip = 0.9 of the slate's expected CTR."""
    rounds = SlateRounds.__new__(SlateRounds)  # no simulator: the outcome reads only m, the flip and what was recorded
    rounds.m, rounds.env = 3, SimpleNamespace(flip=0.1)
    rounds.use(rounds.new_columns(2), policy=None)
    for t, (clicks, expected) in enumerate([([1, 0, 1], [0.5, 0.2, 0.8]), ([0, 0, 0], [0.1, 0.1, 0.4])]):
        rounds.expected_clicks = np.array(expected)
        rounds.record(t, SimpleNamespace(user=t), np.array([4, 5, 6]), np.array(clicks))
    columns, _, metadata = rounds.outcome(2)
    assert columns["clicks"].tolist() == [2, 0] and columns["ctr"].tolist() == [2 / 3, 0.0]
    np.testing.assert_allclose(columns["expected_reward"], [0.5, 0.2])
    np.testing.assert_allclose(columns["regret"], [0.4, 0.7])
    assert columns["best_expected_reward"].tolist() == [0.9, 0.9] and metadata == {"ctr_optimum": 0.9}


# -- end to end ---------------------------------------------------------------------------------------------------

RUN = (
    "--rounds",
    "60",
    "--seeds",
    "2",
    "--budget",
    "20",
    "--env",
    "users=4",
    "--env",
    "slate_size=3",
    "--env",
    "pretrain_epochs=1",
    "--jobs",
    "1",
)
FIVE_USERS = tuple("users=5" if a == "users=4" else a for a in RUN)  # one --env per setting


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("twostage")
    prepare_both(root)
    for name in ("mind", "movielens-logged"):
        done = banditbench(
            "run",
            "--dataset",
            name,
            "--algos",
            "slate-random",
            "--data-dir",
            root / "ds",
            "--out",
            root / f"none-{name}",
        )
        assert done.returncode == 2 and f"run `banditbench simulator train {name}` first" in done.stderr
        done = banditbench("simulator", "train", name, "--data-dir", root / "ds", "--epochs", "1", "--dim", "16")
        assert done.returncode == 0, done.stderr
    return root


def two_policies_run(trained, name):
    """The run of slate-random and 2-n-greedy on ``name``, made once per test process (tests in other processes
    each have their own ``trained`` folder)."""
    out = trained / f"run-{name}"
    if not (out / "manifest.json").exists():
        args = ("run", "--dataset", name, "--algos", "slate-random,2-n-greedy", "--data-dir", trained / "ds")
        done = banditbench(*args, "--out", out, *RUN)
        assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("name", ["mind", "movielens-logged"])
def test_prepare_train_run_two_policies_and_report_ctr(trained, name):
    out = two_policies_run(trained, name)
    shard = pq.read_table(out / "shards" / "2-n-greedy-seed0.parquet").to_pandas()
    assert len(shard) == 60 and set(shard.slate_size) == {3}
    slates, clicked = np.stack(shard.slate), np.stack(shard.clicked)
    assert all(len(set(s)) == 3 for s in slates)
    assert (shard.clicks == clicked.sum(1)).all() and np.allclose(shard.ctr, shard.clicks / 3)
    assert np.allclose(shard.regret, 0.9 - shard.expected_reward)
    assert set(np.round(shard.expected_reward * 3, 6)) <= {0.3, 1.1, 1.9, 2.7}  # 0.1 or 0.9 per slot
    assert shard.budget_spent.max() <= 20 and shard.budget_spent.min() > 0
    random_shard = pq.read_table(out / "shards" / "slate-random-seed0.parquet").to_pandas()
    assert (random_shard.user == shard.user).all() and random_shard.budget_spent.max() == 0  # same users (CRN)
    report = banditbench("report", out, "--format", "csv")
    assert report.returncode == 0, report.stderr
    assert "cumulative CTR" in report.stdout and "2-n-greedy" in report.stdout


def test_the_ctr_table_prints_each_algorithms_interval(trained):
    results = bb.load(two_policies_run(trained, "mind"))
    summary, text = results.summary().set_index("algorithm"), results.report("md")
    for algorithm in ("slate-random", "2-n-greedy"):
        low, high = summary.loc[algorithm, ["ctr_ci_low", "ctr_ci_high"]]
        assert low < high and f"| [{low:.2f}, {high:.2f}] |" in text, algorithm


def test_a_repeated_run_gives_bit_identical_shards(trained):
    for out in ("again-1", "again-2"):
        done = banditbench(
            "run",
            "--dataset",
            "mind",
            "--algos",
            "s-n-galm-ucb",
            "--data-dir",
            trained / "ds",
            "--out",
            trained / out,
            *RUN,
        )
        assert done.returncode == 0, done.stderr
    first, second = (trained / out / "shards" / "s-n-galm-ucb-seed1.parquet" for out in ("again-1", "again-2"))
    assert first.read_bytes() == second.read_bytes()


def test_settings_are_part_of_the_config_and_bad_ones_are_one_line_errors(trained):
    out = two_policies_run(trained, "mind")
    meta = pq.read_table(out / "shards" / "slate-random-seed0.parquet").schema.metadata[b"banditbench"]
    assert b'"slate_size": 3' in meta and b'"users": 4' in meta and b'"ctr_optimum": 0.9' in meta
    resumed = banditbench(
        "run",
        "--dataset",
        "mind",
        "--algos",
        "slate-random,2-n-greedy",
        "--data-dir",
        trained / "ds",
        "--out",
        out,
        *FIVE_USERS,
        "--resume",
    )
    assert resumed.returncode == 2 and "env.users: 4 in the folder, 5 now" in resumed.stderr
    other = trained / "run-mind-5-users"
    assert (
        banditbench(
            "run",
            "--dataset",
            "mind",
            "--algos",
            "slate-random",
            "--data-dir",
            trained / "ds",
            "--out",
            other,
            *FIVE_USERS,
        ).returncode
        == 0
    )
    mixed = banditbench("report", out, other, "--format", "none")  # the report refuses mixed protocol settings
    assert mixed.returncode == 2 and "differ in env" in mixed.stderr
    for args, message in (
        (("--algos", "random"), "random cannot run under protocol 'twostage'"),
        (("--algos", "n-greedy", "--env", "colour=red"), "protocol 'twostage' has no such"),
        (("--algos", "n-greedy", "--env", "users=many"), "--env users='many': expected a int"),
        (("--algos", "n-greedy", "--budget", "2"), "smaller than the slate"),
        (("--algos", "2-n-greedy", "--env", "slate_size=50"), "topics for a slate of 50"),
    ):
        done = banditbench(
            "run",
            "--dataset",
            "mind",
            "--data-dir",
            trained / "ds",
            "--out",
            trained / "bad",
            *(() if "slate_size=50" in args else ("--env", "slate_size=3")),  # one --env per setting
            *args,
        )
        assert done.returncode == 2 and message in done.stderr and not (trained / "bad").exists(), done.stderr


def test_shards_of_one_folder_that_disagree_on_the_ctr_optimum_need_allow_mixed(trained, tmp_path):
    """A shard whose metadata names another CTR optimum (every checksum forged to match) stops the report; with
    --allow-mixed the regret is counted against the highest optimum."""
    out = tmp_path / "mixed"
    shutil.copytree(two_policies_run(trained, "mind"), out)
    path = out / "shards" / "slate-random-seed1.parquet"
    pq.write_table(with_metadata(pq.read_table(path), ctr_optimum=0.8), path)
    forge_record(path)
    with pytest.raises(UserError, match=r"shards disagree on the CTR optimum \(\[0.8, 0.9\]\); pass --allow-mixed"):
        bb.load(out)
    rounds = bb.load(out, allow_mixed=True).frame()
    rounds = rounds[(rounds["algorithm"] == "slate-random") & (rounds["seed"] == 1)]
    np.testing.assert_allclose(rounds["ctr_regret"], 0.9 * (rounds["t"] + 1) - rounds["cumulative_ctr"])


def test_the_papers_tables_are_runnable_presets():
    from banditbench.presets import PRESETS, missing_for, preset_settings

    names = [n for n in PRESETS if n.startswith("twostage-")]
    assert len(names) == 6 and all(missing_for(n) == [] for n in names)
    table5 = preset_settings("twostage-table5-movielens-20m")
    assert table5["dataset"] == "movielens-logged" and table5["budget"] == 1000
    assert table5["env"] == {"users": 100, "slate_size": 5} and "2-s-n-gblm-ucb" in table5["algos"]
    assert preset_settings("twostage-table6-mind")["budget"] is None
