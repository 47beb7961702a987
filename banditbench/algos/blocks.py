"""Ridge statistics of block-encoded contexts, for the linear clustering policies (CLUB, SCLUB, LOCB, COFIBA).

A round with ``block = w`` (the classification protocol's x_{t,a} = (0, …, x, …, 0), x in block a) declares
that every context is zero outside one block of w coordinates. Every Gram matrix A = λI + Σ x xᵀ of such
contexts is block-diagonal, with D/w blocks of w × w, and so is A⁻¹; b and θ = A⁻¹b are the blocks' own vectors
side by side. ``BlockRidgeStats`` keeps exactly these blocks: on MNIST (D = 7 840, w = 784) a learner holds
10 × 784² numbers instead of 7 840², and a Sherman–Morrison update touches one block. Pooled statistics
(Σ G_u) stay block-diagonal, so a cluster's statistics are blocks as well. θ and b keep the dense layout [n, D]:
what a policy computes from θ (the distance between two users' estimates, a mean xᵀθ) reads as before. Scores
equal the dense ones up to rounding; a policy builds its statistics at its first round (``BuiltAtFirstRound``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos.ridge import RidgeStats, reference_beta, ucb_index

SPANS_BLOCKS = "a context spans several blocks, although its round declares a block encoding"
GATHER_BYTES = 2**20  # below this, copying the blocks a computation needs costs less than a Python loop over them


class BlockRidgeStats(RidgeStats):
    """``RidgeStats`` of D-dimensional contexts that each lie in one block of width ``block``: A⁻¹ and G are
    [M, n, D/w, w, w], θ and b [M, n, D], count and log det A [M, n]. A context is located by its non-zero block; an
    all-zero context changes no A⁻¹, θ, G or b, as in the dense update. A group's members update and score one learner
    at a time: a round's work is each learner's own w × w products, which stacking would only copy."""

    def __init__(self, members: int, n_learners: int, dim: int, block: int, ridge=1.0, raw_sums=True, logdet=True):
        self.block = block
        super().__init__(members, n_learners, dim, ridge, raw_sums, logdet)

    def matrix_shape(self, dim: int) -> tuple[int, ...]:
        return dim // self.block, self.block, self.block

    def fresh(self, n_learners: int) -> BlockRidgeStats:
        kinds = {"raw_sums": self.gram is not None, "logdet": self.logdet is not None}
        return BlockRidgeStats(len(self.ridge), n_learners, self.theta.shape[2], self.block, self.ridge, **kinds)

    def blocks_of(self, contexts: np.ndarray) -> np.ndarray:
        """The block of every context [m, D] → [m] (0 for an all-zero context)."""
        occupied = contexts.reshape(len(contexts), -1, self.block).any(axis=2)
        if (occupied.sum(axis=1) > 1).any():
            raise ValueError(SPANS_BLOCKS)
        return occupied.argmax(axis=1)

    def block_of(self, x: np.ndarray) -> int:
        """``blocks_of`` one context, in two array operations (it runs at every update)."""
        nonzero = np.flatnonzero(x) // self.block
        if nonzero.size and nonzero[0] != nonzero[-1]:
            raise ValueError(SPANS_BLOCKS)
        return int(nonzero[0]) if nonzero.size else 0

    def update(self, members, learners, x, reward, known=None) -> None:
        for m, learner, x_p, reward_p in zip(members.tolist(), learners.tolist(), x, reward):
            a = self.block_of(x_p)  # the block x lies in, and that block's span of θ and b
            span = slice(a * self.block, (a + 1) * self.block)
            self._update_one(m, learner, x_p[span], reward_p, None, a, span)

    def _compact(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The block of every context [m, D] and its entries there [m, w]."""
        blocks = self.blocks_of(contexts)
        return blocks, contexts.reshape(len(contexts), -1, self.block)[np.arange(len(contexts)), blocks]

    def means_and_quadratic_forms(self, members, learners, arms) -> tuple[np.ndarray, np.ndarray]:
        means, quad = np.empty(len(arms)), np.empty(len(arms))
        for m in np.unique(members).tolist():
            rows = members == m
            means[rows], quad[rows] = self._terms(m, learners[rows], *self._compact(arms[rows]))
        return means, quad

    def _terms(self, m: int, learners: np.ndarray, blocks: np.ndarray, contexts: np.ndarray):
        """``means_and_quadratic_forms`` of member m's compacted arms (``_compact``)."""
        K, u = len(contexts), learners[0]
        A_inv = self.A_inv[m]
        if (learners == u).all() and np.array_equal(blocks, np.arange(A_inv.shape[1])):
            # one learner, arm k in block k (the classification protocol): its blocks in order, read in place
            theta = self.theta[m, u].reshape(K, self.block)
            quad = np.add.reduce(np.einsum("kij,kj->ki", A_inv[u], contexts) * contexts, axis=1)
        else:
            theta = self.theta[m, learners].reshape(K, -1, self.block)[np.arange(K), blocks]
            # one block at a time: gathering them would copy every arm's w × w block
            quad = np.array([x @ A_inv[u, a] @ x for u, a, x in zip(learners.tolist(), blocks.tolist(), contexts)])
        return np.add.reduce(contexts * theta, axis=1), quad

    def quadratic_forms_of(self, m: int, learner: int, contexts: np.ndarray) -> np.ndarray:
        """xᵀA⁻¹x of member m's learner for every context x [n, D]."""
        blocks, contexts = self._compact(contexts)
        A_inv = self.A_inv[m, learner]
        if len(contexts) * A_inv[0].nbytes <= GATHER_BYTES:  # small blocks: each context's block gathered, one call
            return np.add.reduce(np.einsum("mij,mj->mi", A_inv[blocks], contexts) * contexts, axis=1)
        quad = np.empty(len(contexts))
        for a in np.unique(blocks).tolist():  # one product per block
            rows = blocks == a
            quad[rows] = np.add.reduce((contexts[rows] @ A_inv[a]) * contexts[rows], axis=1)
        return quad

    def quadratic_forms_of_all(self, m: int, contexts: np.ndarray) -> np.ndarray:
        blocks, contexts = self._compact(contexts)
        return np.array([(self.A_inv[m, :, a] @ x) @ x for a, x in zip(blocks.tolist(), contexts)])

    def quadratic_forms_of_each(self, members: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        return np.stack([self.quadratic_forms_of_all(m, x[None])[0] for m, x in zip(members.tolist(), contexts)])

    def cluster_ucb(self, members, learners, arms, alpha, t: int, reference_code: bool) -> np.ndarray:
        scores = np.empty(arms.shape[:2])
        for m in np.unique(members).tolist():  # each member's arms compacted once, for every learner of it
            pairs = np.flatnonzero(members == m)
            blocks, contexts = self._compact(arms[pairs[0]])
            for p in pairs.tolist():
                u = learners[p]
                means, quad = self._terms(m, np.full(len(contexts), u), blocks, contexts)
                if reference_code:
                    scores[p] = means + alpha[p] * reference_beta(self.count[m, u], self.theta.shape[2], t) * quad
                else:
                    scores[p] = ucb_index(means, quad, alpha[p], t + 1)
        return scores


def ridge_stats(members: int, n_learners: int, dim: int, ridge, block: int | None, **kinds) -> RidgeStats:
    """Dense ``RidgeStats``, or ``BlockRidgeStats`` of width ``block``; ``kinds``: raw_sums, logdet."""
    if block is None:
        return RidgeStats(members, n_learners, dim, ridge, **kinds)
    return BlockRidgeStats(members, n_learners, dim, block, ridge, **kinds)


class BuiltAtFirstRound:
    """Mixin of a policy whose statistics are built at its first round (its ``_build(block)``), per block when the
    round declares a block encoding that divides the dimension and ``blocks`` is True, dense otherwise. A policy
    calls ``_prepare(views)`` first in ``select`` and ``update`` (its members share the protocol, so its encoding)."""

    blocks = True  # set to False on an instance before its first round: dense statistics whatever the rounds say
    block: int | None = None
    built = False

    def _prepare(self, views) -> None:
        if not self.built:
            block = views[0].block
            self._build_once(block if self.blocks and block and self.dim % block == 0 else None)

    def _build_once(self, block: int | None) -> None:
        self.block, self.built = block, True
        self._build(block)

    def _build(self, block: int | None) -> None:
        """Allocate the statistics: dense for ``block`` None, else per block of that width."""
        raise NotImplementedError

    def load_member_state_dict(self, m: int, state) -> None:
        if state.get("built") and not self.built:  # saved after its first round: build, then fill
            self._build_once(state["block"])
        super().load_member_state_dict(m, state)
