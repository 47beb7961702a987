"""Clustering diagnostics against the ground truth: cluster count, ARI, NMI and BASS's pair F1.

Pair F1 (BASS §7, App. R) scores the predicted "shares with" graph against the true same-cluster graph
over all unordered pairs i < j. It is computed from counts, never by enumerating the N²/2 pairs:
with labels, true positives are Σ C(n_ij, 2) over the contingency table; with a graph, the edges
whose two ends share a true cluster.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix


def _pairs(counts: np.ndarray) -> float:
    counts = np.asarray(counts, dtype=float)
    return float((counts * (counts - 1) / 2).sum())


def pair_f1_from_labels(true_groups: np.ndarray, labels: np.ndarray) -> float:
    table = contingency_matrix(true_groups, labels, sparse=True)
    true_positive = _pairs(table.data)
    predicted = _pairs(np.asarray(table.sum(axis=0)).ravel())
    actual = _pairs(np.asarray(table.sum(axis=1)).ravel())
    return 0.0 if predicted + actual == 0 else 2 * true_positive / (predicted + actual)


def pair_f1_from_graph(true_groups: np.ndarray, graph) -> float:
    """``graph``: symmetric [N, N] adjacency (dense or scipy.sparse); the diagonal is ignored."""
    actual = _pairs(np.unique(true_groups, return_counts=True)[1])
    if isinstance(graph, np.ndarray):  # dense: count per true group, never build an N²-entry sparse matrix
        edges = graph != 0
        diagonal = np.count_nonzero(np.diagonal(edges))
        predicted = (np.count_nonzero(edges) - diagonal) / 2
        inside = sum(np.count_nonzero(edges[np.ix_(g, g)]) for g in _members(true_groups))
        true_positive = (inside - diagonal) / 2
        return 0.0 if predicted + actual == 0 else 2 * true_positive / (predicted + actual)
    upper = sp.triu(sp.csr_matrix(graph), k=1).tocoo()
    keep = upper.data != 0
    rows, cols = upper.row[keep], upper.col[keep]
    true_positive = float(np.count_nonzero(true_groups[rows] == true_groups[cols]))
    predicted = float(rows.size)
    return 0.0 if predicted + actual == 0 else 2 * true_positive / (predicted + actual)


def _members(true_groups: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(true_groups, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(true_groups[order])) + 1)


def clustering_scores(true_groups: np.ndarray | None, labels: np.ndarray | None, graph=None) -> dict[str, float]:
    scores = {}
    if labels is not None:
        scores["n_clusters"] = float(np.unique(labels).size)
    if true_groups is None:
        return scores
    if labels is not None:
        scores["ari"] = adjusted_rand_score(true_groups, labels)
        scores["nmi"] = normalized_mutual_info_score(true_groups, labels)
    if graph is not None:
        scores["pair_f1"] = pair_f1_from_graph(true_groups, graph)
    elif labels is not None:
        scores["pair_f1"] = pair_f1_from_labels(true_groups, labels)
    return scores
