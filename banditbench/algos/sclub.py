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
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.blocks import BuiltAtFirstRound, FirstRoundGroup, ridge_stats
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes, stack


class SCLUB(BuiltAtFirstRound, Policy):
    lockstep_params = ("alpha", "alpha1", "alpha_p", "ridge")  # per member: its exploration, tests and ridge
    domains = {
        "alpha": d.NON_NEGATIVE,
        "alpha1": d.NON_NEGATIVE,
        "alpha_p": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "reset_checks": d.FLAG,
        "reference_ucb": d.FLAG,
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        alpha: float = 1.0,
        alpha1: float = 1.0,
        alpha_p: float = 1.4142135623730951,
        ridge: float = 1.0,
        reset_checks: bool = True,
        reference_ucb: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.alpha, self.alpha1, self.alpha_p = alpha, alpha1, alpha_p
        self.reset_checks, self.reference_ucb, self.ridge = reset_checks, reference_ucb, ridge
        self.users: RidgeStats | None = None  # built at the first round (blocks.py)
        self.groups: RidgeStats | None = None  # one slot per possible cluster
        self.label = np.zeros(n_users, dtype=np.int64)
        self.size = np.zeros(n_users, dtype=np.int64)
        self.size[0] = n_users
        self.free = list(range(n_users - 1, 0, -1))  # unused cluster slots
        self.checked = np.zeros(n_users, dtype=bool)
        self.unchecked = self.size.copy()  # unchecked members per cluster
        self.stage, self.stage_end = 1, 2  # stage s covers 2^s rounds
        self.confidence = ConfidenceTable()  # F(m)

    def _build(self, block):
        self.users = ridge_stats(self.n_users, self.dim, self.ridge, block, logdet=False)
        self.groups = ridge_stats(self.n_users, self.dim, self.ridge, block, logdet=False)

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        return 2 * ridge_bytes(n_users, dim, block=block)  # users, then one group slot per user

    def select(self, view, budget):
        self._prepare(view)
        scores = self.groups.cluster_ucb(self.label[view.user], view.arms[:], self.alpha, view.t, self.reference_ucb)
        return int(scores.argmax())

    def update(self, view, chosen, reward):
        self._prepare(view)
        i, x, t = view.user, view.arms[chosen], view.t + 1
        users, groups = self.users, self.groups
        self._advance_stage(t)
        c = self.label[i]
        users.update(i, x, reward)
        groups.update(c, x, reward)
        if not self.checked[i]:
            self.checked[i] = True
            self.unchecked[c] -= 1
        F = self.confidence.upto(t)
        if self.size[c] > 1:
            difference = users.theta[i] - groups.theta[c]
            far = np.sqrt(difference.dot(difference)) > self.alpha1 * (F[users.count[i]] + F[groups.count[c]])
            odd = abs(users.count[i] / t - groups.count[c] / (self.size[c] * t)) > self.alpha_p * F[t]
            if far or odd:
                c = self._split(i, c)
        self._merge(c, t)

    def _advance_stage(self, t: int) -> None:
        while t > self.stage_end:  # a new stage: every user unchecked again
            self.stage += 1
            self.stage_end += 2**self.stage
            if self.reset_checks:
                self.checked[:] = False
                self.unchecked[:] = self.size

    @classmethod
    def lockstep(cls, policies):
        return FirstRoundGroup(policies, SCLUBLockstep)

    def _split(self, i: int, c: int) -> int:
        new = self.free.pop()
        self.label[i] = new
        self.size[c] -= 1
        self.size[new] = 1
        users = self.users
        self.groups.assign(new, users.gram[i].copy(), users.b[i].copy(), users.count[i])
        g = self.groups
        self.groups.assign(c, g.gram[c] - users.gram[i], g.b[c] - users.b[i], g.count[c] - users.count[i])
        return new

    def _merge(self, c: int, t: int) -> None:
        if self.unchecked[c]:
            return
        candidates = np.flatnonzero((self.size > 0) & (self.unchecked == 0))
        candidates = candidates[candidates != c]
        if candidates.size == 0:
            return
        g, F = self.groups, self.confidence.upto(t)
        distance = distances(g.theta[candidates], g.theta[c])
        close = distance < self.alpha1 / 2 * (F[g.count[c]] + F[g.count[candidates]])
        frequency = g.count / np.maximum(self.size, 1) / t
        close &= np.abs(frequency[candidates] - frequency[c]) < self.alpha_p / 2 * F[t]
        if not close.any():
            return
        k = candidates[close][np.argmin(distance[close])]
        self.label[self.label == k] = c
        self.size[c] += self.size[k]
        self.size[k] = 0
        self.free.append(k)
        self.groups.assign(c, g.gram[c] + g.gram[k], g.b[c] + g.b[k], g.count[c] + g.count[k])

    def clusters(self):
        return self.label


class SCLUBLockstep(Lockstep):
    """SCLUB's members in lockstep (seeds, and grid cells of α, α₁, α_p and λ): their user and cluster statistics,
    labels, sizes and checks stacked on a leading member axis (each member's arrays are views of the stacks), so
    a round's scores, Sherman–Morrison updates and split tests are one numpy call each for the group. Only the
    members that split, or may merge, continue alone, through their own ``_split`` and ``_merge``."""

    def __init__(self, policies: list[SCLUB]):
        super().__init__(policies)
        self.users = stack([policy.users for policy in policies])
        self.groups = stack([policy.groups for policy in policies])
        self.stack_members("label", "size", "checked", "unchecked")
        self.alpha, self.alpha1, self.alpha_p = map(self.per_member, ("alpha", "alpha1", "alpha_p"))
        self.members = np.arange(len(policies))
        self.confidence, self.reference_ucb = policies[0].confidence, policies[0].reference_ucb

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        clusters = self.label[self.members, served]
        scores = self.groups.cluster_ucb_each(clusters, arms, self.alpha, views[0].t, self.reference_ucb)
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        members, users, groups, t = self.members, self.users, self.groups, views[0].t + 1
        if t > self.policies[0].stage_end:
            for policy in self.policies:
                policy._advance_stage(t)
        served, x, reward = self.played(chosen, rewards)
        c = self.label[members, served]
        users.update_each(served, x, reward)
        groups.update_each(c, x, reward)
        first = ~self.checked[members, served]
        self.checked[members[first], served[first]] = True
        self.unchecked[members[first], c[first]] -= 1
        F = self.confidence.upto(t)
        difference = users.theta[members, served] - groups.theta[members, c]
        distance = np.sqrt((difference[:, None, :] @ difference[:, :, None])[:, 0, 0])
        user_count, group_count, size = users.count[members, served], groups.count[members, c], self.size[members, c]
        far = distance > self.alpha1 * (F[user_count] + F[group_count])
        odd = np.abs(user_count / t - group_count / (size * t)) > self.alpha_p * F[t]
        for s in np.flatnonzero((size > 1) & (far | odd)):
            c[s] = self.policies[s]._split(int(served[s]), int(c[s]))
        checked = np.flatnonzero(self.unchecked[members, c] == 0)
        for s in checked[self._may_merge(checked, c[checked], t)]:
            self.policies[s]._merge(int(c[s]), t)

    def _may_merge(self, s: np.ndarray, c: np.ndarray, t: int) -> np.ndarray:
        """Whether member s[i]'s cluster c[i] has a cluster to merge with: ``SCLUB._merge``'s tests for all these
        members at once, with the same arithmetic, so that only the members that merge run it."""
        g, F, at = self.groups, self.confidence.upto(t), np.arange(len(s))
        candidate = (self.size[s] > 0) & (self.unchecked[s] == 0)
        candidate[at, c] = False
        theta, count = g.theta[s], g.count[s]
        distance = distances(theta, theta[at, c][:, None, :])
        close = distance < self.alpha1[s, None] / 2 * (F[count[at, c]][:, None] + F[count])
        frequency = count / np.maximum(self.size[s], 1) / t
        close &= np.abs(frequency - frequency[at, c][:, None]) < self.alpha_p[s, None] / 2 * F[t]
        return (close & candidate).any(axis=1)
