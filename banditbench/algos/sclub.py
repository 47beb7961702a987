"""SCLUB (Li, Chen, Li & Leung, IJCAI 2019): set-based clustering of bandits with split and merge.

Users start in one cluster. Time runs in stages s = 1, 2, … of 2^s rounds; at each stage start every
user becomes "unchecked". The served user i (cluster j) plays LinUCB on j's pooled statistics
  xᵀθ_j + α·sqrt(xᵀA_j⁻¹x · log(t+1)),
updates its own and j's statistics and becomes checked; then
- split: i leaves j as a new singleton cluster when
    ‖θ_i − θ_j‖ > α₁(F(T_i) + F(T_j))          (parameter test), or
    |T_i/t − T_j/(|j|·t)| > α_p·F(t)           (frequency test),
  with F(m) = sqrt((1 + ln(1 + m)) / (1 + m)), T the pull counts;
- merge: when every member of i's cluster is checked, it merges with the nearest other fully checked
  cluster k satisfying ‖θ_j − θ_k‖ < (α₁/2)(F(T_j) + F(T_k)) and |p_j − p_k| < (α_p/2)·F(t), p the mean
  per-user frequency of a cluster.
Cluster statistics are pooled member statistics (λI + Σ G_u, Σ b_u), rebuilt on a split or merge.
The split test compares with the cluster's current estimate (as the authors' code does).
Switches: ``reset_checks=False`` never resets the checks (Ban's copy of the code); ``reference_ucb`` uses the
authors' index without square root, xᵀθ + α·β(N, t)·xᵀA⁻¹x (α = 1 in their code). The authors' S/b aliasing bug
(a new singleton sharing its arrays with the user, so samples count twice) is not reproduced.
On block-encoded contexts the statistics are kept per block (``blocks.py``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.blocks import BuiltAtFirstRound, ridge_stats
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes


class SCLUB(BuiltAtFirstRound, MemberPolicy):
    member_params = ("alpha", "alpha1", "alpha_p", "ridge")  # per member: its exploration, tests and ridge
    domains = {
        "alpha": d.NON_NEGATIVE,
        "alpha1": d.NON_NEGATIVE,
        "alpha_p": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "reset_checks": d.FLAG,
        "reference_ucb": d.FLAG,
    }
    authors_code = {
        "reset_checks": (False, "the split checks are never reset (Ban's copy of the code)"),
        "reference_ucb": (
            True,
            "the index without the square root, xᵀθ + α·β(N, t)·xᵀA⁻¹x, NaN at t = 0 (their code has no α: α = 1)",
        ),
    }
    transient = ("confidence",)  # a table of F's values, grown on demand

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        alpha=1.0,
        alpha1=1.0,
        alpha_p=1.4142135623730951,
        ridge=1.0,
        reset_checks: bool = True,
        reference_ucb: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.alpha, self.alpha1, self.alpha_p = map(self.per_member, (alpha, alpha1, alpha_p))
        self.reset_checks, self.reference_ucb, self.ridge = reset_checks, reference_ucb, self.per_member(ridge)
        M = len(self.members)
        self.users: RidgeStats | None = None  # built at the first round (blocks.py)
        self.groups: RidgeStats | None = None  # one slot per possible cluster
        self.label = np.zeros((M, n_users), dtype=np.int64)
        self.size = np.zeros((M, n_users), dtype=np.int64)
        self.size[:, 0] = n_users
        self.free = [list(range(n_users - 1, 0, -1)) for _ in range(M)]  # each member's unused cluster slots
        self.checked = np.zeros((M, n_users), dtype=bool)
        self.unchecked = self.size.copy()  # unchecked members per cluster
        self.stage, self.stage_end = 1, 2  # stage s covers 2^s rounds
        self.confidence = ConfidenceTable()  # F(m)

    def _build(self, block):
        M = len(self.members)
        self.users = ridge_stats(M, self.n_users, self.dim, self.ridge, block, logdet=False)
        self.groups = ridge_stats(M, self.n_users, self.dim, self.ridge, block, logdet=False)

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        return 2 * ridge_bytes(n_users, dim, block=block)  # users, then one group slot per user

    def select(self, views, budgets):
        self._prepare(views)
        arms, served = self.read_arms(views)
        clusters = self.label[self.at(served)]
        scores = self.groups.cluster_ucb(self.members, clusters, arms, self.alpha, views[0].t, self.reference_ucb)
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        self._prepare(views)
        members, users, groups, t = self.members, self.users, self.groups, views[0].t + 1
        self._advance_stage(t)
        served, x, reward = self.played(views, chosen, rewards)
        i = self.at(served)
        c = self.label[i].copy()  # each member's user's cluster j
        users.update(members, served, x, reward)
        groups.update(members, c, x, reward)
        first = ~self.checked[i]
        if first.any():  # a user's first round of the stage
            self.checked[i] = True
            self.unchecked[members[first], c[first]] -= 1
        j = self.at(c)
        shared = self.size[j] > 1  # a singleton cluster has no one to split from
        if shared.any():
            self._split_tests(t, served, i, j, c, shared)
        checked = (self.unchecked[self.at(c)] == 0).nonzero()[0]  # merge only a fully checked cluster
        if checked.size:
            self._merge(checked, c[checked], t)

    def _split_tests(self, t, served, i, j, c, shared) -> None:
        """Split, for the members whose cluster is ``shared``: served user i leaves its cluster j when
        ‖θ_i − θ_j‖ > α₁(F(T_i) + F(T_j)) or |T_i/t − T_j/(|j|·t)| > α_p·F(t); ``c`` takes the new clusters."""
        users, groups, F = self.users, self.groups, self.confidence.upto(t)
        difference = users.theta[i] - groups.theta[j]
        distance = np.sqrt((difference[:, None, :] @ difference[:, :, None])[:, 0, 0])
        user_count, group_count = users.count[i], groups.count[j]
        far = distance > self.alpha1 * (F[user_count] + F[group_count])
        odd = np.abs(user_count / t - group_count / (self.size[j] * t)) > self.alpha_p * F[t]
        for m in (shared & (far | odd)).nonzero()[0].tolist():
            c[m] = self._split(m, int(served[m]), int(c[m]))

    def _advance_stage(self, t: int) -> None:
        while t > self.stage_end:  # a new stage: every user unchecked again
            self.stage += 1
            self.stage_end += 2**self.stage
            if self.reset_checks:
                self.checked[:] = False
                self.unchecked[:] = self.size

    def _split(self, m: int, i: int, c: int) -> int:
        """Member m's user i leaves cluster c as a new singleton cluster, whose id is returned."""
        new = self.free[m].pop()
        self.label[m, i] = new
        self.size[m, c] -= 1
        self.size[m, new] = 1
        gram, b, count = self.users.pool(m, [i])
        groups = self.groups
        groups.assign(m, new, gram, b, count)
        groups.assign(m, c, groups.gram[m, c] - gram, groups.b[m, c] - b, groups.count[m, c] - count)
        return new

    def _merge(self, s: np.ndarray, c: np.ndarray, t: int) -> None:
        """Merge member s[p]'s fully checked cluster c[p] with the nearest other fully checked cluster k satisfying
        ‖θ_j − θ_k‖ < (α₁/2)(F(T_j) + F(T_k)) and |p_j − p_k| < (α_p/2)·F(t), p a cluster's mean per-user
        frequency: the tests of every member at once, the merges member by member."""
        g, F, at, rows = self.groups, self.confidence.upto(t), np.arange(len(s)), self.rows(s)
        size = self.size[rows]
        candidate = (size > 0) & (self.unchecked[rows] == 0)
        candidate[at, c] = False
        theta, count = g.theta[rows], g.count[rows]
        distance = distances(theta, theta[at, c][:, None, :])
        close = candidate & (distance < self.alpha1[rows, None] / 2 * (F[count[at, c]][:, None] + F[count]))
        frequency = count / np.maximum(size, 1) / t
        close &= np.abs(frequency - frequency[at, c][:, None]) < self.alpha_p[rows, None] / 2 * F[t]
        for p in close.any(axis=1).nonzero()[0].tolist():
            nearest = close[p].nonzero()[0]
            self._join(int(s[p]), int(c[p]), int(nearest[np.argmin(distance[p, nearest])]))

    def _join(self, m: int, c: int, k: int) -> None:
        """Member m's cluster k joins its cluster c."""
        self.label[m][self.label[m] == k] = c
        self.size[m, c] += self.size[m, k]
        self.size[m, k] = 0
        self.free[m].append(k)
        g = self.groups
        g.assign(m, c, g.gram[m, c] + g.gram[m, k], g.b[m, c] + g.b[m, k], g.count[m, c] + g.count[m, k])

    def clusters(self, m):
        return self.label[m]
