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

import numpy as np
import torch
from torch.func import grad, vmap

from banditbench.errors import UserError

DEVICES = ("cpu", "cuda", "auto")
SCHEDULES = ("paper", "every-round")
INITS = ("paper", "torch")
GRADIENTS = ("batched", "vmap")


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
        torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    generator = torch.Generator(device=device)
    generator.manual_seed(int(np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (7,))
                              .generate_state(1, np.uint64)[0] >> 1))
    return generator


def is_training_round(t: int, schedule: str = "paper") -> bool:
    """Whether the networks train after round t (0-based, as the runner counts).

    "paper": "every 10 rounds in the first 1000 rounds and every 100 rounds afterwards" (M-CNB §6), i.e.
    after rounds 10, 20, …, 1000, 1100, 1200, … counting from 1. "every-round": after every round.
    """
    if schedule == "every-round":
        return True
    n = t + 1
    return n % 10 == 0 if n <= 1000 else n % 100 == 0


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UserError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


class MLP:
    """f(x; θ) with depth L (number of weight matrices), width m, optional biases, on flat θ."""

    def __init__(self, dim: int, width: int = 100, depth: int = 2, bias: bool = False, init: str = "paper",
                 gradients: str = "batched"):
        if depth < 1 or width < 1:
            raise UserError(f"network depth and width must be at least 1, got depth={depth}, width={width}")
        check_choice("init", init, INITS)
        self.gradients = check_choice("gradients", gradients, GRADIENTS)
        self.dim, self.width, self.depth, self.bias, self.init_kind = dim, width, depth, bias, init
        sizes = [dim] + [width] * (depth - 1) + [1]
        self.shapes: list[tuple[tuple[int, int], int]] = [((sizes[i + 1], sizes[i]), sizes[i + 1] if bias else 0)
                                                          for i in range(depth)]
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
            W = theta[..., at:at + o * i].reshape(*lead, o, i)
            at += o * i
            b = theta[..., at:at + n_bias].reshape(*lead, 1, o) if n_bias else None
            at += n_bias
            out.append((W, b))
        return out

    def embed(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Last hidden layer σ(W_{L−1} … σ(W_1 x)): θ [..., p], x [..., k, d] → [..., k, m]."""
        h = x
        for W, b in self.layers(theta)[:-1]:
            h = h @ W.transpose(-1, -2)
            h = torch.relu(h if b is None else h + b)
        return h

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """f(x; θ): θ [..., p], x [..., k, d] → [..., k] (leading dimensions broadcast)."""
        W, b = self.layers(theta)[-1]
        out = self.embed(theta, x) @ W.transpose(-1, -2)
        return (out if b is None else out + b)[..., 0]

    def _f_single(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.forward(theta, x[None])[0]

    def per_arm_gradients(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """g(x_i; θ) = ∇_θ f(x_i; θ) for every arm: θ [p] (one network) or [k, p] (one per arm), x [k, d] → [k, p].

        "vmap": torch.func.vmap of torch.func.grad over the arms. "batched" (default): θ copied once per arm
        into a [k, p] leaf, the k forward passes run as one batched matmul and one backward of their sum gives
        every row its own arm's gradient (row i of f depends on θ_i only) — the same numbers (tested), about
        2.5× faster on CPU for these small networks, where vmap's per-call dispatch dominates."""
        if self.gradients == "vmap":
            return vmap(grad(self._f_single), in_dims=(0 if theta.dim() == 2 else None, 0))(theta, x)
        thetas = theta.detach().expand(x.shape[0], -1).clone().requires_grad_(True)
        with torch.enable_grad():
            f = self.forward(thetas, x[:, None, :]).sum()
            return torch.autograd.grad(f, thetas)[0]


class History:
    """Per-user sample histories over one shared log of (x, r): a round's sample is stored once, and every
    user it is shared with (M-CNB's cluster members) only records its row index."""

    def __init__(self, n_users: int, dim: int, device: torch.device, capacity: int = 1024):
        self.device = device
        self.x = torch.zeros(capacity, dim, device=device)
        self.r = torch.zeros(capacity, device=device)
        self.rows = torch.zeros(n_users, 16, dtype=torch.long, device=device)  # [n, cap] row indices per user
        self.counts = torch.zeros(n_users, dtype=torch.long, device=device)
        self.size = 0

    def add(self, users: torch.Tensor, x: torch.Tensor, r: float) -> None:
        if self.size == self.x.shape[0]:
            self.x = torch.cat([self.x, torch.zeros_like(self.x)])
            self.r = torch.cat([self.r, torch.zeros_like(self.r)])
        row = self.size
        self.x[row], self.r[row] = x, r
        self.size += 1
        if int(self.counts[users].max()) == self.rows.shape[1]:
            self.rows = torch.cat([self.rows, torch.zeros_like(self.rows)], dim=1)
        self.rows[users, self.counts[users]] = row
        self.counts[users] += 1

    def sample(self, users: torch.Tensor, size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``size`` samples drawn uniformly with replacement from each user's history → x [U, size, d], r [U, size].
        Every listed user must have at least one sample."""
        counts = self.counts[users]
        pick = (torch.rand(len(users), size, generator=generator, device=self.device) * counts[:, None]).long()
        rows = torch.gather(self.rows[users], 1, pick)
        return self.x[rows], self.r[rows]

    def all_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[:self.size], self.r[:self.size]


def train_adam(mlp: MLP, theta: torch.Tensor, draw, *, steps: int, lr: float,
               penalty=None) -> torch.Tensor:
    """``steps`` Adam steps on the squared loss ½(f(x; θ) − r)², averaged over each minibatch, with a fresh
    optimiser per call (as the authors' code). θ [B, p] holds B independent networks trained at once:
    their losses are summed, so each row gets exactly its own gradient and Adam acts elementwise.
    ``draw()`` returns a minibatch x [B, s, d], r [B, s]; ``penalty(θ)`` an optional regulariser."""
    theta = theta.detach().clone().requires_grad_(True)
    optimiser = torch.optim.Adam([theta], lr=lr, fused=True)
    for _ in range(steps):
        x, r = draw()
        loss = 0.5 * (mlp.forward(theta, x) - r).square().mean(-1).sum()
        if penalty is not None:
            loss = loss + penalty(theta)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    return theta.detach()


class DiagonalCovariance:
    """NeuralUCB's Z = λI + Σ g gᵀ/m kept as its diagonal (the papers' and authors' practical approximation)."""

    def __init__(self, n_models: int, p: int, lam: float, m: int, device: torch.device):
        self.Z = torch.full((n_models, p), float(lam), dtype=torch.float64, device=device)
        self.m = m

    def widths(self, model: int, G: torch.Tensor) -> torch.Tensor:
        """sqrt(gᵀ Z⁻¹ g / m) for every row g of G [k, p]."""
        G = G.double()
        return (G.square() / self.Z[model]).sum(-1).div(self.m).sqrt()

    def update(self, model: int, g: torch.Tensor) -> None:
        self.Z[model] += g.double().square() / self.m


class FullCovariance:
    """NeuralUCB's full Z (Zhou et al. Alg. 1 line 10) kept as Z⁻¹ with Sherman–Morrison rank-one updates
    (the same formula as ``ridge.RidgeStats``, here in gradient space): O(p²) per round instead of O(p³)."""

    def __init__(self, n_models: int, p: int, lam: float, m: int, device: torch.device, max_gb: float):
        need = n_models * p * p * 8 / 2**30
        if need > max_gb:
            raise UserError(f"full covariance needs {n_models} × {p}² float64 = {need:.1f} GB, above "
                            f"max_covariance_gb={max_gb}; use covariance=diagonal or a smaller network")
        self.Z_inv = torch.eye(p, dtype=torch.float64, device=device).div(lam).repeat(n_models, 1, 1)
        self.m = m

    def widths(self, model: int, G: torch.Tensor) -> torch.Tensor:
        G = G.double()
        return ((G @ self.Z_inv[model]) * G).sum(-1).clamp_min(0).div(self.m).sqrt()

    def update(self, model: int, g: torch.Tensor) -> None:
        v = g.double() / np.sqrt(self.m)
        Z_inv = self.Z_inv[model]
        Zv = Z_inv @ v
        Z_inv -= torch.outer(Zv, Zv) / (1.0 + v @ Zv)


class UserLearners:
    """The n user-learners θ^u of Meta-Ban and M-CNB, stacked [n, p], with their histories T^u and counts μ^u.

    ``predict`` gives every user-learner's estimate on every arm in one batched call; ``groups`` applies the
    inferred-cluster test N̂_{u_t}(x_i) = {u : |f(x_i; θ^u) − f(x_i; θ^{u_t})| ≤ (ν−1)γ/ν} (Meta-Ban Eq. 4,
    M-CNB Eq. 3) to all K arms at once; ``train`` runs Adam on all given users together."""

    def __init__(self, mlp: MLP, theta0: torch.Tensor, n_users: int, generator: torch.Generator, *, lr: float,
                 steps: int, batch_size: int):
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

    def add(self, members: torch.Tensor, x: torch.Tensor, r: float) -> None:
        self.history.add(members, x, r)

    def train(self, users: torch.Tensor | None = None, start: torch.Tensor | None = None) -> None:
        """Adam on each user's own history; by default every user whose history grew since its last training.
        ``start`` (optional [p]) warm-starts them all from one vector (Meta-Ban Alg. 3 line 2, θ^u_(0) = Θ_t)."""
        counts = self.history.counts
        if users is None:
            users = torch.nonzero(counts > self.trained_counts).flatten()
        users = users[counts[users] > 0]
        if len(users) == 0:
            return
        init = self.theta[users] if start is None else start.expand(len(users), -1)
        draw = lambda: self.history.sample(users, self.batch_size, self.generator)
        self.theta[users] = train_adam(self.mlp, init, draw, steps=self.steps, lr=self.lr)
        self.trained_counts[users] = counts[users]

    def agreement_graph(self, threshold: float, probes: int = 64) -> np.ndarray | None:
        """Users u, v linked when their learners agree within the threshold (the inferred-cluster test) on most
        of the last ``probes`` played contexts: the "same inferred cluster" relation the runner scores (pair F1,
        ARI of its connected components) against the ground truth. Diagnostics only; decisions never use it."""
        if self.history.size == 0:
            return None
        x = self.history.x[max(0, self.history.size - probes):self.history.size]
        with torch.no_grad():
            P = self.mlp.forward(self.theta, x).T  # [probes, n]
        agree = ((P[:, :, None] - P[:, None, :]).abs() <= threshold).float().mean(0)
        return (agree > 0.5).cpu().numpy()


def connected_labels(graph: np.ndarray | None) -> np.ndarray | None:
    if graph is None:
        return None
    from scipy.sparse.csgraph import connected_components
    return connected_components(graph, directed=False)[1]
