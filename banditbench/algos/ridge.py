"""Ridge-regression statistics with Sherman–Morrison updates, for many users at once.

For each of ``n`` learners: A = λI + Σ x xᵀ, b = Σ r x, θ = A⁻¹ b. A⁻¹ is kept; a rank-one
update costs O(d²) instead of the O(d³) of a fresh inverse:
    (A + x xᵀ)⁻¹ = A⁻¹ − (A⁻¹ x)(A⁻¹ x)ᵀ / (1 + xᵀ A⁻¹ x)        (Sherman–Morrison)
The raw Gram matrix G = Σ x xᵀ is kept too, so that groups of users can pool their samples
(A_group = λI + Σ_members G_u, the regulariser counted once), and log det A is updated by the
matrix-determinant lemma, log det(A + x xᵀ) = log det A + log(1 + xᵀ A⁻¹ x), for OFUL's radius.
"""

from __future__ import annotations

import numpy as np

ARRAYS = ("A_inv", "gram", "b", "theta", "count", "logdet")  # a RidgeStats' arrays (None where not kept)


def ridge_bytes(n_learners: int, dim: int, raw_sums: bool = True, block: int | None = None) -> int:
    """The float64 matrices of ``RidgeStats(n_learners, dim, raw_sums=…)``: A⁻¹, and G when raw sums are kept, each
    d × d, or with ``block`` (``BlockRidgeStats``) d/w blocks of w × w, w the block width."""
    return 8 * n_learners * dim * (block or dim) * (2 if raw_sums else 1)


class RidgeStats:
    """``raw_sums=False`` drops G and b (learners whose samples are never pooled), ``logdet=False`` drops log det A:
    fewer array operations per update in the round loop."""

    def __init__(self, n_learners: int, dim: int, ridge: float = 1.0, raw_sums: bool = True, logdet: bool = True):
        self.ridge = ridge
        self.A_inv = np.tile(np.eye(dim) / ridge, (n_learners, 1, 1))  # [n, d, d]
        self.gram = np.zeros((n_learners, dim, dim)) if raw_sums else None  # [n, d, d] = Σ x xᵀ (no regulariser)
        self.b = np.zeros((n_learners, dim)) if raw_sums else None  # [n, d]
        self.theta = np.zeros((n_learners, dim))  # [n, d] = A⁻¹ b
        self.count = np.zeros(n_learners, dtype=np.int64)
        self.logdet = np.full(n_learners, dim * np.log(ridge)) if logdet else None  # log det A

    def update(
        self, learner: int, x: np.ndarray, reward: float, known: tuple[np.ndarray, float, float] | None = None
    ) -> None:
        """Add sample (x, reward); ``known`` = (A⁻¹x, xᵀA⁻¹x, xᵀθ) when the caller has just computed them."""
        quad = sherman_morrison(self.A_inv[learner], self.theta[learner], x, reward, known)
        self.count[learner] += 1
        if self.gram is not None:
            self.gram[learner] += np.multiply.outer(x, x)
            self.b[learner] += reward * x
        if self.logdet is not None:
            self.logdet[learner] += np.log1p(quad)

    def update_many(self, learners: np.ndarray, x: np.ndarray, reward: float) -> None:
        """The same sample added to several learners at once (batched Sherman–Morrison); a single learner takes
        ``update``'s path, the same numbers with fewer array operations."""
        if len(learners) == 1:
            self.update(int(learners[0]), x, reward)
            return
        self._update_at(learners, np.broadcast_to(x, (len(learners), len(x))), np.full(len(learners), reward))

    def update_each(self, learners: np.ndarray, x: np.ndarray, reward: np.ndarray, members=None, known=None) -> None:
        """On statistics with a leading member axis (``stack``): member ``members[p]`` (default p) adds the sample
        (x[p], reward[p]) to its learner ``learners[p]``, every (member, learner) pair distinct, all in one batched
        Sherman–Morrison update; ``known`` as in ``update``, with a leading axis."""
        self._update_at((np.arange(len(learners)) if members is None else members, learners), x, reward, known)

    def _update_at(self, at, x: np.ndarray, reward: np.ndarray, known=None) -> None:
        """``update`` of the learners ``at`` (an index of the leading axes), sample p = (x[p], reward[p]). Every
        product is a stacked matmul, which computes each slice bit for bit as ``update`` computes it alone."""
        A_inv, theta, column = self.A_inv[at], self.theta[at], x[:, :, None]
        if known is None:
            A_inv_x = (A_inv @ column)[:, :, 0]
            known = A_inv_x, (A_inv_x[:, None, :] @ column)[:, 0, 0], (theta[:, None, :] @ column)[:, 0, 0]
        A_inv_x, quad, prediction = known
        gain = A_inv_x / (1.0 + quad)[:, None]
        self.theta[at] = theta + gain * (reward - prediction)[:, None]
        self.A_inv[at] = A_inv - gain[:, :, None] * A_inv_x[:, None, :]
        self.count[at] += 1
        if self.gram is not None:
            self.gram[at] += x[:, :, None] * x[:, None, :]
            self.b[at] += reward[:, None] * x
        if self.logdet is not None:
            self.logdet[at] += np.log1p(quad)

    def assign(self, learner: int, gram: np.ndarray, b: np.ndarray, count: int) -> None:
        """Set a learner's statistics from pooled raw sums (one O(d³) inverse, for rare regroupings)."""
        A = self.ridge * np.eye(len(b)) + gram
        self.A_inv[learner] = np.linalg.inv(A)
        self.theta[learner] = self.A_inv[learner] @ b
        self.count[learner] = count
        if self.gram is not None:
            self.gram[learner] = gram
            self.b[learner] = b
        if self.logdet is not None:
            self.logdet[learner] = np.linalg.slogdet(A)[1]

    def pool(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Raw sums (Σ G, Σ b, Σ count) over ``members``: what a group built from them starts with."""
        return self.gram[members].sum(axis=0), self.b[members].sum(axis=0), int(self.count[members].sum())

    def fresh(self, n_learners: int) -> RidgeStats:
        """``n_learners`` new learners (A = λI, nothing seen) of the same kind and dimension."""
        return RidgeStats(n_learners, self.theta.shape[1], self.ridge, self.gram is not None, self.logdet is not None)

    def grow(self, n_learners: int) -> None:
        """Add ``n_learners`` fresh learners at the end, for policies whose number of groups is not bounded in
        advance (COFIBA's user clusters of every item cluster)."""
        fresh = self.fresh(n_learners)
        for name in ARRAYS:
            if getattr(self, name) is not None:
                setattr(self, name, np.concatenate([getattr(self, name), getattr(fresh, name)]))

    def reset(self, learner: int) -> None:
        dim = self.theta.shape[1]
        self.assign(learner, np.zeros((dim, dim)), np.zeros(dim), 0)

    def cluster_ucb(self, learner: int, arms: np.ndarray, alpha: float, t: int, reference_code: bool) -> np.ndarray:
        """The score CLUB, SCLUB and LOCB give arms from one learner's statistics, t the 0-based round:
        BASS's common α-LinUCB index, or with ``reference_code`` the authors' index (no square root) scaled by α."""
        if reference_code:
            return reference_code_scores(self.theta[learner], self.A_inv[learner], arms, self.count[learner], t, alpha)
        return log_ucb_scores(self.theta[learner], self.A_inv[learner], arms, alpha, t + 1)

    def cluster_ucb_many(self, learners: np.ndarray, arms: np.ndarray, alpha: float, t: int, reference_code: bool):
        """``cluster_ucb`` of several learners on the same arms [K, d] → [learners, K]."""
        m = len(learners)
        return cluster_ucb_rows(
            self.theta[learners],
            self.A_inv[learners],
            self.count[learners],
            np.broadcast_to(arms, (m, *arms.shape)),
            np.full(m, alpha),
            t,
            reference_code,
        )

    def cluster_ucb_each(self, learners, arms, alpha, t: int, reference_code: bool, members=None) -> np.ndarray:
        """``cluster_ucb`` on stacked statistics (``stack``): member ``members[p]`` (default p) scores the arms
        ``arms[p]`` [P, K, d] from its learner ``learners[p]`` with α ``alpha[p]`` → [P, K]."""
        at = np.arange(len(learners)) if members is None else members, learners
        return cluster_ucb_rows(self.theta[at], self.A_inv[at], self.count[at], arms, alpha, t, reference_code)

    def widths(self, learner: int, arms: np.ndarray) -> np.ndarray:
        """sqrt(xᵀ A⁻¹ x) for every row x of ``arms`` [K, d]."""
        return np.sqrt(np.maximum(self.quadratic_forms_of(learner, arms), 0.0))

    def means_and_quadratic_forms(self, learners: np.ndarray, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """xᵀθ and xᵀA⁻¹x of every arm x [K, d], arm k from learner ``learners[k]``."""
        A_inv_arms = np.einsum("kde,ke->kd", self.A_inv[learners], arms)
        return np.einsum("kd,kd->k", arms, self.theta[learners]), np.einsum("kd,kd->k", A_inv_arms, arms)

    def quadratic_forms_of(self, learner: int, contexts: np.ndarray) -> np.ndarray:
        """xᵀA⁻¹x of one learner for every context x [m, d]."""
        return quadratic_forms(self.A_inv[learner], contexts)

    def quadratic_forms_of_all(self, contexts: np.ndarray) -> np.ndarray:
        """xᵀA⁻¹x of every context x [m, d] for every learner → [m, learners]."""
        return np.einsum("nde,ke,kd->kn", self.A_inv, contexts, contexts)


def stacked_again(stacked: RidgeStats | None, members: list[RidgeStats]) -> RidgeStats:
    """``stacked`` while every member's arrays are still views of it, else ``stack(members)`` anew: for lockstep
    groups whose members replace their statistics (a fresh phase) or grow them (new slots) on their own."""
    if stacked is None or any(member.theta.base is not stacked.theta for member in members):
        return stack(members)
    return stacked


def stack(*parts: list[RidgeStats]) -> RidgeStats:
    """The members' statistics as one RidgeStats whose arrays carry a leading member axis ([S, n, d, d], …), for a
    lockstep group's batched updates (``update_each``), n the most learners of any member (the others padded with
    zeros, never read). Each member's arrays become views of its rows of the stack, so its own methods
    (``assign``, ``pool``) and its checkpoints read and write the same numbers.

    Several lists (each member's statistics of one kind, such as DynUCB's users and clusters) share the stack: a
    member's learners of part j follow its learners of part j − 1 (from the row after the most learners of any
    member in the parts before), so that one ``update_each`` updates learners of every part."""
    members = parts[0]
    sizes = [max(len(member.theta) for member in part) for part in parts]
    stacked = object.__new__(RidgeStats)
    stacked.ridge = np.array([member.ridge for member in members])
    offsets = np.cumsum([0, *sizes[:-1]]).tolist()
    for name in ARRAYS:
        first = getattr(members[0], name)
        if first is None:
            setattr(stacked, name, None)
            continue
        joined = np.zeros((len(members), sum(sizes), *first.shape[1:]), dtype=first.dtype)
        for part, offset in zip(parts, offsets):
            for row, member in zip(joined, part):
                own = row[offset : offset + len(getattr(member, name))]
                own[:] = getattr(member, name)
                setattr(member, name, own)
        setattr(stacked, name, joined)
    return stacked


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
    A_inv -= np.multiply.outer(gain, A_inv_x)
    return quad


def quadratic_forms(A_inv: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """xᵀ A⁻¹ x for every row x of ``arms`` [K, d]."""
    return np.einsum("kd,kd->k", arms @ A_inv, arms)


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
    """``log_ucb_scores`` of S members at once (θ [S, d], A⁻¹ [S, d, d], arms [S, K, d], α [S]) → [S, K]."""
    return ucb_index(means_each(theta, arms), quadratic_forms_each(A_inv, arms), alpha[:, None], t)


def cluster_ucb_rows(theta, A_inv, count, arms, alpha, t: int, reference_code: bool) -> np.ndarray:
    """``RidgeStats.cluster_ucb`` of P learners at once, each bit for bit as alone: θ [P, d], A⁻¹ [P, d, d],
    count [P], arms [P, K, d], α [P] → [P, K]."""
    if reference_code:
        beta = np.asarray(alpha)[..., None] * reference_beta(count, theta.shape[1], t)[:, None]
        return means_each(theta, arms) + beta * quadratic_forms_each(A_inv, arms)
    return log_ucb_scores_each(theta, A_inv, arms, alpha, t + 1)


def ucb_round(t: int, bandpy_clock: bool = False) -> int:
    """The 1-based round ``log_ucb_scores`` takes at 0-based round t. ``bandpy_clock``: the BASS authors' bandpy clock,
    one round behind (their round 1 is a default pull of arm 0 and their clock starts after it), so log(t + 1)
    instead of log(t + 2); alone it changes nothing but which near-ties break which way, and so the trajectory."""
    return t if bandpy_clock else t + 1


def log_ucb_scores(theta: np.ndarray, A_inv: np.ndarray, arms: np.ndarray, alpha: float, t: int) -> np.ndarray:
    """α-LinUCB of CLUB and BASS: xᵀθ + α·sqrt(xᵀA⁻¹x · log(t + 1)), t the 1-based global round."""
    return ucb_index(arms @ theta, quadratic_forms(A_inv, arms), alpha, t)


def ucb_index(means, quad, alpha, t: int):
    """xᵀθ + α·sqrt(xᵀA⁻¹x · log(t + 1)) from the means xᵀθ and quadratic forms xᵀA⁻¹x, t the 1-based round (α one
    value, or a column [P, 1] for P rows of scores)."""
    return means + alpha * np.sqrt(np.maximum(quad, 0.0) * np.log(t + 1))


def reference_code_scores(
    theta: np.ndarray, A_inv: np.ndarray, arms: np.ndarray, count: int, t: int, alpha: float = 1.0
) -> np.ndarray:
    """The UCB of Ban's and Shuai Li's CLUB/SCLUB/LOCB/COFIBA code (quirk): xᵀθ + α·β(N, t)·xᵀA⁻¹x, *no* square
    root, β = sqrt(d ln(1 + N/d) + 4 ln t + ln 2) + 1 with t the 0-based round, so NaN at t = 0 (arm 0 played).
    Their code has no α (α = 1); ours keeps the exploration scale α as a factor so that it is never ignored."""
    return arms @ theta + alpha * reference_beta(count, len(theta), t) * quadratic_forms(A_inv, arms)


def reference_beta(count, dim: int, t: int):
    """β(N, t) = sqrt(d ln(1 + N/d) + 4 ln t + ln 2) + 1 of ``reference_code_scores`` (NaN at t = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(dim * np.log(1 + count / dim) + 4 * np.log(t) + np.log(2)) + 1
