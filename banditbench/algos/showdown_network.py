"""The network every neural learner of the Deep Bayesian Bandits Showdown (Riquelme, Tucker & Snoek, ICLR 2018, §3)
trains, and its training, shared by BootRMS (banditbench/algos/bootstrap.py), Dropout (dropout_ts.py) and ParamNoise
(paramnoise.py); Bayes by Backprop (bbb.py) shares its samples, schedule and forward pass and trains otherwise.

Network: one hidden layer of 50 ReLU units with biases, weights drawn from U(±0.3) (``init_scale``), biases 0.
The Showdown's network reads the context and has one output per action; banditbench's arms are context vectors (the
classification and rewards-table protocols place x in arm a's block of a K·d vector), so here one network scores
each arm's vector: arm a reads x through the first layer's columns of block a, where the Showdown has a head per
action (the arms share the hidden biases and the output layer here, the hidden layer there).

Training (the Showdown's code, example settings): every ``training_freq`` = 50 rounds, ``train_steps`` = 100 steps of
RMSProp (banditbench/algos/rmsprop.py, its state kept from one training to the next) on minibatches of
``batch_size`` = 512 samples drawn with replacement from all of a network's samples, on the loss
Σ (f(x; θ) − r)² / 512 of the chosen arms, gradients clipped to global norm 5 (``max_grad_norm``), learning rate
α_s = 0.1 / (1 + 0.5 s) (inverse-time decay of its step s, ``lr`` and ``lr_decay``). ``lr_reset`` (default) starts
s at 0 at every training, as the code's settings ask (``reset_lr=True``); ``lr_reset=False`` is the code as it runs:
the reset builds a new schedule the optimiser never reads, so s counts every step since the first training and the
rate is below 0.002 after it. The first ``initial_pulls`` · K rounds play the arms in turn (round robin), as the code.

Every member of a group keeps its networks (N of them, stacked on the axis after the member axis), its samples and
its generator; one batched forward scores every member's arms and one stacked loop trains every network. A
block-encoded sample is kept as its arm's block and the arm (K times smaller), and put back in place when read.
"""

from __future__ import annotations

import torch

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.blocks import BuiltAtFirstRound
from banditbench.algos.neural import DEVICES, MLP, resolve_device, torch_generator
from banditbench.algos.rmsprop import rmsprop_step

PROBABILITY_ONE = d.real(0, 1, low_open=True)  # inclusion and keep probabilities: (0, 1], 1 keeps everything
CAPACITY = 1024  # samples kept room for at first, doubled when full


def forward(mlp: MLP, theta: torch.Tensor, x: torch.Tensor, masks: list[torch.Tensor] | None = None) -> torch.Tensor:
    """f(x; θ) with every hidden layer's output multiplied by its dropout mask (``masks``, one per hidden layer, of
    shape [..., k or 1, width], already scaled by 1/keep): θ [..., p], x [..., k, d] → [..., k]."""
    layers = mlp.layers(theta)
    h = x
    for layer, (W, b) in enumerate(layers[:-1]):
        h = torch.relu(h @ W.mT + b)
        if masks is not None:
            h = h * masks[layer]
    return MLP.output(layers, [h])


def gradient(mlp: MLP, theta: torch.Tensor, x: torch.Tensor, masks, out_grad) -> tuple[torch.Tensor, torch.Tensor]:
    """(f, ∇_θ Σ_k c_k f(x_k; θ)), c = ``out_grad(f)``, of ``forward`` by backpropagation in closed form (no
    autograd graph): θ [N, p], x [N, k, d] → f [N, k], gradient [N, p]. Each hidden unit's gate 1[z > 0]·mask
    carries δ back through its ReLU and dropout."""
    layers = mlp.layers(theta)
    hs, gates = [x], []
    for layer, (W, b) in enumerate(layers[:-1]):
        z = hs[-1] @ W.mT + b
        gates.append((z > 0).float() if masks is None else (z > 0) * masks[layer])
        hs.append(z * gates[-1])
    f = MLP.output(layers, hs)
    delta = out_grad(f)[..., None]  # δ of the output layer: c [N, k, 1]
    result = torch.empty_like(theta)
    for layer, (W_grad, b_grad) in reversed(list(enumerate(mlp.layers(result)))):
        W_grad.copy_(delta.mT @ hs[layer])
        b_grad.copy_(delta.sum(-2, keepdim=True))
        if layer:
            delta = (delta @ layers[layer][0]) * gates[layer - 1]
    return f, result


def uniform_init(mlp: MLP, generator: torch.Generator, scale: float, device: torch.device) -> torch.Tensor:
    """θ [p] with every weight from U(−scale, scale) and every bias 0 (the Showdown's initialiser)."""
    theta = torch.zeros(mlp.p, device=device)
    for W, _ in mlp.layers(theta):
        W.copy_((torch.rand(W.shape, generator=generator, device=device) * 2 - 1) * scale)
    return theta


class ShowdownNetworks(BuiltAtFirstRound, MemberPolicy):
    """Networks per member, each trained on the samples its inclusion mask keeps, with dropout on its hidden layers
    where the subclass draws masks; each round one network, uniform, plays its greedy arm. A subclass calls
    ``_start`` with its number of networks, per-member inclusion probability and keep probability."""

    #: whether each sample's inclusion in each network's data is drawn (BootRMS), and whether dropout masks are
    #: (Dropout): class facts, so a member draws the same numbers in any group, whatever its values
    draws_inclusion = False
    draws_masks = False
    domains = {
        "width": d.COUNT,
        "depth": d.COUNT,
        "init_scale": d.POSITIVE,
        "lr": d.POSITIVE,
        "lr_decay": d.NON_NEGATIVE,
        "lr_reset": d.FLAG,
        "max_grad_norm": d.POSITIVE,
        "train_steps": d.STEPS,
        "batch_size": d.COUNT,
        "training_freq": d.COUNT,
        "initial_pulls": d.STEPS,
        "device": d.Choice(DEVICES),
        "threads": d.COUNT,
    }
    authors_code = {
        "lr_reset": (
            False,
            "their code as it runs: the decay's step count goes on across trainings (its reset never reaches the "
            "optimiser)",
        )
    }
    #: the network's shapes, rebuilt by the constructor
    transient = ("mlp",)

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        width: int = 50,
        depth: int = 2,
        init_scale: float = 0.3,
        lr: float = 0.1,
        lr_decay: float = 0.5,
        lr_reset: bool = True,
        max_grad_norm: float = 5.0,
        train_steps: int = 100,
        batch_size: int = 512,
        training_freq: int = 50,
        initial_pulls: int = 2,
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.device = resolve_device(device)
        self.generators = [torch_generator(seed, self.device, threads) for seed in seeds]
        self.init_scale, self.lr, self.lr_decay, self.lr_reset = init_scale, lr, lr_decay, lr_reset
        self.max_grad_norm, self.train_steps, self.batch_size = max_grad_norm, train_steps, batch_size
        self.training_freq, self.initial_pulls = training_freq, initial_pulls
        self.mlp = MLP(dim, width, depth, bias=True)  # its shapes and layer views of θ
        self.steps = 0  # the optimiser's steps since the first training (the decay's s without ``lr_reset``)
        self.rounds = 0

    def _start(self, networks: int, inclusion, keep_prob) -> None:
        """``networks`` per member, initialised from the member's generator; ``inclusion`` and ``keep_prob``: one
        value, or one per member, each in (0, 1]."""
        self.inclusion = torch.tensor(self.per_member(inclusion), dtype=torch.float32, device=self.device)
        self.keep_prob = torch.tensor(self.per_member(keep_prob), dtype=torch.float32, device=self.device)
        inits = [
            [uniform_init(self.mlp, g, self.init_scale, self.device) for _ in range(networks)] for g in self.generators
        ]
        self.theta = torch.stack([torch.stack(each) for each in inits])  # [M, N, p]
        self.mean_square = torch.ones_like(self.theta)  # RMSProp's s, carried from one training to the next
        self._start_samples(networks)

    def _start_samples(self, networks: int) -> None:
        """Every member's played arms and rewards, and which of its ``networks`` keeps each sample (grown as needed);
        the played arms' vectors are kept from the first round on (``_build``), when the encoding is known."""
        members = len(self.members)
        self.x = None
        self.arm = torch.zeros(members, CAPACITY, dtype=torch.long, device=self.device)
        self.r = torch.zeros(members, CAPACITY, device=self.device)
        self.included = torch.zeros(members, CAPACITY, networks, dtype=torch.bool, device=self.device)

    def _build(self, block: int | None) -> None:
        """The played arms' vectors [M, n, d], or under a block encoding their arm's block [M, n, w]."""
        members, capacity = self.r.shape
        self.x = torch.zeros(members, capacity, block or self.dim, device=self.device)

    def inputs(self, member: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """The stored samples ``rows`` of ``member`` (the two broadcast together) as the network reads them [..., d]:
        a block-encoded sample's block back in its arm's place, zeros elsewhere."""
        x = self.x[member, rows]
        return x if self.block is None else self.whole(x, self.arm[member, rows])

    def whole(self, blocks: torch.Tensor, arm: torch.Tensor) -> torch.Tensor:
        """Block-encoded vectors [..., d] from their blocks [..., w], each in its ``arm``'s place [...], zeros
        elsewhere."""
        dense = blocks.new_zeros(*blocks.shape[:-1], self.dim // self.block, self.block)
        every = dense.view(-1, *dense.shape[-2:])
        every[torch.arange(len(every), device=self.device), arm.flatten()] = blocks.reshape(-1, self.block)
        return dense.flatten(-2)

    @property
    def n_networks(self) -> int:
        return self.included.shape[-1]

    def dropout_masks(self, shape: tuple[int, ...]) -> list[torch.Tensor] | None:
        """Every member's mask [M, *shape, width] of each hidden layer, 1/keep with probability keep and else 0,
        drawn from its own generator; None without dropout."""
        if not self.draws_masks:
            return None
        keep = self.keep_prob.view(-1, *[1] * (len(shape) + 1))
        masks = []
        for _ in range(self.mlp.depth - 1):
            draws = [torch.rand(*shape, self.mlp.width, generator=g, device=self.device) for g in self.generators]
            masks.append((torch.stack(draws) < keep).float() / keep)
        return masks

    def draw_networks(self) -> torch.Tensor:
        """The network each member plays this round [M], uniform over its networks, from its own generator."""
        if self.n_networks == 1:
            return torch.zeros(len(self.members), dtype=torch.long, device=self.device)
        return torch.stack(
            [torch.randint(self.n_networks, (), generator=g, device=self.device) for g in self.generators]
        )

    def scores(self, views) -> torch.Tensor:
        """Every member's arms [M, K] scored by one of its networks (``draw_networks``) under fresh dropout masks:
        a draw from the policy's posterior, so each call draws anew (``select`` plays the largest of one draw)."""
        arms, _ = self.read_arms(views)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        theta = self.theta[torch.arange(len(self.members), device=self.device), self.draw_networks()]
        return forward(self.mlp, theta, x, self.dropout_masks((1,)))

    def select(self, views, budgets):
        self._prepare(views)
        if self.rounds < self.initial_pulls * self.n_arms:  # the Showdown's round-robin start: nothing drawn
            arms, _ = self.read_arms(views)
            return [self.rounds % arms.shape[1]] * len(self.members)
        return torch.argmax(self.scores(views), dim=-1).tolist()  # the first of tied arms, as numpy's argmax

    def update(self, views, chosen, rewards):
        self._prepare(views)
        _, x, r = self.played(views, chosen, rewards)
        x = torch.tensor(x, dtype=torch.float32, device=self.device)
        self._store(x, torch.tensor(r, device=self.device), torch.as_tensor(chosen, device=self.device))
        self.rounds += 1
        if self.rounds % self.training_freq == 0:
            self._train()

    def _store(self, x: torch.Tensor, r: torch.Tensor, arm: torch.Tensor) -> None:
        """Append every member's sample [M, d], [M] of its played ``arm`` [M], kept by each network with probability
        ``inclusion`` (from the member's generator; the first sample by every network, as the Showdown's code)."""
        n = self.rounds
        if n == self.r.shape[1]:
            self.x, self.r, self.included, self.arm = (
                torch.cat([t, torch.zeros_like(t)], 1) for t in (self.x, self.r, self.included, self.arm)
            )
        if self.block is not None:  # the arm's block alone
            x = x.view(len(x), -1, self.block)[torch.arange(len(x), device=self.device), arm]
        self.x[:, n], self.r[:, n], self.arm[:, n] = x, r, arm
        if n == 0 or not self.draws_inclusion:
            self.included[:, n] = True
        else:
            draws = torch.stack([torch.rand(self.n_networks, generator=g, device=self.device) for g in self.generators])
            self.included[:, n] = draws < self.inclusion[:, None]

    def minibatch_rows(self) -> torch.Tensor:
        """The rows of every step's minibatch of every network [steps, M, N, batch]: drawn uniformly with
        replacement from the samples the network keeps (row 0 for a network that keeps none)."""
        n, rows = self.rounds, []
        for included, g in zip(self.included[:, : self.rounds], self.generators):
            kept_first = torch.argsort((~included.T).to(torch.int8), dim=-1, stable=True)  # [N, n]
            counts = included.sum(0)
            u = torch.rand(self.train_steps, self.n_networks, self.batch_size, generator=g, device=self.device)
            picks = (u * counts[None, :, None]).long().clamp_(max=n - 1)
            rows.append(kept_first.expand(self.train_steps, -1, -1).gather(-1, picks))
        return torch.stack(rows, 1)

    def _train(self) -> None:
        """``train_steps`` RMSProp steps of every network that keeps a sample, all stacked: each on its own
        minibatches, with fresh dropout masks per sample where the policy has dropout."""
        rows = self.minibatch_rows()
        trains = self.included[:, : self.rounds].any(1).flatten()  # [M·N]
        member = torch.arange(len(self.members), device=self.device).repeat_interleave(self.n_networks)[trains]
        theta = self.theta.flatten(0, 1)[trains]
        mean_square = self.mean_square.flatten(0, 1)[trains]
        s = 0 if self.lr_reset else self.steps
        for step in range(self.train_steps):
            at = rows[step].flatten(0, 1)[trains]  # [T, batch]
            x, r = self.inputs(member[:, None], at), self.r[member[:, None], at]
            masks = self.dropout_masks((self.n_networks, self.batch_size))
            masks = None if masks is None else [mask.flatten(0, 1)[trains] for mask in masks]
            _, g = gradient(self.mlp, theta, x, masks, lambda f: 2 * (f - r) / r.shape[-1])  # of Σ(f − r)² / batch
            g.mul_((self.max_grad_norm / g.norm(dim=-1, keepdim=True)).clamp_(max=1.0))  # global norm, per network
            rmsprop_step(theta, g, mean_square, self.lr / (1 + self.lr_decay * (s + step)))
        self.theta.view(-1, self.mlp.p)[trains] = theta
        self.mean_square.view(-1, self.mlp.p)[trains] = mean_square
        self.steps += self.train_steps
