"""DynUCB (Nguyen & Lauw, CIKM 2014): dynamic clustering of users by k-means-style reassignment.

K clusters each hold a LinUCB on the pooled samples of their members (A_c = λI + Σ_{u∈c} G_u, b_c = Σ b_u).
Users start in uniformly random clusters. The served user plays its cluster's LinUCB
  x = argmax xᵀθ_c + α·sqrt(xᵀA_c⁻¹x · log(t+1))   (the α-LinUCB that BASS uses for all its baselines),
then updates its own ridge estimate θ_u and moves to the nearest cluster, argmin_c ‖θ_u − θ_c‖;
on a move the user's statistics are subtracted from the old cluster and added to the new one,
otherwise the user's cluster gets a Sherman–Morrison update.

``centroid="ridge"`` (default, bandpy's and GNB's reading) takes θ_c = A_c⁻¹b_c, the cluster's ridge estimate;
``centroid="mean"`` takes the mean of the members' θ_u, the centroid of the authors' Java code.
``n_clusters`` = 4 is the authors' code default; BASS sets it to the true number of clusters.
Switch ``reference_ucb``: the GNB baseline's index xᵀθ_c + α·xᵀA_c⁻¹x without square root or log (α = 0.1 there).
Switch ``refresh_on_move`` (the authors' bandpy code, used by BASS (Cherkaoui et al. 2025) for its DynUCB runs): a
cluster's (θ_c, A_c⁻¹) are recomputed from its members only when a user joins or leaves it; a pull that moves nobody
leaves them as they were, so a cluster plays on the statistics of its last membership change and a user is
reassigned by its distance to those. Every cluster starts at θ_c = 0, so the first user to pull joins cluster 0.
Switch ``bandpy_clock`` (the authors' bandpy code): their round clock, one round behind ours (``ridge.ucb_round``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.ridge import (
    RidgeStats,
    distances,
    log_ucb_scores_each,
    means_each,
    quadratic_forms_each,
    ridge_bytes,
    ucb_round,
)

CENTROIDS = ("ridge", "mean")


class DynUCB(MemberPolicy):
    member_params = ("alpha", "ridge")  # per member: its exploration and ridge
    domains = {
        "n_clusters": d.COUNT,
        "alpha": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "centroid": d.Choice(CENTROIDS),
        "reference_ucb": d.FLAG,
        "refresh_on_move": d.FLAG,
        "bandpy_clock": d.FLAG,
    }
    authors_code = {
        "centroid": (
            "mean",
            "a cluster's θ is the mean of its members' estimates (the authors' Java code) instead of the pooled "
            "ridge estimate",
        ),
        "reference_ucb": (True, "the GNB baseline code's index xᵀθ_c + α·xᵀA_c⁻¹x, without square root or log"),
        "refresh_on_move": (True, "a cluster's statistics are recomputed only when a user joins or leaves it (bandpy)"),
        "bandpy_clock": (True, "their round clock, one round behind ours in the log(t + 1) of the index (bandpy)"),
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        n_clusters: int = 4,
        alpha=1.0,
        ridge=1.0,
        centroid: str = "ridge",
        reference_ucb: bool = False,
        refresh_on_move: bool = False,
        bandpy_clock: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.alpha, self.centroid, self.reference_ucb = self.per_member(alpha), centroid, reference_ucb
        self.refresh_on_move, self.bandpy_clock = refresh_on_move, bandpy_clock
        # the users' statistics, then the clusters': cluster c is learner n_users + c
        self.stats = RidgeStats(len(self.members), n_users + n_clusters, dim, self.per_member(ridge), logdet=False)
        self.label = np.stack([rng.integers(n_clusters, size=n_users) for rng in self.rngs])  # [M, N]

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        at = self.at(self.n_users + self.label[self.at(served)])  # each member's user's cluster
        theta, A_inv = self.stats.theta[at], self.stats.A_inv[at]
        if self.reference_ucb:
            scores = means_each(theta, arms) + self.alpha[:, None] * quadratic_forms_each(A_inv, arms)
        else:
            scores = log_ucb_scores_each(theta, A_inv, arms, self.alpha, ucb_round(views[0].t, self.bandpy_clock))
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        members, stats, N = self.members, self.stats, self.n_users
        served, x, reward = self.played(views, chosen, rewards)
        i = self.at(served)
        old = self.label[i].copy()
        if self.refresh_on_move:
            stats.update(members, served, x, reward)
        elif len(members) == 1:  # a unit: two one-pair updates cost less than assembling a batch of two
            stats.update(members, served, x, reward)
            stats.update(members, N + old, x, reward)
        else:  # the user's and its cluster's Sherman–Morrison updates as one batch (distinct learners)
            twice, learners = np.concatenate((members, members)), np.concatenate((served, N + old))
            stats.update(twice, learners, np.concatenate((x, x)), np.concatenate((reward, reward)))
        new = distances(self._centres(), stats.theta[i][:, None]).argmin(axis=1)  # the nearest cluster
        for m in (new != old).nonzero()[0].tolist():
            self._move(m, int(served[m]), int(old[m]), int(new[m]))

    def _centres(self) -> np.ndarray:
        """θ_c of every member's clusters [M, K, d]: its ridge estimate, or the mean of its members' θ_u."""
        clusters = self.stats.theta[:, self.n_users :]
        if self.centroid == "ridge":
            return clusters
        at = self.members[:, None], self.label
        sums, sizes = np.zeros_like(clusters), np.zeros(clusters.shape[:2])
        np.add.at(sums, at, self.stats.theta[:, : self.n_users])
        np.add.at(sizes, at, 1)
        return sums / np.maximum(sizes, 1)[:, :, None]

    def _move(self, m: int, u: int, old: int, new: int) -> None:
        """Member m's user u leaves cluster ``old`` for ``new``."""
        self.label[m, u] = new
        stats, N = self.stats, self.n_users
        if self.refresh_on_move:  # both clusters rebuilt from their members' current statistics
            for c in (old, new):
                stats.assign(m, N + c, *stats.pool(m, np.flatnonzero(self.label[m] == c)))
        else:  # the user's samples move with it: one subtraction, one addition (O(d³), not O(members))
            gram, b, count = stats.gram[m], stats.b[m], stats.count[m]
            for c, sign in ((N + old, -1), (N + new, 1)):
                stats.assign(m, c, gram[c] + sign * gram[u], b[c] + sign * b[u], count[c] + sign * count[u])

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, n_clusters=4, **params):
        return ridge_bytes(n_users + n_clusters, dim)  # users, then clusters

    def clusters(self, m):
        return self.label[m]
