"""Ridge-regression statistics with Sherman–Morrison updates, for many users of every member of a group at once.

For each learner of each member: A = λI + Σ x xᵀ, b = Σ r x, θ = A⁻¹ b. A⁻¹ is kept; a rank-one
update costs O(d²) instead of the O(d³) of a fresh inverse:
    (A + x xᵀ)⁻¹ = A⁻¹ − (A⁻¹ x)(A⁻¹ x)ᵀ / (1 + xᵀ A⁻¹ x)        (Sherman–Morrison)
The raw Gram matrix G = Σ x xᵀ is kept too, so that groups of users can pool their samples
(A_group = λI + Σ_members G_u, the regulariser counted once), and log det A is updated by the
matrix-determinant lemma, log det(A + x xᵀ) = log det A + log(1 + xᵀ A⁻¹ x), for OFUL's radius. In square-root
form a learner keeps R with R Rᵀ = A⁻¹ instead of A⁻¹ (for Thompson sampling's draws θ̂ + R z), by Potter's
rank-one update, O(d²) as Sherman–Morrison's.
Every array has the member axis first (``A_inv[m, u]``), and the batched products compute each member's slice bit for
bit as the same product alone, so a group learns exactly as its members alone.
"""

from __future__ import annotations

import numpy as np

ARRAYS = ("A_inv", "gram", "b", "theta", "count", "logdet", "root")  # a RidgeStats' arrays (None where not kept)


def ridge_bytes(n_learners: int, dim: int, raw_sums: bool = True, block: int | None = None) -> int:
    """The float64 matrices of one member of ``RidgeStats(…, n_learners, dim, raw_sums=…)``: A⁻¹, and G when raw sums
    are kept, each d × d, or with ``block`` (``BlockRidgeStats``) d/w blocks of w × w, w the block width."""
    return 8 * n_learners * dim * (block or dim) * (2 if raw_sums else 1)


class RidgeStats:
    """The ridge statistics of ``n_learners`` learners of each of ``members`` members, the member axis first: A⁻¹ and G
    [M, n, d, d], b and θ [M, n, d], pull counts and log det A [M, n]; λ one value or one per member [M].
    ``raw_sums=False`` drops G and b (learners whose samples are never pooled), ``logdet=False`` drops log det A:
    fewer array operations per update in the round loop. ``root=True`` is the square-root form: R with R Rᵀ = A⁻¹
    [M, n, d, d] instead of A⁻¹ (None), for ``update``, ``assign`` and ``reset`` (the scoring helpers read A⁻¹)."""

    def __init__(
        self, members: int, n_learners: int, dim: int, ridge=1.0, raw_sums: bool = True, logdet=True, root=False
    ):
        self.ridge = np.broadcast_to(np.asarray(ridge, dtype=float), (members,)).copy()  # [M]
        shape, matrices = (members, n_learners), self.matrix_shape(dim)
        identity = np.broadcast_to(np.eye(matrices[-1]), (*shape, *matrices))
        per_member = self.ridge.reshape(members, *[1] * (identity.ndim - 1))
        self.A_inv = None if root else identity / per_member  # I / λ of each member
        self.root = identity / np.sqrt(per_member) if root else None  # I / √λ
        self.gram = np.zeros((*shape, *matrices)) if raw_sums else None  # Σ x xᵀ (no regulariser)
        self.b = np.zeros((*shape, dim)) if raw_sums else None
        self.theta = np.zeros((*shape, dim))  # A⁻¹ b
        self.count = np.zeros(shape, dtype=np.int64)
        self.logdet = np.repeat((dim * np.log(self.ridge))[:, None], n_learners, axis=1) if logdet else None

    def matrix_shape(self, dim: int) -> tuple[int, ...]:
        """The shape of one learner's A⁻¹ and G."""
        return dim, dim

    def update(self, members: np.ndarray, learners: np.ndarray, x: np.ndarray, reward: np.ndarray, known=None):
        """Member ``members[p]`` adds the sample (x[p], reward[p]) to its learner ``learners[p]``, every pair distinct,
        in one batched Sherman–Morrison update (Potter's in square-root form); ``known`` = (A⁻¹x, xᵀA⁻¹x, xᵀθ) [P, …],
        in square-root form (Rᵀx, xᵀA⁻¹x, xᵀθ), when the caller has just computed them. Every product is a stacked
        matmul, which computes each pair's slice bit for bit as the product alone; one or two pairs take in-place
        updates of their views instead, the same numbers with fewer array operations (below three pairs they cost less
        than the gathers and scatters of the batch)."""
        if self.root is not None:
            self._update_roots(members, learners, x, reward, known)
            return
        if len(learners) <= 2:
            for p, (m, learner) in enumerate(zip(members.tolist(), learners.tolist())):
                one = None if known is None else (known[0][p], known[1][p], known[2][p])
                self._update_one(m, learner, x[p], reward[p], one)
            return
        at = members, learners
        A_inv, theta = self.A_inv[at], self.theta[at]
        A_inv_x, quad, prediction = known if known is not None else ridge_terms(A_inv, theta, x)
        gain = A_inv_x / (1.0 + quad)[:, None]
        self.theta[at] = theta + gain * (reward - prediction)[:, None]
        self.A_inv[at] = A_inv - gain[:, :, None] * A_inv_x[:, None, :]
        self._add_sums(at, x, reward, quad)

    def terms(self, members: np.ndarray, learners: np.ndarray, x: np.ndarray) -> tuple:
        """``update``'s ``known`` of each pair's sample x [P, d]: (A⁻¹x, xᵀA⁻¹x, xᵀθ), Rᵀx first in square-root form."""
        at = pair_index(members, learners)
        if self.root is not None:
            return square_root_terms(self.root[at], self.theta[at], x)
        return ridge_terms(self.A_inv[at], self.theta[at], x)

    def _update_roots(self, members, learners, x, reward, known) -> None:
        """``update`` in square-root form: one pair's rows updated in place (views), several gathered and written
        back, by the same stacked products."""
        at = pair_index(members, learners)
        root, theta = self.root[at], self.theta[at]
        quad = potter_update(root, theta, x, reward, known)
        if len(learners) > 1:  # gathered copies: written back
            self.root[at], self.theta[at] = root, theta
        self._add_sums(at, x, reward, quad)

    def _add_sums(self, at, x: np.ndarray, reward: np.ndarray, quad: np.ndarray) -> None:
        """The pull counts, raw sums and log det A of the learners ``at`` [P] after their samples x [P, d]."""
        self.count[at] += 1
        if self.gram is not None:
            self.gram[at] += x[:, :, None] * x[:, None, :]
            self.b[at] += reward[:, None] * x
        if self.logdet is not None:
            self.logdet[at] += np.log1p(quad)

    def _update_one(
        self, m: int, learner: int, x: np.ndarray, reward: float, known=None, matrix=(), span=slice(None)
    ) -> None:
        """One pair's update on views of its learner's statistics; ``matrix`` and ``span`` (block statistics): the
        index of x's block in the learner's A⁻¹ and G and that block's span of θ and b, x then the block's entries."""
        quad = sherman_morrison(self.A_inv[m, learner][matrix], self.theta[m, learner, span], x, reward, known)
        self.count[m, learner] += 1
        if self.gram is not None:
            self.gram[m, learner][matrix] += x[:, None] * x
            self.b[m, learner, span] += reward * x
        if self.logdet is not None:
            self.logdet[m, learner] += np.log1p(quad)

    def assign(self, m: int, learner: int, gram: np.ndarray, b: np.ndarray, count: int) -> None:
        """Set member m's learner from pooled raw sums (one O(d³) inverse, for rare regroupings; G may be a stack of
        diagonal blocks [blocks, w, w], each inverted alone, b then their vectors side by side)."""
        A = self.ridge[m] * np.eye(gram.shape[-1]) + gram
        A_inv = np.linalg.inv(A)
        if self.root is None:
            self.A_inv[m, learner] = A_inv
        else:
            self.root[m, learner] = np.linalg.cholesky(A_inv)
        self.theta[m, learner] = (A_inv @ b.reshape(*gram.shape[:-1], 1)).ravel()
        self.count[m, learner] = count
        if self.gram is not None:
            self.gram[m, learner] = gram
            self.b[m, learner] = b
        if self.logdet is not None:
            self.logdet[m, learner] = np.linalg.slogdet(A)[1].sum()

    def pool(self, m: int, learners: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Raw sums (Σ G, Σ b, Σ count) over member m's ``learners``: what a group built from them starts with."""
        return self.gram[m, learners].sum(axis=0), self.b[m, learners].sum(axis=0), int(self.count[m, learners].sum())

    def reset(self, m: int, learner: int) -> None:
        dim = self.theta.shape[2]
        self.assign(m, learner, np.zeros(self.matrix_shape(dim)), np.zeros(dim), 0)

    def fresh(self, n_learners: int) -> RidgeStats:
        """``n_learners`` new learners per member (A = λI, nothing seen) of the same kind and dimension."""
        kinds = {"raw_sums": self.gram is not None, "logdet": self.logdet is not None, "root": self.root is not None}
        return RidgeStats(len(self.ridge), n_learners, self.theta.shape[2], self.ridge, **kinds)

    def grow(self, n_learners: int) -> None:
        """Add ``n_learners`` fresh learners per member at the end, for policies whose number of groups is not bounded
        in advance (COFIBA's user clusters of every item cluster)."""
        fresh = self.fresh(n_learners)
        for name in ARRAYS:
            if getattr(self, name) is not None:
                setattr(self, name, np.concatenate([getattr(self, name), getattr(fresh, name)], axis=1))

    def cluster_ucb(self, members, learners, arms, alpha, t: int, reference_code: bool) -> np.ndarray:
        """The score CLUB, SCLUB and LOCB give arms from a learner's statistics, t the 0-based round: member
        ``members[p]`` scores its arms ``arms[p]`` [P, K, d] from its learner ``learners[p]`` with α ``alpha[p]``
        → [P, K], BASS's α-LinUCB index, or with ``reference_code`` the authors' index (``reference_beta``)."""
        at = pair_index(members, learners)
        theta, A_inv, count = self.theta[at], self.A_inv[at], self.count[at][:, None]
        if reference_code:
            beta = alpha[:, None] * reference_beta(count, self.theta.shape[2], t)
            return means_each(theta, arms) + beta * quadratic_forms_each(A_inv, arms)
        return log_ucb_scores_each(theta, A_inv, arms, alpha, t + 1)

    def quadratic_forms_of(self, m: int, learner: int, contexts: np.ndarray) -> np.ndarray:
        """xᵀA⁻¹x of member m's learner for every context x [n, d]."""
        return np.einsum("kd,kd->k", contexts @ self.A_inv[m, learner], contexts)

    def quadratic_forms_of_all(self, m: int, contexts: np.ndarray) -> np.ndarray:
        """xᵀA⁻¹x of every context x [k, d] for every learner of member m → [k, learners]."""
        return np.einsum("nde,ke,kd->kn", self.A_inv[m], contexts, contexts)

    def quadratic_forms_of_each(self, members: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """xᵀA⁻¹x of context p [P, d] for every learner of member ``members[p]`` → [P, learners]; one member's learners
        are read in place (no gather), the same numbers."""
        if len(members) == 1:
            return self.quadratic_forms_of_all(members[0], contexts)
        return np.einsum("pnde,pe,pd->pn", self.A_inv[members], contexts, contexts)

    def means_and_quadratic_forms(self, members, learners, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """xᵀθ and xᵀA⁻¹x of every arm x [P, d], arm p from learner ``learners[p]`` of member ``members[p]``."""
        A_inv_arms = np.einsum("kde,ke->kd", self.A_inv[members, learners], arms)
        return np.einsum("kd,kd->k", arms, self.theta[members, learners]), np.einsum("kd,kd->k", A_inv_arms, arms)


def pair_index(members: np.ndarray, learners: np.ndarray) -> tuple:
    """The index of the (member, learner) pairs [P] in arrays [M, n, …] → [P, …]: one pair's row read in place (a
    view, whose writes go through), several gathered; both give the same numbers."""
    if len(learners) == 1:
        return int(members[0]), slice(int(learners[0]), int(learners[0]) + 1)
    return members, learners


def ridge_terms(A_inv: np.ndarray, theta: np.ndarray, x: np.ndarray) -> tuple:
    """(A⁻¹x, xᵀA⁻¹x, xᵀθ) of P learners' samples x [P, d] from their A⁻¹ [P, d, d] and θ [P, d]: stacked products,
    each learner's bit for bit as its own."""
    column = x[:, :, None]
    A_inv_x = (A_inv @ column)[:, :, 0]
    return A_inv_x, (A_inv_x[:, None, :] @ column)[:, 0, 0], (theta[:, None, :] @ column)[:, 0, 0]


def square_root_terms(root: np.ndarray, theta: np.ndarray, x: np.ndarray) -> tuple:
    """(Rᵀx, xᵀA⁻¹x = ‖Rᵀx‖², xᵀθ) of P learners' samples x [P, d] from their R [P, d, d] (R Rᵀ = A⁻¹) and θ."""
    u = (x[:, None, :] @ root)[:, 0, :]  # uᵀ = xᵀR
    return u, np.add.reduce(u * u, axis=1), np.add.reduce(x * theta, axis=1)


def sherman_morrison(A_inv: np.ndarray, theta: np.ndarray, x: np.ndarray, reward: float, known=None) -> float:
    """Add (x, reward) to one learner's A⁻¹ and θ, in place (views), and return xᵀA⁻¹x (before the update);
    ``known`` as in ``RidgeStats.update``."""
    if known is None:
        A_inv_x = A_inv @ x
        known = A_inv_x, x @ A_inv_x, x @ theta
    A_inv_x, quad, prediction = known
    gain = A_inv_x / (1.0 + quad)
    # θ' = A'⁻¹(b + r x) = θ + gain·(r − xᵀθ): the recursive least-squares form of the same update
    theta += gain * (reward - prediction)
    A_inv -= gain[:, None] * A_inv_x
    return quad


def potter_update(root: np.ndarray, theta: np.ndarray, x: np.ndarray, reward: np.ndarray, known=None) -> np.ndarray:
    """Add the samples (x[p], reward[p]) to P learners in square-root form, in place: their R [P, d, d] (R Rᵀ = A⁻¹)
    and θ [P, d]; ``known`` = (Rᵀx, xᵀA⁻¹x, xᵀθ) when the caller has them. Returns xᵀA⁻¹x [P]. With u = Rᵀx and
    q = uᵀu = xᵀA⁻¹x, R u = A⁻¹x gives Sherman–Morrison's θ' = θ + A⁻¹x·(r − xᵀθ)/(1 + q), and
    R' = R − c·(R u) uᵀ, c = 1 / (1 + q + sqrt(1 + q)), gives R' R'ᵀ = R (I − u uᵀ/(1 + q)) Rᵀ = (A + x xᵀ)⁻¹
    (Potter's square-root update: Potter & Stern 1963; Bierman 1977). R Rᵀ stays positive semi-definite whatever
    the rounding, and a draw θ̂ + R z needs no factorisation."""
    u, quad, prediction = known if known is not None else square_root_terms(root, theta, x)
    A_inv_x = (root @ u[:, :, None])[:, :, 0]
    theta += A_inv_x * ((reward - prediction) / (1.0 + quad))[:, None]
    root -= (A_inv_x / (1.0 + quad + np.sqrt(1.0 + quad))[:, None])[:, :, None] * u[:, None, :]
    return quad


def oful_radius(logdet: np.ndarray | float, dim: int, ridge: float, sigma: float, S: float, delta: float):
    """β_t(δ) = σ·sqrt(2 log(1/δ) + log det A − d log λ) + sqrt(λ)·S  (Abbasi-Yadkori et al. 2011, Thm 2)."""
    return sigma * np.sqrt(np.maximum(2 * np.log(1 / delta) + logdet - dim * np.log(ridge), 0.0)) + np.sqrt(ridge) * S


def club_confidence(count: np.ndarray | int):
    """CB(T) = sqrt((1 + ln(1 + T)) / (1 + T)): CLUB's per-user confidence (Gentile et al. 2014), also LOCB's F."""
    count = np.asarray(count, dtype=float)
    return np.sqrt((1 + np.log1p(count)) / (1 + count))


class ConfidenceTable:
    """``club_confidence`` of the integers 0 … m as one table, grown by doubling: pull counts and rounds only grow
    by one a round, and a lookup replaces five numpy calls per use in the round loop (the values are identical)."""

    def __init__(self, size: int = 1024):
        self.values = club_confidence(np.arange(size))

    def upto(self, m: int) -> np.ndarray:
        """The table, covering at least 0 … m."""
        if m >= len(self.values):
            self.values = club_confidence(np.arange(2 * m + 1))
        return self.values


def distances(points: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """‖p − centre‖ for every row p of ``points`` (centre broadcast against them, e.g. [S, 1, d] for S members'
    points [S, K, d]): ``np.linalg.norm(points - centre, axis=-1)``'s arithmetic without its per-call overhead."""
    difference = points - centre
    return np.sqrt(np.add.reduce(difference * difference, axis=-1))


def quadratic_forms_each(A_inv: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """``quadratic_forms`` of S members at once (A⁻¹ [S, d, d], arms [S, K, d] → [S, K]), each member's bit for bit
    as alone: a stacked matmul computes every slice as the single product does."""
    return np.einsum("skd,skd->sk", arms @ A_inv, arms)


def means_each(theta: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """xᵀθ of S members at once (θ [S, d], arms [S, K, d] → [S, K]), each member's bit for bit ``arms @ θ``."""
    return (arms @ theta[:, :, None])[:, :, 0]


def log_ucb_scores_each(theta: np.ndarray, A_inv: np.ndarray, arms: np.ndarray, alpha: np.ndarray, t: int):
    """α-LinUCB of CLUB and BASS, xᵀθ + α·sqrt(xᵀA⁻¹x · log(t + 1)) with t the 1-based global round, of S members at
    once (θ [S, d], A⁻¹ [S, d, d], arms [S, K, d], α [S]) → [S, K]."""
    return ucb_index(means_each(theta, arms), quadratic_forms_each(A_inv, arms), alpha[:, None], t)


def ucb_round(t: int, bandpy_clock: bool = False) -> int:
    """The 1-based round ``log_ucb_scores_each`` takes at 0-based round t. ``bandpy_clock``: the BASS authors' bandpy
    clock, one round behind (their round 1 is a default pull of arm 0 and their clock starts after it), so log(t + 1)
    instead of log(t + 2); alone it changes nothing but which near-ties break which way, and so the trajectory."""
    return t if bandpy_clock else t + 1


def ucb_index(means, quad, alpha, t: int):
    """xᵀθ + α·sqrt(xᵀA⁻¹x · log(t + 1)) from the means xᵀθ and quadratic forms xᵀA⁻¹x, t the 1-based round (α one
    value, or a column [P, 1] for P rows of scores)."""
    return means + alpha * np.sqrt(np.maximum(quad, 0.0) * np.log(t + 1))


def reference_beta(count, dim: int, t: int):
    """β(N, t) = sqrt(d ln(1 + N/d) + 4 ln t + ln 2) + 1 of the UCB of Ban's and Shuai Li's CLUB/SCLUB/LOCB/COFIBA code
    (quirk): xᵀθ + α·β(N, t)·xᵀA⁻¹x, *no* square root, with t the 0-based round, so NaN at t = 0 (arm 0 played). Their
    code has no α (α = 1); ours keeps the exploration scale α as a factor so that it is never ignored."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(dim * np.log(1 + count / dim) + 4 * np.log(t) + np.log(2)) + 1
