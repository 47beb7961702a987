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
On block-encoded contexts the statistics are kept per block (``blocks.py``). The members of a group draw their
own seed users, so their seed clusters are padded to the most of any member (``real`` marks a member's own).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.blocks import BuiltAtFirstRound, ridge_stats
from banditbench.algos.ridge import ConfidenceTable, RidgeStats, distances, ridge_bytes


class LOCB(BuiltAtFirstRound, MemberPolicy):
    member_params = ("alpha", "ridge", "gamma")  # per member: its exploration, ridge and stopping scale
    domains = {
        "num_seeds": d.COUNT,
        "gamma": d.NON_NEGATIVE,
        "alpha": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "reference_ucb": d.FLAG,
    }
    authors_code = {
        "reference_ucb": (
            True,
            "the index xᵀθ + α·β(N, t)·xᵀS⁻¹x without the square root, NaN at t = 0 (α = 1 in their code)",
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
        num_seeds: int = 20,
        gamma=0.2,
        alpha=1.0,
        ridge=1.0,
        reference_ucb: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.gamma, self.alpha, self.ridge = map(self.per_member, (gamma, alpha, ridge))
        self.reference_ucb = reference_ucb
        drawn = [np.unique(rng.choice(n_users, size=num_seeds, replace=True)) for rng in self.rngs]
        sizes = np.array([len(users) for users in drawn])
        self.real = np.arange(sizes.max()) < sizes[:, None]  # [M, L]: a member's own seed clusters, then padding
        self.seed_users = np.zeros(self.real.shape, dtype=np.int64)  # each seed cluster's seed user
        self.seed_users[self.real] = np.concatenate(drawn)
        self.holds = np.repeat(self.real[:, None, :], n_users, axis=1)  # [M, N, L]: C_s starts with every user
        self.users: RidgeStats | None = None  # built at the first round (blocks.py)
        self.local: RidgeStats | None = None  # each seed's cluster
        self.confidence = ConfidenceTable()  # F(m)

    def _build(self, block):
        M, L = self.real.shape
        self.users = ridge_stats(M, self.n_users, self.dim, self.ridge, block, logdet=False)
        self.local = ridge_stats(M, L, self.dim, self.ridge, block, logdet=False)

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, block=None, **params):
        # users and at least one seed's local cluster (the distinct seeds drawn)
        return ridge_bytes(n_users + 1, dim, block=block)

    def select(self, views, budgets):
        self._prepare(views)
        arms, served = self.read_arms(views)
        (M, K), t = arms.shape[:2], views[0].t
        holding = self.holds[self.at(served)]  # [M, L]: the clusters holding each member's user
        member, cluster = np.nonzero(holding)
        scores = np.full((M, holding.shape[1], K), -np.inf)
        scores[member, cluster] = self.local.cluster_ucb(
            member, cluster, arms[member], self.alpha[member], t, self.reference_ucb
        )
        chosen = scores.reshape(M, -1).argmax(axis=1) % K  # the arm of largest UCB over the member's clusters
        alone = (~holding.any(axis=1)).nonzero()[0]  # no cluster holds the user: its own LinUCB
        if alone.size:
            own = self.users.cluster_ucb(alone, served[alone], arms[alone], self.alpha[alone], t, self.reference_ucb)
            chosen[alone] = own.argmax(axis=1)
        return chosen.tolist()

    def update(self, views, chosen, rewards):
        self._prepare(views)
        members, users = self.members, self.users
        served, x, reward = self.played(views, chosen, rewards)
        i = self.at(served)
        users.update(members, served, x, reward)
        inside = self.holds[i]  # [M, L]
        member, cluster = np.nonzero(inside)
        self.local.update(member, cluster, x[member], reward[member])
        F = self.confidence.upto(views[0].t + 1)  # no user has more than t + 1 pulls
        seed_counts = users.count[members[:, None], self.seed_users]
        open_seeds = self.real & (F[seed_counts] > self.gamma[:, None] / 4)  # unfinished: F(N_s) > γ/4
        if not open_seeds.any():
            return
        distance = distances(users.theta[members[:, None], self.seed_users], users.theta[i][:, None])
        bound = F[users.count[i]][:, None] + F[seed_counts]
        flip = open_seeds & ((inside & (distance > bound)) | (~inside & (distance < bound)))
        for m, s in zip(*np.nonzero(flip)):
            self._flip(int(m), int(s), int(served[m]))

    def _flip(self, m: int, s: int, i: int) -> None:
        """Member m's user i leaves seed s's cluster, or joins it: its statistics are subtracted from, or added to,
        the cluster's."""
        sign = -1 if self.holds[m, i, s] else 1
        self.holds[m, i, s] = not self.holds[m, i, s]
        local, users = self.local, self.users
        gram, b, count = users.gram[m, i], users.b[m, i], users.count[m, i]
        local.assign(m, s, local.gram[m, s] + sign * gram, local.b[m, s] + sign * b, local.count[m, s] + sign * count)

    def clusters(self, m):
        """Overlapping clusters flattened for ARI/NMI: users held by exactly the same seed clusters share a label
        (users held by none get one label together)."""
        return np.unique(self.holds[m], axis=0, return_inverse=True)[1].ravel()

    def sharing_graph(self, m):
        """i and j share when some seed cluster holds both (dense: the clusters start with every user)."""
        holds = self.holds[m].astype(np.float32)
        graph = np.empty((self.n_users, self.n_users), dtype=bool)
        for start in range(0, self.n_users, 1024):  # by row blocks: no N × N float temporary (400 MB at 10 000 users)
            graph[start : start + 1024] = (holds[start : start + 1024] @ holds.T) > 0
        return graph
