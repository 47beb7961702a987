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
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.ridge_unit import (
    RidgeStats,
    log_ucb_scores,
    oful_choices,
    oful_radius,
    ridge_bytes,
    stacked_again,
    ucb_round,
)


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


class CMLB(Policy):
    domains = {
        "alpha": d.NON_NEGATIVE,
        "C": d.POSITIVE,
        "delta": d.PROBABILITY,
        "threshold_scale": d.POSITIVE,
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

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
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
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.alpha, self.C, self.delta, self.threshold_scale = alpha, C, delta, threshold_scale
        self.ridge, self.sigma, self.S, self.averaged_noise = ridge, sigma, S, averaged_noise
        self.radius_total, self.selections = 0.0, 0  # for the diagnostic ``radius``: the mean β used
        self.bandpy_schedule, self.ucb_alpha = bandpy_schedule, ucb_alpha
        self.bandpy_clock = bandpy_clock
        self._start(0, horizon, delta, threshold_scale / (n_users * horizon) ** alpha, p_star)
        if bandpy_schedule:  # the clustering round and threshold are given; a component needs ⌊p*·N⌋ members
            self.explore_steps, self.threshold = explore_rounds + 1, cluster_threshold
            self.p_star = np.floor(p_star * n_users) / n_users

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return ridge_bytes(n_users, dim)  # the individual phase; the clusters' statistics come later

    def _start(self, first_step: int, horizon: int, delta: float, threshold: float, p_star: float) -> None:
        """A fresh instance of Algorithm 2 over steps [first_step, first_step + horizon)."""
        NT = self.n_users * horizon
        explore = self.C * self.dim * NT ** (2 * self.alpha) * np.log(1 / delta)
        self.first_step, self.phase_end = first_step, first_step + horizon
        self.explore_steps = int(min(horizon, np.ceil(explore)))
        self.phase_delta, self.threshold, self.p_star = delta, threshold, p_star
        self.individual = RidgeStats(self.n_users, self.dim, self.ridge)
        self.label: np.ndarray | None = None
        self.group: RidgeStats | None = None
        self.pending: dict[int, list] = {}  # cluster → [x, Σ reward, n] of the current step
        self.pending_step = -1
        self.played: dict[int, tuple[int, int]] = {}  # cluster → (step, arm): members reuse the cluster's choice

    def load_state_dict(self, state) -> None:
        if state.get("group") is not None and self.group is None:  # built at the first clustering: make one to fill
            self.group = RidgeStats(0, self.dim, self.ridge)
        super().load_state_dict(state)

    def _advance(self, step: int) -> None:
        """Apply the previous step's averaged cluster updates once a new step begins."""
        if self.pending and step != self.pending_step:
            for c, (x, total, n) in self.pending.items():
                self.group.update(c, x, total / n)
            self.pending.clear()

    def _oful(self, stats: RidgeStats, learner: int, arms: np.ndarray, sigma: float) -> int:
        beta = oful_radius(stats.logdet[learner], self.dim, self.ridge, sigma, self.S, self.phase_delta)
        self.radius_total += beta
        self.selections += 1
        return int((arms @ stats.theta[learner] + beta * stats.widths(learner, arms)).argmax())

    def select(self, view, budget):
        if self.bandpy_schedule:
            return self._select_bandpy(view)
        step = current_step(view)
        self._advance(step)
        u = view.user
        if step - self.first_step < self.explore_steps:  # individual learning phase
            return self._oful(self.individual, u, view.arms[:], self.sigma)
        if self.label is None:
            self._cluster()
        c = int(self.label[u])
        if self.played.get(c, (-1, 0))[0] == step:
            return self.played[c][1]
        arm = self._oful(self.group, c, view.arms[:], self._cluster_sigma(c, view.step is not None))
        self.played[c] = (step, arm)
        return arm

    def _cluster_sigma(self, c: int, synchronous: bool) -> float:
        """σ in cluster c's OFUL radius: σ/sqrt(|c|) when it is fed the mean of its members' rewards of a step."""
        return self.sigma / (np.sqrt(self.sizes[c]) if self.averaged_noise and synchronous else 1.0)

    def _cluster(self) -> None:
        """Algorithm 3 on the individual estimates; fresh cluster OFULs (bandpy: pooled from the members)."""
        self.label = maximal_cluster(self.individual.theta, self.threshold, self.p_star)
        self.sizes = np.bincount(self.label)
        self.group = RidgeStats(len(self.sizes), self.dim, self.ridge)
        if self.bandpy_schedule:
            for c in range(len(self.sizes)):
                self.group.assign(c, *self.individual.pool(np.flatnonzero(self.label == c)))

    def _select_bandpy(self, view) -> int:
        """α-LinUCB on the user's own samples, then, after the one clustering, on its cluster's pool."""
        if view.t < self.explore_steps:
            stats, learner = self.individual, view.user
        else:
            if self.label is None:
                self._cluster()
            stats, learner = self.group, int(self.label[view.user])
        scores = log_ucb_scores(
            stats.theta[learner],
            stats.A_inv[learner],
            view.arms[:],
            self.ucb_alpha,
            ucb_round(view.t, self.bandpy_clock),
        )
        return int(scores.argmax())

    def update(self, view, chosen, reward):
        step, u, x = current_step(view), view.user, view.arms[chosen]
        if self.bandpy_schedule:  # own samples always; the cluster's pool too once it exists
            self.individual.update(u, x, reward)
            if self.label is not None:
                self.group.update(int(self.label[u]), x, reward)
            return
        if step - self.first_step < self.explore_steps:
            self.individual.update(u, x, reward)
            return
        entry = self.pending.setdefault(int(self.label[u]), [x, 0.0, 0])
        entry[1] += reward
        entry[2] += 1
        self.pending_step = step

    def clusters(self):
        return np.arange(self.n_users) if self.label is None else self.label

    @classmethod
    def lockstep(cls, policies):
        # bandpy's schedule plays α-LinUCB, not OFUL, in its individual phase: its members step one by one
        return Lockstep(policies) if policies[0].bandpy_schedule else CMLBLockstep(policies)

    def diagnostics(self):
        return {"radius": self.radius_total / self.selections if self.selections else np.nan}


class CMLBLockstep(Lockstep):
    """CMLB's (and SCLB's) seeds in lockstep. The members share their schedule, so they are in the same phase at every
    step. Their statistics are stacked on a leading member axis: the individual ones, where every user runs its own
    OFUL (and where SCLB, with the paper's constants, spends nearly all its rounds), and the clusters' ones of the
    collaborative phase, padded to the most clusters of any member. A round's radii, scores and updates, and the
    averaged cluster updates that a new step applies, are one numpy call each, every member's computed as alone.
    A fresh phase's statistics (SCLB), and the clusters' at the clustering, are stacked again."""

    def __init__(self, policies: list[CMLB]):
        super().__init__(policies)
        self.members = np.arange(len(policies))
        self.stacks: dict[str, RidgeStats] = {}  # the members' ``individual`` and ``group`` statistics
        self.exploring = False  # whether this round is in the individual phase

    def _stacked(self, name: str) -> RidgeStats:
        """The members' statistics ``individual`` or ``group`` as one stack, stacked again when a member's changed."""
        self.stacks[name] = stacked_again(self.stacks.get(name), [getattr(policy, name) for policy in self.policies])
        return self.stacks[name]

    def _apply_pending(self, step: int) -> None:
        """``CMLB._advance``'s averaged cluster updates of every member, in one batched update."""
        member, cluster, x, reward = [], [], [], []
        for s, policy in enumerate(self.policies):
            if policy.pending and step != policy.pending_step:
                for c, (context, total, n) in policy.pending.items():
                    member.append(s), cluster.append(c), x.append(context), reward.append(total / n)
                policy.pending.clear()
        if member:
            group = self._stacked("group")
            group.update_each(np.array(cluster), np.array(x), np.array(reward), members=np.array(member))

    def select(self, views, budgets):
        policies, first = self.policies, self.policies[0]
        step = current_step(views[0])
        self._apply_pending(step)
        for policy in policies:
            policy._advance(step)
        self.exploring = step - first.first_step < first.explore_steps
        if not self.exploring:
            return self._collaborative(views, step)
        arms, served = self.read_arms(views)
        stats, at = self._stacked("individual"), (self.members, served)
        theta, A_inv, logdet = stats.theta[at], stats.A_inv[at], stats.logdet[at]
        return oful_choices(policies, theta, A_inv, logdet, arms, first.sigma, first.phase_delta)

    def _collaborative(self, views, step: int) -> list[int]:
        """``CMLB.select`` after the exploration: the cluster's arm of this step, or else its OFUL's choice, whose
        arms alone are read (and spent from the budget)."""
        policies, first = self.policies, self.policies[0]
        chosen, waiting, clusters = [], [], []
        for s, (policy, view) in enumerate(zip(policies, views)):
            if policy.label is None:
                policy._cluster()
            c = int(policy.label[view.user])
            played = policy.played.get(c, (-1, 0))
            chosen.append(played[1])
            if played[0] != step:
                waiting.append(s), clusters.append(c)
        if not waiting:
            return chosen
        at = np.array(waiting), np.array(clusters)
        synchronous = views[0].step is not None
        sigma = np.array([policies[s]._cluster_sigma(c, synchronous) for s, c in zip(waiting, clusters)])
        stats = self._stacked("group")
        arms = np.stack([views[s].arms[:] for s in waiting])
        fresh = oful_choices(
            [policies[s] for s in waiting],
            stats.theta[at],
            stats.A_inv[at],
            stats.logdet[at],
            arms,
            sigma,
            first.phase_delta,
        )
        for s, c, arm in zip(waiting, clusters, fresh):
            policies[s].played[c] = (step, arm)
            chosen[s] = arm
        return chosen

    def update(self, views, chosen, rewards):
        if not self.exploring:  # the members note their step's rewards, applied when the next step begins
            return super().update(views, chosen, rewards)
        self._stacked("individual").update_each(*self.played(chosen, rewards))
