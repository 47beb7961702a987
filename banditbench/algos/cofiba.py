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
On block-encoded contexts the statistics are kept per block (``blocks.py``).

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
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.blocks import BuiltAtFirstRound, FirstRoundGroup, ridge_stats
from banditbench.algos.graphs import dense_components, initial_graph
from banditbench.algos.ridge import (
    RidgeStats,
    club_confidence,
    means_each,
    quadratic_forms_each,
    ridge_bytes,
    stack,
    stacked_again,
    ucb_index,
)
from banditbench.errors import UserError

ITEM_NODES = ("contexts", "slots")
NEW_USER_GRAPH = ("copy", "fresh")


def scores(means: np.ndarray, quad: np.ndarray, alpha, t: int, reference_ucb: bool) -> np.ndarray:
    """The select scores of the arms at 0-based round t: w̄ᵀx + CB(x) from the means w̄ᵀx and forms xᵀM̄⁻¹x, or the
    code's xᵀw̄ + 0.1·xᵀM̄⁻¹x with ``reference_ucb`` (scaled by α, 1 in their code)."""
    return means + alpha * 0.1 * quad if reference_ucb else ucb_index(means, quad, alpha, t + 1)


class COFIBA(BuiltAtFirstRound, Policy):
    lockstep_params = ("alpha", "alpha2", "ridge")  # per member: its exploration, edge-test scale and ridge
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
        item_pool: int = 100,
        item_nodes: str = "contexts",
        new_user_graph: str = "copy",
        random_init_graph: bool = False,
        reference_ucb: bool = False,
        reference_threshold: bool = False,
        frozen_counts: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        if item_nodes not in ITEM_NODES:
            raise UserError(f"cofiba.item_nodes must be one of {', '.join(ITEM_NODES)}, got {item_nodes!r}")
        if new_user_graph not in NEW_USER_GRAPH:
            raise UserError(f"cofiba.new_user_graph must be one of {', '.join(NEW_USER_GRAPH)}, got {new_user_graph!r}")
        if item_pool < 1:
            raise UserError(f"cofiba.item_pool must be at least 1, got {item_pool}")
        self.alpha, self.alpha2, self.ridge = alpha, alpha2, ridge
        self.item_nodes, self.new_user_graph, self.random_init_graph = item_nodes, new_user_graph, random_init_graph
        self.reference_ucb, self.reference_threshold, self.frozen_counts = (
            reference_ucb,
            reference_threshold,
            frozen_counts,
        )
        L = n_arms if item_nodes == "slots" else item_pool
        self.users: RidgeStats | None = None  # built at the first round (blocks.py), as ``groups``
        self.items = np.zeros((L, dim))  # node contexts; the first n_items rows are filled
        self.n_items = 0
        self.square_norms = np.zeros(L)
        self.predicted = np.zeros((L, n_users))  # w_ℓᵀz for every node z and user ℓ
        self.spread = np.zeros((L, n_users))  # sqrt(zᵀM_ℓ⁻¹z)
        self.item_graph = initial_graph(L, random_init_graph, self.rng)  # its rows count once a node is filled
        self.item_label = np.full(L, -1)  # item cluster of every filled node
        self.groups: RidgeStats | None = None  # pooled statistics of the user clusters of every item cluster
        self.owners = np.zeros(0, dtype=np.int64)  # item clusters using each slot
        self.free: list[int] = []
        self.user_graph: dict[int, np.ndarray] = {}  # item cluster -> its user graph [N, N]
        self.slot_of = np.zeros((L, n_users), dtype=np.int64)  # item cluster -> user -> pooled-statistics slot
        self.active = np.array([0])  # item cluster ids in use; the first nodes seen form cluster 0
        self.user_graph[0] = initial_graph(n_users, random_init_graph, self.rng)
        self._nodes = np.zeros(n_arms, dtype=np.int64)

    def _build(self, block):
        self.users = ridge_stats(self.n_users, self.dim, self.ridge, block)
        self.groups = ridge_stats(0, self.dim, self.ridge, block)
        self._split_users(0, np.arange(self.n_users))

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        # users and the first cluster's group; more groups come later
        return ridge_bytes(n_users + 1, dim, block=block)

    # --- select ------------------------------------------------------------------------------------------------

    def select(self, view, budget):
        self._prepare(view)
        arms = view.arms[:]
        nodes = self._item_nodes_of(arms)
        slots = self.slot_of[self.item_label[nodes], view.user]  # N̂_k of i_t at each arm's item cluster
        means, quad = self.groups.means_and_quadratic_forms(slots, arms)
        self._nodes = nodes
        return int(np.argmax(scores(means, quad, self.alpha, view.t, self.reference_ucb)))

    def _item_nodes_of(self, arms: np.ndarray) -> np.ndarray:
        """The item node of every arm; unseen contexts become new nodes while the pool has room."""
        if self.item_nodes == "slots":
            self._add_items(np.arange(len(arms)), arms)
            return np.arange(len(arms))
        if self.n_items < len(self.items):
            seen = self.items[: self.n_items]
            new = ~(arms[:, None, :] == seen[None]).all(axis=2).any(axis=1)
            if new.any():
                fresh = arms[new][np.sort(np.unique(arms[new], axis=0, return_index=True)[1])]
                fresh = fresh[: len(self.items) - self.n_items]
                self._add_items(np.arange(self.n_items, self.n_items + len(fresh)), fresh)
        filled = self.items[: self.n_items]
        return np.argmin(self.square_norms[: self.n_items] - 2 * arms @ filled.T, axis=1)  # ‖x − z‖² − ‖x‖²

    def _add_items(self, nodes: np.ndarray, contexts: np.ndarray) -> None:
        first = self.n_items == 0
        if not first and self.item_nodes == "contexts":
            self._attach(nodes, contexts)
        self.items[nodes] = contexts
        self.square_norms[nodes] = (contexts**2).sum(axis=1)
        self.n_items = max(self.n_items, int(nodes.max()) + 1)
        users = self.users
        self.predicted[nodes] = contexts @ users.theta.T
        self.spread[nodes] = np.sqrt(np.maximum(users.quadratic_forms_of_all(contexts), 0))
        if first:  # the first nodes: cluster 0 of the initial item graph, split into its components
            self.item_label[nodes] = 0
            self._split_items(0, int(nodes[0]))

    def _attach(self, nodes: np.ndarray, contexts: np.ndarray) -> None:
        """A node seen later joins the item cluster of the nearest node seen before (our choice: the paper's
        catalogue is known from the start, ours is discovered), keeping its initial edges into that cluster."""
        filled = self.items[: self.n_items]
        nearest = np.argmin(self.square_norms[: self.n_items] - 2 * contexts @ filled.T, axis=1)
        for node, near in zip(nodes, nearest):
            label = self.item_label[near]
            self.item_graph[node] &= self.item_label == label
            self.item_graph[:, node] = self.item_graph[node]
            if not self.item_graph[node].any():  # a sparse random start may give it no edge into the cluster
                self.item_graph[node, near] = self.item_graph[near, node] = True
            self.item_label[node] = label

    # --- update ------------------------------------------------------------------------------------------------

    def update(self, view, chosen, reward):
        self._prepare(view)
        i, x, node, n = view.user, view.arms[chosen], self._nodes[chosen], self.n_items
        log_t = np.log(view.t + 2)  # log(t + 1), t the 1-based round
        users = self.users
        users.update(i, x, reward)
        self.groups.update_many(np.unique(self.slot_of[self.active, i]), x, reward)  # i's cluster at every item cluster
        self.predicted[:n, i] = self.items[:n] @ users.theta[i]
        self.spread[:n, i] = np.sqrt(np.maximum(users.quadratic_forms_of(i, self.items[:n]), 0))

        # user side, at the played item's cluster ĵ_t: cut (i_t, ℓ) when ℓ is far from i_t on x̄_t
        j = self.item_label[node]
        neighbours = np.flatnonzero(self.user_graph[j][i])
        if neighbours.size:
            spread = np.sqrt(np.maximum(users.quadratic_forms_of_all(x[None])[0], 0))
            cut = neighbours[self._far(users.theta @ x, spread, i, log_t)[neighbours]]
            if cut.size:
                self._cut_users(j, i, cut)

        # item side: cut (x̄_t, z) when the neighbourhood of i_t w.r.t. z differs from the one w.r.t. x̄_t
        linked = np.flatnonzero(self.item_graph[node, :n])
        if linked.size:
            rows = np.append(node, linked)
            far = self._far(self.predicted[rows], self.spread[rows], i, log_t)  # [1 + |linked|, N]
            cut = linked[(far[1:] != far[0]).any(axis=1)]
            if cut.size:
                self._cut_items(j, node, cut)

    def _cut_users(self, j: int, i: int, cut: np.ndarray) -> None:
        """Delete the edges (i, ℓ), ℓ in ``cut``, of G^U_j, and re-examine i's cluster if they may have split it."""
        graph = self.user_graph[j]
        graph[i, cut] = graph[cut, i] = False
        if not (graph[cut] & graph[i]).any(axis=1).all():  # a cut neighbour lost its last 2-path to i
            members = np.flatnonzero(self.slot_of[j] == self.slot_of[j, i])
            self._split_users(j, members, keep=self.slot_of[j, i])

    def _cut_items(self, j: int, node: int, cut: np.ndarray) -> None:
        """Delete the item edges (node, z), z in ``cut``, and split item cluster j if they disconnected it."""
        self.item_graph[node, cut] = self.item_graph[cut, node] = False
        self._split_items(j, node)

    def _far(self, predicted: np.ndarray, spread: np.ndarray, i: int, log_t: float) -> np.ndarray:
        """|w_iᵀz − w_ℓᵀz| > CB̃_i(z) + CB̃_ℓ(z) for every user ℓ (last axis) and item z (leading axes), given
        w_ℓᵀz and sqrt(zᵀM_ℓ⁻¹z): CB̃_ℓ(z) = α₂·sqrt(zᵀM_ℓ⁻¹z · log(t + 1)), or the code's
        α₂·4√d·F(T_ℓ), equal for all z."""
        gap = np.abs(predicted - predicted[..., i : i + 1])
        if not self.reference_threshold:
            scale = self.alpha2 * np.sqrt(log_t)
            return gap > scale * (spread + spread[..., i : i + 1])
        count = np.zeros(self.n_users) if self.frozen_counts else self.users.count
        cb = self.alpha2 * 4 * np.sqrt(self.dim) * club_confidence(count)
        return gap > cb + cb[i]

    @classmethod
    def lockstep(cls, policies):
        if policies[0].item_nodes == "slots":  # the nodes change every round: the members step one by one
            return Lockstep(policies)
        return FirstRoundGroup(policies, COFIBALockstep)

    # --- clusters ----------------------------------------------------------------------------------------------

    def _slot(self) -> int:
        if not self.free:
            start = len(self.groups.b)
            self.groups.grow(max(start, self.n_users))
            self.owners = np.concatenate([self.owners, np.zeros(len(self.groups.b) - start, dtype=np.int64)])
            self.free = list(range(len(self.groups.b) - 1, start - 1, -1))
        slot = self.free.pop()
        self.owners[slot] = 1
        return slot

    def _release(self, slots: np.ndarray) -> None:
        self.owners[slots] -= 1
        self.free.extend(int(s) for s in slots if self.owners[s] == 0)

    def _split_users(self, j: int, members: np.ndarray, keep: int | None = None) -> None:
        """Label the components of G^U_j on ``members`` with slots and pool their members' statistics;
        ``keep``: the old cluster's slot, reused by the first component unless other item clusters share it."""
        n_parts, part = dense_components(self.user_graph[j][np.ix_(members, members)])
        if n_parts == 1 and keep is not None:
            return
        if keep is not None and self.owners[keep] > 1:
            self._release(np.array([keep]))
            keep = None
        for p in range(n_parts):
            group = members[part == p]
            slot = keep if p == 0 and keep is not None else self._slot()
            self.slot_of[j, group] = slot
            self.groups.assign(slot, *self.users.pool(group))

    def _start_user_graph(self, j: int) -> None:
        self.user_graph[j] = initial_graph(self.n_users, self.random_init_graph, self.rng)
        self._split_users(j, np.arange(self.n_users))

    def _split_items(self, j: int, node: int) -> None:
        """Split item cluster j into the components of its item sub-graph; ``node``'s part keeps the id j."""
        members = np.flatnonzero(self.item_label == j)
        n_parts, part = dense_components(self.item_graph[np.ix_(members, members)])
        if n_parts == 1:
            return
        unused = iter(np.setdiff1d(np.arange(len(self.items)), self.item_label))
        own = part[members == node][0]
        slots = np.unique(self.slot_of[j])
        for p in range(n_parts):
            if p == own:
                continue
            new = int(next(unused))
            self.item_label[members[part == p]] = new
            if self.new_user_graph == "copy":  # same user clusters, so the same pooled statistics, shared
                self.user_graph[new] = self.user_graph[j].copy()
                self.slot_of[new] = self.slot_of[j]
                self.owners[slots] += 1
            else:
                self._start_user_graph(new)
        if self.new_user_graph == "fresh":  # the played item's part restarts too
            self._release(slots)
            self._start_user_graph(j)
        self.active = np.unique(self.item_label[: self.n_items])

    def _largest_item_cluster(self) -> int:
        return int(np.bincount(self.item_label[: self.n_items], minlength=1).argmax())

    def clusters(self):
        return self.slot_of[self._largest_item_cluster()]

    def sharing_graph(self):
        return self.user_graph[self._largest_item_cluster()]

    def diagnostics(self):
        return {"n_item_clusters": float(self.active.size)}


class COFIBALockstep(Lockstep):
    """COFIBA's members in lockstep (seeds, and grid cells of α, α₂ and λ): their user statistics, pooled cluster
    statistics, node contexts, cached w_ℓᵀz and sqrt(zᵀM_ℓ⁻¹z), item graphs, item labels and slots stacked on a
    leading member axis (each member's arrays are views of the stacks), so a round's scores, Sherman–Morrison
    updates, cache rows and both edge tests are one numpy call each for the whole group. The members that cut an
    edge continue alone, through their own ``_cut_users`` and ``_cut_items``; all members step alone while a pool
    of item nodes is still filling (the first rounds)."""

    def __init__(self, policies: list[COFIBA]):
        super().__init__(policies)
        self.users = stack([policy.users for policy in policies])
        self.stack_members("items", "square_norms", "predicted", "spread", "item_graph", "item_label", "slot_of")
        self.alpha, self.alpha2 = self.per_member("alpha"), self.per_member("alpha2")
        self.members = np.arange(len(policies))
        self.first = policies[0]  # the settings every member shares (reference UCB and threshold, frozen counts)
        self.full = False  # whether every member's pool of item nodes is full: from then on the rounds are batched
        self._restack()

    def _restack(self) -> None:
        """After members ran their own code: stack the pooled statistics again where a member's grew (new arrays),
        and mark every member's item clusters in use."""
        self.groups = stacked_again(getattr(self, "groups", None), [policy.groups for policy in self.policies])
        self.in_use = np.zeros(self.slot_of.shape[:2], dtype=bool)  # [S, L]: the item clusters of every member
        for row, policy in zip(self.in_use, self.policies):
            row[policy.active] = True

    def select(self, views, budgets):
        self.full = self.full or all(policy.n_items == len(policy.items) for policy in self.policies)
        if not self.full:
            return super().select(views, budgets)
        arms, served = self.read_arms(views)
        S, K, dim = arms.shape
        at = self.members[:, None]
        nodes = np.argmin(self.square_norms[:, None, :] - 2 * arms @ self.items.transpose(0, 2, 1), axis=2)
        slots = self.slot_of[at, self.item_label[at, nodes], served[:, None]]  # [S, K]: N̂_k of i_t
        learners = np.repeat(self.members, K), slots.ravel()
        means, quad = (v.reshape(S, K) for v in self.groups.means_and_quadratic_forms(learners, arms.reshape(-1, dim)))
        self.nodes = nodes  # for update; the members' own ``_nodes`` are read only by their own update
        return scores(means, quad, self.alpha[:, None], views[0].t, self.first.reference_ucb).argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        if not self.full:
            super().update(views, chosen, rewards)
            self._restack()
            return
        members, users = self.members, self.users
        served, x, reward = self.played(chosen, rewards)
        node = self.nodes[members, chosen]
        log_t = np.log(views[0].t + 2)
        users.update_each(served, x, reward)
        # i_t's cluster at every item cluster in use: each distinct (member, slot) once
        capacity = self.groups.theta.shape[1]
        keys = np.unique((members[:, None] * capacity + self.slot_of[members, :, served])[self.in_use])
        owner = keys // capacity
        self.groups.update_each(keys % capacity, x[owner], reward[owner], members=owner)
        self.predicted[members, :, served] = means_each(users.theta[members, served], self.items)
        self.spread[members, :, served] = np.sqrt(
            np.maximum(quadratic_forms_each(users.A_inv[members, served], self.items), 0)
        )
        changed = False

        # user side, at the played item's cluster
        j = self.item_label[members, node]
        graph_rows = np.stack(
            [policy.user_graph[c][i] for policy, c, i in zip(self.policies, j.tolist(), served.tolist())]
        )
        tested = np.flatnonzero(graph_rows.any(axis=1))
        if tested.size:
            i, x_tested = served[tested], x[tested]
            prediction = (users.theta[tested] @ x_tested[:, :, None])[:, :, 0]  # [P, N]
            spread = np.sqrt(np.maximum(np.einsum("snde,se,sd->sn", users.A_inv[tested], x_tested, x_tested), 0))
            cut = self._far(prediction, spread, i, tested, log_t) & graph_rows[tested]
            for p in np.flatnonzero(cut.any(axis=1)):
                s = tested[p]
                self.policies[s]._cut_users(int(j[s]), int(i[p]), np.flatnonzero(cut[p]))
                changed = True

        # item side: every member's linked nodes z against its played node, one flat list of (member, z)
        member, z = np.nonzero(self.item_graph[members, node])
        if member.size:
            at_node = self._far(self.predicted[members, node], self.spread[members, node], served, members, log_t)
            far = self._far(self.predicted[member, z], self.spread[member, z], served[member], member, log_t)
            cut = (far != at_node[member]).any(axis=1)
            for s in np.unique(member[cut]):
                self.policies[s]._cut_items(int(j[s]), int(node[s]), z[cut & (member == s)])
                changed = True
        if changed:
            self._restack()

    def _far(self, predicted, spread, i, member, log_t) -> np.ndarray:
        """``COFIBA._far`` of P rows at once: row p of member ``member[p]`` served user ``i[p]``."""
        rows = np.arange(len(i))
        gap = np.abs(predicted - predicted[rows, i][:, None])
        if not self.first.reference_threshold:
            scale = self.alpha2[member] * np.sqrt(log_t)
            return gap > scale[:, None] * (spread + spread[rows, i][:, None])
        count = np.zeros_like(predicted) if self.first.frozen_counts else self.users.count[member]
        cb = self.alpha2[member, None] * 4 * np.sqrt(self.items.shape[2]) * club_confidence(count)
        return gap > cb + cb[rows, i][:, None]
