import itertools

import numpy as np
import pytest

from banditbench.runner import Unit, run_unit
from banditbench.runner.diagnostics import clustering_scores, pair_f1_from_graph, pair_f1_from_labels


def brute_force_pair_f1(true_groups, adjacency):
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(true_groups)), 2):
        same, edge = true_groups[i] == true_groups[j], bool(adjacency[i, j])
        tp += same and edge
        fp += edge and not same
        fn += same and not edge
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def test_pair_f1_matches_brute_force_on_random_graphs_and_labels():
    rng = np.random.default_rng(0)
    for _ in range(20):
        truth = rng.integers(3, size=15)
        labels = rng.integers(4, size=15)
        same_label = labels[:, None] == labels[None, :]
        assert pair_f1_from_labels(truth, labels) == pytest.approx(brute_force_pair_f1(truth, same_label))
        graph = rng.random((15, 15)) < 0.3
        graph = graph | graph.T
        assert pair_f1_from_graph(truth, graph) == pytest.approx(brute_force_pair_f1(truth, graph))


def test_bass_sanity_reference_for_a_never_cut_complete_graph():
    truth = np.repeat([0, 1], 5)  # M = 2 equal clusters, N = 10: F1 = 2·20 / (45 + 20) ≈ 0.615
    assert pair_f1_from_labels(truth, np.zeros(10)) == pytest.approx(40 / 65)


def test_perfect_and_empty_clusterings():
    truth = np.array([0, 0, 1, 1, 2])
    perfect = clustering_scores(truth, np.array([5, 5, 7, 7, 9]))
    assert perfect == pytest.approx({"n_clusters": 3.0, "ari": 1.0, "nmi": 1.0, "pair_f1": 1.0})
    assert clustering_scores(truth, np.arange(5))["pair_f1"] == 0.0
    assert clustering_scores(None, np.arange(5)) == {"n_clusters": 5.0}


def test_runner_samples_diagnostics_every_hundred_rounds_and_at_the_end(dataset):
    unit = Unit("synthetic", "linear", "linucb-one", {}, 0, 0, 250, None)
    out = run_unit(unit, dataset).outcome.to_pandas()
    sampled = out.dropna(subset=["diag_n_clusters"])
    assert sampled["t"].tolist() == [99, 199, 249]
    assert (sampled["diag_n_clusters"] == 1).all()
    assert sampled["diag_pair_f1"].iloc[0] == pytest.approx(
        pair_f1_from_labels(dataset.table("users").sort_values("user")["cluster"].to_numpy(), np.zeros(20))
    )


def test_policies_without_diagnostics_add_no_columns(dataset):
    unit = Unit("synthetic", "linear", "random", {}, 0, 0, 50, None)
    assert not [c for c in run_unit(unit, dataset).outcome.column_names if c.startswith("diag_")]


def test_ari_and_nmi_equal_scikit_learns_on_random_labelings():
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    rng = np.random.default_rng(4)
    for n, k_true, k_pred in [(30, 3, 4), (100, 5, 100), (50, 1, 3), (40, 4, 1), (60, 6, 6)]:
        truth, labels = rng.integers(k_true, size=n), rng.integers(k_pred, size=n)
        scores = clustering_scores(truth, labels)
        assert scores["ari"] == pytest.approx(adjusted_rand_score(truth, labels), abs=1e-12)
        assert scores["nmi"] == pytest.approx(normalized_mutual_info_score(truth, labels), abs=1e-12)
    perm = rng.permutation(20) % 4
    assert clustering_scores(perm, perm + 10)["ari"] == pytest.approx(1.0)
