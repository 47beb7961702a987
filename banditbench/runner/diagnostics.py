"""Clustering diagnostics against the ground truth: cluster count, ARI, NMI and BASS's pair F1.

Pair F1 (BASS §7, App. R) scores the predicted "shares with" graph against the true same-cluster graph
over all unordered pairs i < j. It is computed from counts, never by enumerating the N²/2 pairs:
with labels, true positives are Σ C(n_ij, 2) over the contingency table; with a graph, the edges
whose two ends share a true cluster.

ARI (Hubert & Arabie 1985) and NMI (arithmetic normalisation, scikit-learn's default) come from the same
contingency counts, computed once per sample with numpy: scikit-learn's metric functions validate their
inputs at ~13 ms a call, which dominated the whole run of a fast policy sampled every 100 rounds
(tests check the values against scikit-learn).
"""

from __future__ import annotations

import numpy as np


def _pairs(counts: np.ndarray) -> float:
    counts = np.asarray(counts, dtype=float)
    return float((counts * (counts - 1) / 2).sum())


def contingency(true_groups: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-zero cells n_ij of the true × predicted contingency table, its row sums a_i and column sums b_j."""
    _, truth = np.unique(true_groups, return_inverse=True)
    _, predicted = np.unique(labels, return_inverse=True)
    cells = np.unique(truth.astype(np.int64) * (predicted.max() + 1) + predicted, return_counts=True)[1]
    return cells, np.bincount(truth), np.bincount(predicted)


def pair_f1_from_labels(true_groups: np.ndarray, labels: np.ndarray) -> float:
    return pair_f1(pair_counts(*contingency(true_groups, labels)))


def pair_counts(cells: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[float, float, float]:
    """The pairs of items that share a cell, a true group and a predicted cluster: Σ C(n, 2) of each."""
    return _pairs(cells), _pairs(rows), _pairs(cols)


def pair_f1(pairs: tuple[float, float, float]) -> float:
    true_positive, actual, predicted = pairs
    return 0.0 if predicted + actual == 0 else 2 * true_positive / (predicted + actual)


def adjusted_rand_index(pairs: tuple[float, float, float], n: int) -> float:
    """From ``pair_counts`` and the number of items ``n``."""
    index, row_pairs, col_pairs = pairs
    expected = row_pairs * col_pairs / _pairs([n]) if n > 1 else 0.0
    maximum = (row_pairs + col_pairs) / 2
    return 1.0 if maximum == expected else (index - expected) / (maximum - expected)


def normalized_mutual_information(cells: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> float:
    if rows.size == cols.size == 1:  # one cluster on both sides: identical labelings
        return 1.0
    n = rows.sum()

    def entropy(counts):
        p = counts / n
        return float(-(p * np.log(p)).sum())

    # MI = Σ_ij (n_ij / n) log(n n_ij / (a_i b_j)); the sum over non-zero cells is enough, and
    # Σ n_ij log(n_ij) − Σ a_i log(a_i) − Σ b_j log(b_j) + n log n gives it without locating each cell.
    mutual = (
        float((cells * np.log(cells)).sum() - (rows * np.log(rows)).sum() - (cols * np.log(cols)).sum() + n * np.log(n))
        / n
    )
    normaliser = (entropy(rows) + entropy(cols)) / 2
    return 0.0 if mutual <= 0 or normaliser == 0 else min(1.0, mutual / normaliser)


def pair_f1_from_graph(true_groups: np.ndarray, graph) -> float:
    """``graph``: symmetric [N, N] adjacency (dense or scipy.sparse); the diagonal is ignored."""
    groups = np.unique(true_groups, return_inverse=True)[1]
    actual = _pairs(np.bincount(groups))
    if isinstance(graph, np.ndarray):  # dense: a mask of the same size as the graph, never a sparse copy of it
        edges = graph != 0
        diagonal = np.count_nonzero(np.diagonal(edges))
        predicted = (np.count_nonzero(edges) - diagonal) / 2
        inside = np.count_nonzero(edges & (groups[:, None] == groups))
        return pair_f1(((inside - diagonal) / 2, actual, predicted))
    import scipy.sparse as sp  # here: the policies that return sparse graphs have imported it already

    upper = sp.triu(sp.csr_matrix(graph), k=1).tocoo()
    keep = upper.data != 0
    rows, cols = upper.row[keep], upper.col[keep]
    true_positive = float(np.count_nonzero(true_groups[rows] == true_groups[cols]))
    return pair_f1((true_positive, actual, float(rows.size)))


def clustering_scores(true_groups: np.ndarray | None, labels: np.ndarray | None, graph=None) -> dict[str, float]:
    if true_groups is None:
        return {} if labels is None else {"n_clusters": float(np.unique(labels).size)}
    scores = {}
    if labels is not None:  # every label-based score from one contingency table and its pair counts
        table = contingency(true_groups, labels)
        pairs = pair_counts(*table)
        scores["n_clusters"] = float(table[2].size)  # one column per distinct label
        scores["ari"] = adjusted_rand_index(pairs, int(table[1].sum()))
        scores["nmi"] = normalized_mutual_information(*table)
    if graph is not None:
        scores["pair_f1"] = pair_f1_from_graph(true_groups, graph)
    elif labels is not None:
        scores["pair_f1"] = pair_f1(pairs)
    return scores
