"""NeuralUCB (Zhou, Li & Gu, ICML 2020, Algorithm 1) as the clustering papers run it (M-CNB §6, Meta-Ban §7):
"NeuUCB-ONE" keeps one network for all users, "NeuUCB-IND" one network (and one Z) per user.

Score (Alg. 1 line 7):  U_i = f(x_i; θ) + ν·sqrt(g_iᵀ Z⁻¹ g_i / m),  g_i = ∇_θ f(x_i; θ)   (γ_t replaced by ν,
                        as in the paper's experiments)
Z update (line 10):     Z ← Z + g_t g_tᵀ / m,  Z_0 = λI; kept diagonal (``covariance="diagonal"``, the practical
                        approximation of the paper's experiments) or full with Sherman–Morrison (``"full"``).
Training (line 11, Eq. 4.1): min Σ ½(f(x; θ) − r)² + mλ/2 ‖θ − θ_0‖², on the schedule of M-CNB §6 (after every
10th round up to round 1000, then every 100th), ``train_steps`` Adam steps on minibatches of the history
(the papers leave steps, batch and learning rate open; these are our documented defaults). The loss is
averaged per minibatch, so the penalty is scaled by 1/|history| to keep Eq. 4.1's balance.

Block-encoded contexts (the classification protocol's x_{t,a} = (0, …, x, …, 0), x in block a, as the round
declares): the network reads each arm's block x through W_1's columns of block a only, and the history keeps the
blocks (``neural.BlockRows``), so the first layer's products and W_1's gradient cost a K-th of the dense ones.
The choices are those of the dense computation up to the rounding of the products (tested). Used with the default
training, diagonal Z and closed-form gradients; setting the attribute ``blocks`` to False keeps the dense input.

NeuA+U (``user_features=True``, M-CNB §6): NeuUCB-ONE on the input [x_arm ; x_user], "only where user
features exist". On a protocol without user features it stops with a one-line error at its first round.

NeuUCB-IND, paper silent on who trains: by default every user whose history grew since its last training
is trained on a scheduled round, all in one batched call; ``train_served_only=True`` is the authors' code
(only the served user, on a scheduled round).

``code_training=True`` is the authors' training loop (banyikun/MCNB, both NeuUCB variants): on a scheduled round
the served user's network (NeuUCB-ONE: the one network) takes single-sample plain SGD steps at ``lr`` on
(f(x; θ) − r)², without the penalty, over passes of its whole history in one shuffled order, until 500 steps or
the end of a pass whose mean loss is ≤ 1e-3.
"""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos import neural
from banditbench.algos.base import MemberPolicy
from banditbench.errors import UserError

COVARIANCES = ("diagonal", "full")


class DiagonalCovariance:
    """NeuralUCB's Z = λI + Σ g gᵀ/m kept as its diagonal (the papers' and authors' practical approximation): one Z
    per network of every member, [M, networks, p], λ [M] one value per member."""

    def __init__(self, lam: np.ndarray, n_models: int, p: int, m: int, device: torch.device):
        lam = torch.as_tensor(lam, dtype=torch.float64, device=device)
        self.Z = lam[:, None, None].expand(-1, n_models, p).clone()
        self.m = m

    def widths(self, at, arms: neural.ArmGradients) -> torch.Tensor:
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

    def widths(self, at, arms: neural.ArmGradients) -> torch.Tensor:
        G = arms.rows().double()
        return ((G @ self.Z_inv[at]) * G).sum(-1).clamp_min(0).div(self.m).sqrt()

    def update(self, at, g: torch.Tensor) -> None:
        Z_inv, v = self.Z_inv[at], g.double() / np.sqrt(self.m)
        for Z_inv_m, v_m in zip(Z_inv, v):  # member by member: a unit's matrix-vector products, not a batch's
            Zv = Z_inv_m @ v_m
            Z_inv_m -= torch.outer(Zv, Zv) / (1.0 + v_m @ Zv)
        self.Z_inv[at] = Z_inv


class NeuralUCB(MemberPolicy):
    """Over the members of a group: every member's networks stacked [M, networks, p], with its own Z, history and
    generator, so a member chooses as its unit alone up to the rounding of batched products."""

    member_params = ("nu", "lam")  # per member: its ν, and λ in its Z and penalty
    domains = {
        **neural.NETWORK_DOMAINS,
        "nu": d.NON_NEGATIVE,
        "lam": d.POSITIVE,
        "covariance": d.Choice(COVARIANCES),
        "max_covariance_gb": d.POSITIVE,
        "train_served_only": d.FLAG,
        "code_training": d.FLAG,
    }
    authors_code = {
        **neural.NETWORK_CODE,
        "train_served_only": (
            True,
            "only the served user's network trains on a scheduled round, not every user whose history grew",
        ),
        "code_training": (
            True,
            "their training loop: single-sample SGD at lr on the served user's network, at most 500 steps, no penalty",
        ),
    }
    #: the network, rebuilt from ``input_dim``; this round's picks, from ``select`` to ``update``
    transient = ("mlp", "_picked")

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        per_user: bool = False,
        nu=0.1,
        lam=0.1,
        covariance: str = "diagonal",
        max_covariance_gb: float = 2.0,
        width: int = 100,
        depth: int = 2,
        bias: bool = False,
        init: str = "paper",
        lr: float = 1e-2,
        train_steps: int = 50,
        batch_size: int = 32,
        schedule: str = "paper",
        train_served_only: bool = False,
        code_training: bool = False,
        user_features: bool = False,
        gradients: str = "closed",
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.schedule = schedule
        self.per_user, self.nu, self.lam, self.lr = per_user, self.per_member(nu), self.per_member(lam), lr
        self.train_steps, self.batch_size, self.train_served_only = train_steps, batch_size, train_served_only
        self.code_training = code_training
        self.user_features = user_features  # NeuA+U: the network reads [x_arm ; x_user]
        self.device = neural.resolve_device(device)
        self.generators = [neural.torch_generator(seed, self.device, threads) for seed in seeds]
        self.network = dict(width=width, depth=depth, bias=bias, init=init, gradients=gradients)
        self.covariance, self.max_covariance_gb = covariance, max_covariance_gb
        # the members' arms are scored in one pass where the width has the closed form, else member by member
        self.batched = covariance == "diagonal" and gradients == "closed"
        self.blocks = True  # read block-encoded contexts per block where the round declares them; False: dense
        self.block: int | None = None  # the block width once a block-encoded first round is seen, else None
        self.mlp, self.input_dim = None, None
        if not user_features:  # NeuA+U's input [x_arm ; x_user] is sized when it first sees user features
            self._build(dim)

    def _build(self, input_dim: int) -> None:
        self.mlp, self.input_dim = neural.MLP(input_dim, **self.network), input_dim
        n_models = self.n_users if self.per_user else 1
        inits = [torch.stack([self.mlp.init(g, self.device) for _ in range(n_models)]) for g in self.generators]
        self.theta0 = torch.stack(inits)  # [M, networks, p]
        self.theta = self.theta0.clone()
        Z = (self.lam, n_models, self.mlp.p, self.mlp.width, self.device)
        self.Z = DiagonalCovariance(*Z) if self.covariance == "diagonal" else FullCovariance(*Z, self.max_covariance_gb)
        self.histories = [neural.History(n_models, input_dim, self.device) for _ in self.members]
        self.trained_counts = torch.zeros(len(self.members), n_models, dtype=torch.long, device=self.device)

    def load_member_state_dict(self, m, state) -> None:
        if state.get("input_dim") is not None and self.mlp is None:  # NeuA+U built on its first round: build, fill
            self._build(state["input_dim"])
        super().load_member_state_dict(m, state)

    def _inputs(self, views, arms: np.ndarray) -> torch.Tensor:
        """The arms as the histories store them: x [M, K, d], or in block mode each arm's own block [M, K, b]."""
        # block mode (``neural.start_blocks``) where the computations have a per-block form: default training,
        # diagonal Z, closed-form gradients, no user features
        if self.block is None and self.batched and not (self.user_features or self.code_training):
            for m, history in enumerate(self.histories):
                self.block, self.histories[m] = neural.start_blocks(self, views[0], history)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        if self.block is not None:
            return neural.arm_blocks(x, self.block)
        if self.user_features:
            if any(view.user_features is None for view in views):
                raise UserError(
                    "neu-au needs user features, and this protocol gives none (the M-CNB paper runs "
                    "NeuA+U only on MovieLens and Yelp); use neuucb-one here"
                )
            u = torch.tensor(np.array([view.user_features for view in views]), dtype=torch.float32, device=self.device)
            if self.mlp is None:
                self._build(x.shape[-1] + u.shape[-1])
            x = torch.cat([x, u[:, None, :].expand(-1, x.shape[1], -1)], dim=-1)
        return x

    def select(self, views, budgets):
        models, x, ucb, gradients_of = self._ucb(views)
        chosen = torch.argmax(ucb, dim=-1)
        self._picked = models, gradients_of(chosen), x[torch.arange(len(x)), chosen]
        return chosen.tolist()

    def scores(self, views) -> torch.Tensor:
        """The upper confidence bound of every member's arms [M, K], of which ``select`` plays the largest."""
        return self._ucb(views)[2]

    def _ucb(self, views):
        """Every member's network, its inputs x [M, K, ·] and their UCB [M, K] (Alg. 1 line 7), f and g from one forward
        and backward pass (of the group, or member by member), and the gradients of given arms [M] → [M, p]."""
        arms, served = self.read_arms(views)
        models = served if self.per_user else np.zeros_like(served)  # the network each member's user plays with
        x = self._inputs(views, arms)
        if self.batched:
            at = self.at(models)
            g = neural.ArmGradients(self.mlp, self.theta[at], neural.arm_inputs(x, self.block))
            f, widths, gradients_of = g.f, self.Z.widths(at, g), g.picked
        else:  # the full Z and autograd's gradients, member by member
            each = [neural.ArmGradients(self.mlp, self.theta[m, model], x[m]) for m, model in zip(self.members, models)]
            f = torch.stack([g.f for g in each])
            widths = torch.stack([self.Z.widths((m, model), g) for m, model, g in zip(self.members, models, each)])
            gradients_of = lambda chosen: torch.stack([g.row(arm) for g, arm in zip(each, chosen.tolist())])
        return models, x, self.index(f.double(), widths), gradients_of

    def index(self, f: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
        """The score ``select`` maximises from the means f and widths sqrt(gᵀZ⁻¹g/m) [M, K]: f + ν·width."""
        return f + torch.as_tensor(self.nu, device=self.device)[:, None] * widths

    def update(self, views, chosen, rewards):
        models, g, x = self._picked
        self.Z.update(self.at(models), g)  # Alg. 1 line 10 with g(x_t; θ_{t−1})
        for history, model, x_m, reward, arm in zip(self.histories, models.tolist(), x, rewards, chosen):
            history.add(model, x_m, reward, block=arm)
        if not neural.is_training_round(views[0].t, self.schedule):  # the schedule depends on t only: every member's
            return
        if self.code_training:
            self._train_code(models)
            return
        jobs = [self._training_job(m, model) for m, model in zip(self.members, models.tolist())]
        for m, job, theta in zip(self.members, jobs, neural.train_jobs(self.mlp, jobs, lr=self.lr)):
            if job is not None:
                self.theta[m, job.models] = theta
                self.trained_counts[m, job.models] = self.histories[m].counts[job.models]

    def _training_job(self, m: int, model: int) -> neural.TrainingJob | None:
        """Alg. 1 line 11 for member m's networks to train (all that saw new samples, or the served user's only)."""
        history = self.histories[m]
        if self.train_served_only:
            models = torch.tensor([model], device=self.device)
        else:
            models = torch.nonzero(history.counts > self.trained_counts[m]).flatten()
        if len(models) == 0:
            return None
        scale = self.mlp.width * float(self.lam[m]) / (2.0 * history.counts[models].float())  # mλ/2 per sample, Eq. 4.1
        rows = history.minibatch_rows(models, self.batch_size, self.generators[m], self.train_steps)
        anchor = (scale, self.theta0[m, models])
        return neural.TrainingJob(self.theta[m, models], rows, history, anchor=anchor, models=models)

    def _train_code(self, models: np.ndarray) -> None:
        """The authors' loop (``code_training``) on every member's served network, the networks stacked in one loop
        (``neural.train_passes_each``)."""
        at = self.at(models)
        samples = [history.of(model) for history, model in zip(self.histories, models)]
        self.theta[at] = neural.train_passes_each(
            self.mlp, self.theta[at], samples, self.generators, lr=self.lr, optimiser="sgd", max_steps=500
        )
        self.trained_counts[at] = torch.tensor([len(r) for _, r in samples], device=self.device)

    def clusters(self, m):
        return np.arange(self.n_users) if self.per_user else np.zeros(self.n_users, dtype=np.int64)
