"""BASS (Cherkaoui, Barlier & Colin, ICML 2025, Algorithm 1): adaptive sample sharing.

Every agent i keeps *local* ridge statistics (V_i = λI + Σ x xᵀ over its own pulls, b_i, θ̂_i, log det V_i)
used only by the separation test, and *shared* statistics over its neighbourhood N_i (its direct
neighbours in the agent graph, itself included; not connected components) used only to pick arms:
  V_{N_i} = λI + Σ_{j∈N_i}(V_j − λI),  b_{N_i} = Σ_{j∈N_i} b_j,
  x = argmax xᵀθ̂_{N_i} + α·sqrt(xᵀV_{N_i}⁻¹x · log(t+1))            ("α-LinUCB", all experiments)
The graph starts complete; after the acting agent's local update, its edge to every current neighbour j
is tested with Definition 5.1 and deleted for good when K^γ_ij < 0:
  K^γ_ij = min_{s∈[0,1]} 1 − Σ_l v_l² s(1−s) / (1 + s(λ_l − 1)),
(λ_l, φ_l) the generalised eigenpairs of Σ_i φ = λ Σ_j φ with Φᵀ Σ_j Φ = I, v = Φᵀ(θ̂_i − θ̂_j),
Σ_i = γ²β_i² V_i⁻¹ (the ellipsoid E(θ̂_i, V_i, γβ_i)), β_i = σ·sqrt(2 log(1/δ) + log det V_i − d log λ) + sqrt(λ)S.
γ multiplies the radius (the paper's placement is lost; irrelevant at its γ = 1).
The shared sums Σ_{j∈N_i} G_j are kept per agent and updated incrementally (a pull of j adds xxᵀ to every
neighbour's sum; a cut subtracts the two agents' Gram matrices), all tests of a pull are batched. A lockstep group
batches the same steps over its members' pairs (agent, neighbour) as well.

Switch ``radius_convention``: "paper" (Σ = γ²β²V⁻¹, default) or "bandpy" (Σ = γβV⁻¹: the authors' bandpy
``LBC`` code, an effective radius sqrt(β), which separates much earlier). δ = 1e-3 is bandpy's class
default (the paper's two values were lost); σ = S = λ = γ = 1 as in the paper's synthetic runs.
Switch ``bandpy_clock`` (the authors' bandpy code): their round clock, one round behind ours (``ridge.ucb_round``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.graphs import dense_components
from banditbench.algos.ridge_unit import (
    RidgeStats,
    log_ucb_scores,
    log_ucb_scores_each,
    oful_radius,
    ridge_bytes,
    stack,
    ucb_round,
)
from banditbench.errors import UserError

CONVENTIONS = ("paper", "bandpy")


def separation_test(theta_i, Sigma_i, theta_j, Sigma_j_inv, segments=None, newton_steps: int = 50) -> np.ndarray:
    """K = min_{s∈[0,1]} K(s) (Gilitschenski & Hanebeck 2012, BASS Def. 5.1) for ellipsoid i against each j.

    theta_i [d] or [m, d], Sigma_i [d, d] or [m, d, d] (shape of ellipsoid i, {x: (x−c)ᵀΣ⁻¹(x−c) ≤ 1}); theta_j
    [m, d], Sigma_j_inv [m, d, d]. The two are disjoint iff K < 0. Cholesky L Lᵀ = Σ_j⁻¹, M = Lᵀ Σ_i L = U Λ Uᵀ,
    Φ = L U; then K(s) is convex with K(0) = K(1) = 1 and is minimised by projected Newton steps (App. I, Q).
    ``segments`` [m] (sorted) splits the pairs into independent problems, a lockstep group's members: each stops
    when its own steps have converged, so its K are bit for bit those of its pairs tested alone.
    """
    L = np.linalg.cholesky(Sigma_j_inv)  # [m, d, d]
    M = np.swapaxes(L, 1, 2) @ Sigma_i @ L
    lam, U = np.linalg.eigh((M + np.swapaxes(M, 1, 2)) / 2)
    Phi = L @ U
    v2 = np.einsum("mdl,md->ml", Phi, theta_i - theta_j) ** 2  # [m, d]
    a = lam - 1
    lam_v2 = lam * v2
    s = np.full((len(v2), 1), 0.5)
    if segments is not None:
        starts = np.flatnonzero(np.diff(segments, prepend=-1))
        sizes = np.diff(starts, append=len(segments))
        running = np.ones(len(starts), dtype=bool)  # the segments still taking steps
    for _ in range(newton_steps):
        inv = 1 / (1 + a * s)
        weighted = v2 * inv * inv
        grad = -(weighted * (1 - 2 * s - a * s * s)).sum(1, keepdims=True)  # K′(s)
        curv = 2 * (lam_v2 * inv * inv * inv).sum(1, keepdims=True)  # K″(s) ≥ 0
        s_new = np.clip(s - grad / np.maximum(curv, 1e-300), 0.0, 1.0)
        # Newton converges quadratically: a handful of steps, after which a problem keeps its s
        change = np.abs(s_new - s)[:, 0]
        if segments is None:
            if change.max() < 1e-10:
                break
            s = s_new
            continue
        running &= ~(np.maximum.reduceat(change, starts) < 1e-10)  # as alone, a NaN step does not stop it
        if not running.any():
            break
        np.copyto(s, s_new, where=np.repeat(running, sizes)[:, None])
    s = s[:, 0]
    return 1 - (v2 * s[:, None] * (1 - s[:, None]) / (1 + a * s[:, None])).sum(1)


def shared_theta(A_inv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """θ̂_N = V_N⁻¹ b_N for one neighbourhood (A_inv [d, d], b [d]) or a stack of them ([S, d, d], [S, d])."""
    return (A_inv @ b[..., None])[..., 0]


def share(gram, b, A_inv, at, x, reward, sample=None) -> None:
    """Add samples to the shared sums at the indices ``at`` of gram [..., d, d], b [..., d] and A_inv [..., d, d]
    (a batched Sherman–Morrison update of the inverses): one sample (x [d], reward a float) to every index, or with
    ``sample`` [P] the sample sample[p] of (x [S, d], reward [S]) to index at[p]."""
    outer, weighted = np.einsum("...d,...e->...de", x, x), np.asarray(reward)[..., None] * x
    if sample is not None:  # each sample's products once, then one row per index
        outer, weighted, x = outer[sample], weighted[sample], x[sample]
    gram[at] += outer
    b[at] += weighted
    old = A_inv[at]
    A_inv_x = (old @ x[..., :, None])[..., 0]
    gain = A_inv_x / (1 + np.einsum("...d,...d->...", A_inv_x, x))[:, None]
    old -= np.einsum("pd,pe->pde", gain, A_inv_x)
    A_inv[at] = old


class BASS(Policy):
    member_params = ("alpha",)  # per member: its exploration
    domains = {
        "alpha": d.NON_NEGATIVE,
        "ridge": d.POSITIVE,
        "delta": d.PROBABILITY,
        "gamma": d.NON_NEGATIVE,
        "sigma": d.POSITIVE,
        "S": d.POSITIVE,
        "epsilon": d.FRACTION,
        "radius_convention": d.Choice(CONVENTIONS),
        "bandpy_clock": d.FLAG,
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        alpha: float = 1.0,
        ridge: float = 1.0,
        delta: float = 1e-3,
        gamma: float = 1.0,
        sigma: float = 1.0,
        S: float = 1.0,
        epsilon: float = 0.0,
        radius_convention: str = "paper",
        bandpy_clock: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        if radius_convention not in CONVENTIONS:
            raise UserError(
                f"bass.radius_convention must be one of {', '.join(CONVENTIONS)}, got {radius_convention!r}"
            )
        self.alpha, self.ridge, self.delta, self.gamma = alpha, ridge, delta, gamma
        self.sigma, self.S, self.epsilon, self.radius_convention = sigma, S, epsilon, radius_convention
        self.bandpy_clock = bandpy_clock
        self.local = RidgeStats(n_users, dim, ridge)
        self.ridge_eye = ridge * np.eye(dim)
        self.graph = np.ones((n_users, n_users), dtype=bool)  # complete, self-loops kept: i ∈ N_i
        self.shared_gram = np.zeros((n_users, dim, dim))  # Σ_{j∈N_i} G_j
        self.shared_b = np.zeros((n_users, dim))  # Σ_{j∈N_i} b_j
        self.shared_A_inv = np.tile(np.eye(dim) / ridge, (n_users, 1, 1))  # (λI + Σ_{j∈N_i} G_j)⁻¹

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return 2 * ridge_bytes(n_users, dim)  # local A⁻¹ and G, then the shared Gram sums and their inverses

    def select(self, view, budget):
        i = view.user
        if self.epsilon and self.rng.random() < self.epsilon:  # uniform exploration of the theory variant (§6.2)
            return int(self.rng.integers(len(view.arms)))
        arms = view.arms[:]
        A_inv = self.shared_A_inv[i]
        theta = shared_theta(A_inv, self.shared_b[i])
        return int(log_ucb_scores(theta, A_inv, arms, self.alpha, ucb_round(view.t, self.bandpy_clock)).argmax())

    def update(self, view, chosen, reward):
        i, x = view.user, view.arms[chosen]
        self.local.update(i, x, reward)
        neighbours = np.flatnonzero(self.graph[i])  # i included: its own sample joins its shared sums too
        share(self.shared_gram, self.shared_b, self.shared_A_inv, neighbours, x, reward)
        others = neighbours[neighbours != i]
        if others.size == 0:
            return
        kappa = self.separation(self.local, i, others)
        cut = others[kappa < 0]
        if cut.size:
            self._cut(i, cut)

    def _cut(self, i: int, cut: np.ndarray) -> None:
        """Permanent deletion of the edges (i, j), j in ``cut``: each agent's samples leave the other's shared
        statistics."""
        self.graph[i, cut] = self.graph[cut, i] = False
        self.shared_gram[i] -= self.local.gram[cut].sum(0)
        self.shared_b[i] -= self.local.b[cut].sum(0)
        self.shared_gram[cut] -= self.local.gram[i]
        self.shared_b[cut] -= self.local.b[i]
        changed = np.append(cut, i)
        self.shared_A_inv[changed] = np.linalg.inv(self.ridge_eye + self.shared_gram[changed])

    def separation(self, local: RidgeStats, served, pairs, segments=None) -> np.ndarray:
        """K^γ_ij of Definition 5.1 on the local statistics ``local`` between the served agent i and each agent j at
        ``pairs``: a unit's (served = i, pairs = the j) or a lockstep group's stack (served = each member's i as
        an index of the leading axes, pairs = (member, j) per pair, ``segments`` = the member of each pair, as in
        ``separation_test``).

        Exact shortcut: when a point of the segment between the two centres lies in both ellipsoids, they
        intersect, so K ≥ 0 and the eigen-decomposition is skipped (K is reported as 1 there); only the remaining
        pairs are tested. With c = θ̂_i − θ̂_j, q_i = cᵀV_i c / r_i² and q_j = cᵀV_j c / r_j², the point θ̂_j + u·c
        lies in both iff (1 − u)² q_i ≤ 1 and u² q_j ≤ 1, and some u ∈ [0, 1] does iff 1/√q_i + 1/√q_j ≥ 1 (a
        centre inside the other ellipsoid is q ≤ 1). In BASS's setting this settles all but about 0.2 % of pairs.
        The q are computed for every agent j at once (no gathers), then read at the pairs.
        """
        radius2 = self._radius2(local.logdet)  # every learner's
        theta_i, radius2_i = local.theta[served], radius2[served]
        c = theta_i[..., None, :] - local.theta  # θ̂_i − θ̂_j for every agent j: [N, d], or [S, N, d] in a group
        ridge_c2 = self.ridge * np.einsum("...d,...d->...", c, c)
        q_i = (ridge_c2 + np.einsum("...d,...d->...", c @ local.gram[served], c)) / np.asarray(radius2_i)[..., None]
        q_j = (ridge_c2 + np.einsum("...nd,...nde,...ne->...n", c, local.gram, c)) / radius2
        root_i, root_j = np.sqrt(q_i[pairs]), np.sqrt(q_j[pairs])
        kappa = np.ones(len(root_i))
        test = root_i * root_j > root_i + root_j  # no point of the segment in both
        if test.any():
            at_j = tuple(index[test] for index in pairs) if isinstance(pairs, tuple) else pairs[test]
            Sigma_i = np.asarray(radius2_i)[..., None, None] * local.A_inv[served]
            if segments is not None:  # one agent i per member: one per pair
                theta_i, Sigma_i = theta_i[segments[test]], Sigma_i[segments[test]]
            kappa[test] = separation_test(
                theta_i,
                Sigma_i,
                local.theta[at_j],
                (self.ridge_eye + local.gram[at_j]) / radius2[at_j][:, None, None],
                None if segments is None else segments[test],
            )
        return kappa

    def _radius2(self, logdet):
        """Squared radius of the test ellipsoid: (γβ)² ("paper") or γβ ("bandpy")."""
        beta = oful_radius(logdet, self.dim, self.ridge, self.sigma, self.S, self.delta)
        return (self.gamma * beta) ** 2 if self.radius_convention == "paper" else self.gamma * beta

    @classmethod
    def lockstep(cls, policies):
        # the ε-exploration draws from each member's own stream before it reads the arms: members step alone
        return BASSLockstep(policies) if not policies[0].epsilon else Lockstep(policies)

    def sharing_graph(self):
        return self.graph  # BASS scores its F1 on the sharing graph (§7, App. R)

    def clusters(self):
        """Connected components of the sharing graph (BASS itself shares with direct neighbours only)."""
        return dense_components(self.graph)[1]


class BASSLockstep(Lockstep):
    """BASS's members in lockstep (seeds, and grid cells of α): their local statistics, graphs and shared sums
    stacked on a leading member axis (each member's arrays are views of the stacks). A round's scores, its shared
    updates over every member's neighbourhood and its separation tests over every member's pairs are one batched
    call each; only members with an edge to cut continue alone, through their own ``_cut``."""

    def __init__(self, policies: list[BASS]):
        super().__init__(policies)
        self.local = stack([policy.local for policy in policies])
        self.stack_members("graph", "shared_gram", "shared_b", "shared_A_inv")
        # the same arrays with the (member, agent) axes as one, for ``share``
        shared = (self.shared_gram, self.shared_b, self.shared_A_inv)
        self.shared_rows = tuple(a.reshape(-1, *a.shape[2:]) for a in shared)
        self.alpha = self.per_member("alpha")
        self.members = np.arange(len(policies))
        self.n_users = policies[0].n_users  # a flat index of the (member, agent) rows: cheaper than a pair of indices

    def select(self, views, budgets):
        arms, served = self.read_arms(views)
        A_inv, first = self.shared_A_inv[self.members, served], self.policies[0]
        theta = shared_theta(A_inv, self.shared_b[self.members, served])
        t = ucb_round(views[0].t, first.bandpy_clock)
        return log_ucb_scores_each(theta, A_inv, arms, self.alpha, t).argmax(axis=1).tolist()

    def update(self, views, chosen, rewards):
        served, x, reward = self.played(chosen, rewards)
        self.local.update_each(served, x, reward)
        member, neighbour = np.nonzero(self.graph[self.members, served])  # every member's N_i, in member order
        share(*self.shared_rows, member * self.n_users + neighbour, x, reward, member)
        other = neighbour != served[member]
        member, neighbour = member[other], neighbour[other]
        if member.size == 0:
            return
        kappa = self.policies[0].separation(self.local, (self.members, served), (member, neighbour), member)
        cut = kappa < 0
        for s in np.unique(member[cut]):
            self.policies[s]._cut(int(served[s]), neighbour[cut & (member == s)])
