"""LOCB (Ban & He, NeurIPS 2021): local clustering around random seed users, overlapping clusters.

``num_seeds`` seed users are drawn (with replacement, duplicates collapse); each seed's cluster C_s starts
with all users and empty statistics (S_s = I, b_s = 0, N_s = 0) and collects every later sample of its
members. The served user i picks, over the clusters containing it, the arm of largest UCB
  xᵀθ_s + α·sqrt(xᵀS_s⁻¹x · log(t+1))
(its own LinUCB when no cluster holds it). After its update, for every unfinished seed s:
  i ∈ C_s and ‖θ_i − θ_s‖ > F(N_i) + F(N_s): i leaves C_s (its statistics are subtracted),
  i ∉ C_s and ‖θ_i − θ_s‖ < F(N_i) + F(N_s): i joins C_s (its statistics are added),
with F(m) = sqrt((1 + ln(1 + m)) / (1 + m)); θ_s and N_s are the *seed user's* own estimate and pull count
(the cluster grows around its seed: with the cluster's pooled estimate every cluster, all starting from all
users, would evolve identically); a seed is finished, its cluster frozen, once F(N_s) ≤ γ/4.
Defaults γ = 0.2 and 20 seeds as in the authors' runs.
Switch ``reference_ucb``: the authors' index xᵀθ + β(N, t)·xᵀS⁻¹x without square root (NaN at t = 0).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Policy
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes


class LOCB(Policy):
    domains = {
        "num_seeds": d.COUNT,
        "gamma": d.NON_NEGATIVE,
        "alpha": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "reference_ucb": d.FLAG,
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        num_seeds: int = 20,
        gamma: float = 0.2,
        alpha: float = 1.0,
        ridge: float = 1.0,
        reference_ucb: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.gamma, self.alpha, self.ridge, self.reference_ucb = gamma, alpha, ridge, reference_ucb
        self.seeds = np.unique(self.rng.choice(n_users, size=num_seeds, replace=True))
        self.users = RidgeStats(n_users, dim, ridge, logdet=False)
        self.local = RidgeStats(len(self.seeds), dim, ridge, logdet=False)
        self.confidence = ConfidenceTable()  # F(m)
        self.member = np.ones((len(self.seeds), n_users), dtype=bool)  # C_s starts with every user

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users + 1, dim)  # users and at least one seed's local cluster (the distinct seeds drawn)

    def _scores(self, stats, k, arms, t):
        return stats.cluster_ucb(k, arms, self.alpha, t, self.reference_ucb)

    def select(self, view, budget):
        arms, i = view.arms[:], view.user
        holding = np.flatnonzero(self.member[:, i])
        if holding.size == 0:
            return int(self._scores(self.users, i, arms, view.t).argmax())
        local = self.local
        if self.reference_ucb:
            scores = np.stack([self._scores(local, s, arms, view.t) for s in holding])
        else:  # [clusters, K], all clusters holding i at once
            quad = np.einsum("mkd,kd->mk", arms @ local.A_inv[holding], arms)
            scores = local.theta[holding] @ arms.T + self.alpha * np.sqrt(np.maximum(quad, 0) * np.log(view.t + 2))
        return int(scores.argmax()) % len(arms)  # the arm of largest UCB over clusters

    def update(self, view, chosen, reward):
        i, x = view.user, view.arms[chosen]
        users, local = self.users, self.local
        users.update(i, x, reward)
        holding = np.flatnonzero(self.member[:, i])
        if holding.size:
            local.update_many(holding, x, reward)
        seed_users, F = self.seeds, self.confidence.upto(view.t + 1)  # no user has more than t + 1 pulls
        seed_counts = users.count[seed_users]
        open_seeds = np.flatnonzero(F[seed_counts] > self.gamma / 4)
        if open_seeds.size == 0:
            return
        distance = distances(users.theta[seed_users[open_seeds]], users.theta[i])
        bound = F[users.count[i]] + F[seed_counts[open_seeds]]
        inside = self.member[open_seeds, i]
        for s in open_seeds[(inside & (distance > bound)) | (~inside & (distance < bound))]:
            sign = -1 if self.member[s, i] else 1
            self.member[s, i] = not self.member[s, i]
            local.assign(
                s,
                local.gram[s] + sign * users.gram[i],
                local.b[s] + sign * users.b[i],
                local.count[s] + sign * users.count[i],
            )

    def clusters(self):
        """Overlapping clusters flattened for ARI/NMI: users held by exactly the same seed clusters share a label
        (users held by none get one label together)."""
        return np.unique(self.member.T, axis=0, return_inverse=True)[1].ravel()

    def sharing_graph(self):
        """i and j share when some seed cluster holds both (dense: the clusters start with every user)."""
        member = self.member.astype(np.float32)
        graph = np.empty((self.n_users, self.n_users), dtype=bool)
        for start in range(0, self.n_users, 1024):  # by row blocks: no N × N float temporary (400 MB at 10 000 users)
            graph[start : start + 1024] = (member[:, start : start + 1024].T @ member) > 0
        return graph
