"""CLUB (Gentile, Li & Zappella, ICML 2014, Algorithm 1): online clustering of bandits on a user graph.

Each user i keeps ridge statistics (M_i = I + Σ x xᵀ, b_i, w_i = M_i⁻¹ b_i, T_i pulls). The user graph
starts complete; the served user plays LinUCB on the pooled statistics of its connected component
  M̄ = I + Σ_{j∈ĵ}(M_j − I),  b̄ = Σ_{j∈ĵ} b_j,  k_t = argmax_k w̄ᵀx + α·sqrt(xᵀM̄⁻¹x · log(t+1)),
then updates its own statistics and deletes the edge (i_t, ℓ) to every neighbour ℓ with
  ‖w_{i_t} − w_ℓ‖ > CB̃_{i_t} + CB̃_ℓ,   CB̃_i = α₂·sqrt((1 + ln(1 + T_i)) / (1 + T_i)).
Clusters are the connected components: a deletion can only split the served user's component,
so only that component is re-examined (its connected components, ``graphs.py``) and the pooled
statistics of the parts are rebuilt from their members; otherwise the served user's component gets a
Sherman–Morrison update.
On block-encoded contexts the statistics are kept per block (``blocks.py``).

Switches (reference-code quirks that change results):
- ``random_init_graph``: the paper's experiments start from an Erdős–Rényi graph with p = 3 ln n / n
  (Shuai Li's code); False (default) keeps the complete graph of Algorithm 1 (Ban's and bandpy's code).
- ``reference_ucb``: Ban's/Shuai Li's index xᵀθ + α·β(N, t)·xᵀM⁻¹x without the square root, with
  β = sqrt(d ln(1 + N/d) + 4 ln t + ln 2) + 1, NaN at t = 0 so the first round plays arm 0 (their code has no
  α: α = 1 is theirs, and another α scales their exploration term rather than being ignored).
- ``served_pairs_only``: Ban's code tests an edge only when both users have been served; an edge to a user
  without data is never cut, so never-served users bridge everyone and the graph can stay one component.
  Algorithm 1 tests every neighbour (default False).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.blocks import BuiltAtFirstRound, ridge_stats
from banditbench.algos.graphs import cuts_by_member, delete_edges, dense_components, initial_graph
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes


class CLUB(BuiltAtFirstRound, MemberPolicy):
    member_params = ("alpha", "alpha2", "ridge")  # per member: its exploration, edge test and ridge
    domains = {
        "alpha": d.NON_NEGATIVE,
        "alpha2": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "random_init_graph": d.FLAG,
        "reference_ucb": d.FLAG,
        "served_pairs_only": d.FLAG,
    }
    authors_code = {
        "random_init_graph": (
            True,
            "an Erdős–Rényi start graph with p = 3 ln n / n (Shuai Li's code) instead of the complete graph of "
            "Algorithm 1",
        ),
        "reference_ucb": (
            True,
            "the index without the square root, xᵀθ + α·β(N, t)·xᵀA⁻¹x, NaN at t = 0 (their code has no α: α = 1)",
        ),
        "served_pairs_only": (
            True,
            "an edge is tested only when both users have been served (Ban's code), so users never served keep the"
            " graph connected",
        ),
    }
    transient = ("confidence",)  # a table of CB's values, grown on demand

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        alpha=1.0,
        alpha2=1.0,
        ridge=1.0,
        random_init_graph: bool = False,
        reference_ucb: bool = False,
        served_pairs_only: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.alpha, self.alpha2, self.ridge = map(self.per_member, (alpha, alpha2, ridge))
        self.reference_ucb, self.served_pairs_only = reference_ucb, served_pairs_only
        self.users: RidgeStats | None = None  # built at the first round (blocks.py)
        self.clusters_: RidgeStats | None = None  # one slot per possible cluster
        self.confidence = ConfidenceTable()
        self.cb = np.repeat((self.alpha2 * self.confidence.upto(0)[0])[:, None], n_users, axis=1)  # CB̃_i, kept current
        self.graph = np.stack([initial_graph(n_users, random_init_graph, rng) for rng in self.rngs])  # [M, N, N]
        self.label = np.zeros((len(self.members), n_users), dtype=np.int64)
        self.n_clusters = np.zeros(len(self.members), dtype=np.int64)

    def _build(self, block):
        M = len(self.members)
        self.users = ridge_stats(M, self.n_users, self.dim, self.ridge, block, logdet=False)
        self.clusters_ = ridge_stats(M, self.n_users, self.dim, self.ridge, block, raw_sums=False, logdet=False)
        for m in range(M):  # the initial clusters are the components of the initial graph
            self._split(m, np.arange(self.n_users))

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        return ridge_bytes(n_users, dim, block=block) + ridge_bytes(n_users, dim, raw_sums=False, block=block)

    def select(self, views, budgets):
        self._prepare(views)
        arms, served = self.read_arms(views)
        clusters = self.label[self.at(served)]
        scores = self.clusters_.cluster_ucb(self.members, clusters, arms, self.alpha, views[0].t, self.reference_ucb)
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        self._prepare(views)
        members, users = self.members, self.users
        served, x, reward = self.played(views, chosen, rewards)
        i = self.at(served)  # every member's served user
        users.update(members, served, x, reward)
        self.clusters_.update(members, self.label[i], x, reward)
        count = users.count[i]
        cb = self.cb[i] = self.alpha2 * self.confidence.upto(max(count.tolist()))[count]
        # delete the edge (i, j) to every neighbour j with ‖w_i − w_j‖ > CB̃_i + CB̃_j: every member's pairs at once
        neighbour = self.graph[i]  # [M, N]
        if self.served_pairs_only:
            neighbour = neighbour & (users.count > 0)
        member, j = neighbour.nonzero()
        distance = distances(users.theta[member, j], users.theta[i][member])
        for m, cut in cuts_by_member(member, j, distance > cb[member] + self.cb[member, j]):
            i = int(served[m])
            if delete_edges(self.graph[m], i, cut):  # re-examine i's component
                self._split(m, np.flatnonzero(self.label[m] == self.label[m, i]))

    def _split(self, m: int, users: np.ndarray) -> None:
        """Re-label the components of member m's sub-graph on ``users`` and rebuild their pooled statistics."""
        graph = self.graph[m]
        n_parts, part = dense_components(graph if users.size == self.n_users else graph[np.ix_(users, users)])
        if n_parts == 1 and self.n_clusters[m] > 0:
            return
        for p in range(n_parts):
            group = users[part == p]
            if p > 0 or self.n_clusters[m] == 0:  # the first part keeps the old id (CLUB never merges)
                self.label[m, group] = self.n_clusters[m]
                self.n_clusters[m] += 1
            self.clusters_.assign(m, self.label[m, group[0]], *self.users.pool(m, group))

    def clusters(self, m):
        return self.label[m]

    def sharing_graph(self, m):
        return self.graph[m]  # BASS scores CLUB's F1 on its edge graph (BASS §7, App. R)
