"""EE-Net, Neural Exploitation and Exploration (Ban, Yan, Banerjee & He, ICLR 2022).

Two networks shared by all users (the paper's single-bandit setting):
  exploitation  f1(x; θ1) learns r:                         min Σ ½(f1(x_τ; θ1) − r_τ)²
  exploration   f2(φ(x); θ2), φ(x) = ∇_{θ1} f1(x; θ1_{τ−1}), learns the potential gain r − f1:
                                                            min Σ ½(f2(φ(x_τ); θ2) − (r_τ − f1(x_τ; θ1_{τ−1})))²
  decision      x_t = argmax_i f3(f1(x_i), f2(φ(x_i))), with ``decision="linear"`` (default) f3 = f1 + f2, or
                ``decision="neural"``: f3(·; θ3) an MLP on the pair [f1, f2] (width ``decision_width`` = 20, as the
                authors' f3) trained like f1 and f2 (Adam, ``decision_lr``) on H_t = {([f1(x_τ), f2(φ(x_τ))], r_τ)}
                with the pair as it was scored when x_τ was chosen (θ1_{τ−1}, θ2_{τ−1}); the first
                ``decision_warmup`` = 500 rounds decide by f1 + f2 while H_t fills (the hybrid maker of the paper-era
                code).
                Linear is the default: the paper's regret bound is proved for it, the authors' maintained code runs
                it (``neural_decision_maker=False``), and the neural maker adds choices (width, warm-up, rate) the
                paper does not pin down.
φ is computed for all K arms in one batched call; ``pool`` > 1 block-averages it (the code's mean pooling,
for large inputs such as MNIST's block encoding). Both networks train on M-CNB §6's schedule with Adam
(``train_steps`` minibatch steps, fresh optimiser; the paper leaves steps and rates open).

The authors' code at HEAD (banyikun/EE-Net-ICLR-2022 @08d6ed7) as a switch, ``code_decision=True``:
the f2 label is shifted, r − f1 + 1; arm = argmax f1 + w·(f2 − 1) with w = 0.1 up to round t = 1000 (0-based) and
0.01 after; while t < 1000 and r = 0, every other arm's φ is added with label 1.2.
``code_training=True``: their training loop instead of minibatch Adam — at each training round, single-sample
steps over passes of the whole history in one shuffled order, at most 2 000 steps, stopping after a pass whose mean
squared error is ≤ 1e-3 (f1) or 2e-3 (f2); f1 by plain SGD at ``lr``, f2 by Adam at ``explore_lr`` with L2 weight
decay 1e-4.
``explore_conv=True``: the code's f2 network — a one-channel Conv1d (kernel 100, stride 50, with bias) over φ, whose
outputs feed the two-layer MLP of width ``explore_width`` (on MNIST's 15 685 pooled inputs: 312 convolution
outputs, about 31 k weights in all instead of 1.57 M).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from banditbench.algos import domains as d
from banditbench.algos import neural
from banditbench.algos.base import MemberPolicy

DECISIONS = ("linear", "neural")


class ConvMLP:
    """f(x; θ) = MLP(conv(x)): a one-channel 1-d convolution (``kernel`` weights and a bias, ``stride``) over x,
    then an MLP on its outputs; θ = [conv weights, conv bias, MLP's θ]. Gradients by autograd."""

    def __init__(self, dim: int, width: int, bias: bool, init: str, kernel: int = 100, stride: int = 50):
        self.kernel, self.stride = kernel, stride
        self.outputs = (dim - kernel) // stride + 1
        self.mlp = neural.MLP(self.outputs, width, 2, bias, init, "batched")
        self.p = kernel + 1 + self.mlp.p

    def init(self, generator: torch.Generator, device: torch.device) -> torch.Tensor:
        bound = 1.0 / self.kernel**0.5  # torch's Conv1d default: U(±1/√fan_in), fan_in = kernel
        conv = (torch.rand(self.kernel + 1, generator=generator, device=device) * 2 - 1) * bound
        return torch.cat([conv, self.mlp.init(generator, device)])

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """θ [..., p], x [..., k, d] → [..., k]."""
        w, b = theta[..., None, None, : self.kernel], theta[..., None, self.kernel, None]
        windows = x.unfold(-1, self.kernel, self.stride)[..., : self.outputs, :]  # [..., k, outputs, kernel]
        return self.mlp.forward(theta[..., self.kernel + 1 :], (windows * w).sum(-1) + b)

    def gradient(self, theta: torch.Tensor, x: torch.Tensor, out_grad) -> tuple[torch.Tensor, torch.Tensor]:
        """(f, ∇_θ Σ_k c_k f(x_k; θ)), c = ``out_grad(f)``, one gradient per leading index (as ``MLP.gradient``)."""
        return neural.autograd_gradient(self.forward, theta, x, out_grad)


class EENet(MemberPolicy):
    """Over the members of a group (seeds): every member's θ1, θ2 (and θ3) stacked [M, p], so one pass gives every
    member's f1, φ, f2 and decision; each member keeps its own histories and generator."""

    domains = {
        **neural.NETWORK_DOMAINS,
        "explore_width": d.COUNT,
        "pool": d.COUNT,
        "explore_lr": d.POSITIVE,
        "code_decision": d.FLAG,
        "code_training": d.FLAG,
        "explore_conv": d.FLAG,
        "decision": d.Choice(DECISIONS),
        "decision_width": d.COUNT,
        "decision_warmup": d.STEPS,
        "decision_lr": d.POSITIVE,
    }
    authors_code = {
        **neural.NETWORK_CODE,
        "code_decision": (
            True,
            "their decision rule at HEAD: the shifted f2 label r − f1 + 1, arm = argmax f1 + w·(f2 − 1), extra "
            "labels while t < 1000",
        ),
        "code_training": (
            True,
            "their training loop: single-sample steps over passes of the history, at most 2 000 steps, until the "
            "error is small",
        ),
        "explore_conv": (True, "their f2 network: a one-channel Conv1d over the gradient features before the MLP"),
    }
    #: the networks' shapes, rebuilt by the constructor; this round's picks, from ``select`` to ``update``
    transient = ("f1", "f2", "f3", "_picked")

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        width: int = 100,
        depth: int = 2,
        bias: bool = False,
        init: str = "paper",
        explore_width: int = 100,
        pool: int = 1,
        lr: float = 1e-2,
        explore_lr: float = 1e-3,
        train_steps: int = 50,
        batch_size: int = 32,
        schedule: str = "paper",
        code_decision: bool = False,
        code_training: bool = False,
        explore_conv: bool = False,
        decision: str = "linear",
        decision_width: int = 20,
        decision_warmup: int = 500,
        decision_lr: float = 1e-3,
        gradients: str = "closed",
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.schedule = schedule
        self.pool, self.lr, self.explore_lr, self.code_decision = max(1, pool), lr, explore_lr, code_decision
        self.train_steps, self.batch_size, self.code_training = train_steps, batch_size, code_training
        self.device = neural.resolve_device(device)
        self.generators = [neural.torch_generator(seed, self.device, threads) for seed in seeds]
        self.f1 = neural.MLP(dim, width, depth, bias, init, gradients)
        self.phi_dim = -(-self.f1.p // self.pool)
        if explore_conv:
            self.f2 = ConvMLP(self.phi_dim, explore_width, bias, init)
        else:
            self.f2 = neural.MLP(self.phi_dim, explore_width, 2, bias, init, gradients)
        self.decision = decision
        self.decision_warmup, self.decision_lr = decision_warmup, decision_lr
        self.f3 = neural.MLP(2, decision_width, 2, bias, init, gradients)
        draws = [(self.f1.init(g, self.device), self.f2.init(g, self.device)) for g in self.generators]
        self.theta1, self.theta2 = (torch.stack(thetas) for thetas in zip(*draws))
        self.exploit_data = [neural.History(1, dim, self.device) for _ in seeds]
        self.explore_data = [neural.History(1, self.phi_dim, self.device) for _ in seeds]
        if self.decision == "neural":  # (drawn only then, so the linear maker's runs keep their random stream)
            self.theta3 = torch.stack([self.f3.init(g, self.device) for g in self.generators])
            self.decision_data = [neural.History(1, 2, self.device) for _ in seeds]  # H_t
        self._decisions = np.zeros(len(seeds), dtype=np.int64)  # since the last diagnostics sample
        self._overturns = np.zeros(len(seeds), dtype=np.int64)

    def _phi(self, G: torch.Tensor) -> torch.Tensor:
        if self.pool > 1:  # block means of ``pool`` consecutive entries (zero-padded at the end)
            padded = F.pad(G, (0, self.phi_dim * self.pool - G.shape[-1]))
            G = F.avg_pool1d(padded.reshape(-1, 1, padded.shape[-1]), self.pool).reshape(*G.shape[:-1], -1)
        return G

    def select(self, views, budgets):
        x, f1, phi, pairs, score = self._scores(views)
        chosen = torch.argmax(score, -1)
        self._decisions += 1
        self._overturns += (chosen != torch.argmax(f1, -1)).cpu().numpy()  # f2 changed exploitation's choice
        picked = torch.arange(len(chosen)), chosen
        self._picked = x[picked], phi, f1[picked].tolist(), pairs[picked]
        return chosen.tolist()

    def scores(self, views) -> torch.Tensor:
        """The decision maker's score of every member's arms [M, K], of which ``select`` plays the largest."""
        return self._scores(views)[4]

    def _scores(self, views):
        """Every member's arms x [M, K, d], their f1, φ, the pairs [f1, f2] and the decision's scores."""
        x = torch.tensor(self.read_arms(views)[0], dtype=torch.float32, device=self.device)
        if self.f1.gradients == "closed":  # f1 and ∇f1 for every member's K arms in one call
            arms = neural.ArmGradients(self.f1, self.theta1, x)
            f1, G = arms.f, arms.rows()
        else:  # autograd's gradients, member by member
            each = [neural.ArmGradients(self.f1, theta1, x_m) for theta1, x_m in zip(self.theta1, x)]
            f1, G = torch.stack([arms.f for arms in each]), torch.stack([arms.rows() for arms in each])
        phi = self._phi(G)
        with torch.no_grad():
            f2 = self.f2.forward(self.theta2, phi)
        pairs = torch.stack([f1, f2], -1)
        if self.decision == "neural" and views[0].t >= self.decision_warmup:
            score = self.f3.forward(self.theta3, pairs)  # neural decision maker f3([f1, f2]; θ3)
        elif self.code_decision:
            score = f1 + (0.1 if views[0].t <= 1000 else 0.01) * (f2 - 1.0)  # the code switches after t = 1000
        else:
            score = f1 + f2  # linear decision maker f3
        return x, f1, phi, pairs, score

    def diagnostics(self, m) -> dict[str, float]:
        """``overturn_share``: the share of rounds since the last sample in which the decision maker chose another
        arm than f1 alone would have (exploration at work; it should fall as f2 learns the gains)."""
        share = self._overturns[m] / self._decisions[m] if self._decisions[m] else float("nan")
        self._decisions[m] = self._overturns[m] = 0
        return {"overturn_share": float(share)}

    def update(self, views, chosen, rewards):
        t = views[0].t
        for m, arm, reward in zip(range(len(self.members)), chosen, rewards):
            self._observe(m, t, arm, reward)
        if not neural.is_training_round(t, self.schedule):  # the schedule depends on t only: every member's
            return
        if self.code_training:
            self._train_code()
        else:
            self._train()

    def _observe(self, m: int, t: int, chosen: int, reward: float) -> None:
        x, phi, f1, pairs = self._picked
        self.exploit_data[m].add(0, x[m], reward)
        gain = reward - f1[m] + (1.0 if self.code_decision else 0.0)  # the label of f2, with θ1_{t−1}
        self.explore_data[m].add(0, phi[m, chosen], gain)
        if self.code_decision and t < 1000 and reward == 0:
            for i in range(phi.shape[1]):
                if i != chosen:
                    self.explore_data[m].add(0, phi[m, i], 1.2)
        if self.decision == "neural":
            self.decision_data[m].add(0, pairs[m], reward)  # H_t

    def _networks(self) -> list[tuple[str, neural.MLP, list[neural.History], float]]:
        """(θ's attribute, network, every member's history, learning rate) of each network the schedule trains."""
        networks = [
            ("theta1", self.f1, self.exploit_data, self.lr),
            ("theta2", self.f2, self.explore_data, self.explore_lr),
        ]
        if self.decision == "neural":
            networks.append(("theta3", self.f3, self.decision_data, self.decision_lr))
        return networks

    def _train(self) -> None:
        """Minibatch Adam on every network, the members' networks of one kind trained stacked in one call
        (``train_jobs``); each member's generator draws its minibatches in the order f1, f2, f3."""
        for name, network, data, lr in self._networks():
            jobs = [
                neural.whole_history_job(start, history, g, batch_size=self.batch_size, steps=self.train_steps)
                for start, history, g in zip(getattr(self, name).split(1), data, self.generators)
            ]
            setattr(self, name, torch.cat(neural.train_jobs(network, jobs, lr=lr)))

    def _train_code(self) -> None:
        """The authors' loops (``code_training``) on f1 (plain SGD) and f2 (Adam, weight decay 1e-4, a pass's error
        ≤ 2e-3), member by member: stacked, the single-sample steps on φ's hundreds of inputs round differently from
        one network's, and over up to 2 000 steps that changed choices."""
        their_settings = [{"optimiser": "sgd"}, {"optimiser": "adam", "tolerance": 2e-3, "weight_decay": 1e-4}]
        for m, generator in enumerate(self.generators):
            for (name, network, data, lr), settings in zip(self._networks(), their_settings):
                theta, samples = getattr(self, name), [data[m].all_rows()]
                trained = neural.train_passes_each(network, theta[m : m + 1], samples, [generator], lr=lr, **settings)
                theta[m] = trained[0]
