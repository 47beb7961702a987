"""The Round contract between environments, policies and the runner (docs/architecture.md, "Round" and "Budget").

An environment produces a :class:`Round` holding everything, including the hidden fields
(realised rewards, expected rewards, ground-truth group). The runner shows the policy only a
:class:`RoundView`, whose arm features can be read solely through the round's :class:`Budget`:
reading the features of n arms during selection spends n, and overspending raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np


class BudgetExceeded(RuntimeError):
    """A policy scored more arms in one round than its computational budget allows."""


class Budget:
    __slots__ = ("limit", "spent", "is_open")
    """The number of arms a policy may score in one round (the computational budget of Zhang et al. 2022).

    ``limit=None`` means unlimited. Spending is counted only while the budget is open, that is
    during ``select``; the runner closes it before ``update`` (learning from the chosen arm is free).
    """

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self.spent = 0
        self.is_open = True

    @property
    def remaining(self) -> float:
        return float("inf") if self.limit is None else self.limit - self.spent

    def spend(self, n_arms: int) -> None:
        if not self.is_open:
            return
        if self.limit is not None and self.spent + n_arms > self.limit:
            raise BudgetExceeded(
                f"policy tried to score {self.spent + n_arms} arms this round; the budget is {self.limit}"
            )
        self.spent += n_arms

    def close(self) -> None:
        self.is_open = False


class ArmPool:
    __slots__ = ("_features", "_budget")
    """Read-only arm features [K, d]; indexing rows spends them from the round's budget.

    ``pool[:]`` scores every arm, ``pool[idx]`` the chosen rows, ``len(pool)`` is free.
    """

    def __init__(self, features: np.ndarray, budget: Budget):
        if features.flags.writeable:  # a policy must not alter the environment's arms (envs hand out read-only ones)
            features = features.view()
            features.flags.writeable = False
        self._features = features
        self._budget = budget

    def __len__(self) -> int:
        return self._features.shape[0]

    @property
    def dim(self) -> int:
        return self._features.shape[1]

    def __getitem__(self, index) -> np.ndarray:
        rows = self._features[index]
        self._budget.spend(1 if rows.ndim == 1 else rows.shape[0])
        return rows


class CatalogPool:
    __slots__ = ("catalogue", "candidates", "_budget")
    """A large catalogue's arms as item ids plus a feature lookup (docs/architecture.md, "Round"): nothing is copied
    per round.

    ``catalogue`` (the items' static data: titles, topics, the items of each topic) and ``candidates`` (the
    item ids the environment sampled for this round, Zhang et al. 2022's "B items sampled uniformly") are free to read.
    An acquisition score is computed only through ``score`` / ``score_topics``, which spend one unit of the
    round's budget per item or topic scored, before computing anything, so overspending raises.
    """

    def __init__(self, catalogue, candidates: np.ndarray, budget: Budget):
        self.catalogue = catalogue
        self.candidates = candidates
        self._budget = budget

    def __len__(self) -> int:
        return len(self.candidates)

    def score(self, items: np.ndarray, acquisition):
        """``acquisition(items)``, after spending ``len(items)`` from the budget."""
        self._budget.spend(len(items))
        return acquisition(items)

    def score_topics(self, topics: np.ndarray, acquisition):
        """``acquisition(topics)``, after spending ``len(topics)``: a topic score costs as much as an item's."""
        self._budget.spend(len(topics))
        return acquisition(topics)


@dataclass(slots=True)
class RoundView:
    """What a policy may see of a round."""

    t: int
    user: int
    arms: ArmPool
    user_features: np.ndarray | None = None
    topics: np.ndarray | None = None
    step: int | None = None  # synchronous protocols: rounds of one step share the arms; None when asynchronous
    block: int | None = None  # block-encoded contexts: arm a is zero outside coordinates [a·block, (a+1)·block)


@dataclass(slots=True)
class SlateRound:
    """One iteration of a slate protocol (Zhang et al. 2022): a user, the sampled candidates and, hidden, the
    uniforms [m] that decide which of the slate's m simulated clicks are flipped (drawn before the
    policy acts, so every policy of a trial sees the same flips)."""

    t: int
    user: int
    candidates: np.ndarray  # item ids a one-stage policy may score (the whole catalogue without a budget)
    flip_uniforms: np.ndarray  # [m] (hidden)

    def view(self, catalogue, budget: Budget) -> RoundView:
        return RoundView(self.t, self.user, CatalogPool(catalogue, self.candidates, budget))


@dataclass(slots=True)
class Round:
    """One step of an environment, hidden fields included."""

    t: int
    user: int
    arms: np.ndarray  # [K, d]
    rewards: np.ndarray  # [K] realised (hidden)
    expected: np.ndarray  # [K] expected (hidden)
    group: int = -1  # ground-truth cluster, -1 when unknown (hidden)
    user_features: np.ndarray | None = None
    topics: np.ndarray | None = None
    step: int | None = None  # synchronous step (all N users act on the same arms); None when asynchronous
    block: int | None = None  # block-encoded contexts: arm a is zero outside coordinates [a·block, (a+1)·block)

    def view(self, budget: Budget) -> RoundView:
        return RoundView(
            self.t, self.user, ArmPool(self.arms, budget), self.user_features, self.topics, self.step, self.block
        )


@dataclass(slots=True)
class Rounds:
    """Consecutive rounds t, t + 1, … of one environment as arrays, for a runner that takes many rounds at once
    (a lockstep group's members, runner/unit.py); iterating gives the same :class:`Round` objects one by one."""

    t: int  # the first round
    users: np.ndarray  # [B]
    arms: np.ndarray  # [B, K, d], read-only (a broadcast view when every round serves the same arms)
    rewards: np.ndarray  # [B, K] realised (hidden)
    expected: np.ndarray  # [B, K] expected (hidden)
    groups: np.ndarray  # [B] ground-truth clusters, -1 when unknown (hidden)
    user_features: np.ndarray | None = None  # [B, ·]

    def __len__(self) -> int:
        return len(self.users)

    def __iter__(self) -> Iterator[Round]:
        features = [None] * len(self) if self.user_features is None else self.user_features
        for i, (user, group) in enumerate(zip(self.users.tolist(), self.groups.tolist())):
            yield Round(
                self.t + i, user, self.arms[i], self.rewards[i], self.expected[i], group, user_features=features[i]
            )

    def part(self, start: int, stop: int | None = None) -> Rounds:
        """Rounds ``start`` to ``stop`` (exclusive) of these, counted from the first."""
        rows = slice(start, stop)
        features = None if self.user_features is None else self.user_features[rows]
        arrays = (self.users, self.arms, self.rewards, self.expected, self.groups)
        return Rounds(self.t + start, *(array[rows] for array in arrays), features)


class RoundViews(Sequence):
    """What a lockstep group's members may see of round ``i`` of their blocks of :class:`Rounds` (one block each):
    member s's :class:`RoundView` is built when first asked for, and ``read_arms`` reads every member's arm pool
    at once, spending each member's budget as ``view.arms[:]`` would."""

    __slots__ = ("t", "users", "blocks", "i", "budgets", "_views")

    def __init__(self, t: int, users: list[int], blocks: Sequence[Rounds], i: int, budgets: list[Budget]):
        self.t, self.users, self.blocks, self.i, self.budgets = t, users, blocks, i, budgets
        self._views: list[RoundView | None] = [None] * len(users)

    def __len__(self) -> int:
        return len(self.users)

    def __getitem__(self, s: int) -> RoundView:
        view = self._views[s]
        if view is None:
            block, i = self.blocks[s], self.i
            features = None if block.user_features is None else block.user_features[i]
            view = self._views[s] = RoundView(self.t, self.users[s], ArmPool(block.arms[i], self.budgets[s]), features)
        return view

    def __iter__(self) -> Iterator[RoundView]:
        return (self[s] for s in range(len(self.users)))

    def read_arms(self) -> tuple[np.ndarray, np.ndarray]:
        """Every member's arms [S, K, d] and user [S]."""
        arms = np.array([block.arms[self.i] for block in self.blocks])
        for budget in self.budgets:
            budget.spend(arms.shape[1])
        return arms, np.array(self.users)


def each_round(blocks: Iterable[Rounds]) -> Iterator[Round]:
    """The rounds of ``blocks`` one by one: an environment's ``rounds`` from its ``blocks``."""
    return chain.from_iterable(blocks)
