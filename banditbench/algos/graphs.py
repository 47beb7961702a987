"""Initial graphs and connected components of dense boolean user/item graphs (CLUB, COFIBA, BASS, NeuralLinear,
the neural policies' inferred clusters).

scipy's connected components need a sparse copy, whose N² entries for a (nearly) complete graph of
10 000 users take gigabytes; above ``SPARSE_LIMIT`` users a breadth-first search on the dense rows is used. Up to
``SMALL_LIMIT`` users the search is used too: scipy's call alone costs about 0.1 ms, the search on BASS's 18 agents
12-30 µs, and the clustering diagnostics ask for the components every 100 rounds of every member.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

SPARSE_LIMIT = 2000
SMALL_LIMIT = 64


def dense_components(adjacency: np.ndarray, sparse_limit: int = SPARSE_LIMIT) -> tuple[int, np.ndarray]:
    """(number of components, label per vertex) of a symmetric boolean adjacency matrix [m, m]."""
    m = len(adjacency)
    if SMALL_LIMIT < m <= sparse_limit:
        return connected_components(csr_matrix(adjacency), directed=False)
    label = np.full(m, -1)
    n = 0
    for start in range(m):
        if label[start] >= 0:
            continue
        label[start] = n
        frontier = np.array([start])
        while frontier.size:
            reached = adjacency[frontier].any(axis=0) & (label < 0)
            frontier = np.flatnonzero(reached)
            label[frontier] = n
        n += 1
    return n, label


def initial_graph(m: int, random: bool, rng: np.random.Generator) -> np.ndarray:
    """The starting graph [m, m] of CLUB-style algorithms: complete, or with ``random`` the Erdős–Rényi graph
    G(m, p = 3 ln m / m) of the CLUB and COFIBA experiments (connected with high probability, far sparser)."""
    if not random:
        return ~np.eye(m, dtype=bool)
    p = min(1.0, 3 * np.log(max(m, 2)) / m)
    upper = np.triu(rng.random((m, m)) < p, k=1)
    return upper | upper.T


def delete_edges(graph: np.ndarray, i: int, cut: np.ndarray) -> bool:
    """Delete the edges (i, j), j in ``cut``, of ``graph`` [n, n]; True when i's component may have split. It cannot
    have where every cut neighbour keeps a 2-path to i (an exact shortcut past the components search)."""
    graph[i, cut] = graph[cut, i] = False
    return not (graph[cut] & graph[i]).any(axis=1).all()


def cuts_by_member(member: np.ndarray, j: np.ndarray, cut: np.ndarray):
    """(m, the j cut for member m) for every member with a cut, from flat pairs (member[p], j[p]) and a mask ``cut``."""
    cutting = member[cut]
    if cutting.size == 0:  # most rounds cut nothing: skip np.unique's sort
        return
    for m in np.unique(cutting).tolist():
        yield m, j[cut & (member == m)]
