"""CMLB (Ghosh, Sankararaman & Ramchandran 2021, Algorithm 2 with Algorithm 3).

Made for synchronous rounds (every user acts on the same contexts each step; ``RoundView.step``):
1. Individual learning: every user runs its own OFUL(δ) for T_Explore = ⌈C·d·(NT)^{2α}·ln(1/δ)⌉ steps
   (Algorithm 2 line 2, the form without 1/ρ_min, capped at T).
2. MAXIMAL-CLUSTER (Algorithm 3): users i ~ j iff ‖θ̂_i − θ̂_j‖ ≤ γ, γ = 3/(NT)^α (Lemmas 1–2; our
   ``threshold_scale`` is the 3); clusters = connected components; all components smaller than p*·N
   are merged into one cluster (none when p* = 0, the value of every experiment).
3. Collaborative learning: a *fresh* OFUL per cluster; all members play the cluster's arm, and the
   cluster's OFUL is updated once per step with the members' *average* reward.
OFUL's radius is β = σ·sqrt(2 log(1/δ) + log det V − d log λ) + sqrt(λ)·S (Abbasi-Yadkori et al. 2011).
``averaged_noise`` (our choice; the paper is silent): a cluster OFUL fed the mean of n rewards uses noise
σ/√n in its radius, as the theory's collaborative gain assumes.
Under the asynchronous protocol (one user per round) every round is its own step and the cluster OFUL is
updated with that single reward. T (``horizon``, in steps) is a hyper-parameter since the policy is not
told the run length; 1000 is the paper's synthetic T.

Switch ``bandpy_schedule`` (the CMLB of the BASS authors' bandpy code, Cherkaoui et al. 2025, used for their
CMLB runs): every user plays α-LinUCB (index xᵀθ̂ + ``ucb_alpha``·sqrt(xᵀA⁻¹x·log(t+1)), BASS's common index) on
its own samples for the first ``explore_rounds`` + 1 global rounds; then, once, users i ~ j iff
‖θ̂_i − θ̂_j‖ < ``cluster_threshold`` (an absolute γ), components smaller than ⌊p*·N⌋ are merged into one, and
each cluster plays α-LinUCB on the pooled samples of its members, their individual-phase samples included (no
fresh start, no averaging). The paper's T_Explore, γ = 3/(NT)^α and OFUL radius are not used in this mode.
Switch ``bandpy_clock`` (the authors' bandpy code): their round clock, one round behind ours (``ridge.ucb_round``).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components
from sklearn.neighbors import radius_neighbors_graph

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.oful import mean_radius, oful_choices
from banditbench.algos.ridge import RidgeStats, log_ucb_scores_each, ridge_bytes, ucb_round


def maximal_cluster(theta: np.ndarray, threshold: float, p_star: float) -> np.ndarray:
    """Algorithm 3: connected components of the ≤ γ graph, components smaller than p*·N merged into one."""
    n = len(theta)
    graph = radius_neighbors_graph(theta, radius=threshold, mode="connectivity", include_self=False)
    _, label = connected_components(graph, directed=False)
    sizes = np.bincount(label)
    small = sizes[label] < p_star * n
    if small.any():
        label[small] = label.max() + 1
    return np.unique(label, return_inverse=True)[1]


def current_step(view) -> int:
    return view.t if view.step is None else view.step


class StepAverages:
    """Rewards noted per member and learner during a step, learnt as one update with their average once the next step
    begins (CMLB's cluster OFULs, PMLB's common one): per learner the step's context (the members of a cluster play
    the same arm), Σ reward and the count."""

    def __init__(self, members: int):
        self.pending: list[dict[int, list]] = [{} for _ in range(members)]
        self.step = -1

    def note(self, step: int, learners: list[int], x: np.ndarray, reward: np.ndarray) -> None:
        """Member m's sample (x[m], reward[m]) of ``step`` for its learner ``learners[m]``."""
        self.step = step
        for m, (entries, learner) in enumerate(zip(self.pending, learners)):
            entry = entries.setdefault(learner, [x[m], 0.0, 0])
            entry[1] += reward[m]
            entry[2] += 1

    def learn(self, step: int, stats: RidgeStats) -> None:
        """Once ``step`` is a new one, the averages noted before it, every member's in one call."""
        if step == self.step or not any(self.pending):
            return
        member, learner, x, reward = [], [], [], []
        for m, entries in enumerate(self.pending):
            for c, (context, total, n) in entries.items():
                member.append(m), learner.append(c), x.append(context), reward.append(total / n)
            entries.clear()
        stats.update(np.array(member), np.array(learner), np.array(x), np.array(reward))


class CMLB(MemberPolicy):
    """Its members share the schedule (the phases and T_Explore depend on settings they share), so they are in the same
    phase at every step; a member's clusters are its own, padded to the most clusters of any member."""

    domains = {
        "alpha": d.NON_NEGATIVE,
        "C": d.NON_NEGATIVE,  # 0: no individual phase, every user in one cluster from the first step
        "delta": d.PROBABILITY,
        "threshold_scale": d.NON_NEGATIVE,  # 0: γ = 0, every user its own cluster
        "p_star": d.FRACTION,
        "horizon": d.COUNT,
        "ridge": d.POSITIVE,
        "sigma": d.POSITIVE,
        "S": d.POSITIVE,
        "averaged_noise": d.FLAG,
        "bandpy_schedule": d.FLAG,
        "ucb_alpha": d.NON_NEGATIVE,
        "explore_rounds": d.COUNT,
        "cluster_threshold": d.POSITIVE,
        "bandpy_clock": d.FLAG,
    }
    authors_code = {
        "bandpy_schedule": (
            True,
            "bandpy's CMLB: α-LinUCB on each user's own samples for the first rounds, then one clustering by an "
            "absolute distance threshold",
        ),
        "bandpy_clock": (True, "their round clock, one round behind ours in the log(t + 1) of the index (bandpy)"),
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        alpha: float = 0.2,
        C: float = 0.2,
        delta: float = 0.4,
        threshold_scale: float = 3.0,
        p_star: float = 0.0,
        horizon: int = 1000,
        ridge: float = 1.0,
        sigma: float = 1.0,
        S: float = 1.0,
        averaged_noise: bool = True,
        bandpy_schedule: bool = False,
        ucb_alpha: float = 1.0,
        explore_rounds: int = 1000,
        cluster_threshold: float = 1.0,
        bandpy_clock: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.alpha, self.C, self.delta, self.threshold_scale = alpha, C, delta, threshold_scale
        self.ridge, self.sigma, self.S, self.averaged_noise = ridge, sigma, S, averaged_noise
        M = len(self.members)
        self.radius_total, self.selections = np.zeros(M), np.zeros(M, np.int64)  # the diagnostic ``radius``
        self.bandpy_schedule, self.ucb_alpha, self.bandpy_clock = bandpy_schedule, ucb_alpha, bandpy_clock
        self._start(0, horizon, delta, threshold_scale / (n_users * horizon) ** alpha, p_star)
        if bandpy_schedule:  # the clustering round and threshold are given; a component needs ⌊p*·N⌋ members
            self.explore_steps, self.threshold = explore_rounds + 1, cluster_threshold
            self.p_star = np.floor(p_star * n_users) / n_users

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users, dim)  # the individual phase; the clusters' statistics come later

    def _start(self, first_step: int, horizon: int, delta: float, threshold: float, p_star: float) -> None:
        """A fresh instance of Algorithm 2 over steps [first_step, first_step + horizon)."""
        NT, M = self.n_users * horizon, len(self.members)
        explore = self.C * self.dim * NT ** (2 * self.alpha) * np.log(1 / delta)
        self.first_step, self.phase_end = first_step, first_step + horizon
        self.explore_steps = int(min(horizon, np.ceil(explore)))
        self.phase_delta, self.threshold, self.p_star = delta, threshold, p_star
        self.individual = RidgeStats(M, self.n_users, self.dim, self.ridge)
        self.label: np.ndarray | None = None  # [M, N] once clustered
        self.sizes: np.ndarray | None = None  # [M, clusters]
        self.group: RidgeStats | None = None
        self.averages = StepAverages(M)
        self.chosen_step: np.ndarray | None = None  # [M, clusters]: the step of a cluster's latest choice, its arm
        self.chosen_arm: np.ndarray | None = None

    def load_member_state_dict(self, m, state) -> None:
        if state.get("group") is not None and self.group is None:  # built at the first clustering: make one to fill
            self.group = RidgeStats(len(self.members), 0, self.dim, self.ridge)
        super().load_member_state_dict(m, state)

    def _advance(self, step: int) -> None:
        """The clusters learn from the previous step's averages once a new step begins."""
        self.averages.learn(step, self.group)

    def select(self, views, budgets):
        if self.bandpy_schedule:
            return self._select_bandpy(views)
        step = current_step(views[0])
        self._advance(step)
        if step - self.first_step >= self.explore_steps:
            return self._collaborative(views, step)
        arms, served = self.read_arms(views)  # individual learning phase: every user its own OFUL
        at, stats = self.at(served), self.individual
        theta, A_inv, logdet = stats.theta[at], stats.A_inv[at], stats.logdet[at]
        return oful_choices(self, self.members, theta, A_inv, logdet, arms, self.sigma, self.phase_delta)

    def _collaborative(self, views, step: int) -> list[int]:
        """After the exploration: the arm the served user's cluster chose this step, or else its OFUL's choice, whose
        arms alone are read (and spent from the budget)."""
        if self.label is None:
            self._cluster()
        cluster = self.members, self.label[self.members, [view.user for view in views]]  # each member's user's cluster
        waiting = np.flatnonzero(self.chosen_step[cluster] != step)
        if waiting.size:
            at, arms = (waiting, cluster[1][waiting]), np.array([views[m].arms[:] for m in waiting.tolist()])
            group, averaged = self.group, self.averaged_noise and views[0].step is not None
            # σ/sqrt(|c|) in cluster c's radius when it is fed the mean of its members' rewards of a step
            sigma = self.sigma / (np.sqrt(self.sizes[at]) if averaged else np.ones(len(waiting)))
            theta, A_inv, logdet = group.theta[at], group.A_inv[at], group.logdet[at]
            self.chosen_arm[at] = oful_choices(self, waiting, theta, A_inv, logdet, arms, sigma, self.phase_delta)
            self.chosen_step[at] = step
        return self.chosen_arm[cluster].tolist()

    def _cluster(self) -> None:
        """Algorithm 3 on every member's individual estimates; fresh cluster OFULs (bandpy: pooled from the users)."""
        labels = [maximal_cluster(theta, self.threshold, self.p_star) for theta in self.individual.theta]
        self.label = np.stack(labels)
        most = int(self.label.max()) + 1  # every member's clusters padded to the most of any member
        self.sizes = np.stack([np.bincount(label, minlength=most) for label in labels])
        self.group = RidgeStats(len(self.members), most, self.dim, self.ridge)
        self.chosen_step, self.chosen_arm = np.full(self.sizes.shape, -1), np.zeros(self.sizes.shape, dtype=np.int64)
        if self.bandpy_schedule:
            for m, label in enumerate(labels):
                for c in range(label.max() + 1):
                    self.group.assign(m, c, *self.individual.pool(m, np.flatnonzero(label == c)))

    def _select_bandpy(self, views) -> list[int]:
        """α-LinUCB on the user's own samples, then, after the one clustering, on its cluster's pool."""
        t = views[0].t
        arms, served = self.read_arms(views)
        if t >= self.explore_steps and self.label is None:
            self._cluster()
        stats, learners = (self.individual, served) if self.label is None else (self.group, self.label[self.at(served)])
        at, alpha = self.at(learners), np.full(len(self.members), self.ucb_alpha)
        scores = log_ucb_scores_each(stats.theta[at], stats.A_inv[at], arms, alpha, ucb_round(t, self.bandpy_clock))
        return scores.argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        step, members = current_step(views[0]), self.members
        served, x, reward = self.played(views, chosen, rewards)
        if self.bandpy_schedule:  # own samples always; the cluster's pool too once it exists
            self.individual.update(members, served, x, reward)
            if self.label is not None:
                self.group.update(members, self.label[self.at(served)], x, reward)
            return
        if step - self.first_step < self.explore_steps:
            self.individual.update(members, served, x, reward)
            return
        self.averages.note(step, self.label[members, served].tolist(), x, reward)  # learnt as the next step begins

    def clusters(self, m):
        return np.arange(self.n_users) if self.label is None else self.label[m]

    def diagnostics(self, m):
        return mean_radius(self, m)
