"""Clustering-of-bandits and multi-agent linear algorithms (issue 4): behaviour that would break if they were wrong."""

import numpy as np
import pytest

from banditbench.algos import ALGORITHMS
from banditbench.algos.bass import BASS, separation_test
from banditbench.algos.graphs import delete_edges, initial_graph
from banditbench.algos.ridge import RidgeStats, club_confidence, oful_radius
from banditbench.data import load_dataset, synthetic
from banditbench.envs import BudgetExceeded
from banditbench.envs.round import RoundView
from banditbench.runner import Unit, run_unit

NOISE = 0.1  # the small fixtures' σ; BASS and the Ghosh algorithms are given the true σ, as in the papers
TRUE_SIGMA = {"bass": {"sigma": NOISE}, "cmlb": {"sigma": NOISE}, "sclb": {"sigma": NOISE}, "pmlb": {"sigma": NOISE}}


def make(tmp_path, name, **options):
    folder = tmp_path / name
    kw = dict(users=20, clusters=2, dim=5, arms=10, noise=NOISE, z=0.0, seed=0) | options
    synthetic.prepare(folder, **kw)
    return load_dataset(folder, "synthetic")


def run(dataset, algorithm, rounds, params=None, budget=None, seed_index=0):
    protocol = dataset.manifest["protocol"]
    params = {**TRUE_SIGMA.get(algorithm, {}), **(params or {})}
    return run_unit(
        Unit("synthetic", protocol, algorithm, params, 0, seed_index, rounds, budget), dataset
    ).outcome.to_pandas()


def final(outcome, column):
    return outcome[column].dropna().iloc[-1]


@pytest.fixture(scope="module")
def async_data(tmp_path_factory):
    return make(tmp_path_factory.mktemp("a"), "async")


@pytest.fixture(scope="module")
def sync_data(tmp_path_factory):
    return make(tmp_path_factory.mktemp("s"), "sync", protocol="synchronous")


# Sharing pays only when a user's own samples are scarce: 50 users, d = 8, σ = 0.2, T = 5000 (100 pulls each).
# The papers line-search the clustering thresholds; these are values from such a search on this setting
# (CLUB's α₂ = 1 cuts too late here; BASS with the theory's γ < 1, cf. γ* ≈ 0.29, and δ = 0.1).
ASYNC_SETTINGS = {
    "club": {"alpha2": 0.7},
    "bass": {"sigma": 0.2, "delta": 0.1, "gamma": 0.5},
    "locb": {},
    "sclub": {},
    "dynucb": {"n_clusters": 2},
}


@pytest.fixture(scope="module")
def scarce_async(tmp_path_factory):
    return make(tmp_path_factory.mktemp("sa"), "scarce", users=50, dim=8, noise=0.2)


@pytest.mark.parametrize("algorithm", sorted(ASYNC_SETTINGS))
def test_recovers_well_separated_clusters_and_beats_independent_and_random(algorithm, scarce_async):
    out = run(scarce_async, algorithm, 5000, ASYNC_SETTINGS[algorithm])
    assert final(out, "diag_ari") >= 0.9
    regret = out["regret"].sum()
    assert regret < run(scarce_async, "linucb-ind", 5000)["regret"].sum()
    assert regret < 0.2 * run(scarce_async, "random", 5000)["regret"].sum()


def test_cmlb_recovers_clusters_and_beats_independent_oful_and_random(tmp_path):
    """Ghosh et al. §6.1 on synchronous rounds, T = 1000 steps: CMLB against their LinUCB-Ind, an independent
    copy of the same OFUL per user (CMLB whose exploration phase never ends: C huge)."""
    dataset = make(tmp_path, "ghosh", users=30, dim=8, noise=0.5, protocol="synchronous")
    rounds = 30 * 1000
    out = run(dataset, "cmlb", rounds, {"sigma": 0.5})
    assert final(out, "diag_ari") >= 0.9
    independent = run(dataset, "cmlb", rounds, {"sigma": 0.5, "C": 1e6})
    assert final(independent, "diag_n_clusters") == 30
    assert out["regret"].sum() < 0.85 * independent["regret"].sum()
    assert out["regret"].sum() < 0.1 * run(dataset, "random", rounds)["regret"].sum()


@pytest.mark.parametrize(
    "algorithm,protocol",
    [
        ("club", "linear"),
        ("bass", "linear"),
        ("sclub", "linear"),
        ("dynucb", "linear"),
        ("locb", "linear"),
        ("cmlb", "synchronous"),
    ],
)
def test_with_a_single_cluster_they_approach_one_shared_linucb(tmp_path, algorithm, protocol):
    if algorithm != "cmlb":
        dataset = make(tmp_path, "one", clusters=1, protocol=protocol)
        rounds, params = 3000, {"n_clusters": 1} if algorithm == "dynucb" else {}
    else:  # CMLB's gain is the averaged noise, so σ = 0.5 here, over the paper's T = 1000 steps
        dataset = make(tmp_path, "one", clusters=1, protocol=protocol, noise=0.5)
        rounds, params = 20 * 1000, {"sigma": 0.5}
    out = run(dataset, algorithm, rounds, params)
    if algorithm == "cmlb":  # Ghosh et al.'s references use the same OFUL: shared from the start (C = 0: no
        # exploration, every zero estimate in one cluster) and independent throughout (C huge)
        one = run(dataset, "cmlb", rounds, {**params, "C": 0.0})["regret"].sum()
        ind = run(dataset, "cmlb", rounds, {**params, "C": 1e6})["regret"].sum()
    else:
        one = run(dataset, "linucb-one", rounds)["regret"].sum()
        ind = run(dataset, "linucb-ind", rounds)["regret"].sum()
    assert final(out, "diag_n_clusters") == 1
    assert out["regret"].sum() < ind
    assert out["regret"].sum() < one + 0.5 * (ind - one)


def test_cofiba_recovers_user_clusters_and_beats_independent_and_random(scarce_async):
    """On fresh contexts the item side has nothing to find (every user's reward is linear over all items), so
    one item node (``item_pool=1``) isolates COFIBA's user side. Its item-dependent test |(w_i − w_ℓ)ᵀx̄| sees only
    a projection of the gap between users, so no single α₂ does both here: α₂ = 0.3 recovers the clusters
    (ARI 0.96) but cuts so late that it pays more than LinUCB-Ind; α₂ = 0.15 beats LinUCB-Ind with ARI 0.82."""
    independent = run(scarce_async, "linucb-ind", 5000)["regret"].sum()
    random = run(scarce_async, "random", 5000)["regret"].sum()
    recovering = run(scarce_async, "cofiba", 5000, {"alpha2": 0.3, "alpha": 0.5, "item_pool": 1})
    assert final(recovering, "diag_ari") >= 0.9 and final(recovering, "diag_n_item_clusters") == 1
    assert recovering["regret"].sum() < 0.25 * random
    sharing = run(scarce_async, "cofiba", 5000, {"alpha2": 0.15, "alpha": 0.5, "item_pool": 1})
    assert final(sharing, "diag_ari") >= 0.8
    assert sharing["regret"].sum() < independent and sharing["regret"].sum() < 0.2 * random


# --- COFIBA's item side ---------------------------------------------------------------------------------------


def test_cofiba_clusters_items_by_whether_the_user_clusters_agree_on_them():
    """Two user clusters θ = (0.6, ±0.8, 0) agree on items along e1 and disagree on items along ±e2: the item
    graph splits the catalogue into exactly those two item clusters (the neighbourhood of a user w.r.t. an e1
    item is everybody, w.r.t. an e2 item its own cluster)."""
    from banditbench.envs import Budget, Round

    truth = np.arange(20) % 2
    theta = np.array([[0.6, 0.8, 0.0], [0.6, -0.8, 0.0]])
    catalogue = np.array([[1, 0, 0], [1, 0, 0.3], [0, 1, 0], [0, -1, 0]]) / np.array(
        [[1], [np.hypot(1, 0.3)], [1], [1]]
    )
    for seed in range(3):
        rng = np.random.default_rng(seed)
        policy = ALGORITHMS["cofiba"].build(
            n_users=20, n_arms=4, dim=3, seed=np.random.SeedSequence(seed), params={"alpha2": 0.3}
        )  # a group of one
        for t in range(3000):
            user, arms = int(rng.integers(20)), catalogue[rng.permutation(4)]
            expected = arms @ theta[truth[user]]
            rnd = Round(t, user, arms, expected + 0.1 * rng.standard_normal(4), expected, int(truth[user]))
            budget = Budget()
            view = rnd.view(budget)
            (chosen,) = policy.select([view], [budget])
            budget.close()
            policy.update([view], [chosen], [rnd.rewards[chosen]])
        n = policy.n_items[0]
        node = [int(np.flatnonzero((policy.items[0, :n] == z).all(axis=1))[0]) for z in catalogue]
        label = policy.item_label[0, node]
        assert label[0] == label[1] != label[2] == label[3]
        assert policy.diagnostics(0) == {"n_item_clusters": 2.0}


def test_cofiba_item_slots_keep_their_clusters_when_new_contexts_arrive():
    """With ``item_nodes="slots"`` (Ban's copy of COFIBA) an item node is an arm position: a round's contexts replace
    the slots' contexts and leave the item graph and its clusters as they were, even when each slot now holds a
    context another slot held before (a node discovered later would join its nearest node's cluster instead)."""
    policy = one_member("cofiba", 6, 4, 3, item_nodes="slots", alpha2=0.1)
    play_random_rounds(policy, 100, users=6, arms=4, dim=3)
    label, graph = policy.item_label[0].copy(), policy.item_graph[0].copy()
    assert len(set(label.tolist())) > 1  # the item graph has split
    moved = policy.items[0][[1, 2, 3, 0]]  # slot k gets slot k + 1's context
    policy.select([RoundView(100, 0, moved)], [None])
    assert np.array_equal(policy.items[0], moved)
    assert np.array_equal(policy.item_label[0], label) and np.array_equal(policy.item_graph[0], graph)


@pytest.mark.parametrize("new_user_graph", ["copy", "fresh"])
def test_cofiba_item_split_copies_or_restarts_the_user_graph(new_user_graph):
    """When the item graph first splits, every part starts from a copy of the user graph it split from (ours), or
    with ``new_user_graph="fresh"`` (the authors' code) every part, the played item's too, from the initial complete
    user graph, all users in one cluster."""
    from banditbench.envs import Budget, Round

    truth, theta = np.arange(20) % 2, np.array([[0.6, 0.8, 0.0], [0.6, -0.8, 0.0]])
    catalogue = np.array([[1, 0, 0], [0, 1, 0], [0, -1, 0]])
    policy = one_member("cofiba", 20, 3, 3, alpha2=0.3, new_user_graph=new_user_graph)
    rng = np.random.default_rng(0)
    for t in range(500):
        user, arms = int(rng.integers(20)), catalogue[rng.permutation(3)]
        expected = arms @ theta[truth[user]]
        view = Round(t, user, arms, expected, expected, int(truth[user])).view(Budget())
        (chosen,) = policy.select([view], [Budget()])
        policy.update([view], [chosen], [float(expected[chosen] + 0.1 * rng.standard_normal())])
        if policy.in_use[0].sum() > 1:
            break
    graphs = [policy.user_graph[0][int(j)] for j in np.flatnonzero(policy.in_use[0])]
    complete = [bool((graph == ~np.eye(20, dtype=bool)).all()) for graph in graphs]
    assert len(graphs) == 2 and complete == [new_user_graph == "fresh"] * 2
    assert np.array_equal(*graphs) and (len(set(policy.clusters(0).tolist())) == 1) == (new_user_graph == "fresh")


@pytest.mark.parametrize("random_init_graph", [False, True])
def test_cofiba_random_initial_graph_starts_item_and_user_graphs_sparse(random_init_graph):
    """``random_init_graph`` (the authors' code) starts both the item graph and the user graph as G(m, 3 ln m / m)
    (a density of 0.08 at m = 200), instead of complete graphs."""
    policy = one_member("cofiba", 200, 4, 3, item_pool=200, random_init_graph=random_init_graph)
    for graph in (policy.item_graph[0], policy.user_graph[0][0]):
        density = graph.sum() / (200 * 199)
        assert (0.05 < density < 0.11) if random_init_graph else density == 1.0


def test_cofiba_pooled_statistics_are_the_sums_of_their_members(scarce_async):
    """Every (item cluster, user cluster) slot holds λI + Σ_members G_u and Σ b_u, also after splits and with
    slots shared between item clusters."""
    from banditbench.envs import PROTOCOLS, Budget

    env = PROTOCOLS["linear"].environment(scarce_async, np.random.SeedSequence(1))
    policy = ALGORITHMS["cofiba"].build(
        n_users=50, n_arms=10, dim=8, seed=np.random.SeedSequence(2), params={"alpha2": 0.15, "item_pool": 20}
    )  # a group of one
    for rnd in env.rounds(2000):
        budget = Budget()
        view = rnd.view(budget)
        (chosen,) = policy.select([view], [budget])
        budget.close()
        policy.update([view], [chosen], [rnd.rewards[chosen]])
    active = np.flatnonzero(policy.in_use[0])
    assert active.size > 1 and len(np.unique(policy.slot_of[0, active])) > 1  # items and users split
    groups = policy.groups
    for j in active:
        for slot in np.unique(policy.slot_of[0, j]):
            gram, b, count = policy.users.pool(0, np.flatnonzero(policy.slot_of[0, j] == slot))
            np.testing.assert_allclose(groups.gram[0, slot], gram, atol=1e-9)
            np.testing.assert_allclose(groups.b[0, slot], b, atol=1e-9)
            np.testing.assert_allclose(groups.A_inv[0, slot], np.linalg.inv(np.eye(8) + gram), atol=1e-8)
            assert groups.count[0, slot] == count


# --- BASS's separation test (Definition 5.1) -------------------------------------------------------------------


def brute_force_K(c_i, Sigma_i, c_j, Sigma_j, grid=4001):
    """Gilitschenski & Hanebeck's K(s) = 1 − cᵀ(Σ_i/(1−s) + Σ_j/s)⁻¹c minimised on a fine grid of s."""
    c = c_i - c_j
    return min(1 - c @ np.linalg.solve(Sigma_i / (1 - s) + Sigma_j / s, c) for s in np.linspace(1e-6, 1 - 1e-6, grid))


def test_separation_test_matches_the_brute_force_overlap_formula_on_random_ellipsoids():
    rng = np.random.default_rng(0)
    d, signs = 4, []
    for _ in range(60):
        X, Y = rng.standard_normal((2, d, d))
        Sigma_i, Sigma_j = X @ X.T + 0.1 * np.eye(d), (Y @ Y.T + 0.1 * np.eye(d)) * rng.uniform(0.1, 3)
        c_i, c_j = rng.standard_normal(d), 2 * rng.standard_normal(d)
        K = separation_test(c_i, Sigma_i, c_j[None], np.linalg.inv(Sigma_j)[None])[0]
        expected = brute_force_K(c_i, Sigma_i, c_j, Sigma_j, grid=801)
        assert K == pytest.approx(expected, abs=2e-3 * max(1, abs(expected)))
        assert K <= expected + 1e-9  # the exact minimum is never above a grid point
        signs.append(K < 0)
    assert 5 < sum(signs) < 55  # both separated and overlapping pairs were exercised


def test_separation_test_of_several_problems_at_once_equals_each_problem_alone_bit_for_bit():
    """A lockstep group tests its members' pairs in one call, each member a segment that stops stepping when its
    own pairs have converged: its K must be those of its pairs tested alone, to the last bit."""
    rng = np.random.default_rng(2)
    d, sizes = 4, [3, 1, 5, 2]
    problems = []
    for m in sizes:
        X = rng.standard_normal((d, d))
        Y = rng.standard_normal((m, d, d))
        Sigma_j = Y @ Y.transpose(0, 2, 1) + 0.1 * np.eye(d)
        problems.append((rng.standard_normal(d), X @ X.T + 0.1 * np.eye(d), 2 * rng.standard_normal((m, d)), Sigma_j))
    alone = [separation_test(c_i, S_i, c_j, np.linalg.inv(S_j)) for c_i, S_i, c_j, S_j in problems]
    rows = (
        [np.repeat([c_i], len(c_j), 0) for c_i, _, c_j, _ in problems],
        [np.repeat([S_i], len(c_j), 0) for _, S_i, c_j, _ in problems],
    )
    together = separation_test(
        np.concatenate(rows[0]),
        np.concatenate(rows[1]),
        np.concatenate([c_j for *_, c_j, _ in problems]),
        np.linalg.inv(np.concatenate([S_j for *_, S_j in problems])),
        np.repeat(np.arange(len(sizes)), sizes),
    )
    np.testing.assert_array_equal(together, np.concatenate(alone))


def test_separation_test_closed_form_for_equal_design_matrices():
    """Lemma 5.2: with V_i = V_j = V and equal radii r, min K = 1 − ‖θ̂_i − θ̂_j‖²_V / (4 r²)."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        X = rng.standard_normal((30, 5))
        V = np.eye(5) + X.T @ X
        r = rng.uniform(0.5, 3)
        c_i, c_j = rng.standard_normal((2, 5)) * 0.5
        K = separation_test(c_i, r**2 * np.linalg.inv(V), c_j[None], (V / r**2)[None])[0]
        assert K == pytest.approx(1 - (c_i - c_j) @ V @ (c_i - c_j) / (4 * r**2), abs=1e-9)


def test_bass_skips_the_eigen_decomposition_only_for_pairs_that_intersect():
    """``BASS.separation`` settles a pair without the eigen-decomposition when a point of the segment between the
    centres lies in both ellipsoids: on agents with random samples, every pair it settles so has K ≥ 0 by the
    full test, and its cut decisions are the full test's."""
    rng = np.random.default_rng(3)
    n, d = 16, 4
    policy = BASS(n_users=n, n_arms=5, dim=d, seeds=[0], sigma=0.3)  # a group of one
    local, member = policy.local, np.zeros(n - 1, dtype=np.int64)
    for i in range(n):
        theta = 0.3 * rng.standard_normal(d)
        for x in rng.standard_normal((rng.integers(2, 80), d)):
            local.update(np.array([0]), np.array([i]), x[None], np.array([x @ theta + 0.3 * rng.standard_normal()]))
    settled = tested = cut = 0
    for i in range(n):
        others = np.delete(np.arange(n), i)
        kappa = policy.separation((np.array([0]), np.array([i])), (member, others), member)
        radius2_i, radius2_j = policy._radius2(local.logdet[0, i]), policy._radius2(local.logdet[0, others])
        full = separation_test(
            local.theta[0, i],
            radius2_i * local.A_inv[0, i],
            local.theta[0, others],
            (policy.ridge_eye + local.gram[0, others]) / radius2_j[:, None, None],
        )
        shortcut = kappa == 1  # the full test's K is below 1 for distinct centres
        assert (full[shortcut] >= 0).all()
        np.testing.assert_array_equal(kappa < 0, full < 0)
        settled, tested, cut = settled + shortcut.sum(), tested + (~shortcut).sum(), cut + (full < 0).sum()
    assert min(settled, tested - cut, cut) > 10, (settled, tested, cut)  # every case exercised


def test_bass_keeps_same_cluster_edges_and_cuts_the_others_over_a_long_run(tmp_path):
    dataset = make(tmp_path, "bass", centres="bass", omega=float(np.pi / 4), noise=0.3)
    out = run(dataset, "bass", 8000, {"sigma": 0.3, "gamma": 1.0})
    pair_f1 = out["diag_pair_f1"].dropna().to_numpy()
    assert pair_f1[-1] == 1.0  # all 90 same-cluster edges kept, all 100 cross edges cut
    assert pair_f1[0] < 0.7  # it started from the complete graph


# --- CMLB's two limits -----------------------------------------------------------------------------------------


def reference_oful_run(dataset, rounds, shared_after):
    """OFUL per user for the first T_Explore steps; afterwards, one OFUL per user restarted (``shared_after``
    False) or one OFUL shared by everybody fed the average reward (``shared_after`` True). Returns chosen arms."""
    spec = ALGORITHMS["cmlb"].defaults()
    N, d, T = 20, 5, spec["horizon"]
    explore = int(min(T, np.ceil(spec["C"] * d * (N * T) ** (2 * spec["alpha"]) * np.log(1 / spec["delta"]))))
    from banditbench.envs import PROTOCOLS
    from banditbench.runner.seeds import unit_streams

    env = PROTOCOLS["synchronous"].environment(dataset, unit_streams(0, 0)[0])
    own, fresh, shared = RidgeStats(1, N, d), RidgeStats(1, N, d), RidgeStats(1, 1, d)  # statistics of one member
    chosen, pending = [], []

    def oful(stats, k, arms, sigma):
        beta = oful_radius(stats.logdet[0, k], d, 1.0, sigma, 1.0, spec["delta"])
        widths = np.sqrt(np.maximum(stats.quadratic_forms_of(0, k, arms), 0.0))
        return int(np.argmax(arms @ stats.theta[0, k] + beta * widths))

    def learn(stats, k, x, reward):
        stats.update(np.array([0]), np.array([k]), x[None], np.array([reward]))

    for rnd in env.rounds(rounds):
        if pending and rnd.user == 0:
            learn(shared, 0, pending[0][0], np.mean([r for _, r in pending]))
            pending = []
        x_all, u = rnd.arms, rnd.user
        if rnd.step < explore:
            k = oful(own, u, x_all, NOISE)
            learn(own, u, x_all[k], rnd.rewards[k])
        elif shared_after:
            k = oful(shared, 0, x_all, NOISE / np.sqrt(N))
            pending.append((x_all[k], rnd.rewards[k]))
        else:
            k = oful(fresh, u, x_all, NOISE)
            learn(fresh, u, x_all[k], rnd.rewards[k])
        chosen.append(k)
    return np.array(chosen), explore


def test_cmlb_with_huge_threshold_is_one_shared_oful_and_with_zero_threshold_independent_ofuls(sync_data):
    rounds = 20 * 120
    for scale, shared in ((1e9, True), (0.0, False)):
        expected, explore = reference_oful_run(sync_data, rounds, shared_after=shared)
        assert 0 < explore < 120
        out = run(sync_data, "cmlb", rounds, {"threshold_scale": scale, "p_star": 0.0})
        np.testing.assert_array_equal(out["chosen"].to_numpy(), expected)
        assert final(out, "diag_n_clusters") == (1 if shared else 20)


def test_sclb_restarts_cmlb_in_doubling_phases(sync_data):
    policy = ALGORITHMS["sclb"].build(n_users=20, n_arms=10, dim=5, seed=np.random.SeedSequence(0), params={})
    ends = []
    for step in range(0, 200):
        policy._advance(step)
        ends.append(policy.phase_end)
    assert sorted(set(ends)) == [2, 6, 14, 30, 62, 126, 254]  # phases of 2, 4, 8, … steps
    assert policy.p_star == pytest.approx(1 / 49) and policy.phase_delta == pytest.approx(0.4 / 128)


def test_pmlb_learns_the_average_then_personal_offsets(sync_data):
    out = run(sync_data, "pmlb", 20 * 400)
    literal = run(sync_data, "pmlb", 20 * 400, {"literal": True})
    late = slice(20 * 300, None)
    assert out["regret"].iloc[late].mean() < 0.02
    assert out["regret"].sum() < literal["regret"].sum()


# --- contracts -------------------------------------------------------------------------------------------------

NEW = ["club", "bass", "cmlb", "sclb", "pmlb", "dynucb", "locb", "sclub", "cofiba"]


@pytest.mark.parametrize("algorithm", NEW)
def test_deterministic_and_within_budget(algorithm, async_data, sync_data):
    for dataset in (async_data, sync_data):
        first = run(dataset, algorithm, 300, budget=10)
        assert first.equals(run(dataset, algorithm, 300, budget=10))
        assert (first["budget_spent"] <= 10).all()
        assert not first.equals(run(dataset, algorithm, 300, budget=10, seed_index=1))
        with pytest.raises(BudgetExceeded):
            run(dataset, algorithm, 50, budget=9)


def test_synchronous_protocol_shows_every_user_the_same_arms_each_step(sync_data):
    from banditbench.envs import PROTOCOLS

    env = PROTOCOLS["synchronous"].environment(sync_data, np.random.SeedSequence(3))
    rounds = list(env.rounds(50))
    assert [r.t for r in rounds] == list(range(50)) and [r.user for r in rounds[:20]] == list(range(20))
    assert [r.step for r in rounds] == [t // 20 for t in range(50)]
    assert all(r.arms is rounds[0].arms for r in rounds[:20]) and rounds[20].arms is not rounds[0].arms
    np.testing.assert_allclose(rounds[5].expected, rounds[5].arms @ env.theta[5])
    assert not np.allclose(rounds[0].rewards - rounds[0].expected, rounds[1].rewards - rounds[1].expected)
    assert [r.group for r in rounds] == [int(env.group_of[r.user]) for r in rounds]  # each user's true cluster
    assert len({r.group for r in rounds}) > 1


def one_member(name: str, n_users: int, n_arms: int, dim: int, **params):
    """``name``'s policy as a group of one member, seed 0."""
    seeds = [np.random.SeedSequence(0)]
    return ALGORITHMS[name].build_members(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, params=[params])


def play_random_rounds(policy, rounds: int, users: int, arms: int, dim: int, seed: int = 0) -> None:
    """Rounds of a random user, N(0, 1) arms and N(0, 1) rewards."""
    rng = np.random.default_rng(seed)
    for t in range(rounds):
        view = RoundView(t, int(rng.integers(users)), rng.normal(size=(arms, dim)))
        policy.update([view], policy.select([view], [None]), [float(rng.normal())])


def test_club_keeps_each_served_users_confidence_width_at_its_own_pull_count():
    """CB̃_i = α₂·sqrt((1 + ln(1 + T_i)) / (1 + T_i)) (Gentile et al. 2014), T_i user i's pulls so far."""

    policy = one_member("club", 5, 4, 3, alpha2=0.7)
    play_random_rounds(policy, 40, users=5, arms=4, dim=3)
    count = policy.users.count[0]
    assert count.min() > 1 and len(set(count.tolist())) > 1
    np.testing.assert_allclose(policy.cb[0], 0.7 * club_confidence(count))


@pytest.mark.parametrize("served_pairs_only", [True, False])
def test_club_with_served_pairs_only_tests_an_edge_once_its_neighbour_has_one_pull(served_pairs_only):
    """The authors' CLUB compares the served user with neighbours already served, from their first pull on; the
    paper's with every neighbour."""
    policy = one_member("club", 3, 2, 2, alpha2=0.01, served_pairs_only=served_pairs_only)
    for t, (user, reward) in enumerate([(1, 1.0), (0, -1.0)]):
        policy.update([RoundView(t, user, np.eye(2))], [0], [reward])
    assert not policy.graph[0, 0, 1]  # user 1, served once, is far from user 0
    assert policy.graph[0, 0, 2] == served_pairs_only  # user 2, never served, is tested by the paper's rule only


@pytest.mark.parametrize("gamma, flips", [(2.0, True), (4.0, False)])
def test_locb_seeds_move_users_only_while_unfinished_at_f_above_gamma_over_4(gamma, flips, monkeypatch):
    """A seed is finished once F(N_s) ≤ γ/4 (Ban & He, NeurIPS 2021), F(0) = 1: at γ = 4 every seed is finished from
    the start and no user ever joins or leaves one; at γ = 2 seeds stay open for their first pulls."""
    from banditbench.algos.locb import LOCB

    moved = []
    monkeypatch.setattr(LOCB, "_flip", lambda self, m, s, i: moved.append((m, s, i)))
    policy = one_member("locb", 6, 4, 3, gamma=gamma)
    play_random_rounds(policy, 60, users=6, arms=4, dim=3, seed=1)
    assert bool(moved) == flips


def separating_arms(indices, n_arms: int, dim: int) -> np.ndarray:
    """An arm set [n_arms, dim] of N(0, 1) contexts on which each index (a function of the arms → [n_arms] scores)
    chooses a different arm, so that a policy's choice says which index it played."""
    rng = np.random.default_rng(5)
    for _ in range(2000):
        arms = rng.normal(size=(n_arms, dim))
        if len({int(index(arms).argmax()) for index in indices}) == len(indices):
            return arms
    pytest.fail("no arm set separates the indices")


def ucb_of(gram: np.ndarray, b: np.ndarray, alpha: float, width):
    """The index xᵀθ + α·width(xᵀA⁻¹x) of a learner's raw sums (A = I + G, θ = A⁻¹b), as a function of the arms."""
    A_inv = np.linalg.inv(np.eye(len(b)) + gram)
    return lambda arms: arms @ A_inv @ b + alpha * width(np.einsum("kd,de,ke->k", arms, A_inv, arms))


@pytest.mark.parametrize("reference_ucb", [False, True])
def test_locb_scores_a_user_no_cluster_holds_by_its_own_statistics_under_either_index(reference_ucb):
    """A user held by no seed cluster plays its own LinUCB (Ban & He, NeurIPS 2021), with the index the policy was
    given: xᵀθ_i + α·sqrt(xᵀS_i⁻¹x·log(t+1)), or the authors' xᵀθ_i + α·β(N_i, t)·xᵀS_i⁻¹x."""
    policy = one_member("locb", 4, 6, 3, alpha=1.5, reference_ucb=reference_ucb)
    play_random_rounds(policy, 80, users=4, arms=6, dim=3)
    policy.holds[0, 2] = False  # user 2 has left every seed cluster
    gram, b, count, t = policy.users.gram[0, 2], policy.users.b[0, 2], policy.users.count[0, 2], 80
    beta = np.sqrt(3 * np.log(1 + count / 3) + 4 * np.log(t) + np.log(2)) + 1
    paper = ucb_of(gram, b, 1.5, lambda quad: np.sqrt(quad * np.log(t + 1)))
    authors = ucb_of(gram, b, 1.5, lambda quad: beta * quad)
    arms = separating_arms([paper, authors], 6, 3)
    expected = (authors if reference_ucb else paper)(arms).argmax()
    assert policy.select([RoundView(t, 2, arms)], [None]) == [int(expected)]


@pytest.mark.parametrize("reference_ucb", [False, True])
def test_dynucb_scores_by_its_clusters_statistics_under_either_index(reference_ucb):
    """The served user plays its cluster's α-LinUCB xᵀθ_c + α·sqrt(xᵀA_c⁻¹x·log(t+1)) (Nguyen & Lauw, CIKM 2014), or
    the GNB baseline code's xᵀθ_c + α·xᵀA_c⁻¹x, A_c = I + Σ_{u∈c} G_u, θ_c = A_c⁻¹ Σ_{u∈c} b_u."""
    policy = one_member("dynucb", 6, 8, 3, n_clusters=2, alpha=4.0, reference_ucb=reference_ucb)
    play_random_rounds(policy, 80, users=6, arms=8, dim=3)
    members, t = policy.clusters(0) == policy.clusters(0)[1], 80  # user 1's cluster
    gram, b = policy.stats.gram[0, :6][members].sum(axis=0), policy.stats.b[0, :6][members].sum(axis=0)
    paper = ucb_of(gram, b, 4.0, lambda quad: np.sqrt(quad * np.log(t + 1)))
    code = ucb_of(gram, b, 4.0, lambda quad: quad)
    wrong = ucb_of(gram, b, 4.0, np.sqrt), ucb_of(gram, b, 1.0, lambda quad: quad)  # no log; α dropped
    arms = separating_arms([paper, code, *wrong], 8, 3)
    expected = (code if reference_ucb else paper)(arms).argmax()
    assert policy.select([RoundView(t, 1, arms)], [None]) == [int(expected)]


@pytest.mark.parametrize("centroid", ["ridge", "mean"])
def test_dynucb_moves_the_served_user_to_the_nearest_centroid(centroid):
    """After its update the served user joins argmin_c ‖θ_u − θ_c‖ (Nguyen & Lauw, CIKM 2014), θ_c the cluster's
    pooled ridge estimate (I + Σ_{u∈c} G_u)⁻¹ Σ_{u∈c} b_u, or with ``centroid="mean"`` (the authors' Java code) the
    mean of its members' θ_u; an empty cluster's θ_c is 0 either way."""
    policy = one_member("dynucb", 8, 4, 3, n_clusters=3, centroid=centroid)
    gram, b, theta = (getattr(policy.stats, name)[0, :8] for name in ("gram", "b", "theta"))  # the users' (views)
    rng, moves = np.random.default_rng(2), 0
    for t in range(80):
        view = RoundView(t, int(rng.integers(8)), rng.normal(size=(4, 3)))
        label = policy.clusters(0).copy()
        policy.update([view], policy.select([view], [None]), [float(rng.normal())])
        centres = np.zeros((3, 3))
        for c in np.unique(label):
            at = label == c
            pooled = np.linalg.solve(np.eye(3) + gram[at].sum(axis=0), b[at].sum(axis=0))
            centres[c] = pooled if centroid == "ridge" else theta[at].mean(axis=0)
        nearest = np.linalg.norm(centres - theta[view.user], axis=1).argmin()
        assert policy.clusters(0)[view.user] == nearest, t
        moves += int(nearest != label[view.user])
    assert moves > 3


SWITCHES = [
    (name, switch)
    for name in ("club", "sclub", "cofiba", "locb", "dynucb", "bass", "cmlb")
    for switch in ALGORITHMS[name].authors_code()
]
# switches whose authors' setting leaves 400 rounds of the small instance unchanged: each acts only in a state
# that instance does not reach within them (their paths: test_lockstep.py's OTHER_PATHS, the parity tests)
QUIET = {
    ("club", "random_init_graph"),
    ("club", "served_pairs_only"),
    ("sclub", "reset_checks"),
    ("cofiba", "item_nodes"),
    ("cofiba", "new_user_graph"),
    ("cofiba", "random_init_graph"),
    ("cofiba", "reference_threshold"),
    ("cofiba", "frozen_counts"),
    ("cmlb", "bandpy_clock"),
}


@pytest.mark.parametrize("name, switch", [pair for pair in SWITCHES if pair not in QUIET])
def test_each_authors_code_switch_changes_the_choices_of_a_400_round_unit(name, switch, async_data, sync_data):
    """A switch to the authors' code that changed nothing would be a switch ignored: flipped alone from the
    defaults to the authors' setting, it must change some choice of the same seed."""
    dataset = sync_data if name == "cmlb" else async_data
    value, _ = ALGORITHMS[name].authors_code()[switch]
    chosen = [run(dataset, name, 400, params)["chosen"].tolist() for params in ({}, {switch: value})]
    assert chosen[0] != chosen[1]


@pytest.mark.parametrize("convention, squared", [("paper", True), ("bandpy", False)])
def test_bass_test_radius_is_gamma_beta_squared_or_bandpys_gamma_beta(convention, squared):
    """(γβ)² (Cherkaoui, Barlier & Colin, ICML 2025) or γβ (bandpy's LBC), β the OFUL radius of log det A."""
    policy = one_member("bass", 3, 4, 5, gamma=0.3, radius_convention=convention, sigma=0.5)
    beta = oful_radius(np.array([2.0]), 5, policy.ridge, policy.sigma, policy.S, policy.delta)
    np.testing.assert_allclose(policy._radius2(np.array([2.0])), (0.3 * beta) ** 2 if squared else 0.3 * beta)


def test_cmlb_under_bandpys_schedule_clusters_at_the_round_after_explore_rounds():
    """bandpy's CMLB clusters once, at t = explore_rounds + 1 (0-based), and plays α-LinUCB before."""

    policy = one_member("cmlb", 4, 3, 2, bandpy_schedule=True, explore_rounds=20)
    rng, clustered = np.random.default_rng(0), []
    for t in range(30):
        view = RoundView(t, t % 4, rng.normal(size=(3, 2)), step=t // 4)
        policy.update([view], policy.select([view], [None]), [float(rng.normal())])
        clustered.append(policy.label is not None)
    assert clustered.index(True) == 21


def test_the_random_initial_graph_has_edge_probability_3_ln_m_over_m():
    """CLUB's and COFIBA's Erdős–Rényi start G(m, 3 ln m / m), symmetric and without self-loops."""

    graph = initial_graph(400, True, np.random.default_rng(0))
    assert (graph == graph.T).all() and not graph.diagonal().any()
    edges, pairs, p = graph.sum() // 2, 400 * 399 // 2, 3 * np.log(400) / 400
    assert abs(edges - p * pairs) < 4 * np.sqrt(pairs * p * (1 - p))  # about 3 590 expected, a deviation of 58
    assert initial_graph(3, False, np.random.default_rng(0)).tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]


def test_deleting_edges_says_a_component_may_have_split_unless_every_cut_neighbour_keeps_a_2_path():

    square = np.array([[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 0, 1], [0, 1, 1, 0]], dtype=bool)  # 0–1–3–2–0
    graph = square.copy()
    graph[0, 3] = graph[3, 0] = True  # and the diagonal 0–3: 1 and 2 each keep a 2-path to 0 through 3
    assert not delete_edges(graph, 0, np.array([1, 2]))
    graph = square.copy()
    graph[1, 2] = graph[2, 1] = True  # 1–2 instead: cutting 0–1 and 0–2 leaves 0 alone
    assert delete_edges(graph, 0, np.array([1, 2])) and not graph[0].any()
    graph = square.copy()
    graph[0, 3] = graph[3, 0] = True
    graph[3, 2] = graph[2, 3] = False  # only 1 keeps its 2-path (through 3): 2 may be cut off
    assert delete_edges(graph, 0, np.array([1, 2]))


def test_cmlb_maximal_cluster_merges_only_components_smaller_than_p_star_n():
    """Ghosh et al.'s Algorithm 3: components of the ≤ γ graph, those of fewer than p*·N users merged into one."""
    from banditbench.algos.cmlb import maximal_cluster

    theta = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [9.0], [20.0], [30.0]])  # components of 3, 2, 1, 1, 1
    label = maximal_cluster(theta, threshold=0.15, p_star=0.25)  # p*·N = 2: the pair stays, the singletons merge
    assert len(set(label[:3])) == len(set(label[3:5])) == len(set(label[5:])) == 1
    assert len({label[0], label[3], label[5]}) == 3


@pytest.mark.parametrize("bandpy_schedule, clusters", [(False, 3), (True, 4)])
def test_cmlb_merges_components_below_p_star_n_or_under_bandpys_schedule_below_its_floor(bandpy_schedule, clusters):
    """N = 10, p* = 0.25: the paper merges the components of fewer than 2.5 users (both pairs), bandpy those of fewer
    than ⌊2.5⌋ = 2 (none)."""
    from banditbench.algos.cmlb import maximal_cluster

    policy = one_member("cmlb", 10, 3, 1, p_star=0.25, bandpy_schedule=bandpy_schedule)
    theta = np.array([[0.0], [0.1], [5.0], [5.1], [5.2], [9.0], [9.1], [9.2], [20.0], [20.1]])  # 2, 3, 3, 2 users
    assert len(set(maximal_cluster(theta, threshold=0.15, p_star=policy.p_star))) == clusters


def test_bass_exploring_at_epsilon_1_plays_every_arm_uniformly():
    from scipy import stats

    policy = one_member("bass", 3, 4, 2, epsilon=1.0)
    rng = np.random.default_rng(0)
    chosen = [policy.select([RoundView(t, t % 3, rng.normal(size=(4, 2)))], [None])[0] for t in range(2000)]
    assert stats.chisquare(np.bincount(chosen, minlength=4)).pvalue > 1e-3


@pytest.mark.parametrize("averaged_noise, divisor", [(True, np.sqrt(9)), (False, 1.0)])
def test_pmlb_common_oful_takes_the_noise_of_a_mean_of_n_rewards(averaged_noise, divisor, monkeypatch):
    """On synchronous steps the common OFUL learns the mean of the N users' rewards: its radius takes σ/√N."""
    from banditbench.algos import pmlb

    seen = []
    real = pmlb.oful_choices
    monkeypatch.setattr(pmlb, "oful_choices", lambda *args: seen.append(args[6]) or real(*args))
    policy = one_member("pmlb", 9, 3, 2, sigma=0.6, averaged_noise=averaged_noise)
    view = RoundView(0, 0, np.random.default_rng(0).normal(size=(3, 2)), step=0)
    policy.select([view], [None])
    assert seen == [pytest.approx(0.6 / divisor)]


def test_bass_cutting_an_edge_takes_each_agents_samples_out_of_the_others_shared_statistics():
    """BASS's Algorithm 1: deleting (i, j) removes j's samples from i's shared Gram matrix and vector and i's from
    j's, leaving the agents both still share with; A⁻¹ = (λI + G)⁻¹ follows."""
    policy = one_member("bass", 3, 4, 2, gamma=100.0)  # ellipsoids too large to separate: nothing is cut in play
    play_random_rounds(policy, 30, 3, 4, 2)
    assert policy.graph[0].all()
    policy._cut(0, 0, np.array([1]))
    gram, b = policy.local.gram[0], policy.local.b[0]
    np.testing.assert_allclose(policy.shared_gram[0, [0, 1]], [gram[0] + gram[2], gram[1] + gram[2]], atol=1e-12)
    np.testing.assert_allclose(policy.shared_b[0, [0, 1]], [b[0] + b[2], b[1] + b[2]], atol=1e-12)
    np.testing.assert_allclose(policy.shared_gram[0, 2], gram.sum(0), atol=1e-12)  # agent 2 keeps both edges
    expected = np.linalg.inv(np.eye(2) + policy.shared_gram[0, [0, 1]])  # λ = 1
    np.testing.assert_allclose(policy.shared_A_inv[0, [0, 1]], expected, rtol=1e-9)


def test_pmlb_learns_the_common_model_for_floor_sqrt_t_steps_then_each_agents_own():
    """Ghosh et al.'s Algorithm 4 with T = 16: steps 0–3 feed the common OFUL (each learnt once the next step begins),
    step 4 on the served agent's personal one."""
    policy = one_member("pmlb", 2, 3, 2, horizon=16)
    play_random_rounds(policy, 5, 2, 3, 2)
    assert policy.common.count[0, 0] == 4 and policy.personal.count[0].sum() == 1


def test_bass_centres():
    theta = synthetic.bass_centres(4, 5, np.pi / 3)
    np.testing.assert_allclose(theta[0], [1, 0, 0, 0, 0])
    np.testing.assert_allclose(theta[1], [0.5, np.sqrt(3) / 2, 0, 0, 0])
    np.testing.assert_allclose(theta[2], [0, 0, 1, 0, 0])
    np.testing.assert_allclose(np.linalg.norm(theta[0] - theta[1]), 2 * np.sin(np.pi / 6))


def test_pair_f1_of_a_dense_graph_equals_the_sparse_path():
    import scipy.sparse as sp

    from banditbench.runner.diagnostics import pair_f1_from_graph

    rng = np.random.default_rng(0)
    for _ in range(10):
        truth = rng.integers(3, size=30)
        graph = rng.random((30, 30)) < 0.4
        graph = graph | graph.T
        np.fill_diagonal(graph, rng.random() < 0.5)
        assert pair_f1_from_graph(truth, graph) == pytest.approx(pair_f1_from_graph(truth, sp.csr_matrix(graph)))


def test_dense_breadth_first_components_match_scipy():
    """The search on dense rows (small graphs, and above the sparse limit) labels as scipy does."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from banditbench.algos.graphs import SMALL_LIMIT, dense_components

    rng = np.random.default_rng(2)
    for m in (18, SMALL_LIMIT, 100):
        for p in (0.0, 0.02, 0.05, 0.3, 1.0):
            graph = rng.random((m, m)) < p
            graph = graph | graph.T
            n_scipy, scipy_labels = connected_components(csr_matrix(graph), directed=False)
            for sparse_limit in (0, 2000):
                n, labels = dense_components(graph, sparse_limit=sparse_limit)
                assert n == n_scipy
                np.testing.assert_array_equal(labels, scipy_labels)
