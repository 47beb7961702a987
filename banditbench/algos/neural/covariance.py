"""NeuralUCB's Z = λI + Σ g gᵀ/m (Zhou et al. 2020, Alg. 1 line 10), diagonal or full, one per network of every
member."""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos.neural.mlp import ArmGradients
from banditbench.errors import UserError


class DiagonalCovariance:
    """NeuralUCB's Z = λI + Σ g gᵀ/m kept as its diagonal (the papers' and authors' practical approximation): one Z
    per network of every member, [M, networks, p], λ [M] one value per member."""

    def __init__(self, lam: np.ndarray, n_models: int, p: int, m: int, device: torch.device):
        lam = torch.as_tensor(lam, dtype=torch.float64, device=device)
        self.Z = lam[:, None, None].expand(-1, n_models, p).clone()
        self.m = m

    def widths(self, at, arms: ArmGradients) -> torch.Tensor:
        """sqrt(g_iᵀ Z⁻¹ g_i / m) for every arm's gradient g_i, Z the rows ``at`` of [M, networks]."""
        return arms.weighted_squares(self.Z[at].reciprocal()).div(self.m).sqrt()

    def update(self, at, g: torch.Tensor) -> None:
        """Z ← Z + g gᵀ/m at the rows ``at``, g [M, p]."""
        g = g.double()
        self.Z[at] = torch.addcmul(self.Z[at], g, g, value=1.0 / self.m)


class FullCovariance:
    """NeuralUCB's full Z (Zhou et al. Alg. 1 line 10) kept as Z⁻¹ with Sherman–Morrison rank-one updates
    (the same formula as ``ridge.RidgeStats``, here in gradient space): O(p²) per round instead of O(p³). One per
    network of every member, [M, networks, p, p]."""

    def __init__(self, lam: np.ndarray, n_models: int, p: int, m: int, device: torch.device, max_gb: float):
        need = n_models * p * p * 8 / 2**30
        if need > max_gb:
            raise UserError(
                f"full covariance needs {n_models} × {p}² float64 = {need:.1f} GB, above "
                f"max_covariance_gb={max_gb}; use covariance=diagonal or a smaller network"
            )
        lam = torch.as_tensor(lam, dtype=torch.float64, device=device)
        eye = torch.eye(p, dtype=torch.float64, device=device)
        self.Z_inv = (eye / lam[:, None, None])[:, None].repeat(1, n_models, 1, 1)
        self.m = m

    def widths(self, at, arms: ArmGradients) -> torch.Tensor:
        G = arms.rows().double()
        return ((G @ self.Z_inv[at]) * G).sum(-1).clamp_min(0).div(self.m).sqrt()

    def update(self, at, g: torch.Tensor) -> None:
        Z_inv, v = self.Z_inv[at], g.double() / np.sqrt(self.m)
        for Z_inv_m, v_m in zip(Z_inv, v):  # member by member: a unit's matrix-vector products, not a batch's
            Zv = Z_inv_m @ v_m
            Z_inv_m -= torch.outer(Zv, Zv) / (1.0 + v_m @ Zv)
        self.Z_inv[at] = Z_inv
