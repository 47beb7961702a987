"""The papers' MLP on flat parameter vectors and its per-arm gradients.

Parameters are kept as flat vectors θ ∈ R^p (one row per network when many are stacked, [B, p]): per-arm
gradients, covariances and meta-steps are then plain tensor algebra, and n user-learners are one tensor
so their predictions on all arms are one batched call.

Network (NeuralUCB Eq. 2.2; Meta-Ban Eq. 9; M-CNB Eq. 4): f(x; θ) = W_L σ(W_{L−1} … σ(W_1 x)), σ = ReLU.
``init="paper"`` draws W_l (l < L) from N(0, 2/m) and W_L from N(0, 1/m) (Cao & Gu, as M-CNB §5 writes it),
biases 0; ``init="torch"`` is nn.Linear's default U(±1/sqrt(fan_in)) (the authors' code). The papers have no
biases (``bias=False``); the authors' code has them. Block-encoded inputs are read through each block's columns of
W_1 (``BlockRows``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.func import grad, vmap

from banditbench.algos.neural.settings import GRADIENTS, INITS, check_choice
from banditbench.errors import UserError


def autograd_gradient(forward, theta: torch.Tensor, x: torch.Tensor, out_grad) -> tuple[torch.Tensor, torch.Tensor]:
    """(f, ∇_θ Σ_k c_k f(x_k; θ)) of any ``forward(θ, x)`` by autograd, c = ``out_grad(f)``: one leaf row per
    network (θ's and x's leading dimensions broadcast), so the sum over networks keeps their gradients apart."""
    lead = torch.broadcast_shapes(theta.shape[:-1], x.shape[:-2])
    theta = theta.detach().expand(*lead, -1).clone().requires_grad_(True)
    with torch.enable_grad():
        f = forward(theta, x)
        (g,) = torch.autograd.grad((out_grad(f.detach()) * f).sum(), theta)
    return f.detach(), g


@dataclass
class BlockRows:
    """Block-encoded inputs (input k is zero outside the coordinates [k·b, (k+1)·b) of its block), each read through
    W_1's b columns of its block only, instead of one product with all K·b columns.

    Two layouts. A round's arms (``segments`` None): x [..., K, 1, b], arm k in block k. A minibatch of B networks'
    samples (``group_by_block``): x [B·s, b] sorted by segment, one segment per (network, block) pair with samples;
    ``segments`` = (network, block, size) of each segment (lists) and ``order`` [B·s], the samples' flat indices
    in x's order. The first layer's output goes back to the samples' order, so the hidden layers and the loss see
    the minibatch [B, s] as the dense input gives it."""

    x: torch.Tensor
    segments: tuple[list[int], list[int], list[int]] | None = None
    order: torch.Tensor | None = None

    def _blocks(self, W: torch.Tensor) -> torch.Tensor:
        """W [..., m, K·b] as each block's columns [..., K, m, b] (a view)."""
        b = self.x.shape[-1]
        return W.unflatten(-1, (W.shape[-1] // b, b)).movedim(-2, -3)

    def first_layer(self, W: torch.Tensor) -> torch.Tensor:
        """x W_1ᵀ for every arm [..., K, m], or every sample [B, s, m] ([s, m] for one network's W [m, K·b])."""
        if self.segments is None:
            return (self.x @ self._blocks(W).mT).flatten(-3, -2)
        network, block, size = self.segments
        blocks = self._blocks(W if W.dim() == 3 else W[None])
        parts = [x @ blocks[i, k].T for x, i, k in zip(self.x.split(size), network, block)]  # W_1 read, not copied
        h = W.new_empty(len(self.x), W.shape[-2])
        h[self.order] = torch.cat(parts)
        return h if W.dim() == 2 else h.view(W.shape[0], -1, W.shape[-2])

    def weight_gradient(self, delta: torch.Tensor, out: torch.Tensor) -> None:
        """Σ δ xᵀ over the samples (delta [B, s, m]) written into W_1's gradient ``out`` [B, m, K·b], block by block;
        blocks without samples get 0."""
        network, block, size = self.segments
        blocks = self._blocks(out)
        out.zero_()
        deltas = delta.flatten(0, 1)[self.order].split(size)
        for delta_segment, x, i, k in zip(deltas, self.x.split(size), network, block):
            blocks[i, k] = delta_segment.T @ x

    def weighted_squares(self, d2: torch.Tensor, D: torch.Tensor) -> torch.Tensor:
        """Σ_jk δ_j² D_jk x_k² of every arm (d2 = δ² [..., K, m]), D [..., m, K·b] a diagonal weight of W_1."""
        x2 = self.x[..., 0, :].double().square()
        return ((d2[..., None, :] @ self._blocks(D))[..., 0, :] * x2).sum(-1)

    def outer(self, delta: torch.Tensor, arms) -> torch.Tensor:
        """vec(δ xᵀ) of the selected arms (delta [..., K, m]) in W_1's dense layout, zero outside their block."""
        rows = self.x[..., 0, :]
        K, b = rows.shape[-2:]
        blocks = torch.arange(K, device=rows.device).expand(rows.shape[:-1])[arms]
        x, delta = rows[arms], delta[arms]
        part = torch.zeros(len(x), delta.shape[-1], K, b, device=x.device)
        part[torch.arange(len(x), device=x.device), :, blocks] = delta[:, :, None] * x[:, None, :]
        return part.flatten(1)


def arm_blocks(x: torch.Tensor, block: int) -> torch.Tensor:
    """Each arm's own block of block-encoded arms x [..., K, K·b] (arm k in block k): [..., K, b], a view."""
    return x.unflatten(-1, (x.shape[-2], block)).diagonal(dim1=-3, dim2=-2).mT


def arm_inputs(x: torch.Tensor, block: int | None):
    """The arms as the network reads them: x [..., K, d] as it is, or with a ``block`` width the arms' blocks
    x [..., K, b] as ``BlockRows``."""
    return x if block is None else BlockRows(x[..., None, :])


def take(values: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """values[rows] for row indices of any shape, through ``index_select``: the same numbers, in a quarter of
    advanced indexing's time for the minibatches here (2 048 rows of 10 floats: 7 µs instead of 30)."""
    return values.index_select(0, rows.flatten()).view(*rows.shape, *values.shape[1:])


def group_by_block(rows: torch.Tensor, x: torch.Tensor, block: torch.Tensor, n_blocks: int) -> BlockRows:
    """The minibatches ``rows`` [B, s] of B networks from a log of non-zero blocks (x [N, b], block [N]) as
    ``BlockRows`` segments: one per (network, block) pair with samples, in that order, each keeping its samples in
    their order."""
    network = torch.arange(len(rows), device=rows.device)[:, None]
    key = (network * n_blocks + take(block, rows)).flatten()
    order = torch.argsort(key, stable=True)
    keys, size = torch.unique_consecutive(key[order], return_counts=True)
    keys = keys.tolist()
    segments = ([key // n_blocks for key in keys], [key % n_blocks for key in keys], size.tolist())
    return BlockRows(take(x, rows.flatten()[order]), segments, order)


class MLP:
    """f(x; θ) with depth L (number of weight matrices), width m, optional biases, on flat θ."""

    def __init__(
        self,
        dim: int,
        width: int = 100,
        depth: int = 2,
        bias: bool = False,
        init: str = "paper",
        gradients: str = "closed",
    ):
        if depth < 1 or width < 1:
            raise UserError(f"network depth and width must be at least 1, got depth={depth}, width={width}")
        check_choice("init", init, INITS)
        self.gradients = check_choice("gradients", gradients, GRADIENTS)
        self.dim, self.width, self.depth, self.bias, self.init_kind = dim, width, depth, bias, init
        sizes = [dim] + [width] * (depth - 1) + [1]
        self.shapes: list[tuple[tuple[int, int], int]] = [((o, i), o if bias else 0) for i, o in zip(sizes, sizes[1:])]
        self.p = sum(o * i + b for (o, i), b in self.shapes)

    def init(self, generator: torch.Generator, device: torch.device) -> torch.Tensor:
        parts = []
        for layer, ((out, fan_in), n_bias) in enumerate(self.shapes):
            if self.init_kind == "paper":
                std = np.sqrt((1.0 if layer == self.depth - 1 else 2.0) / self.width)
                parts.append(torch.randn(out * fan_in, generator=generator, device=device) * std)
                parts.append(torch.zeros(n_bias, device=device))
            else:
                bound = 1.0 / np.sqrt(fan_in)
                parts.append((torch.rand(out * fan_in + n_bias, generator=generator, device=device) * 2 - 1) * bound)
        return torch.cat(parts)

    def layers(self, theta: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Views (W [..., out, in], b [..., 1, out] or None) into θ [..., p]."""
        lead, at, out = theta.shape[:-1], 0, []
        for (o, i), n_bias in self.shapes:
            W = theta[..., at : at + o * i].reshape(*lead, o, i)
            at += o * i
            b = theta[..., at : at + n_bias].reshape(*lead, 1, o) if n_bias else None
            at += n_bias
            out.append((W, b))
        return out

    def embed(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Last hidden layer σ(W_{L−1} … σ(W_1 x)): θ [..., p], x [..., k, d] → [..., k, m]."""
        return self.activations(theta, x)[-1]

    def activations(self, theta: torch.Tensor, x: torch.Tensor, layers=None) -> list[torch.Tensor]:
        """The input of every layer, [x, h_1, …, h_{L−1}] with h_l = σ(W_l h_{l−1} + b_l): θ [..., p], x [..., k, d]
        or ``BlockRows``."""
        hs = [x]
        for W, b in (layers or self.layers(theta))[:-1]:
            h = hs[-1].first_layer(W) if isinstance(hs[-1], BlockRows) else hs[-1] @ W.transpose(-1, -2)
            hs.append((h if b is None else h + b).relu_())  # in place on the fresh product
        return hs

    @staticmethod
    def output(layers, hs: list[torch.Tensor]) -> torch.Tensor:
        """f from the last layer's input; W_L is one row [..., 1, m], so W_L h is an elementwise product and a sum
        (cheaper than a matmul with one output column for these small networks)."""
        W, b = layers[-1]
        out = (hs[-1] * W).sum(-1)
        return out if b is None else out + b[..., 0]

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """f(x; θ): θ [..., p], x [..., k, d] → [..., k] (leading dimensions broadcast)."""
        layers = self.layers(theta)
        return self.output(layers, self.activations(theta, x, layers))

    def backprop(self, theta: torch.Tensor, x: torch.Tensor, out_grad, layers=None):
        """One forward and one backward pass: (f, hs, δs) with hs the layer inputs (``activations``) and
        δ_l = ∂(Σ_k c_k f(x_k; θ)) / ∂(pre-activation of layer l), c = ``out_grad(f)`` [..., k]:
        δ_L = c, δ_{l−1} = (δ_l W_l) ⊙ 1[h_{l−1} > 0], the mask applied by autograd's own ReLU backward kernel."""
        layers = layers or self.layers(theta)
        hs = self.activations(theta, x, layers)
        f = self.output(layers, hs)
        deltas = [out_grad(f)[..., None]]
        for l in range(self.depth - 1, 0, -1):
            W = layers[l][0]
            back = deltas[-1] * W if l == self.depth - 1 else deltas[-1] @ W  # W_L is a single row
            deltas.append(torch.ops.aten.threshold_backward(back, hs[l], 0))
        return f, hs, deltas[::-1]

    def gradient(
        self, theta: torch.Tensor, x: torch.Tensor, out_grad, layers=None, out=None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(f, ∇_θ Σ_k c_k f(x_k; θ)) with c_k = ``out_grad(f)``: θ [..., p], x [..., k, d] → f [..., k], gradient
        [..., p], the leading dimensions of θ and x broadcast (one gradient per network; the sum runs over k only).

        "closed" (default): the closed form of backpropagation, the gradient of W_l being Σ_k δ_{l,k} h_{l−1,k}ᵀ, one
        batched matmul per layer — no autograd graph. "batched" / "vmap": autograd (the tested reference).

        A loop of many small steps on one θ passes θ's ``layers`` and ``out`` = (a gradient buffer [..., p], its
        ``layers``), so that they are not cut again on every step (a fifth of a single-sample step)."""
        if self.gradients != "closed":
            return autograd_gradient(self.forward, theta, x, out_grad)
        f, hs, deltas = self.backprop(theta, x, out_grad, layers)
        if out is None:
            gradient = torch.empty(*deltas[0].shape[:-2], self.p, device=f.device)
            out = gradient, self.layers(gradient)
        gradient, gradient_layers = out
        for (W_grad, b_grad), delta, h in zip(gradient_layers, deltas, hs):
            # Σ_k δ_k h_kᵀ: for one sample (k = 1) an outer product, written in place; otherwise a matmul in the
            # orientation with the longer result rows (MKL is much faster so for small matrices; the transposed
            # copy is then cheap, and avoided for wide inputs such as MNIST's)
            single = delta.shape[-2] == 1
            if isinstance(h, BlockRows):
                h.weight_gradient(delta, W_grad)
            elif single:
                torch.mul(delta.mT, h, out=W_grad)
            else:
                W_grad.copy_(delta.mT @ h if h.shape[-1] >= delta.shape[-1] else (h.mT @ delta).mT)
            if b_grad is not None:
                b_grad.copy_(delta if single else delta.sum(-2, keepdim=True))
        return f, gradient


class ArmGradients:
    """f(x_i; θ) and g_i = ∇_θ f(x_i; θ) for every arm of a round, from one forward and one backward pass.

    θ [p] (one network) or [k, p] (one per arm, as M-CNB's Θ_{t,i}), x [k, d]. With ``gradients="closed"`` g_i
    is kept in its factored form — its block for W_l is the outer product δ_{l,i} h_{l−1,i}ᵀ — so a diagonal
    quadratic form Σ_j D_j g_ij² costs Σ_l (δ_l²) D_l (h_{l−1}²)ᵀ and never builds the [k, p] matrix (which,
    for MNIST's block encoding, has 10 × 784 100 entries). "batched": θ copied once per arm into a [k, p] leaf,
    k forward passes as one batched matmul and one backward of their sum (row i of f depends on θ_i only).
    "vmap": torch.func.vmap of torch.func.grad over the arms. All three give the same numbers (tested).
    In closed form θ may also be [M, p] with x [M, k, d]: one network per member of a group, f [M, k]."""

    @classmethod
    def from_rows(cls, G: torch.Tensor) -> ArmGradients:
        """Given gradients G [k, p] (no estimates)."""
        arms = cls.__new__(cls)
        arms.f, arms.G = None, G
        return arms

    def __init__(self, mlp: MLP, theta: torch.Tensor, x: torch.Tensor):
        self.mlp = mlp
        # θ [k, p] on x [k, d]; [M, p] on x [M, k, d] is per member (BlockRows: arm k in block k, x [..., K, 1, b])
        per_arm = theta.dim() == 2 and isinstance(x, torch.Tensor) and x.dim() == 2
        if mlp.gradients == "closed":
            xs = x[:, None, :] if per_arm else x  # one sample per arm network: [k, 1, d]
            self.f, self.hs, self.deltas = mlp.backprop(theta, xs, torch.ones_like)
            self.G = None
            if per_arm:  # back to one row per arm (else the shapes stay as they are)
                self.f = self.f.reshape(-1)
                self.hs = [h.reshape(len(x), -1) for h in self.hs]
                self.deltas = [delta.reshape(len(x), -1) for delta in self.deltas]
            return
        if mlp.gradients == "vmap":
            with torch.no_grad():
                self.f = mlp.forward(theta, x[:, None, :] if per_arm else x).reshape(-1)
            f_single = grad(lambda theta, x: mlp.forward(theta, x[None])[0])
            self.G = vmap(f_single, in_dims=(0 if per_arm else None, 0))(theta, x)
        else:  # "batched": one autograd leaf row per arm
            f, self.G = mlp.gradient(theta, x[:, None, :], torch.ones_like)
            self.f = f.reshape(-1)

    def rows(self) -> torch.Tensor:
        """G [k, p], row i = g_i ([M, k, p] for one network per member)."""
        if self.G is None:
            self.G = self._assemble(slice(None))
        return self.G

    def row(self, i: int) -> torch.Tensor:
        return self.G[i] if self.G is not None else self._assemble(slice(i, i + 1))[0]

    def weighted_squares(self, D: torch.Tensor) -> torch.Tensor:
        """Σ_j D_j g_ij² for every arm i (float64), D [p] a diagonal weight such as Z⁻¹."""
        if self.G is not None:
            return (self.G.double().square() * D).sum(-1)
        total = 0
        for delta, h, (D_W, D_b) in zip(self.deltas, self.hs, self.mlp.layers(D)):
            d2 = delta.double().square()
            if isinstance(h, BlockRows):
                total = total + h.weighted_squares(d2, D_W)
            else:
                total = total + ((d2 @ D_W) * h.double().square()).sum(-1)  # Σ_jk δ_j² D_jk h_k²
            if D_b is not None:
                total = total + (d2 * D_b).sum(-1)
        return total

    def distances(self, other: ArmGradients) -> torch.Tensor:
        """‖g_i − g′_i‖ for every arm i, g′ the closed-form gradients ``other`` on the same inputs (any θ layout: the
        arms are rows in order), layer by layer without the [k, p] rows: the first layer's gradients δ xᵀ share x, so
        their difference is (δ_i − δ′_i) xᵀ, of norm ‖δ_i − δ′_i‖ ‖x_i‖; later layers' outer products are small and
        are subtracted as they are."""
        total = 0
        for layer, parts in enumerate(zip(self.deltas, self.hs, other.deltas, other.hs)):
            delta, h, other_delta, other_h = (part.reshape(-1, part.shape[-1]) for part in parts)
            if layer == 0:
                total = total + (delta - other_delta).square().sum(-1) * h.square().sum(-1)
            else:
                outer = delta[:, :, None] * h[:, None, :] - other_delta[:, :, None] * other_h[:, None, :]
                total = total + outer.square().sum((-2, -1))
            if self.mlp.bias:
                total = total + (delta - other_delta).square().sum(-1)
        return total.sqrt()

    def picked(self, chosen: torch.Tensor) -> torch.Tensor:
        """g of one arm per member of a group (θ [M, p]): chosen [M] → [M, p]."""
        return self._assemble((torch.arange(len(chosen), device=chosen.device), chosen))

    def _assemble(self, arms) -> torch.Tensor:
        parts = []
        for delta, h in zip(self.deltas, self.hs):
            if isinstance(h, BlockRows):
                parts.append(h.outer(delta, arms))
            else:  # vec(δ_l h_{l−1}ᵀ), θ's row-major layout
                parts.append((delta[arms][..., :, None] * h[arms][..., None, :]).flatten(-2))
            if self.mlp.bias:
                parts.append(delta[arms])
        return torch.cat(parts, -1)
