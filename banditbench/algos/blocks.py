"""Ridge statistics of block-encoded contexts, for the linear clustering policies (CLUB, SCLUB, LOCB, COFIBA).

A round with ``block = w`` (the classification protocol's x_{t,a} = (0, …, x, …, 0), x in block a) declares
that every context is zero outside one block of w coordinates. Every Gram matrix A = λI + Σ x xᵀ of such
contexts is block-diagonal, with D/w blocks of w × w, and so is A⁻¹; b and θ = A⁻¹b are the blocks' own vectors
side by side. ``BlockRidgeStats`` keeps exactly these blocks: on MNIST (D = 7 840, w = 784) a learner holds
10 × 784² numbers instead of 7 840², and a Sherman–Morrison update touches one block. Pooled statistics
(Σ G_u) stay block-diagonal, so a cluster's statistics are blocks as well. θ and b keep the dense layout [n, D]:
what a policy computes from θ (the distance between two users' estimates, a mean xᵀθ) reads as before.

The policies build their statistics at the first round, when its view tells the encoding (``BuiltAtFirstRound``):
per block when the round declares blocks, dense otherwise, or always dense when ``blocks`` is set to False
before the first round (what the tests compare against). Scores equal the dense ones up to rounding.
"""

from __future__ import annotations

import numpy as np

from banditbench.algos.base import Lockstep
from banditbench.algos.ridge import RidgeStats, reference_beta, sherman_morrison, ucb_index

SPANS_BLOCKS = "a context spans several blocks, although its round declares a block encoding"
GATHER_BYTES = 2**20  # below this, copying the blocks a computation needs costs less than a Python loop over them


class BlockRidgeStats(RidgeStats):
    """``RidgeStats`` of D-dimensional contexts that each lie in one block of width ``block``: A⁻¹ and G are
    [n, D/w, w, w], θ and b [n, D], count and log det A [n]. A context is located by its non-zero block; an
    all-zero context changes no A⁻¹, θ, G or b, as in the dense update."""

    def __init__(
        self, n_learners: int, dim: int, block: int, ridge: float = 1.0, raw_sums: bool = True, logdet: bool = True
    ):
        self.ridge, self.block = ridge, block
        blocks = dim // block
        self.A_inv = np.tile(np.eye(block) / ridge, (n_learners, blocks, 1, 1))
        self.gram = np.zeros((n_learners, blocks, block, block)) if raw_sums else None
        self.b = np.zeros((n_learners, dim)) if raw_sums else None
        self.theta = np.zeros((n_learners, dim))
        self.count = np.zeros(n_learners, dtype=np.int64)
        self.logdet = np.full(n_learners, dim * np.log(ridge)) if logdet else None

    def fresh(self, n_learners: int) -> BlockRidgeStats:
        dim = self.theta.shape[1]
        return BlockRidgeStats(n_learners, dim, self.block, self.ridge, self.gram is not None, self.logdet is not None)

    def blocks_of(self, contexts: np.ndarray) -> np.ndarray:
        """The block of every context [m, D] → [m] (0 for an all-zero context)."""
        occupied = contexts.reshape(len(contexts), -1, self.block).any(axis=2)
        if (occupied.sum(axis=1) > 1).any():
            raise ValueError(SPANS_BLOCKS)
        return occupied.argmax(axis=1)

    def _span(self, block: int) -> slice:
        return slice(block * self.block, (block + 1) * self.block)

    def block_of(self, x: np.ndarray) -> int:
        """``blocks_of`` one context, in two array operations (it runs twice a round in an update)."""
        nonzero = np.flatnonzero(x) // self.block
        if nonzero.size and nonzero[0] != nonzero[-1]:
            raise ValueError(SPANS_BLOCKS)
        return int(nonzero[0]) if nonzero.size else 0

    def update(self, learner: int, x: np.ndarray, reward: float) -> None:
        a = self.block_of(x)
        span = self._span(a)
        x = x[span]
        quad = sherman_morrison(self.A_inv[learner, a], self.theta[learner, span], x, reward)
        self.count[learner] += 1
        if self.gram is not None:
            self.gram[learner, a] += np.multiply.outer(x, x)
            self.b[learner, span] += reward * x
        if self.logdet is not None:
            self.logdet[learner] += np.log1p(quad)

    def update_many(self, learners: np.ndarray, x: np.ndarray, reward: float) -> None:
        for learner in learners:  # in place, one block each: a batched update would copy every learner's block
            self.update(int(learner), x, reward)

    def _update_at(self, at, x, reward, known=None) -> None:
        raise NotImplementedError("block statistics are updated learner by learner (lockstep groups step them so)")

    def assign(self, learner: int, gram: np.ndarray, b: np.ndarray, count: int) -> None:
        blocks, w = gram.shape[:2]
        A = self.ridge * np.eye(w) + gram  # [blocks, w, w]
        self.A_inv[learner] = np.linalg.inv(A)
        self.theta[learner] = (self.A_inv[learner] @ b.reshape(blocks, w, 1)).ravel()
        self.count[learner] = count
        if self.gram is not None:
            self.gram[learner] = gram
            self.b[learner] = b
        if self.logdet is not None:
            self.logdet[learner] = np.linalg.slogdet(A)[1].sum()

    def reset(self, learner: int) -> None:
        self.assign(learner, np.zeros(self.A_inv.shape[1:]), np.zeros(self.theta.shape[1]), 0)

    def _compact(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The block of every context [m, D] and its entries there [m, w]."""
        blocks = self.blocks_of(contexts)
        return blocks, contexts.reshape(len(contexts), -1, self.block)[np.arange(len(contexts)), blocks]

    def means_and_quadratic_forms(self, learners: np.ndarray, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._terms(learners, *self._compact(arms))

    def _terms(self, learners: np.ndarray, blocks: np.ndarray, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``means_and_quadratic_forms`` of compacted arms (``_compact``)."""
        K, u = len(contexts), learners[0]
        if (learners == u).all() and np.array_equal(blocks, np.arange(self.A_inv.shape[1])):
            # one learner, arm k in block k (the classification protocol): its blocks in order, read in place
            theta = self.theta[u].reshape(K, self.block)
            quad = np.add.reduce(np.einsum("kij,kj->ki", self.A_inv[u], contexts) * contexts, axis=1)
        else:
            theta = self.theta[learners].reshape(K, -1, self.block)[np.arange(K), blocks]
            A_inv = self.A_inv  # one block at a time: gathering them would copy every arm's w × w block
            quad = np.array([x @ A_inv[u, a] @ x for u, a, x in zip(learners.tolist(), blocks.tolist(), contexts)])
        return np.add.reduce(contexts * theta, axis=1), quad

    def quadratic_forms_of(self, learner: int, contexts: np.ndarray) -> np.ndarray:
        blocks, contexts = self._compact(contexts)
        A_inv = self.A_inv[learner]
        if len(contexts) * A_inv[0].nbytes <= GATHER_BYTES:  # small blocks: each context's block gathered, one call
            return np.add.reduce(np.einsum("mij,mj->mi", A_inv[blocks], contexts) * contexts, axis=1)
        quad = np.empty(len(contexts))
        for a in np.unique(blocks).tolist():  # one product per block
            rows = blocks == a
            quad[rows] = np.add.reduce((contexts[rows] @ A_inv[a]) * contexts[rows], axis=1)
        return quad

    def quadratic_forms_of_all(self, contexts: np.ndarray) -> np.ndarray:
        blocks, contexts = self._compact(contexts)
        return np.array([(self.A_inv[:, a] @ x) @ x for a, x in zip(blocks.tolist(), contexts)])

    def cluster_ucb(self, learner: int, arms: np.ndarray, alpha: float, t: int, reference_code: bool) -> np.ndarray:
        return self.cluster_ucb_many(np.array([learner]), arms, alpha, t, reference_code)[0]

    def cluster_ucb_many(self, learners: np.ndarray, arms: np.ndarray, alpha: float, t: int, reference_code: bool):
        blocks, contexts = self._compact(arms)  # once for every learner
        scores = []
        for u in learners.tolist():
            means, quad = self._terms(np.full(len(arms), u), blocks, contexts)
            if reference_code:
                scores.append(means + alpha * reference_beta(self.count[u], self.theta.shape[1], t) * quad)
            else:
                scores.append(ucb_index(means, quad, alpha, t + 1))
        return np.stack(scores)


def ridge_stats(n_learners: int, dim: int, ridge: float, block: int | None, **kinds) -> RidgeStats:
    """Dense ``RidgeStats``, or ``BlockRidgeStats`` of width ``block``; ``kinds``: raw_sums, logdet."""
    if block is None:
        return RidgeStats(n_learners, dim, ridge, **kinds)
    return BlockRidgeStats(n_learners, dim, block, ridge, **kinds)


class BuiltAtFirstRound:
    """Mixin of a policy whose statistics are built at its first round (its ``_build(block)``), per block when the
    round declares a block encoding that divides the dimension and ``blocks`` is True, dense otherwise. A policy
    calls ``_prepare(view)`` first in ``select`` and ``update``."""

    blocks = True  # set to False on an instance before its first round: dense statistics whatever the rounds say
    block: int | None = None
    built = False

    def _prepare(self, view) -> None:
        if not self.built:
            usable = self.blocks and view.block and self.dim % view.block == 0
            self._build_once(view.block if usable else None)

    def _build_once(self, block: int | None) -> None:
        self.block, self.built = block, True
        self._build(block)

    def _build(self, block: int | None) -> None:
        """Allocate the statistics: dense for ``block`` None, else per block of that width."""
        raise NotImplementedError

    def load_state_dict(self, state) -> None:
        if state.get("built") and not self.built:  # saved after its first round: build, then fill
            self._build_once(state["block"])
        super().load_state_dict(state)


class FirstRoundGroup(Lockstep):
    """The lockstep group of ``BuiltAtFirstRound`` policies, made at their first round once they are built:
    ``batched(policies)`` over dense statistics; over block statistics the members step one by one (a round's
    work there is each member's own w × w products, which stacking would only copy)."""

    def __init__(self, policies, batched):
        super().__init__(policies)
        self.batched, self.group = batched, None

    def select(self, views, budgets):
        if self.group is None:
            for policy, view in zip(self.policies, views):
                policy._prepare(view)
            dense = all(policy.block is None for policy in self.policies)
            self.group = self.batched(self.policies) if dense else Lockstep(self.policies)
        return self.group.select(views, budgets)

    def update(self, views, chosen, rewards):
        self.group.update(views, chosen, rewards)
