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
neighbour's sum; a cut subtracts the two agents' Gram matrices); the tests of a pull, over every member's pairs
(agent, neighbour) of a group, are one batched call.

Switch ``radius_convention``: "paper" (Σ = γ²β²V⁻¹, default) or "bandpy" (Σ = γβV⁻¹: the authors' bandpy
``LBC`` code, an effective radius sqrt(β), which separates much earlier). δ = 1e-3 is bandpy's class
default (the paper's two values were lost); σ = S = λ = γ = 1 as in the paper's synthetic runs.
Switch ``bandpy_clock`` (the authors' bandpy code): their round clock, one round behind ours (``ridge.ucb_round``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.graphs import cuts_by_member, dense_components
from banditbench.algos.ridge import RidgeStats, log_ucb_scores_each, oful_radius, ridge_bytes, ucb_round

CONVENTIONS = ("paper", "bandpy")


def separation_test(theta_i, Sigma_i, theta_j, Sigma_j_inv, segments=None, newton_steps: int = 50) -> np.ndarray:
    """K = min_{s∈[0,1]} K(s) (Gilitschenski & Hanebeck 2012, BASS Def. 5.1) for ellipsoid i against each j.

    theta_i [d] or [m, d], Sigma_i [d, d] or [m, d, d] (shape of ellipsoid i, {x: (x−c)ᵀΣ⁻¹(x−c) ≤ 1}); theta_j
    [m, d], Sigma_j_inv [m, d, d]. The two are disjoint iff K < 0. Cholesky L Lᵀ = Σ_j⁻¹, M = Lᵀ Σ_i L = U Λ Uᵀ,
    Φ = L U; then K(s) is convex with K(0) = K(1) = 1 and is minimised by projected Newton steps (App. I, Q).
    ``segments`` [m] (sorted; by default one) splits the pairs into independent problems, a group's members: each
    stops when its own steps have converged, so its K are bit for bit those of its pairs tested alone.
    """
    L = np.linalg.cholesky(Sigma_j_inv)  # [m, d, d]
    M = np.swapaxes(L, 1, 2) @ Sigma_i @ L
    lam, U = np.linalg.eigh((M + np.swapaxes(M, 1, 2)) / 2)
    Phi = L @ U
    v2 = np.einsum("mdl,md->ml", Phi, theta_i - theta_j) ** 2  # [m, d]
    a = lam - 1
    lam_v2 = lam * v2
    s = np.full((len(v2), 1), 0.5)
    starts = np.array([0]) if segments is None else np.flatnonzero(np.diff(segments, prepend=-1))
    sizes = np.diff(starts, append=len(v2))
    running = np.ones(len(starts), dtype=bool)  # the segments still taking steps
    for _ in range(newton_steps):
        inv = 1 / (1 + a * s)
        weighted = v2 * inv * inv
        grad = -(weighted * (1 - 2 * s - a * s * s)).sum(1, keepdims=True)  # K′(s)
        curv = 2 * (lam_v2 * inv * inv * inv).sum(1, keepdims=True)  # K″(s) ≥ 0
        s_new = np.clip(s - grad / np.maximum(curv, 1e-300), 0.0, 1.0)
        # Newton converges quadratically: a handful of steps, after which a problem keeps its s
        change = np.abs(s_new - s)[:, 0]
        running &= ~(np.maximum.reduceat(change, starts) < 1e-10)  # a NaN step does not stop a segment
        if not running.any():
            break
        np.copyto(s, s_new, where=np.repeat(running, sizes)[:, None])
    s = s[:, 0]
    return 1 - (v2 * s[:, None] * (1 - s[:, None]) / (1 + a * s[:, None])).sum(1)


def share(gram, b, A_inv, at, x, reward, sample) -> None:
    """Add the sample sample[p] of (x [S, d], reward [S]) to the shared sums at index at[p] of gram [..., d, d],
    b [..., d] and A_inv [..., d, d] (a batched Sherman–Morrison update of the inverses)."""
    outer, weighted = np.einsum("...d,...e->...de", x, x), np.asarray(reward)[..., None] * x
    gram[at] += outer[sample]  # each sample's products once, then one row per index
    b[at] += weighted[sample]
    x = x[sample]
    old = A_inv[at]
    A_inv_x = (old @ x[..., :, None])[..., 0]
    gain = A_inv_x / (1 + np.einsum("...d,...d->...", A_inv_x, x))[:, None]
    old -= np.einsum("pd,pe->pde", gain, A_inv_x)
    A_inv[at] = old


class BASS(MemberPolicy):
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
    authors_code = {
        "radius_convention": (
            "bandpy",
            "Σ = γβV⁻¹ (bandpy's LBC) instead of γ²β²V⁻¹: an effective radius √β, which separates users much earlier",
        ),
        "bandpy_clock": (True, "their round clock, one round behind ours in the log(t + 1) of the index (bandpy)"),
    }
    transient = ("ridge_eye",)  # λI, for every member

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        alpha=1.0,
        ridge: float = 1.0,
        delta: float = 1e-3,
        gamma: float = 1.0,
        sigma: float = 1.0,
        S: float = 1.0,
        epsilon: float = 0.0,
        radius_convention: str = "paper",
        bandpy_clock: bool = False,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.alpha, self.ridge, self.delta, self.gamma = self.per_member(alpha), ridge, delta, gamma
        self.sigma, self.S, self.epsilon, self.radius_convention = sigma, S, epsilon, radius_convention
        self.bandpy_clock = bandpy_clock
        M = len(self.members)
        self.local = RidgeStats(M, n_users, dim, ridge)
        self.ridge_eye = ridge * np.eye(dim)
        self.graph = np.ones((M, n_users, n_users), dtype=bool)  # complete, self-loops kept: i ∈ N_i
        self.shared_gram = np.zeros((M, n_users, dim, dim))  # Σ_{j∈N_i} G_j
        self.shared_b = np.zeros((M, n_users, dim))  # Σ_{j∈N_i} b_j
        self.shared_A_inv = np.tile(np.eye(dim) / ridge, (M, n_users, 1, 1))  # (λI + Σ_{j∈N_i} G_j)⁻¹

    @classmethod
    def state_bytes(cls, *, n_users, n_arms, dim, **params):
        return 2 * ridge_bytes(n_users, dim)  # local A⁻¹ and G, then the shared Gram sums and their inverses

    def select(self, views, budgets):
        if self.epsilon:
            return self._select_exploring(views)
        arms, served = self.read_arms(views)
        return self._scores(self.at(served), arms, self.alpha, views[0].t).argmax(axis=1).tolist()

    def _scores(self, at, arms: np.ndarray, alpha: np.ndarray, t: int) -> np.ndarray:
        """α-LinUCB on the shared statistics of the agents ``at`` (one per row of arms [P, K, d])."""
        A_inv = self.shared_A_inv[at]
        theta = (A_inv @ self.shared_b[at][..., None])[..., 0]  # θ̂_N = V_N⁻¹ b_N
        return log_ucb_scores_each(theta, A_inv, arms, alpha, ucb_round(t, self.bandpy_clock))

    def _select_exploring(self, views) -> list[int]:
        """With probability ε a member plays a uniform arm (the theory variant, §6.2): it draws from its own stream
        before it reads (and spends) its arms; the other members play their α-LinUCB."""
        chosen = [
            int(rng.integers(len(view.arms))) if rng.random() < self.epsilon else -1
            for rng, view in zip(self.rngs, views)
        ]
        playing = [m for m, arm in enumerate(chosen) if arm < 0]
        if playing:
            arms = np.array([views[m].arms[:] for m in playing])
            at = np.array(playing), np.array([views[m].user for m in playing])
            for m, arm in zip(playing, self._scores(at, arms, self.alpha[at[0]], views[0].t).argmax(axis=1).tolist()):
                chosen[m] = arm
        return chosen

    def update(self, views, chosen, rewards):
        members, N = self.members, self.n_users
        served, x, reward = self.played(views, chosen, rewards)
        self.local.update(members, served, x, reward)
        member, neighbour = np.nonzero(self.graph[self.at(served)])  # every member's N_i (i included), in order
        shared = (a.reshape(-1, *a.shape[2:]) for a in (self.shared_gram, self.shared_b, self.shared_A_inv))
        share(*shared, member * N + neighbour, x, reward, member)  # a flat (member, agent) index: one gather
        other = neighbour != served[member]
        member, neighbour = member[other], neighbour[other]
        if member.size == 0:
            return
        kappa = self.separation(self.at(served), (member, neighbour), member)
        for m, cut in cuts_by_member(member, neighbour, kappa < 0):
            self._cut(m, int(served[m]), cut)

    def _cut(self, m: int, i: int, cut: np.ndarray) -> None:
        """Permanent deletion of member m's edges (i, j), j in ``cut``: each agent's samples leave the other's shared
        statistics."""
        graph, gram, b, local = self.graph[m], self.shared_gram[m], self.shared_b[m], self.local
        graph[i, cut] = graph[cut, i] = False
        gram[i] -= local.gram[m, cut].sum(0)
        b[i] -= local.b[m, cut].sum(0)
        gram[cut] -= local.gram[m, i]
        b[cut] -= local.b[m, i]
        changed = np.append(cut, i)
        self.shared_A_inv[m, changed] = np.linalg.inv(self.ridge_eye + gram[changed])

    def separation(self, served, pairs, segments) -> np.ndarray:
        """K^γ_ij of Definition 5.1 on the local statistics between each member's served agent i (``served``, an index
        of the member and agent axes) and the agents j at ``pairs`` = (member, j) per pair, ``segments`` = the member
        of each pair (as in ``separation_test``).

        Exact shortcut: when a point of the segment between the two centres lies in both ellipsoids, they
        intersect, so K ≥ 0 and the eigen-decomposition is skipped (K is reported as 1 there); only the remaining
        pairs are tested. With c = θ̂_i − θ̂_j, q_i = cᵀV_i c / r_i² and q_j = cᵀV_j c / r_j², the point θ̂_j + u·c
        lies in both iff (1 − u)² q_i ≤ 1 and u² q_j ≤ 1, and some u ∈ [0, 1] does iff 1/√q_i + 1/√q_j ≥ 1 (a
        centre inside the other ellipsoid is q ≤ 1). In BASS's setting this settles all but about 0.2 % of pairs.
        The q are computed for every agent j at once (no gathers), then read at the pairs.
        """
        local = self.local
        radius2 = self._radius2(local.logdet)  # every learner's [M, N]
        theta_i, radius2_i = local.theta[served], radius2[served]  # [M, d], [M]
        c = theta_i[:, None, :] - local.theta  # θ̂_i − θ̂_j for every agent j: [M, N, d]
        ridge_c2 = self.ridge * np.einsum("...d,...d->...", c, c)
        q_i = (ridge_c2 + np.einsum("...d,...d->...", c @ local.gram[served], c)) / radius2_i[:, None]
        q_j = (ridge_c2 + np.einsum("...nd,...nde,...ne->...n", c, local.gram, c)) / radius2
        root_i, root_j = np.sqrt(q_i[pairs]), np.sqrt(q_j[pairs])
        kappa = np.ones(len(root_i))
        test = root_i * root_j > root_i + root_j  # no point of the segment in both
        if test.any():
            at_j, tested = tuple(index[test] for index in pairs), segments[test]
            Sigma_i = radius2_i[:, None, None] * local.A_inv[served]
            Sigma_j_inv = (self.ridge_eye + local.gram[at_j]) / radius2[at_j][:, None, None]
            kappa[test] = separation_test(theta_i[tested], Sigma_i[tested], local.theta[at_j], Sigma_j_inv, tested)
        return kappa

    def _radius2(self, logdet):
        """Squared radius of the test ellipsoid: (γβ)² ("paper") or γβ ("bandpy")."""
        beta = oful_radius(logdet, self.dim, self.ridge, self.sigma, self.S, self.delta)
        return (self.gamma * beta) ** 2 if self.radius_convention == "paper" else self.gamma * beta

    def sharing_graph(self, m):
        return self.graph[m]  # BASS scores its F1 on the sharing graph (§7, App. R)

    def clusters(self, m):
        """Connected components of the sharing graph (BASS itself shares with direct neighbours only)."""
        return dense_components(self.graph[m])[1]
