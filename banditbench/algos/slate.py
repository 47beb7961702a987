"""Slate recommendation under a computational budget (Zhang et al. 2022, "Two-Stage Neural Contextual Bandits"): the
candidate handling every slate policy shares, one-stage and two-stage.

A policy only supplies its acquisition functions, ``item_scores(user, items)`` (α2) and ``topic_scores(user,
topics)`` (α1), and what it learns from a slate's clicks (``learn``); this module decides which arms get scored:

- one-stage: every candidate the environment sampled for the iteration (B items uniform without replacement;
  the whole catalogue without a budget) is scored, the top m are recommended (ties in ``argsort`` order);
- two-stage (Algorithm 1): all q topics are scored (spending q), sorted, grouped by DynaTopicRec (Algorithm 2)
  into m disjoint topic groups, and one item is recommended per group. Under a budget B the remaining B − q are
  shared among the groups in ascending order of size: group j scores k_j = min(|items of j|, ⌊B_rem / slots
  left⌋) of its items drawn uniformly without replacement (the authors' code; the paper states only "use the
  remaining budget to explore the items"). Without a budget every item of every group is scored.

Every score goes through the round's ``CatalogPool``, which spends the budget before computing, so a policy
cannot score more than B arms in an iteration.

DynaTopicRec variants (``topic_groups``):
- ``paper`` (default, the [RECON] reading of Algorithm 2): seed group i with the i-th best topic, then, while
  some group holds ≤ p items and topics remain, append the next-best remaining topic to each such group in
  slot order (round-robin); whole topics only.
- ``code``: the authors' code: groups grow while they hold < p items, and a topic larger than what a group still
  needs is sub-sampled to exactly p − c_i of its items, so topped-up groups hold exactly p items.
``dynamic_topics=False`` is Fig. 3's "No Dynamic Topic" ablation: group j is the j-th best topic alone, filled
up to p with items drawn uniformly from outside the m chosen topics (the code's reading of the paper's "randomly
sample items from the whole item set").

p (``topic_min_size``) defaults to the per-slot budget b = B / m (paper §4.1: "the same as the computational
budget"), and without a budget to #items / #topics (Table 6's caption; the authors' code keeps 1000 there).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Policy
from banditbench.envs.round import Budget, RoundView
from banditbench.simulator.logged import HISTORY

TOPIC_GROUPS = ("paper", "code")


def dyna_topic_rec(
    order: np.ndarray,
    topic_items: list[np.ndarray],
    m: int,
    p: int,
    variant: str = "paper",
    rng: np.random.Generator | None = None,
) -> list[np.ndarray]:
    """Algorithm 2: the item ids of m disjoint topic groups, built from topics sorted by descending score."""
    groups = [[topic_items[v]] for v in order[:m]]  # line 2: S^i = {v_(i)}
    counts = [len(topic_items[v]) for v in order[:m]]  # line 3: c_i = |S_{v_(i)}|
    rest = deque(order[m:])
    short = (lambda c: c <= p) if variant == "paper" else (lambda c: c < p)
    while rest and any(short(c) for c in counts):  # line 4
        for i in range(m):  # lines 5–11, slot order
            if not rest or not short(counts[i]):
                continue
            items = topic_items[rest.popleft()]
            if variant == "code" and len(items) > p - counts[i]:  # the code sub-samples the topic to fill up to p
                items = np.sort(rng.choice(items, p - counts[i], replace=False))
            groups[i].append(items)
            counts[i] += len(items)
    return [np.concatenate(g) for g in groups]


def top_topic_groups(
    order: np.ndarray, topic_items: list[np.ndarray], topic_of: np.ndarray, m: int, p: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Fig. 3's "No Dynamic Topic": the m best topics alone, each filled up to p items with distinct items drawn
    uniformly from outside the m topics."""
    groups = [topic_items[v] for v in order[:m]]
    needs = [max(p - len(g), 0) for g in groups]
    if sum(needs):
        outside = np.flatnonzero(~np.isin(topic_of, order[:m]) & (topic_of >= 0))
        fill = rng.choice(outside, min(sum(needs), len(outside)), replace=False)
        bounds = np.cumsum([0, *needs])
        groups = [np.concatenate([g, fill[bounds[j] : bounds[j + 1]]]) for j, g in enumerate(groups)]
    return groups


def item_budgets(sizes: list[int], remaining: float) -> dict[int, int]:
    """How many items each group may score: groups in ascending size, each min(size, ⌊remaining / slots left⌋),
    the unspent rest carried to the next (the budgeted version of the selection)."""
    allowance = {}
    for left, j in zip(range(len(sizes), 0, -1), np.argsort(sizes, kind="stable")):
        k = sizes[j] if remaining == float("inf") else min(sizes[j], int(remaining // left))
        allowance[int(j)] = k
        remaining -= k
    return allowance


class SlatePolicy(Policy):
    """A seed-004 slate policy: ``select`` returns m distinct item ids, ``update`` gets their clicks.

    Subclasses implement ``item_scores`` (and ``topic_scores`` for the two-stage variant) and ``learn``;
    ``two_stage``, ``dynamic_topics``, ``topic_groups`` and ``topic_min_size`` are fixed by the registered name
    or set as hyper-parameters. The runner calls ``start(problem)`` once before the first iteration with what a
    recommender knows beforehand: the catalogue, the users' logged histories, the pre-trained encoders.
    """

    slate = True
    two_stage_capable = True
    transient = ("catalogue",)  # the problem's, set again by ``start``

    domains = {"dynamic_topics": d.FLAG, "topic_groups": d.Choice(TOPIC_GROUPS), "topic_min_size": d.Optional(d.COUNT)}
    authors_code = {
        "topic_groups": (
            "code",
            "groups grow while under p items, and a topic larger than a group still needs is sub-sampled",
        ),
    }

    def __init__(
        self,
        *,
        two_stage: bool = False,
        dynamic_topics: bool = True,
        topic_groups: str = "paper",
        topic_min_size: int | None = None,
        n_users: int,
        n_arms: int,
        dim: int,
        seed: np.random.SeedSequence,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        if topic_groups not in TOPIC_GROUPS:
            raise ValueError(f"topic_groups must be one of {TOPIC_GROUPS}, got {topic_groups!r}")
        self.two_stage, self.dynamic_topics, self.topic_groups = two_stage, dynamic_topics, topic_groups
        self.topic_min_size = topic_min_size

    # -- what a subclass provides ----------------------------------------------------------------------------
    def item_scores(self, user: int, items: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def topic_scores(self, user: int, topics: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def prepare(self, user: int) -> None:
        """Compute what every score of this iteration shares (e.g. the user's vector), before any scoring."""

    def learn(self, t: int, user: int, slate: np.ndarray, clicks: np.ndarray, history: np.ndarray) -> None:
        """Learn from one iteration's feedback; ``history`` [H] is the user's click history the slate was chosen
        with (the policy's own history already has the new clicks appended)."""

    def begin(self, problem) -> None:
        """Set up learned state from the problem (called by ``start``)."""

    # -- shared machinery ------------------------------------------------------------------------------------
    def start(self, problem) -> None:
        self.catalogue = problem.catalogue
        self.m = problem.slate_size
        if self.two_stage and self.catalogue.n_topics < self.m:
            raise ValueError(f"two-stage needs as many topics as slate items, got {self.catalogue.n_topics} < {self.m}")
        # The users' click histories: the logged history, then every simulated click (no duplicates).
        self.histories = {int(u): [int(i) for i in problem.histories[u] if i > 0] for u in problem.users}
        self.begin(problem)

    def history_of(self, users) -> np.ndarray:
        """[len(users), H] the last H clicked items of each user, padded with 0 at the end."""
        rows = np.zeros((len(users), HISTORY), np.int64)
        for r, u in enumerate(users):
            h = self.histories[int(u)][-HISTORY:]
            rows[r, : len(h)] = h
        return rows

    def select(self, view: RoundView, budget: Budget) -> np.ndarray:
        pool, user = view.arms, view.user
        self.prepare(user)
        if not self.two_stage:
            candidates = pool.candidates
            scores = pool.score(candidates, lambda items: self.item_scores(user, items))
            return candidates[np.argsort(-scores, kind="stable")[: self.m]]
        catalogue = self.catalogue
        topics = np.arange(catalogue.n_topics)
        topic_scores = pool.score_topics(topics, lambda v: self.topic_scores(user, v))  # Alg. 1 line 5
        order = np.argsort(-topic_scores, kind="stable")  # line 6
        p = self.min_size(budget)
        if not self.dynamic_topics:
            groups = top_topic_groups(order, catalogue.topic_items, catalogue.topic, self.m, p, self.rng)
        else:  # line 8
            groups = dyna_topic_rec(order, catalogue.topic_items, self.m, p, self.topic_groups, self.rng)
        allowance = item_budgets([len(g) for g in groups], budget.remaining)
        slate = np.zeros(self.m, np.int64)
        for j in sorted(allowance, key=lambda j: (len(groups[j]), j)):  # lines 11–14, smallest group first
            items = groups[j]
            if allowance[j] == 0:  # nothing left to score with (B < q + m): an unscored item of the group
                slate[j] = self.rng.choice(items)
                continue
            if allowance[j] < len(items):
                items = np.sort(self.rng.choice(items, allowance[j], replace=False))
            scores = pool.score(items, lambda i: self.item_scores(user, i))
            slate[j] = items[np.argmax(scores)]
        return slate

    def min_size(self, budget: Budget) -> int:
        """p of Algorithm 2: as set, else b = B / m, else #items / #topics without a budget."""
        if self.topic_min_size is not None:
            return self.topic_min_size
        if budget.limit is not None:
            return budget.limit // self.m
        return self.catalogue.n_items // self.catalogue.n_topics

    def update(self, view: RoundView, slate: np.ndarray, clicks: np.ndarray) -> None:
        before = self.history_of([view.user])[0]
        history = self.histories[view.user]
        history += [int(i) for i in slate[clicks > 0] if int(i) not in history]
        self.learn(view.t, view.user, slate, clicks, before)
