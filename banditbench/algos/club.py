"""CLUB (Gentile, Li & Zappella, ICML 2014, Algorithm 1): online clustering of bandits on a user graph.

Each user i keeps ridge statistics (M_i = I + Σ x xᵀ, b_i, w_i = M_i⁻¹ b_i, T_i pulls). The user graph
starts complete; the served user plays LinUCB on the pooled statistics of its connected component
  M̄ = I + Σ_{j∈ĵ}(M_j − I),  b̄ = Σ_{j∈ĵ} b_j,  k_t = argmax_k w̄ᵀx + α·sqrt(xᵀM̄⁻¹x · log(t+1)),
then updates its own statistics and deletes the edge (i_t, ℓ) to every neighbour ℓ with
  ‖w_{i_t} − w_ℓ‖ > CB̃_{i_t} + CB̃_ℓ,   CB̃_i = α₂·sqrt((1 + ln(1 + T_i)) / (1 + T_i)).
Clusters are the connected components: a deletion can only split the served user's component,
so only that component is re-examined (scipy connected components on its sub-graph) and the pooled
statistics of the parts are rebuilt from their members; otherwise the served user's component gets a
Sherman–Morrison update.
(scipy connected components on small graphs, a dense breadth-first search on large ones: ``graphs.py``.)
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
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.blocks import BuiltAtFirstRound, FirstRoundGroup, ridge_stats
from banditbench.algos.graphs import dense_components, initial_graph
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes, stack


class CLUB(BuiltAtFirstRound, Policy):
    lockstep_params = ("alpha", "alpha2", "ridge")  # per member: its exploration, edge test and ridge
    domains = {
        "alpha": d.NON_NEGATIVE,
        "alpha2": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "random_init_graph": d.FLAG,
        "reference_ucb": d.FLAG,
        "served_pairs_only": d.FLAG,
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        alpha: float = 1.0,
        alpha2: float = 1.0,
        ridge: float = 1.0,
        random_init_graph: bool = False,
        reference_ucb: bool = False,
        served_pairs_only: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.alpha, self.alpha2, self.ridge = alpha, alpha2, ridge
        self.reference_ucb, self.served_pairs_only = reference_ucb, served_pairs_only
        self.users: RidgeStats | None = None  # built at the first round (blocks.py)
        self.clusters_: RidgeStats | None = None  # one slot per possible cluster
        self.confidence = ConfidenceTable()
        self.cb = np.full(n_users, alpha2 * self.confidence.upto(0)[0])  # CB̃_i of every user, kept current
        self.graph = initial_graph(n_users, random_init_graph, self.rng)
        self.label = np.zeros(n_users, dtype=np.int64)
        self.n_clusters = 0

    def _build(self, block):
        self.users = ridge_stats(self.n_users, self.dim, self.ridge, block, logdet=False)
        self.clusters_ = ridge_stats(self.n_users, self.dim, self.ridge, block, raw_sums=False, logdet=False)
        self._split(np.arange(self.n_users))  # the initial clusters are the components of the initial graph

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        return ridge_bytes(n_users, dim, block=block) + ridge_bytes(n_users, dim, raw_sums=False, block=block)

    def select(self, view, budget):
        self._prepare(view)
        arms = view.arms[:]
        scores = self.clusters_.cluster_ucb(self.label[view.user], arms, self.alpha, view.t, self.reference_ucb)
        return int(scores.argmax())

    def update(self, view, chosen, reward):
        self._prepare(view)
        i, x = view.user, view.arms[chosen]
        users = self.users
        users.update(i, x, reward)
        self.clusters_.update(self.label[i], x, reward)
        count = users.count[i]
        self.cb[i] = self.alpha2 * self.confidence.upto(count)[count]
        neighbours = np.flatnonzero(self.graph[i])
        if self.served_pairs_only:
            neighbours = neighbours[users.count[neighbours] > 0]
        if neighbours.size == 0:
            return
        distance = distances(users.theta[neighbours], users.theta[i])
        cut = neighbours[distance > self.cb[i] + self.cb[neighbours]]
        if cut.size:
            self._cut(i, cut)

    def _cut(self, i: int, cut: np.ndarray) -> None:
        """Delete the edges (i, j) for j in ``cut``, and re-examine i's component if they may have split it."""
        self.graph[i, cut] = self.graph[cut, i] = False
        # a cut can only split i's component if some cut neighbour lost its last 2-path to i (exact shortcut)
        if not (self.graph[cut] & self.graph[i]).any(axis=1).all():
            self._split(np.flatnonzero(self.label == self.label[i]))

    @classmethod
    def lockstep(cls, policies):
        return FirstRoundGroup(policies, CLUBLockstep)

    def _split(self, members: np.ndarray) -> None:
        """Re-label the components of the sub-graph on ``members`` and rebuild their pooled statistics."""
        whole = members.size == self.n_users
        n_parts, part = dense_components(self.graph if whole else self.graph[np.ix_(members, members)])
        if n_parts == 1 and self.n_clusters > 0:
            return
        for p in range(n_parts):
            group = members[part == p]
            # the first part keeps the old cluster id (CLUB never merges, so ids never need recycling)
            c = self.label[group[0]] if p == 0 and self.n_clusters > 0 else self.n_clusters
            if c == self.n_clusters:
                self.n_clusters += 1
            self.label[group] = c
            self.clusters_.assign(c, *self.users.pool(group))

    def clusters(self):
        return self.label

    def sharing_graph(self):
        return self.graph  # BASS scores CLUB's F1 on its edge graph (BASS §7, App. R)


class CLUBLockstep(Lockstep):
    """CLUB's members in lockstep (seeds, and grid cells of α, α₂ and λ): their user and cluster statistics, labels,
    CB̃ and graphs stacked on a leading member axis (each member's arrays are views of the stacks), so a round's
    scores, Sherman–Morrison updates and edge tests are one numpy call each for the whole group. Only the members
    that cut an edge continue alone, through their own ``_cut``."""

    def __init__(self, policies: list[CLUB]):
        super().__init__(policies)
        self.users = stack([policy.users for policy in policies])
        self.clusters = stack([policy.clusters_ for policy in policies])
        self.stack_members("cb", "graph", "label")
        self.alpha, self.alpha2 = self.per_member("alpha"), self.per_member("alpha2")
        self.members = np.arange(len(policies))
        first = policies[0]
        self.confidence, self.reference_ucb, self.served_pairs_only = (
            first.confidence,
            first.reference_ucb,
            first.served_pairs_only,
        )

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        learners = self.label[self.members, served]
        scores = self.clusters.cluster_ucb_each(learners, arms, self.alpha, views[0].t, self.reference_ucb)
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        members, users = self.members, self.users
        served, x, reward = self.played(chosen, rewards)
        users.update_each(served, x, reward)
        self.clusters.update_each(self.label[members, served], x, reward)
        count = users.count[members, served]
        self.cb[members, served] = self.alpha2 * self.confidence.upto(int(count.max()))[count]
        neighbour = self.graph[members, served]  # [S, n]
        if self.served_pairs_only:
            neighbour &= users.count > 0
        member, j = np.nonzero(neighbour)  # every member's neighbours, one flat list
        i = served[member]
        distance = distances(users.theta[member, j], users.theta[member, i])
        cut = distance > self.cb[member, i] + self.cb[member, j]
        if cut.any():
            member, j = member[cut], j[cut]
            starts = np.flatnonzero(np.diff(member, prepend=-1))  # nonzero lists each member's cuts together
            for s, cuts in zip(member[starts], np.split(j, starts[1:])):
                self.policies[s]._cut(int(served[s]), cuts)
