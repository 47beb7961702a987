"""COFIBA (Li, Karatzoglou & Gentile, SIGIR 2016, Algorithm 1): collaborative filtering bandits.

Users are clustered separately for every item cluster, and items by the user clusterings they induce.
Each user i keeps ridge statistics M_i = I + Σ x xᵀ, b_i, w_i = M_i⁻¹ b_i (pull count T_i). The item graph
G^I starts connected; every item cluster j (a connected component of G^I) owns a user graph G^U_j, also
connected at the start.
- Select: for every arm x_k, ĵ = its item cluster, N̂_k = the component of i_t in G^U_ĵ,
    M̄ = I + Σ_{ℓ∈N̂_k}(M_ℓ − I), b̄ = Σ_{ℓ∈N̂_k} b_ℓ, w̄ = M̄⁻¹b̄,
    k_t = argmax_k w̄ᵀx_k + CB(x_k),  CB(x) = α·sqrt(xᵀM̄⁻¹x · log(t + 1)).
- Update i_t's statistics with (x̄_t, a_t); then
  user side, in G^U_ĵt of the played item's cluster only: delete (i_t, ℓ) when
    |w_iᵀx̄ − w_ℓᵀx̄| > CB̃_i(x̄) + CB̃_ℓ(x̄),   CB̃_ℓ(x) = α₂·sqrt(xᵀM_ℓ⁻¹x · log(t + 1));
  item side: the neighbourhood of i_t with respect to an item z is N(z) = {ℓ : |w_iᵀz − w_ℓᵀz| ≤ CB̃_i(z) + CB̃_ℓ(z)};
    delete (x̄_t, z) from G^I for every item-graph neighbour z with N(z) ≠ N(x̄_t). When this splits ĵ_t, the
    part holding x̄_t keeps G^U_ĵt and every other part starts from a copy of it.

Item identity. A policy sees arm contexts only (docs/architecture.md), so an item is its context: the item nodes are the
first ``item_pool`` distinct contexts seen, and every arm belongs to the node nearest to its context. On the
recommendation protocol an item's context is fixed, so with ``item_pool`` ≥ the catalogue size every item is its
own node (the paper's item graph over the catalogue). On the synthetic protocols, whose contexts are fresh each
round, the nodes are a pool of L contexts, like the authors' code's item pool, and a fresh arm is the pool
member nearest to it. The user-side test uses the played arm's own context; the item side the node contexts.

Speed. Only the served user's statistics change in a round, so w_ℓᵀz and zᵀM_ℓ⁻¹z are cached for every user and
node [N, L] and only row i_t is recomputed: the item-side test costs O(L d² + N L) a round instead of O(N L d²).
Pooled statistics depend only on a user cluster's members, so item clusters whose user clusters coincide (a
split item cluster's parts start with the same user graph) share them: they live in one RidgeStats,
``slot_of[j, u]`` the slot of u's cluster at item cluster j, ``owners[s]`` the number of item clusters using slot
s. The served user's sample enters each distinct slot of its clusters by one batched Sherman–Morrison update;
a user-graph split rebuilds the parts from member sums (as CLUB), in new slots when the old one is shared.
On block-encoded contexts the statistics are kept per block (``blocks.py``). A group's members fill their pools of
item nodes from their own rounds; a node is found per member while its pool fills, and for the whole group at once
after. Each member's slots are numbered as alone, the pooled statistics padded to the most slots of any member.

Choices where the paper leaves room (ours, documented in the README): the tests use the estimates after the
round's update (as CLUB here and both authors' codes); a new item cluster's user graph is a copy of the one it
split from; ``clusters()`` and ``sharing_graph()`` report the user clustering of the largest item cluster.

Switches (the authors' code; Shuai Li's original and Ban's copy):
- ``random_init_graph``: user graphs G(n, 3 ln n / n) and item graph G(L, 3 ln L / L) instead of complete graphs.
- ``new_user_graph="fresh"``: every part of a split item cluster restarts from an initial user graph (the code
  re-draws them all) instead of copying the user graph it split from.
- ``reference_ucb``: xᵀw̄ + α·0.1·xᵀM̄⁻¹x (their β = 0.1, no square root, no log t; their code has no α, α = 1).
- ``reference_threshold``: both tests against α₂·4√d·(F(T_i) + F(T_ℓ)), F(T) = sqrt((1 + ln(1 + T))/(1 + T)),
  the same for every item, instead of the item-dependent CB̃ (their code's scale is 4√d: α₂ = 1).
- ``frozen_counts``: T is never incremented (Ban's copy), so with ``reference_threshold`` the threshold stays
  8√d, edges are practically never cut and COFIBA is one global LinUCB.
- ``item_nodes="slots"``: the item graph is over the K arm positions of a round (Ban's copy), each node's
  context the latest arm seen at that position.
Not reproduced: θ₂ computed with the other user's inverse (both codes) and Ban's cluster matrix Σ M_ℓ (ridge
|N̂|·I instead of I).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.blocks import BuiltAtFirstRound, ridge_stats
from banditbench.algos.graphs import cuts_by_member, delete_edges, dense_components, initial_graph
from banditbench.algos.ridge import (
    RidgeStats,
    club_confidence,
    means_each,
    quadratic_forms_each,
    ridge_bytes,
    ucb_index,
)

ITEM_NODES = ("contexts", "slots")
NEW_USER_GRAPH = ("copy", "fresh")


class COFIBA(BuiltAtFirstRound, MemberPolicy):
    member_params = ("alpha", "alpha2", "ridge")  # per member: its exploration, edge-test scale and ridge
    domains = {
        "alpha": d.NON_NEGATIVE,
        "alpha2": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "item_pool": d.COUNT,
        "item_nodes": d.Choice(ITEM_NODES),
        "new_user_graph": d.Choice(NEW_USER_GRAPH),
        "random_init_graph": d.FLAG,
        "reference_ucb": d.FLAG,
        "reference_threshold": d.FLAG,
        "frozen_counts": d.FLAG,
    }
    authors_code = {
        "random_init_graph": (
            True,
            "user graphs G(n, 3 ln n / n) and item graph G(L, 3 ln L / L) instead of complete graphs",
        ),
        "new_user_graph": (
            "fresh",
            "every part of a split item cluster restarts from an initial user graph instead of a copy of the one "
            "it split from",
        ),
        "reference_ucb": (True, "the index xᵀw̄ + α·0.1·xᵀM̄⁻¹x: their β = 0.1, no square root, no log t"),
        "reference_threshold": (
            True,
            "both tests against α₂·4√d·(F(T_i) + F(T_ℓ)), the same for every item, instead of the item-dependent bound",
        ),
        "frozen_counts": (
            True,
            "the counts T never grow (Ban's copy): with reference_threshold, edges are practically never cut",
        ),
        "item_nodes": (
            "slots",
            "the item graph is over the K arm positions of a round (Ban's copy) instead of a pool of contexts",
        ),
    }

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
        item_pool: int = 100,
        item_nodes: str = "contexts",
        new_user_graph: str = "copy",
        random_init_graph: bool = False,
        reference_ucb: bool = False,
        reference_threshold: bool = False,
        frozen_counts: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.alpha, self.alpha2, self.ridge = map(self.per_member, (alpha, alpha2, ridge))
        self.item_nodes, self.new_user_graph, self.random_init_graph = item_nodes, new_user_graph, random_init_graph
        self.reference_ucb, self.reference_threshold = reference_ucb, reference_threshold
        self.frozen_counts = frozen_counts
        M, L = len(self.members), n_arms if item_nodes == "slots" else item_pool
        self.users: RidgeStats | None = None  # built at the first round (blocks.py), as ``groups``
        self.items = np.zeros((M, L, dim))  # node contexts; the first n_items rows are filled
        self.n_items = np.zeros(M, dtype=np.int64)
        self.square_norms = np.zeros((M, L))
        self.predicted = np.zeros((M, L, n_users))  # w_ℓᵀz for every node z and user ℓ
        self.spread = np.zeros((M, L, n_users))  # sqrt(zᵀM_ℓ⁻¹z)
        graphs = [initial_graph(L, random_init_graph, rng) for rng in self.rngs]
        self.item_graph = np.stack(graphs)  # its rows count once a node is filled
        self.item_label = np.full((M, L), -1)  # item cluster of every filled node
        self.in_use = np.zeros((M, L), dtype=bool)  # the item clusters in use; the first nodes seen form cluster 0
        self.in_use[:, 0] = True
        self.groups: RidgeStats | None = None  # pooled statistics of the user clusters of every item cluster
        self.slots = np.zeros(M, dtype=np.int64)  # the slots of pooled statistics each member has
        self.owners = np.zeros((M, 0), dtype=np.int64)  # item clusters using each slot
        self.free: list[list[int]] = [[] for _ in range(M)]
        self.slot_of = np.zeros((M, L, n_users), dtype=np.int64)  # item cluster → user → pooled-statistics slot
        self.user_graph = [{0: initial_graph(n_users, random_init_graph, rng)} for rng in self.rngs]  # j → G^U_j
        self._nodes = np.zeros((M, n_arms), dtype=np.int64)

    def _build(self, block):
        M = len(self.members)
        self.users = ridge_stats(M, self.n_users, self.dim, self.ridge, block)
        self.groups = ridge_stats(M, 0, self.dim, self.ridge, block)
        for m in range(M):
            self._split_users(m, 0, np.arange(self.n_users))

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        # users and the first cluster's group; more groups come later
        return ridge_bytes(n_users + 1, dim, block=block)

    def select(self, views, budgets):
        self._prepare(views)
        arms, served = self.read_arms(views)
        (M, K, dim), at = arms.shape, self.members[:, None]
        nodes = self._item_nodes_of(arms)
        slots = self.slot_of[at, self.item_label[at, nodes], served[:, None]]  # N̂_k of i_t at each arm's item cluster
        learners = np.repeat(self.members, K), slots.ravel()
        means, quad = (v.reshape(M, K) for v in self.groups.means_and_quadratic_forms(*learners, arms.reshape(-1, dim)))
        self._nodes = nodes
        alpha = self.alpha[:, None]  # w̄ᵀx + CB(x), or the code's xᵀw̄ + 0.1·xᵀM̄⁻¹x (scaled by α, 1 in their code)
        scores = means + alpha * 0.1 * quad if self.reference_ucb else ucb_index(means, quad, alpha, views[0].t + 1)
        return scores.argmax(axis=1).tolist()

    def _item_nodes_of(self, arms: np.ndarray) -> np.ndarray:
        """The item node of every member's arms [M, K]; unseen contexts become new nodes while a pool has room."""
        M, K, L = *arms.shape[:2], self.items.shape[1]
        if self.item_nodes == "slots":
            for m in range(M):
                self._add_items(m, np.arange(K), arms[m])
            return np.tile(np.arange(K), (M, 1))
        if (self.n_items == L).all():  # every pool full: the nearest node, ‖x − z‖² − ‖x‖², for all at once
            return np.argmin(self.square_norms[:, None, :] - 2 * arms @ self.items.transpose(0, 2, 1), axis=2)
        return np.stack([self._member_nodes_of(m, contexts) for m, contexts in enumerate(arms)])

    def _member_nodes_of(self, m: int, arms: np.ndarray) -> np.ndarray:
        """Member m's ``_item_nodes_of`` while its pool may still be filling."""
        n, L = self.n_items[m], self.items.shape[1]
        if n < L:
            new = ~(arms[:, None, :] == self.items[m, :n][None]).all(axis=2).any(axis=1)
            if new.any():
                fresh = arms[new][np.sort(np.unique(arms[new], axis=0, return_index=True)[1])][: L - n]
                self._add_items(m, np.arange(n, n + len(fresh)), fresh)
                n = self.n_items[m]
        return np.argmin(self.square_norms[m, :n] - 2 * arms @ self.items[m, :n].T, axis=1)

    def _add_items(self, m: int, nodes: np.ndarray, contexts: np.ndarray) -> None:
        first = self.n_items[m] == 0
        if not first and self.item_nodes == "contexts":
            self._attach(m, nodes, contexts)
        self.items[m, nodes] = contexts
        self.square_norms[m, nodes] = (contexts**2).sum(axis=1)
        self.n_items[m] = max(self.n_items[m], int(nodes.max()) + 1)
        self.predicted[m, nodes] = contexts @ self.users.theta[m].T
        self.spread[m, nodes] = np.sqrt(np.maximum(self.users.quadratic_forms_of_all(m, contexts), 0))
        if first:  # the first nodes: cluster 0 of the initial item graph, split into its components
            self.item_label[m, nodes] = 0
            self._split_items(m, 0, int(nodes[0]))

    def _attach(self, m: int, nodes: np.ndarray, contexts: np.ndarray) -> None:
        """A node seen later joins the item cluster of the nearest node seen before (our choice: the paper's
        catalogue is known from the start, ours is discovered), keeping its initial edges into that cluster."""
        n, graph, label = self.n_items[m], self.item_graph[m], self.item_label[m]
        nearest = np.argmin(self.square_norms[m, :n] - 2 * contexts @ self.items[m, :n].T, axis=1)
        for node, near in zip(nodes, nearest):
            graph[node] &= label == label[near]
            graph[:, node] = graph[node]
            if not graph[node].any():  # a sparse random start may give it no edge into the cluster
                graph[node, near] = graph[near, node] = True
            label[node] = label[near]

    def update(self, views, chosen, rewards):
        self._prepare(views)
        members, users = self.members, self.users
        served, x, reward = self.played(views, chosen, rewards)
        node, log_t = self._nodes[members, chosen], np.log(views[0].t + 2)  # log(t + 1), t the 1-based round
        users.update(members, served, x, reward)
        # i_t's cluster at every item cluster in use, each distinct (member, slot) once
        capacity = self.groups.theta.shape[1]
        keys = np.unique((members[:, None] * capacity + self.slot_of[members, :, served])[self.in_use])
        self.groups.update(keys // capacity, keys % capacity, x[keys // capacity], reward[keys // capacity])
        self._refresh(served)
        j = self.item_label[members, node]  # the played item's cluster ĵ_t
        self._user_side(j, served, x, log_t)
        self._item_side(j, node, served, log_t)

    def _refresh(self, served: np.ndarray) -> None:
        """w_iᵀz and sqrt(zᵀM_i⁻¹z) of every filled node z for each member's served user i: one product for the group
        once every pool is full (dense statistics), else member by member on its filled nodes."""
        users, L = self.users, self.items.shape[1]
        if self.block is None and (self.n_items == L).all():
            at = self.at(served)
            self.predicted[self.members, :, served] = means_each(users.theta[at], self.items)
            quad = quadratic_forms_each(users.A_inv[at], self.items)
            self.spread[self.members, :, served] = np.sqrt(np.maximum(quad, 0))
            return
        for m, (i, n) in enumerate(zip(served.tolist(), self.n_items.tolist())):
            self.predicted[m, :n, i] = self.items[m, :n] @ users.theta[m, i]
            self.spread[m, :n, i] = np.sqrt(np.maximum(users.quadratic_forms_of(m, i, self.items[m, :n]), 0))

    def _user_side(self, j: np.ndarray, served: np.ndarray, x: np.ndarray, log_t: float) -> None:
        """At the played item's cluster ĵ_t: cut (i_t, ℓ) when ℓ is far from i_t on x̄_t, every member at once."""
        neighbour = np.array([graphs[c][i] for graphs, c, i in zip(self.user_graph, j.tolist(), served.tolist())])
        tested = np.flatnonzero(neighbour.any(axis=1))
        if not tested.size:
            return
        users, i, x = self.users, served[tested], x[tested]
        prediction = (users.theta[self.rows(tested)] @ x[:, :, None])[:, :, 0]  # w_ℓᵀx̄ [P, N]
        spread = np.sqrt(np.maximum(users.quadratic_forms_of_each(tested, x), 0))
        cut = self._far(prediction, spread, i, tested, log_t) & neighbour[tested]
        for p in np.flatnonzero(cut.any(axis=1)).tolist():
            m, c, u = int(tested[p]), int(j[tested[p]]), int(i[p])
            if delete_edges(self.user_graph[m][c], u, np.flatnonzero(cut[p])):  # re-examine u's cluster
                slot_of = self.slot_of[m, c]
                self._split_users(m, c, np.flatnonzero(slot_of == slot_of[u]), keep=slot_of[u])

    def _item_side(self, j: np.ndarray, node: np.ndarray, served: np.ndarray, log_t: float) -> None:
        """Cut (x̄_t, z) when the neighbourhood of i_t w.r.t. z differs from the one w.r.t. x̄_t: every member's played
        node, then its filled linked nodes z, in one flat list of (member, node) rows."""
        members, L = self.members, self.items.shape[1]
        member, z = np.nonzero(self.item_graph[members, node] & (np.arange(L) < self.n_items[:, None]))
        if not member.size:
            return
        rows = np.concatenate((members, member)), np.concatenate((node, z))
        far = self._far(self.predicted[rows], self.spread[rows], served[rows[0]], rows[0], log_t)
        for m, cut in cuts_by_member(member, z, (far[len(members) :] != far[member]).any(axis=1)):
            played = int(node[m])
            self.item_graph[m, played, cut] = self.item_graph[m, cut, played] = False
            self._split_items(m, int(j[m]), played)  # if the cuts disconnected ĵ_t

    def _far(self, predicted, spread, i, member, log_t) -> np.ndarray:
        """|w_iᵀz − w_ℓᵀz| > CB̃_i(z) + CB̃_ℓ(z) for every user ℓ (last axis) of row p [P, N], member ``member[p]``'s
        item z served user ``i[p]``, given w_ℓᵀz and sqrt(zᵀM_ℓ⁻¹z): CB̃_ℓ(z) = α₂·sqrt(zᵀM_ℓ⁻¹z · log(t + 1)), or
        the code's α₂·4√d·F(T_ℓ), equal for all z."""
        rows = np.arange(len(i))
        gap = np.abs(predicted - predicted[rows, i][:, None])
        if not self.reference_threshold:
            scale = self.alpha2[member] * np.sqrt(log_t)
            return gap > scale[:, None] * (spread + spread[rows, i][:, None])
        count = np.zeros_like(predicted) if self.frozen_counts else self.users.count[member]
        cb = self.alpha2[member, None] * 4 * np.sqrt(self.dim) * club_confidence(count)
        return gap > cb + cb[rows, i][:, None]

    def _slot(self, m: int) -> int:
        """A free slot of member m's pooled statistics, numbered as alone: its slots double when none is free."""
        if not self.free[m]:
            start = int(self.slots[m])
            self.slots[m] += max(start, self.n_users)
            grow = int(self.slots[m]) - self.groups.theta.shape[1]
            if grow > 0:  # more slots than any member had: every member's statistics grow (padding for the others)
                self.groups.grow(grow)
                self.owners = np.concatenate([self.owners, np.zeros((len(self.members), grow), dtype=np.int64)], axis=1)
            self.free[m] = list(range(int(self.slots[m]) - 1, start - 1, -1))
        slot = self.free[m].pop()
        self.owners[m, slot] = 1
        return slot

    def _release(self, m: int, slots: np.ndarray) -> None:
        self.owners[m, slots] -= 1
        self.free[m].extend(int(s) for s in slots if self.owners[m, s] == 0)

    def _split_users(self, m: int, j: int, users: np.ndarray, keep: int | None = None) -> None:
        """Label the components of member m's G^U_j on ``users`` with slots and pool their users' statistics;
        ``keep``: the old cluster's slot, reused by the first component unless other item clusters share it."""
        n_parts, part = dense_components(self.user_graph[m][j][np.ix_(users, users)])
        if n_parts == 1 and keep is not None:
            return
        if keep is not None and self.owners[m, keep] > 1:
            self._release(m, np.array([keep]))
            keep = None
        for p in range(n_parts):
            group = users[part == p]
            slot = keep if p == 0 and keep is not None else self._slot(m)
            self.slot_of[m, j, group] = slot
            self.groups.assign(m, slot, *self.users.pool(m, group))

    def _start_user_graph(self, m: int, j: int) -> None:
        self.user_graph[m][j] = initial_graph(self.n_users, self.random_init_graph, self.rngs[m])
        self._split_users(m, j, np.arange(self.n_users))

    def _split_items(self, m: int, j: int, node: int) -> None:
        """Split member m's item cluster j into the components of its item sub-graph; ``node``'s part keeps the id j."""
        label, graphs = self.item_label[m], self.user_graph[m]
        nodes = np.flatnonzero(label == j)
        n_parts, part = dense_components(self.item_graph[m][np.ix_(nodes, nodes)])
        if n_parts == 1:
            return
        unused = iter(np.setdiff1d(np.arange(len(label)), label))
        own = part[nodes == node][0]
        slots = np.unique(self.slot_of[m, j])
        for p in range(n_parts):
            if p == own:
                continue
            new = int(next(unused))
            label[nodes[part == p]] = new
            if self.new_user_graph == "copy":  # same user clusters, so the same pooled statistics, shared
                graphs[new] = graphs[j].copy()
                self.slot_of[m, new] = self.slot_of[m, j]
                self.owners[m, slots] += 1
            else:
                self._start_user_graph(m, new)
        if self.new_user_graph == "fresh":  # the played item's part restarts too
            self._release(m, slots)
            self._start_user_graph(m, j)
        self.in_use[m] = False
        self.in_use[m, np.unique(label[: self.n_items[m]])] = True

    def _largest_item_cluster(self, m: int) -> int:
        return int(np.bincount(self.item_label[m, : self.n_items[m]], minlength=1).argmax())

    def clusters(self, m):
        return self.slot_of[m, self._largest_item_cluster(m)]

    def sharing_graph(self, m):
        return self.user_graph[m][self._largest_item_cluster(m)]

    def diagnostics(self, m):
        return {"n_item_clusters": float(self.in_use[m].sum())}
