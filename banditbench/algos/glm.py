"""Generalised linear UCB models of the two-stage slate policies (Zhang et al. 2022): inverse Gram
matrices updated by Sherman–Morrison, and logistic models fitted by a few Adam steps.

- ``InverseGram``: A⁻¹ of A = I + Σ v vᵀ, kept as a torch tensor; ``add(V)`` folds the m rows of V in with the
  Woodbury identity A⁻¹ ← A⁻¹ − A⁻¹Vᵀ (I + V A⁻¹ Vᵀ)⁻¹ V A⁻¹, exactly the m successive rank-one Sherman–Morrison
  updates of the authors' code (one pass over A⁻¹ instead of m: what makes the 4096 × 4096 bilinear one cheap).
- ``DisjointGLM``: Eq. (2) per user u, α = ρ(θ_uᵀx + b_u) + β‖x‖_{M_u⁻¹}, M_u = I + Σ x xᵀ of the items
  recommended to u; ρ = sigmoid fitted by Adam on the user's feedback, or ``link="identity"`` (LinUCB: the ridge
  estimate θ_u = M_u⁻¹ Σ x r).
- ``SharedGLM``: one model for all users: ``additive`` (S-N-GALM, Eq. 3) ρ(γ(w_xᵀx + b_x) + (1 − γ)(w_zᵀz + b_z))
  + β(γ‖x‖_{A_x⁻¹} + (1 − γ)‖z‖_{A_z⁻¹}), or ``bilinear`` (S-N-GBLM, Eq. 4) ρ(xᵀΘz + b) + β‖vec(x zᵀ)‖_{W⁻¹}.
  The bilinear width never forms the (d1 d2)-vectors: with W⁻¹ viewed as [d1, d2, d1, d2],
  ‖vec(x zᵀ)‖²_{W⁻¹} = xᵀ M_z x with M_z[a, c] = Σ_{b,d} W⁻¹[a, b, c, d] z_b z_d, one contraction per user.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from banditbench.algos.state import capture, restore_attributes


class InverseGram:
    """A⁻¹ for A = I + Σ v vᵀ (``dim`` × ``dim``), rank-m updates by Woodbury = m Sherman–Morrison steps."""

    def __init__(self, dim: int, dtype: torch.dtype = torch.float64):
        self.A_inv = torch.eye(dim, dtype=dtype)

    def add(self, V: torch.Tensor) -> None:
        V = V.to(self.A_inv.dtype).reshape(-1, self.A_inv.shape[0])
        U = self.A_inv @ V.T  # A⁻¹Vᵀ [dim, m]
        S = torch.eye(len(V), dtype=U.dtype) + V @ U
        self.A_inv.addmm_(U, torch.linalg.solve(S, U.T), alpha=-1.0)

    def widths(self, X: torch.Tensor) -> torch.Tensor:
        """‖x‖_{A⁻¹} of every row of X."""
        X = X.to(self.A_inv.dtype)
        return ((X @ self.A_inv) * X).sum(-1).clamp_min(0).sqrt()


def balanced_rows(labels: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Per round with a click: all positives plus int(min(1.5·#pos, #neg)) negatives drawn without replacement
    (the authors' GLM training samples); rounds without a click give nothing."""
    chosen = []
    for y in labels:
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y == 0)
        if len(pos):
            chosen.append(np.concatenate([pos, rng.choice(neg, int(min(1.5 * len(pos), len(neg))), replace=False)]))
        else:
            chosen.append(np.zeros(0, np.int64))
    return chosen


def adam_fit(module: nn.Module, loss_of, steps: int, lr: float) -> None:
    """``steps`` full-batch Adam steps with a fresh optimiser (the authors' GLM fitting)."""
    optimiser = torch.optim.Adam(module.parameters(), lr=lr)
    for _ in range(steps):
        loss = loss_of()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()


class DisjointGLM:
    """Eq. (2) with a separate θ_u, b_u and M_u per user (GLM, N-GLM, N-LinUCB)."""

    def __init__(self, dim: int, beta: float, lr: float, steps: int, link: str = "logistic"):
        self.dim, self.beta, self.lr, self.steps, self.link = dim, beta, lr, steps, link
        self.gram: dict[int, InverseGram] = {}
        self.model: dict[int, nn.Linear] = {}
        self.b: dict[int, torch.Tensor] = {}  # Σ x r, for the identity link

    def state_dict(self) -> dict:
        return capture(vars(self))

    def load_state_dict(self, state: dict) -> None:
        for user in state["gram"]:  # users met so far: make their learners, then fill them
            self._of(user)
        restore_attributes(self, state)

    def _of(self, user: int) -> tuple[InverseGram, nn.Linear]:
        if user not in self.gram:
            self.gram[user] = InverseGram(self.dim)
            linear = nn.Linear(self.dim, 1).double()
            with torch.no_grad():  # θ_u starts at 0: the first scores are the widths alone
                linear.weight.zero_()
                linear.bias.zero_()
            self.model[user], self.b[user] = linear, torch.zeros(self.dim, dtype=torch.float64)
        return self.gram[user], self.model[user]

    @torch.no_grad()
    def scores(self, user: int, X: torch.Tensor) -> np.ndarray:
        gram, linear = self._of(user)
        X = X.double()
        if self.link == "identity":
            mean = X @ (gram.A_inv @ self.b[user])
        else:
            mean = torch.sigmoid(linear(X)[:, 0])
        return (mean + self.beta * gram.widths(X)).numpy()

    def observe(self, user: int, X: torch.Tensor, rewards: torch.Tensor) -> None:
        """Fold the recommended items into M_u (clicked or not) and their rewards into Σ x r."""
        gram, _ = self._of(user)
        gram.add(X)
        self.b[user] += X.double().T @ rewards.double()

    def fit(self, user: int, X: torch.Tensor, y: torch.Tensor) -> None:
        """Adam steps of the user's logistic model on its samples (no-op for the identity link)."""
        if self.link == "identity" or len(y) == 0:
            return
        _, linear = self._of(user)
        X, y = X.double(), y.double()
        adam_fit(
            linear, lambda: nn.functional.binary_cross_entropy_with_logits(linear(X)[:, 0], y), self.steps, self.lr
        )


class BilinearLogit(nn.Module):
    def __init__(self, d1: int, d2: int):
        super().__init__()
        self.layer = nn.Bilinear(d1, d2, 1)

    def forward(self, X: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
        return self.layer(X, Z)[:, 0]


class AdditiveLogit(nn.Module):
    def __init__(self, d1: int, d2: int, item_weight: float, user_weight: float):
        super().__init__()
        self.item, self.user = nn.Linear(d1, 1), nn.Linear(d2, 1)
        self.item_weight, self.user_weight = item_weight, user_weight

    def forward(self, X: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
        return self.item_weight * self.item(X)[:, 0] + self.user_weight * self.user(Z)[:, 0]


class SharedGLM:
    """One GLM for all users: ``additive`` (Eq. 3) or ``bilinear`` (Eq. 4); see the module docstring.

    ``item_only_ci`` (additive): the authors' code, CI = β‖x‖_{A_x⁻¹} with no user term and γ left out of the
    mean (σ(w_xᵀx + b_x + w_zᵀz + b_z)), instead of Eq. (3)'s γ-weighted mean and two-sided width.
    """

    def __init__(
        self,
        kind: str,
        d1: int,
        d2: int,
        beta: float,
        lr: float,
        steps: int,
        gamma: float = 0.5,
        item_only_ci: bool = False,
        gram_dtype: torch.dtype = torch.float64,
        seed: int = 0,
    ):
        self.kind, self.beta, self.lr, self.steps = kind, beta, lr, steps
        self.gamma, self.item_only_ci, self.d1, self.d2 = gamma, item_only_ci, d1, d2
        self._M_z: tuple[torch.Tensor, torch.Tensor] | None = None  # (z, M_z) of the last bilinear scoring
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            if kind == "bilinear":
                self.model = BilinearLogit(d1, d2)
                self.W = InverseGram(d1 * d2, gram_dtype)
            else:
                # the code's mean σ(w_xᵀx + b_x + w_zᵀz + b_z) has both halves at full weight
                self.model = AdditiveLogit(d1, d2, *((1.0, 1.0) if item_only_ci else (gamma, 1 - gamma)))
                self.A_x, self.A_z = InverseGram(d1), InverseGram(d2)

    @torch.no_grad()
    def scores(self, X: torch.Tensor, z: torch.Tensor) -> np.ndarray:
        """α of every row of X [n, d1] for one user z [d2]."""
        mean = torch.sigmoid(self.model(X, z.expand(len(X), -1)))
        if self.kind == "bilinear":
            W = self.W.A_inv
            if self._M_z is None or self._M_z[0] is not z:  # one contraction per user vector and update
                zz = z.to(W.dtype)
                half = (W.view(-1, self.d2) @ zz).view(self.d1, self.d2, self.d1)  # Σ_d W[a, b, c, d] z_d
                self._M_z = (z, torch.einsum("abc,b->ac", half, zz))
            M_z = self._M_z[1]
            width = ((X.to(W.dtype) @ M_z) * X.to(W.dtype)).sum(-1).clamp_min(0).sqrt()
        elif self.item_only_ci:
            width = self.A_x.widths(X)
        else:
            width = self.gamma * self.A_x.widths(X) + (1 - self.gamma) * self.A_z.widths(z[None])[0]
        return (mean + self.beta * width.to(mean.dtype)).numpy()

    def observe(self, X: torch.Tensor, z: torch.Tensor) -> None:
        """Fold the m recommended arms (clicked or not) of one user into the confidence matrices."""
        if self.kind == "bilinear":
            self._M_z = None
            self.W.add(torch.einsum("ma,b->mab", X, z).reshape(len(X), -1))  # vec(x zᵀ), row-major
        else:
            self.A_x.add(X)
            if not self.item_only_ci:
                self.A_z.add(z.expand(len(X), -1))

    def fit(self, X: torch.Tensor, Z: torch.Tensor, y: torch.Tensor) -> None:
        if len(y):
            adam_fit(
                self.model,
                lambda: nn.functional.binary_cross_entropy_with_logits(self.model(X, Z), y),
                self.steps,
                self.lr,
            )
