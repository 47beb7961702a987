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
Switch ``reference_ucb``: the authors' index xᵀθ + α·β(N, t)·xᵀS⁻¹x without square root (NaN at t = 0; their
code has no α, α = 1).
On block-encoded contexts the statistics are kept per block (``blocks.py``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.blocks import BuiltAtFirstRound, FirstRoundGroup, ridge_stats
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes, stack


class LOCB(BuiltAtFirstRound, Policy):
    lockstep_params = ("alpha", "ridge", "gamma")  # per member: its exploration, ridge and stopping scale
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
        self.users: RidgeStats | None = None  # built at the first round (blocks.py)
        self.local: RidgeStats | None = None  # each seed's cluster
        self.confidence = ConfidenceTable()  # F(m)
        self.member = np.ones((len(self.seeds), n_users), dtype=bool)  # C_s starts with every user

    def _build(self, block):
        self.users = ridge_stats(self.n_users, self.dim, self.ridge, block, logdet=False)
        self.local = ridge_stats(len(self.seeds), self.dim, self.ridge, block, logdet=False)

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        # users and at least one seed's local cluster (the distinct seeds drawn)
        return ridge_bytes(n_users + 1, dim, block=block)

    def select(self, view, budget):
        self._prepare(view)
        arms, i = view.arms[:], view.user
        holding = np.flatnonzero(self.member[:, i])
        if holding.size == 0:
            return int(self.users.cluster_ucb(i, arms, self.alpha, view.t, self.reference_ucb).argmax())
        scores = self.local.cluster_ucb_many(holding, arms, self.alpha, view.t, self.reference_ucb)  # [clusters, K]
        return int(scores.argmax()) % len(arms)  # the arm of largest UCB over clusters

    def update(self, view, chosen, reward):
        self._prepare(view)
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
            self._flip(s, i)

    def _flip(self, s: int, i: int) -> None:
        """i leaves seed s's cluster, or joins it: its statistics are subtracted from, or added to, the cluster's."""
        sign = -1 if self.member[s, i] else 1
        self.member[s, i] = not self.member[s, i]
        local, users = self.local, self.users
        gram, b, count = users.gram[i], users.b[i], users.count[i]
        local.assign(s, local.gram[s] + sign * gram, local.b[s] + sign * b, local.count[s] + sign * count)

    @classmethod
    def lockstep(cls, policies):
        return FirstRoundGroup(policies, LOCBLockstep)

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


class LOCBLockstep(Lockstep):
    """LOCB's members in lockstep (seeds, and grid cells of α, λ and γ): their user and seed-cluster statistics,
    memberships and seed users stacked on a leading member axis, padded to the most seed clusters of any member
    (each member's arrays are views of its rows), so a round's scores over every cluster holding the served user,
    their Sherman–Morrison updates and the seeds' join-or-leave tests are one numpy call each for the group. Only
    the members whose user joins or leaves a cluster continue alone, through their own ``_flip``."""

    def __init__(self, policies: list[LOCB]):
        super().__init__(policies)
        first = policies[0]
        self.users = stack([policy.users for policy in policies])
        self.local = stack([policy.local for policy in policies])
        S, L = len(policies), self.local.theta.shape[1]
        self.member = np.zeros((S, L, first.n_users), dtype=bool)  # padded clusters hold nobody
        self.seeds = np.zeros((S, L), dtype=np.int64)
        self.real = np.zeros((S, L), dtype=bool)  # the clusters a member has (the rest is padding)
        for s, policy in enumerate(policies):
            n = len(policy.seeds)
            self.member[s, :n], self.seeds[s, :n], self.real[s, :n] = policy.member, policy.seeds, True
            policy.member = self.member[s, :n]
        self.alpha = self.per_member("alpha")
        self.quarter_gamma = self.per_member("gamma")[:, None] / 4
        self.members = np.arange(S)
        self.confidence, self.reference_ucb = first.confidence, first.reference_ucb

    def _holding(self, served: np.ndarray) -> np.ndarray:
        """[S, L]: whether each of a member's clusters holds its served user."""
        return self.member[self.members, :, served]

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        S, K, t = len(views), arms.shape[1], views[0].t
        member, cluster = np.nonzero(self._holding(served))
        scores = np.full((S, self.real.shape[1], K), -np.inf)
        scores[member, cluster] = self.local.cluster_ucb_each(
            cluster, arms[member], self.alpha[member], t, self.reference_ucb, members=member
        )
        chosen = scores.reshape(S, -1).argmax(axis=1) % K  # the arm of largest UCB over the member's clusters
        alone = np.flatnonzero(np.isneginf(scores).all(axis=(1, 2)))  # no cluster holds the user: its own LinUCB
        if alone.size:
            own = self.users.cluster_ucb_each(
                served[alone], arms[alone], self.alpha[alone], t, self.reference_ucb, members=alone
            )
            chosen[alone] = own.argmax(axis=1)
        return chosen.tolist()

    def update(self, views, chosen, rewards):
        members, users = self.members, self.users
        served, x, reward = self.played(chosen, rewards)
        users.update_each(served, x, reward)
        inside = self._holding(served)
        member, cluster = np.nonzero(inside)
        self.local.update_each(cluster, x[member], reward[member], members=member)
        F = self.confidence.upto(views[0].t + 1)  # no user has more than t + 1 pulls
        seed_counts = users.count[members[:, None], self.seeds]
        open_seeds = self.real & (F[seed_counts] > self.quarter_gamma)
        if not open_seeds.any():
            return
        distance = distances(users.theta[members[:, None], self.seeds], users.theta[members, served][:, None])
        bound = F[users.count[members, served]][:, None] + F[seed_counts]
        flip = open_seeds & ((inside & (distance > bound)) | (~inside & (distance < bound)))
        for s, cluster in zip(*np.nonzero(flip)):
            self.policies[s]._flip(int(cluster), int(served[s]))
