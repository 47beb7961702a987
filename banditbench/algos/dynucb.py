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
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.ridge_unit import (
    RidgeStats,
    distances,
    log_ucb_scores,
    log_ucb_scores_each,
    means_each,
    quadratic_forms,
    quadratic_forms_each,
    ridge_bytes,
    stack,
    ucb_round,
)
from banditbench.errors import UserError

CENTROIDS = ("ridge", "mean")


class DynUCB(Policy):
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

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        n_clusters: int = 4,
        alpha: float = 1.0,
        ridge: float = 1.0,
        centroid: str = "ridge",
        reference_ucb: bool = False,
        refresh_on_move: bool = False,
        bandpy_clock: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        if centroid not in CENTROIDS:
            raise UserError(f"dynucb.centroid must be one of {', '.join(CENTROIDS)}, got {centroid!r}")
        if n_clusters < 1:
            raise UserError(f"dynucb.n_clusters must be at least 1, got {n_clusters}")
        self.alpha, self.centroid, self.reference_ucb = alpha, centroid, reference_ucb
        self.refresh_on_move = refresh_on_move
        self.bandpy_clock = bandpy_clock
        self.users = RidgeStats(n_users, dim, ridge, logdet=False)
        self.groups = RidgeStats(n_clusters, dim, ridge, logdet=False)
        self.label = self.rng.integers(n_clusters, size=n_users)

    def select(self, view, budget):
        arms = view.arms[:]
        c, g = self.label[view.user], self.groups
        if self.reference_ucb:
            scores = arms @ g.theta[c] + self.alpha * quadratic_forms(g.A_inv[c], arms)
        else:
            scores = log_ucb_scores(g.theta[c], g.A_inv[c], arms, self.alpha, ucb_round(view.t, self.bandpy_clock))
        return int(scores.argmax())

    def update(self, view, chosen, reward):
        u, x = view.user, view.arms[chosen]
        old = self.label[u]
        self.users.update(u, x, reward)
        if not self.refresh_on_move:
            self.groups.update(old, x, reward)
        new = int(distances(self._centres(), self.users.theta[u]).argmin())
        if new != old:
            self._move(u, old, new)

    def _centres(self) -> np.ndarray:
        """θ_c of every cluster [K, d]: its ridge estimate, or the mean of its members' θ_u."""
        if self.centroid == "ridge":
            return self.groups.theta
        sums = np.zeros_like(self.groups.theta)
        np.add.at(sums, self.label, self.users.theta)
        return sums / np.maximum(np.bincount(self.label, minlength=len(sums)), 1)[:, None]

    def _move(self, u: int, old: int, new: int) -> None:
        self.label[u] = new
        if self.refresh_on_move:  # both clusters rebuilt from their members' current statistics
            for c in (old, new):
                self.groups.assign(c, *self.users.pool(np.flatnonzero(self.label == c)))
        else:  # the user's samples move with it: one subtraction, one addition (O(d³), not O(members))
            g, users = self.groups, self.users
            for c, sign in ((old, -1), (new, 1)):
                g.assign(
                    c, g.gram[c] + sign * users.gram[u], g.b[c] + sign * users.b[u], g.count[c] + sign * users.count[u]
                )

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, n_clusters=4, **params):
        return ridge_bytes(n_users + n_clusters, dim)  # users, then clusters

    @classmethod
    def lockstep(cls, policies):
        return DynUCBLockstep(policies)

    def clusters(self):
        return self.label


class DynUCBLockstep(Lockstep):
    """DynUCB's members in lockstep (seeds, and grid cells of α and λ): their user and cluster statistics and labels
    stacked on a leading member axis (each member's arrays are views of the stacks), so a round's scores,
    Sherman–Morrison updates and nearest-cluster searches are one numpy call each for the whole group. A member's
    users and clusters share one stack (cluster c after its N users), so the served user's and its cluster's
    updates are one call too. Only the members whose user changes cluster continue alone, through their own
    ``_move``."""

    def __init__(self, policies: list[DynUCB]):
        super().__init__(policies)
        self.stats = stack([policy.users for policy in policies], [policy.groups for policy in policies])
        self.n_users = policies[0].n_users  # cluster c is learner n_users + c of the stack
        self.stack_members("label")
        self.alpha = self.per_member("alpha")
        self.members = np.arange(len(policies))
        self.twice = np.tile(self.members, 2)  # the members of a round's user and cluster updates

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        at = self.members, self.n_users + self.label[self.members, served]
        theta, A_inv, first = self.stats.theta[at], self.stats.A_inv[at], self.policies[0]
        if first.reference_ucb:
            scores = means_each(theta, arms) + self.alpha[:, None] * quadratic_forms_each(A_inv, arms)
        else:
            scores = log_ucb_scores_each(theta, A_inv, arms, self.alpha, ucb_round(views[0].t, first.bandpy_clock))
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        members, first, stats, N = self.members, self.policies[0], self.stats, self.n_users
        served, x, reward = self.played(chosen, rewards)
        old = self.label[members, served]
        if first.refresh_on_move:
            stats.update_each(served, x, reward)
        else:  # the user's and its cluster's Sherman–Morrison updates, one batch
            both = np.concatenate((served, N + old)), np.concatenate((x, x)), np.concatenate((reward, reward))
            stats.update_each(*both, members=self.twice)
        if first.centroid == "ridge":
            centres = stats.theta[:, N:]  # [S, K, d]
        else:
            centres = np.stack([policy._centres() for policy in self.policies])
        new = distances(centres, stats.theta[members, served][:, None]).argmin(axis=1)
        for s in np.flatnonzero(new != old):
            self.policies[s]._move(int(served[s]), int(old[s]), int(new[s]))
