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
neighbour's sum; a cut subtracts the two agents' Gram matrices), all tests of a pull are batched.

Switch ``radius_convention``: "paper" (Σ = γ²β²V⁻¹, default) or "bandpy" (Σ = γβV⁻¹: the authors' bandpy
``LBC`` code, an effective radius sqrt(β), which separates much earlier). δ = 1e-3 is bandpy's class
default (the paper's two values were lost); σ = S = λ = γ = 1 as in the paper's synthetic runs.
Switch ``bandpy_clock`` (the authors' bandpy code): their round clock, one round behind ours (``ridge.ucb_round``).
"""

from __future__ import annotations

import numpy as np

from banditbench.algos import domains as d
from banditbench.algos.base import Policy
from banditbench.algos.graphs import dense_components
from banditbench.algos.ridge import RidgeStats, log_ucb_scores, oful_radius, ucb_round
from banditbench.errors import UserError

CONVENTIONS = ("paper", "bandpy")


def separation_test(theta_i, Sigma_i, theta_j, Sigma_j_inv, newton_steps: int = 50) -> np.ndarray:
    """K = min_{s∈[0,1]} K(s) (Gilitschenski & Hanebeck 2012, BASS Def. 5.1) for ellipsoid i against each j.

    theta_i [d], Sigma_i [d, d] (shape of ellipsoid i, {x: (x−c)ᵀΣ⁻¹(x−c) ≤ 1}); theta_j [m, d],
    Sigma_j_inv [m, d, d]. The two are disjoint iff K < 0. Cholesky L Lᵀ = Σ_j⁻¹, M = Lᵀ Σ_i L = U Λ Uᵀ,
    Φ = L U; then K(s) is convex with K(0) = K(1) = 1 and is minimised by projected Newton steps (App. I, Q).
    """
    L = np.linalg.cholesky(Sigma_j_inv)  # [m, d, d]
    M = np.swapaxes(L, 1, 2) @ Sigma_i @ L
    lam, U = np.linalg.eigh((M + np.swapaxes(M, 1, 2)) / 2)
    Phi = L @ U
    v2 = np.einsum("mdl,md->ml", Phi, theta_i - theta_j) ** 2  # [m, d]
    a = lam - 1
    lam_v2 = lam * v2
    s = np.full((len(v2), 1), 0.5)
    for _ in range(newton_steps):
        inv = 1 / (1 + a * s)
        weighted = v2 * inv * inv
        grad = -(weighted * (1 - 2 * s - a * s * s)).sum(1, keepdims=True)  # K′(s)
        curv = 2 * (lam_v2 * inv * inv * inv).sum(1, keepdims=True)  # K″(s) ≥ 0
        s_new = np.clip(s - grad / np.maximum(curv, 1e-300), 0.0, 1.0)
        if np.abs(s_new - s).max() < 1e-10:  # Newton converges quadratically: a handful of steps
            break
        s = s_new
    s = s[:, 0]
    return 1 - (v2 * s[:, None] * (1 - s[:, None]) / (1 + a * s[:, None])).sum(1)


class BASS(Policy):
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

    def select(self, view, budget):
        i = view.user
        if self.epsilon and self.rng.random() < self.epsilon:  # uniform exploration of the theory variant (§6.2)
            return int(self.rng.integers(len(view.arms)))
        arms = view.arms[:]
        A_inv = self.shared_A_inv[i]
        theta = A_inv @ self.shared_b[i]
        return int(log_ucb_scores(theta, A_inv, arms, self.alpha, ucb_round(view.t, self.bandpy_clock)).argmax())

    def update(self, view, chosen, reward):
        i, x = view.user, view.arms[chosen]
        self.local.update(i, x, reward)
        neighbours = np.flatnonzero(self.graph[i])  # i included: its own sample joins its shared sums too
        self.shared_gram[neighbours] += np.multiply.outer(x, x)
        self.shared_b[neighbours] += reward * x
        A_inv = self.shared_A_inv[neighbours]  # batched Sherman–Morrison on every neighbour's shared inverse
        A_inv_x = A_inv @ x
        A_inv -= (A_inv_x / (1 + A_inv_x @ x)[:, None])[:, :, None] * A_inv_x[:, None, :]
        self.shared_A_inv[neighbours] = A_inv
        others = neighbours[neighbours != i]
        if others.size == 0:
            return
        kappa = self.separation(i, others)
        cut = others[kappa < 0]
        if cut.size:  # permanent deletion: each agent's samples leave the other's shared statistics
            self.graph[i, cut] = self.graph[cut, i] = False
            self.shared_gram[i] -= self.local.gram[cut].sum(0)
            self.shared_b[i] -= self.local.b[cut].sum(0)
            self.shared_gram[cut] -= self.local.gram[i]
            self.shared_b[cut] -= self.local.b[i]
            changed = np.append(cut, i)
            self.shared_A_inv[changed] = np.linalg.inv(self.ridge_eye + self.shared_gram[changed])

    def separation(self, i: int, others: np.ndarray) -> np.ndarray:
        """K^γ_ij of Definition 5.1 on the local statistics, for every j in ``others``.

        Exact shortcut: when either centre lies inside the other ellipsoid, the two intersect, so K ≥ 0 and
        the eigen-decomposition is skipped (K is reported as 1 there); only the remaining pairs are tested.
        """
        local = self.local
        radius2 = self._radius2(local.logdet[np.append(others, i)])  # one call for the m others and i (last)
        radius2_i, radius2 = radius2[-1], radius2[:-1]
        c = local.theta[i] - local.theta[others]  # [m, d]
        ridge_c2 = self.ridge * np.einsum("md,md->m", c, c)
        inside_i = ridge_c2 + np.einsum("me,me->m", c @ local.gram[i], c) <= radius2_i
        Gc = np.matmul(local.gram[others], c[:, :, None])[:, :, 0]
        inside_j = ridge_c2 + np.einsum("md,md->m", c, Gc) <= radius2
        kappa = np.ones(len(others))
        test = ~(inside_i | inside_j)
        if test.any():
            V_j = self.ridge_eye + local.gram[others[test]]
            kappa[test] = separation_test(
                local.theta[i], radius2_i * local.A_inv[i], local.theta[others[test]], V_j / radius2[test, None, None]
            )
        return kappa

    def _radius2(self, logdet):
        """Squared radius of the test ellipsoid: (γβ)² ("paper") or γβ ("bandpy")."""
        beta = oful_radius(logdet, self.dim, self.ridge, self.sigma, self.S, self.delta)
        return (self.gamma * beta) ** 2 if self.radius_convention == "paper" else self.gamma * beta

    def sharing_graph(self):
        return self.graph  # BASS scores its F1 on the sharing graph (§7, App. R)

    def clusters(self):
        """Connected components of the sharing graph (BASS itself shares with direct neighbours only)."""
        return dense_components(self.graph)[1]
