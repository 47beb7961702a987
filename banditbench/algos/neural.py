"""Shared pieces of the neural bandits: the papers' MLP on flat parameter vectors, per-arm gradients,
the training schedule, batched Adam training on per-user histories, NeuralUCB covariances, devices.

Parameters are kept as flat vectors θ ∈ R^p (one row per network when many are stacked, [B, p]): per-arm
gradients, covariances and meta-steps are then plain tensor algebra, and n user-learners are one tensor
so their predictions on all arms are one batched call.

Network (NeuralUCB Eq. 2.2; Meta-Ban Eq. 9; M-CNB Eq. 4): f(x; θ) = W_L σ(W_{L−1} … σ(W_1 x)), σ = ReLU.
``init="paper"`` draws W_l (l < L) from N(0, 2/m) and W_L from N(0, 1/m) (Cao & Gu, as M-CNB §5 writes it),
biases 0; ``init="torch"`` is nn.Linear's default U(±1/sqrt(fan_in)) (the authors' code). The papers have no
biases (``bias=False``); the authors' code has them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import grad, vmap

from banditbench.algos import domains as d
from banditbench.algos.adam import Adam
from banditbench.errors import UserError

DEVICES = ("cpu", "cuda", "auto")
SCHEDULES = ("paper", "every-round", "code")
TRAIN_CHUNK = 64  # networks per Adam call: larger stacks leave the CPU caches and cost more per network
INITS = ("paper", "torch")
GRADIENTS = ("closed", "batched", "vmap")

# The network and training hyper-parameters every neural policy shares, with their domains.
NETWORK_DOMAINS = {
    "width": d.COUNT,
    "depth": d.COUNT,
    "bias": d.FLAG,
    "init": d.Choice(INITS),
    "lr": d.POSITIVE,
    "train_steps": d.STEPS,
    "batch_size": d.COUNT,
    "schedule": d.Choice(SCHEDULES),
    "gradients": d.Choice(GRADIENTS),
    "device": d.Choice(DEVICES),
    "threads": d.COUNT,
}


def resolve_device(name: str) -> torch.device:
    if name not in DEVICES:
        raise UserError(f"device must be one of {', '.join(DEVICES)}, got {name!r}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("device 'cuda' asked for, but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(name)


def torch_generator(seed: np.random.SeedSequence, device: torch.device, threads: int = 1) -> torch.Generator:
    """A torch generator seeded from the policy's own stream: initialisations and draws repeat exactly.

    ``threads`` sets torch's intra-op threads: these networks are tiny, so one thread is faster (no
    synchronisation per op) and a fixed count keeps float reductions in the same order run after run."""
    if threads < 1:
        raise UserError(f"threads must be at least 1, got {threads}")
    if device.type == "cuda":  # CPU kernels are deterministic already (and the switch costs a 3 s import)
        # cuBLAS is deterministic only with a fixed workspace, set before its first call; without it torch's
        # deterministic mode refuses every CUDA matmul
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    generator = torch.Generator(device=device)
    generator.manual_seed(
        int(np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (7,)).generate_state(1, np.uint64)[0] >> 1)
    )
    return generator


def is_training_round(t: int, schedule: str = "paper") -> bool:
    """Whether the networks train after round t (0-based, as the runner counts).

    "paper": "every 10 rounds in the first 1000 rounds and every 100 rounds afterwards" (M-CNB §6), i.e.
    after rounds 10, 20, …, 1000, 1100, 1200, … counting from 1. "every-round": after every round. "code": the
    Ban-family runners' test on the 0-based t, after t = 0, 10, …, 990, 1000, 1100, …
    """
    if schedule == "every-round":
        return True
    if schedule == "code":
        return t % 10 == 0 if t < 1000 else t % 100 == 0
    n = t + 1
    return n % 10 == 0 if n <= 1000 else n % 100 == 0


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UserError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


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
        blocks = self._blocks(W)
        if self.segments is None:
            return (self.x @ blocks.mT).flatten(-3, -2)
        network, block, size = self.segments
        if W.dim() == 2:
            blocks = blocks[None]
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


def start_blocks(policy, view, history: History) -> tuple[int | None, History]:
    """Whether a neural policy reads arms and keeps samples per block, decided on its first round: its ``blocks``
    switch on, block-encoded contexts with arm a in block a, no sample stored yet, and the networks on the CPU. On a
    GPU the dense product is one kernel where the per-block one is a kernel for every (network, block) pair, which
    on MNIST made a CUDA lockstep group 9–15 times slower than dense. → (the block width b, or None for the dense
    input; the history to keep: a fresh per-block one in block mode, else ``history``)."""
    on_cpu = history.device.type == "cpu"
    if not (policy.blocks and on_cpu and view.block and history.size == 0 and policy.dim == view.block * policy.n_arms):
        return None, history
    return view.block, History(len(history.counts), view.block, history.device, n_blocks=policy.n_arms)


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
        self.shapes: list[tuple[tuple[int, int], int]] = [
            ((sizes[i + 1], sizes[i]), sizes[i + 1] if bias else 0) for i in range(depth)
        ]
        self.p = sum(o * i + b for (o, i), b in self.shapes)

    def init(self, generator: torch.Generator, device: torch.device) -> torch.Tensor:
        parts = []
        for layer, ((out, fan_in), n_bias) in enumerate(self.shapes):
            last = layer == self.depth - 1
            if self.init_kind == "paper":
                std = np.sqrt((1.0 if last else 2.0) / self.width)
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

    def _f_single(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.forward(theta, x[None])[0]

    def per_arm_gradients(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """g(x_i; θ) = ∇_θ f(x_i; θ) for every arm: θ [p] (one network) or [k, p] (one per arm), x [k, d] → [k, p]."""
        return ArmGradients(self, theta, x).rows()


class ArmGradients:
    """f(x_i; θ) and g_i = ∇_θ f(x_i; θ) for every arm of a round, from one forward and one backward pass.

    θ [p] (one network) or [k, p] (one per arm, as M-CNB's Θ_{t,i}), x [k, d]. With ``gradients="closed"`` g_i
    is kept in its factored form — its block for W_l is the outer product δ_{l,i} h_{l−1,i}ᵀ — so a diagonal
    quadratic form Σ_j D_j g_ij² costs Σ_l (δ_l²) D_l (h_{l−1}²)ᵀ and never builds the [k, p] matrix (which,
    for MNIST's block encoding, has 10 × 784 100 entries). "batched": θ copied once per arm into a [k, p] leaf,
    k forward passes as one batched matmul and one backward of their sum (row i of f depends on θ_i only).
    "vmap": torch.func.vmap of torch.func.grad over the arms. All three give the same numbers (tested).
    In closed form θ may also be [S, p] with x [S, k, d]: one network per seed of a lockstep group, f [S, k]."""

    @classmethod
    def from_rows(cls, G: torch.Tensor) -> ArmGradients:
        """Given gradients G [k, p] (no estimates)."""
        arms = cls.__new__(cls)
        arms.f, arms.G = None, G
        return arms

    def __init__(self, mlp: MLP, theta: torch.Tensor, x: torch.Tensor):
        self.mlp = mlp
        # θ [k, p] on x [k, d]; [S, p] on x [S, k, d] is per seed (BlockRows: arm k in block k, x [..., K, 1, b])
        per_arm = theta.dim() == 2 and isinstance(x, torch.Tensor) and x.dim() == 2
        if mlp.gradients == "closed":
            xs = x[:, None, :] if per_arm else x  # one sample per arm network: [k, 1, d]
            f, hs, deltas = mlp.backprop(theta, xs, torch.ones_like)
            if not per_arm:  # one network [p] on x [k, d], or one per seed [S, p] on x [S, k, d]: shapes as they are
                self.f, self.G, self.hs, self.deltas = f, None, hs, deltas
                return
            self.f, self.G = f.reshape(-1), None
            self.hs = [h.reshape(len(x), -1) for h in hs]
            self.deltas = [delta.reshape(len(x), -1) for delta in deltas]
            return
        if mlp.gradients == "vmap":
            with torch.no_grad():
                self.f = mlp.forward(theta, x[:, None, :] if per_arm else x).reshape(-1)
            self.G = vmap(grad(mlp._f_single), in_dims=(0 if per_arm else None, 0))(theta, x)
        else:  # "batched": one autograd leaf row per arm
            f, self.G = mlp.gradient(theta, x[:, None, :], torch.ones_like)
            self.f = f.reshape(-1)

    def rows(self) -> torch.Tensor:
        """G [k, p], row i = g_i ([S, k, p] for one network per seed)."""
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
        """g of one arm per seed of a lockstep group (θ [S, p]): chosen [S] → [S, p]."""
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


class History:
    """Per-user sample histories over one shared log of (x, r): a round's sample is stored once, and every
    user it is shared with (M-CNB's cluster members) only records its row index. With ``n_blocks`` the log keeps
    block-encoded samples as their non-zero block and its index; training reads them per block (``train_jobs``),
    every other reader gets them back dense (``inputs``)."""

    def __init__(self, n_users: int, dim: int, device: torch.device, capacity: int = 1024, n_blocks: int | None = None):
        self.device = device
        self.x = torch.zeros(capacity, dim, device=device)
        self.r = torch.zeros(capacity, device=device)
        # Block-encoded samples: x holds each sample's non-zero block (dim = b) and ``block`` which of n_blocks it is
        self.n_blocks = n_blocks
        self.block = torch.zeros(capacity if n_blocks else 0, dtype=torch.long, device=device)
        self.rows = torch.zeros(n_users, 16, dtype=torch.long, device=device)  # [n, cap] row indices per user
        self.counts = torch.zeros(n_users, dtype=torch.long, device=device)
        self.size = 0

    def add(self, users: int | np.integer | torch.Tensor, x: torch.Tensor, r: float, block: int = 0) -> None:
        """Store sample (x, r) once and list it in the histories of ``users``: one user (an int: fewer and cheaper
        tensor operations) or a tensor of them."""
        if self.size == self.x.shape[0]:
            self.x = torch.cat([self.x, torch.zeros_like(self.x)])
            self.r = torch.cat([self.r, torch.zeros_like(self.r)])
            self.block = torch.cat([self.block, torch.zeros_like(self.block)])
        row = self.size
        self.x[row], self.r[row] = x, r
        if self.n_blocks:
            self.block[row] = block
        self.size += 1
        if isinstance(users, (int, np.integer)):
            count = int(self.counts[users])
            self._room_for(count)
            self.rows[users, count] = row
            self.counts[users].add_(1)  # an int index is a view: in place
        else:
            counts = self.counts[users]
            self._room_for(int(counts.max()))
            self.rows[users, counts] = row
            self.counts[users] = counts + 1

    def _room_for(self, count: int) -> None:
        """Double the row lists when a user's list is full."""
        if count == self.rows.shape[1]:
            self.rows = torch.cat([self.rows, torch.zeros_like(self.rows)], dim=1)

    def inputs(self, rows: torch.Tensor) -> torch.Tensor:
        """The samples of these rows [...] as the network reads them: x [..., d], or in block mode [..., K·b] with the
        stored block in its place and zeros elsewhere."""
        if not self.n_blocks:
            return take(self.x, rows)
        dense = self.x.new_zeros(rows.numel(), self.n_blocks, self.x.shape[1])
        flat = rows.flatten()
        dense[torch.arange(flat.numel(), device=flat.device), take(self.block, flat)] = take(self.x, flat)
        return dense.view(*rows.shape, -1)

    def _rows(self, users: torch.Tensor, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        """Rows drawn uniformly with replacement from each user's history, shape [..., U, size]."""
        pick = (torch.rand(shape, generator=generator, device=self.device) * self.counts[users][:, None]).long()
        return take(self.rows.view(-1), users[:, None] * self.rows.shape[1] + pick)  # the picked entries only

    def sample(self, users: torch.Tensor, size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``size`` samples drawn uniformly with replacement from each user's history → x [U, size, d], r [U, size].
        Every listed user must have at least one sample."""
        rows = self._rows(users, (len(users), size), generator)
        return self.inputs(rows), take(self.r, rows)

    def minibatches(self, users: torch.Tensor, size: int, generator: torch.Generator, steps: int):
        """``steps`` such samples, one per optimiser step, drawn with one call to the generator (the same numbers as
        ``steps`` calls of ``sample``) and gathered one step at a time."""
        rows = self.minibatch_rows(users, size, generator, steps)
        return ((self.inputs(step), take(self.r, step)) for step in rows)

    def minibatch_rows(self, users: torch.Tensor, size: int, generator: torch.Generator, steps: int) -> torch.Tensor:
        """The rows of ``minibatches``, [steps, U, size]."""
        return self._rows(users, (steps, len(users), size), generator)

    def all_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.n_blocks:
            return self.inputs(torch.arange(self.size, device=self.device)), self.r[: self.size]
        return self.x[: self.size], self.r[: self.size]

    def of(self, users: int | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The samples of one user's history, or of several users' (a 1-d tensor) pooled, each user's in the order
        they came: x [n, d], r [n]."""
        if isinstance(users, torch.Tensor):  # row-major: user by user, each user's first counts[u] rows
            rows = self.rows[users]
            rows = rows[torch.arange(rows.shape[1], device=self.device) < self.counts[users, None]]
        else:
            rows = self.rows[users, : self.counts[users]]
        return self.inputs(rows), take(self.r, rows)


def train_adam(
    mlp: MLP, theta: torch.Tensor, minibatches, *, lr: float, anchor: tuple[torch.Tensor, torch.Tensor] | None = None
) -> torch.Tensor:
    """Adam on the squared loss ½(f(x; θ) − r)², averaged over each minibatch, one step per minibatch (x [B, s, d]
    or ``BlockRows``, r [B, s]) of ``minibatches``, with a fresh optimiser per call (as the authors' code). θ [B, p]
    holds B independent networks trained at once: each row gets exactly its own gradient and Adam acts elementwise.
    ``anchor = (c [B], θ_0 [B, p])`` adds the penalty Σ_b c_b ‖θ_b − θ_{0,b}‖² (NeuralUCB's Eq. 4.1)."""
    theta = theta.detach().clone()
    optimiser = Adam(theta, lr=lr)
    # θ is stepped in place, so an MLP's layer views of θ and of one gradient buffer serve every step (a fresh buffer
    # is zeroed through new pages: 24 ms a step instead of 3.5 for 30 of MNIST's 784 100-parameter networks)
    buffer = torch.empty_like(theta)
    views = (mlp.layers(theta), (buffer, mlp.layers(buffer))) if isinstance(mlp, MLP) else ()
    if anchor is not None:
        c, theta0 = anchor
        scale, difference = 2 * c[:, None], torch.empty_like(theta)
    for x, r in minibatches:
        _, gradient = mlp.gradient(theta, x, lambda f: (f - r) / r.shape[-1], *views)
        if anchor is not None:
            gradient.addcmul_(torch.sub(theta, theta0, out=difference), scale)
        optimiser.step(gradient)
    return theta


@dataclass
class TrainingJob:
    """One policy's share of a training event: Adam from ``start`` [U, p] on the minibatch ``rows``
    [steps, U, size] of its ``history``, with NeuralUCB's penalty ``anchor`` (c [U], θ_0 [U, p]) or none."""

    start: torch.Tensor
    rows: torch.Tensor
    history: History
    anchor: tuple[torch.Tensor, torch.Tensor] | None = None
    models: torch.Tensor | None = None  # which of the policy's networks these are


def train_jobs(mlp: MLP, jobs: list[TrainingJob | None], *, lr: float) -> list[torch.Tensor | None]:
    """``train_adam`` on every job (None: nothing to train), their networks stacked (the members of a lockstep group
    train on the same rounds) in chunks of at most ``TRAIN_CHUNK`` networks: their histories are joined into one
    log, and each job gets back its own trained rows [U, p], those of training it alone up to the rounding of
    batched products."""
    given = [job for job in jobs if job is not None]
    if not given:
        return [None] * len(jobs)
    n_blocks = given[0].history.n_blocks
    if len(given) == 1:
        job = given[0]
        x, r, block = job.history.x, job.history.r, job.history.block
        rows, start, anchor = job.rows, job.start, job.anchor
    else:
        offsets = np.cumsum([0] + [job.history.size for job in given[:-1]]).tolist()
        x, r, block = (
            torch.cat([getattr(job.history, name)[: job.history.size] for job in given]) for name in ("x", "r", "block")
        )
        rows = torch.cat([job.rows + offset for job, offset in zip(given, offsets)], dim=1)
        start = torch.cat([job.start for job in given])
        anchor = None if given[0].anchor is None else tuple(map(torch.cat, zip(*(job.anchor for job in given))))
    trained = []
    for at in range(0, len(start), TRAIN_CHUNK):
        chunk = slice(at, at + TRAIN_CHUNK)
        if n_blocks:
            batches = ((group_by_block(step, x, block, n_blocks), take(r, step)) for step in rows[:, chunk])
        else:
            batches = ((take(x, step), take(r, step)) for step in rows[:, chunk])
        part = None if anchor is None else (anchor[0][chunk], anchor[1][chunk])
        trained.append(train_adam(mlp, start[chunk], batches, lr=lr, anchor=part))
    parts = iter((trained[0] if len(trained) == 1 else torch.cat(trained)).split([len(job.start) for job in given]))
    return [None if job is None else next(parts) for job in jobs]


def train_passes(
    mlp: MLP, theta: torch.Tensor, x: torch.Tensor, r: torch.Tensor, generator: torch.Generator, **settings
) -> torch.Tensor:
    """``train_passes_each`` of one network: θ [1, p] on x [n, d], r [n] → trained θ [1, p]."""
    return train_passes_each(mlp, theta, [(x, r)], [generator], **settings)


def train_passes_each(
    mlp: MLP,
    theta: torch.Tensor,
    samples: list[tuple[torch.Tensor, torch.Tensor]],
    generators: list[torch.Generator],
    *,
    lr: float,
    optimiser: str,
    max_steps: int = 2000,
    tolerance: float = 1e-3,
    weight_decay: float = 0.0,
    reshuffle: bool = False,
) -> torch.Tensor:
    """The Ban-family training loop of S networks θ [S, p] at once, network s on its own samples x_s [n_s, d],
    r_s [n_s] (none empty) in orders drawn from its own generator: single-sample steps on (f(x; θ) − r)² over
    passes of the samples in one shuffled order (``reshuffle``: a new order every pass), until ``max_steps`` steps
    or the end of a pass whose mean loss is ≤ ``tolerance``. ``optimiser`` "sgd" or "adam" (fresh per call);
    ``weight_decay`` adds λθ to each gradient, as torch.optim's (L2) weight decay.

    Networks that have not stopped step together, so on step k network s is at position k mod n_s of its pass;
    a stopped network leaves the stack. Each gets what training it alone gives, up to the rounding of batched
    products (exactly that for S = 1). → trained θ [S, p]."""
    device = theta.device
    sizes = [len(r) for _, r in samples]
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    x_all, r_all = torch.cat([x for x, _ in samples]), torch.cat([r for _, r in samples])[:, None]
    plan = torch.empty(max_steps, len(samples), dtype=torch.long, device=device)  # the sample of every step

    def shuffle(column: int, s: int, step: int) -> None:
        """Network s's order from ``step`` on: its next pass (``reshuffle``) or every pass to come."""
        order = torch.randperm(sizes[s], generator=generators[s], device=device) + starts[s]
        if reshuffle:
            plan[step : step + sizes[s], column] = order[: max_steps - step]
        else:
            plan[step:, column] = order[torch.arange(max_steps - step, device=device) % sizes[s]]

    def views(live: torch.Tensor) -> dict:
        """The layers of the stepping networks and of a gradient buffer, cut once per stack (closed form only)."""
        if not (isinstance(mlp, MLP) and mlp.gradients == "closed"):
            return {}
        buffer = torch.empty_like(live)
        return {"layers": mlp.layers(live), "out": (buffer, mlp.layers(buffer))}

    def next_pass_end(step: int) -> int:
        """The first step ≥ ``step`` that ends some stepping network's pass (or the last step)."""
        return min([(step // sizes[s] + 1) * sizes[s] - 1 for s in members] + [max_steps - 1])

    def loss_gradient(f: torch.Tensor) -> torch.Tensor:
        """∂(f − r)²/∂f = 2(f − r), keeping the residual f − r for the pass's loss."""
        nonlocal residual
        residual = f - r
        return 2 * residual

    members = list(range(len(samples)))  # the networks still stepping, in the order of live's rows
    for s in members:
        shuffle(s, s, 0)
    trained, live = torch.empty_like(theta), theta.detach().clone()
    adam = Adam(live, lr=lr) if optimiser == "adam" else None
    live_views = views(live)
    pass_loss = torch.zeros(len(samples), 1, dtype=torch.float64, device=device)
    residual, pass_end = None, next_pass_end(0)
    for step in range(max_steps):
        rows = plan[step]
        x, r = x_all.index_select(0, rows)[:, None, :], r_all.index_select(0, rows)
        _, gradient = mlp.gradient(live, x, loss_gradient, **live_views)
        if weight_decay:
            gradient.add_(live, alpha=weight_decay)
        if adam is None:
            live.add_(gradient, alpha=-lr)
        else:
            adam.step(gradient)
        pass_loss.add_(residual.square())  # float32 losses summed in float64
        if step < pass_end or step == max_steps - 1:
            continue
        ending = [i for i, s in enumerate(members) if (step + 1) % sizes[s] == 0]
        stopped, again = [], []
        for i, (loss,) in zip(ending, pass_loss[ending].tolist()):
            if loss / sizes[members[i]] <= tolerance:
                stopped.append(i)
            else:  # another pass
                again.append(i)
                if reshuffle:
                    shuffle(i, members[i], step + 1)
        pass_loss[again] = 0.0
        if stopped:
            trained[[members[i] for i in stopped]] = live[stopped]
            keep = [i for i in range(len(members)) if i not in stopped]
            if not keep:
                return trained
            members, plan, pass_loss = [members[i] for i in keep], plan[:, keep], pass_loss[keep]
            if adam is None:
                live = live[keep]
            else:
                adam.keep(keep)
                live = adam.theta
            live_views = views(live)
        pass_end = next_pass_end(step + 1)
    trained[members] = live
    return trained


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


class UserLearners:
    """The n user-learners θ^u of Meta-Ban and M-CNB, stacked [n, p], with their histories T^u and counts μ^u.

    ``predict`` gives every user-learner's estimate on every arm in one batched call; ``groups`` applies the
    inferred-cluster test N̂_{u_t}(x_i) = {u : |f(x_i; θ^u) − f(x_i; θ^{u_t})| ≤ (ν−1)γ/ν} (Meta-Ban Eq. 4,
    M-CNB Eq. 3) to all K arms at once; ``train`` runs Adam on all given users together."""

    def __init__(
        self,
        mlp: MLP,
        theta0: torch.Tensor,
        n_users: int,
        generator: torch.Generator,
        *,
        lr: float,
        steps: int,
        batch_size: int,
    ):
        self.mlp, self.generator = mlp, generator
        self.lr, self.steps, self.batch_size = lr, steps, batch_size
        self.device = theta0.device
        self.theta = theta0.expand(n_users, -1).clone()  # θ^u_0 = Θ_0 for every user (Alg. 1 line 2)
        self.history = History(n_users, mlp.dim, self.device)
        self.trained_counts = torch.zeros(n_users, dtype=torch.long, device=self.device)

    @property
    def mu(self) -> torch.Tensor:
        return self.history.counts

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.mlp.forward(self.theta, x)  # [n, K]

    @staticmethod
    def groups(P: torch.Tensor, user: int, threshold: float, strict: bool = False) -> torch.Tensor:
        """Inferred cluster of every arm: mask [K, n]; u_t is always a member (its difference is 0)."""
        gap = (P - P[user]).abs().T
        return gap < threshold if strict else gap <= threshold

    def add(self, members: torch.Tensor, x: torch.Tensor, r: float, block: int = 0) -> None:
        self.history.add(members, x, r, block)

    def train(self, users: torch.Tensor | None = None, start: torch.Tensor | None = None) -> None:
        """Adam on each user's own history; by default every user whose history grew since its last training.
        ``start`` (optional [p]) warm-starts them all from one vector (Meta-Ban Alg. 3 line 2, θ^u_(0) = Θ_t)."""
        train_learners([self], [start], users)

    def training_job(self, users: torch.Tensor | None = None, start: torch.Tensor | None = None) -> TrainingJob | None:
        """What ``train`` runs, drawn but not run: None when no user has data to train on."""
        counts = self.history.counts
        if users is None:
            users = torch.nonzero(counts > self.trained_counts).flatten()
        users = users[counts[users] > 0]
        if len(users) == 0:
            return None
        init = self.theta[users] if start is None else start.expand(len(users), -1)
        rows = self.history.minibatch_rows(users, self.batch_size, self.generator, self.steps)
        return TrainingJob(init, rows, self.history, models=users)

    def trained(self, job: TrainingJob, theta: torch.Tensor) -> None:
        self.theta[job.models] = theta
        self.trained_counts[job.models] = self.history.counts[job.models]

    def agreement_graph(self, threshold: float, probes: int = 64) -> np.ndarray | None:
        """Users u, v linked when their learners agree within the threshold (the inferred-cluster test) on most
        of the last ``probes`` played contexts: the "same inferred cluster" relation the runner scores (pair F1,
        ARI of its connected components) against the ground truth. Diagnostics only; decisions never use it."""
        if self.history.size == 0:
            return None
        x = self.history.inputs(torch.arange(max(0, self.history.size - probes), self.history.size, device=self.device))
        with torch.no_grad():
            P = self.mlp.forward(self.theta, x).T  # [probes, n]
        agree = ((P[:, :, None] - P[:, None, :]).abs() <= threshold).float().mean(0)
        return (agree > 0.5).cpu().numpy()


def train_learners(learners: list[UserLearners], starts: list, users: torch.Tensor | None = None) -> None:
    """``UserLearners.train`` of several policies' learners (a lockstep group's members, same network and training
    settings) in one Adam call; ``starts`` gives each its warm start (or None)."""
    jobs = [learner.training_job(users, start) for learner, start in zip(learners, starts)]
    for learner, job, theta in zip(learners, jobs, train_jobs(learners[0].mlp, jobs, lr=learners[0].lr)):
        if job is not None:
            learner.trained(job, theta)


def train_learners_by_passes(learners: list[UserLearners], users: list[int], starts: list, *, max_steps: int) -> None:
    """The authors' loop for one user-learner of each policy (a lockstep group's members stacked in one loop,
    ``train_passes_each``): learner ``users[i]`` of ``learners[i]``, from ``starts[i]`` (None: its own θ^u), by
    single-sample Adam steps at the learners' lr over passes of its own history (not empty)."""
    samples = [learner.history.of(user) for learner, user in zip(learners, users)]
    start = [learner.theta[user] if at is None else at for learner, user, at in zip(learners, users, starts)]
    trained = train_passes_each(
        learners[0].mlp,
        torch.stack(start),
        samples,
        [learner.generator for learner in learners],
        lr=learners[0].lr,
        optimiser="adam",
        max_steps=max_steps,
    )
    for learner, user, theta, (_, r) in zip(learners, users, trained, samples):
        learner.theta[user] = theta
        learner.trained_counts[user] = len(r)


def connected_labels(graph: np.ndarray | None) -> np.ndarray | None:
    if graph is None:
        return None
    from banditbench.algos.graphs import dense_components  # scipy only where a policy reports clusters

    return dense_components(graph)[1]
