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
from banditbench.algos.base import Policy
from banditbench.algos.neural import (
    MLP,
    NETWORK_CODE,
    NETWORK_DOMAINS,
    SCHEDULES,
    ArmGradients,
    DiagonalCovariance,
    FullCovariance,
    History,
    TrainingJob,
    TrainingLockstep,
    arm_blocks,
    arm_inputs,
    check_choice,
    is_training_round,
    resolve_device,
    start_blocks,
    torch_generator,
    train_jobs,
    train_passes_each,
)
from banditbench.errors import UserError

COVARIANCES = ("diagonal", "full")


class NeuralUCB(Policy):
    member_params = ("nu", "lam")  # per member: its ν, and λ in its Z and penalty
    domains = {
        **NETWORK_DOMAINS,
        "nu": d.NON_NEGATIVE,
        "lam": d.POSITIVE,
        "covariance": d.Choice(COVARIANCES),
        "max_covariance_gb": d.POSITIVE,
        "train_served_only": d.FLAG,
        "code_training": d.FLAG,
    }
    authors_code = {
        **NETWORK_CODE,
        "train_served_only": (
            True,
            "only the served user's network trains on a scheduled round, not every user whose history grew",
        ),
        "code_training": (
            True,
            "their training loop: single-sample SGD at lr on the served user's network, at most 500 steps, no penalty",
        ),
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        per_user: bool = False,
        nu: float = 0.1,
        lam: float = 0.1,
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
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        check_choice("covariance", covariance, COVARIANCES)
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.per_user, self.nu, self.lam, self.lr = per_user, nu, lam, lr
        self.train_steps, self.batch_size, self.train_served_only = train_steps, batch_size, train_served_only
        self.code_training = code_training
        self.user_features = user_features  # NeuA+U: the network reads [x_arm ; x_user]
        self.device = resolve_device(device)
        self.generator = torch_generator(seed, self.device, threads)
        self.network = dict(width=width, depth=depth, bias=bias, init=init, gradients=gradients)
        self.covariance, self.max_covariance_gb = covariance, max_covariance_gb
        self._g_chosen: torch.Tensor | None = None
        self._x: torch.Tensor | None = None
        self._arm = 0
        self.blocks = True  # read block-encoded contexts per block where the round declares them; False: dense
        self.block: int | None = None  # the block width once a block-encoded first round is seen, else None
        if not user_features:
            self._build(dim)
        else:  # NeuA+U: the input [x_arm ; x_user] is sized on the first round, when user features are seen
            self.mlp = None
            if max_covariance_gb <= 0:
                raise UserError("max_covariance_gb must be positive")

    def _build(self, input_dim: int) -> None:
        self.mlp = MLP(input_dim, **self.network)
        n_models = self.n_users if self.per_user else 1
        self.theta0 = torch.stack([self.mlp.init(self.generator, self.device) for _ in range(n_models)])
        self.theta = self.theta0.clone()
        width = self.mlp.width
        self.Z = (
            DiagonalCovariance(n_models, self.mlp.p, self.lam, width, self.device)
            if self.covariance == "diagonal"
            else FullCovariance(n_models, self.mlp.p, self.lam, width, self.device, self.max_covariance_gb)
        )
        self.history = History(n_models, input_dim, self.device)
        self.trained_counts = torch.zeros(n_models, dtype=torch.long, device=self.device)

    def load_state_dict(self, state) -> None:
        if state.get("mlp") is not None and self.mlp is None:  # NeuA+U built on its first round: build, then fill
            self._build(state["mlp"]["dim"])
        super().load_state_dict(state)

    def _model(self, user: int) -> int:
        return user if self.per_user else 0

    def _inputs(self, view, arms: np.ndarray) -> torch.Tensor:
        """The arms as the history stores them: x [K, d], or in block mode each arm's own block [K, b]."""
        if self.block is None:
            self._start_blocks(view)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        if self.block is not None:
            return arm_blocks(x, self.block)
        if self.user_features:
            if view.user_features is None:
                raise UserError(
                    "neu-au needs user features, and this protocol gives none (the M-CNB paper runs "
                    "NeuA+U only on MovieLens and Yelp); use neuucb-one here"
                )
            if self.mlp is None:
                self._build(x.shape[1] + len(view.user_features))
            u = torch.as_tensor(view.user_features, dtype=torch.float32, device=self.device)
            x = torch.cat([x, u.expand(x.shape[0], -1)], dim=1)
        return x

    def _start_blocks(self, view) -> None:
        """Block mode (``neural.start_blocks``), for the settings whose computations have a per-block form: default
        training, diagonal Z, closed-form gradients, no user features."""
        closed = self.covariance == "diagonal" and self.network["gradients"] == "closed"
        if closed and not (self.user_features or self.code_training):
            self.block, self.history = start_blocks(self, view, self.history)

    def select(self, view, budget):
        x, arms, ucb = self._ucb(view)
        chosen = int(torch.argmax(ucb))
        self._g_chosen, self._x, self._arm = arms.row(chosen), x[chosen], chosen
        return chosen

    def scores(self, view) -> torch.Tensor:
        """The upper confidence bound of every arm of the round, of which ``select`` plays the largest."""
        return self._ucb(view)[2]

    def _ucb(self, view):
        """The round's inputs x, f and g of every arm (one forward and backward pass) and their UCB (Alg. 1 line 7)."""
        model = self._model(view.user)
        x = self._inputs(view, view.arms[:])
        arms = ArmGradients(self.mlp, self.theta[model], arm_inputs(x, self.block))
        return x, arms, arms.f.double() + self.nu * self.Z.widths(model, arms)

    def update(self, view, chosen, reward):
        self._observe(view, reward)
        if is_training_round(view.t, self.schedule):
            self._train(view.user)

    def _observe(self, view, reward) -> None:
        model = self._model(view.user)
        self.Z.update(model, self._g_chosen)  # Alg. 1 line 10 with g(x_t; θ_{t−1})
        self.history.add(model, self._x, reward, block=self._arm)

    def _train(self, user: int) -> None:
        if self.code_training:
            self._train_code(user)
            return
        job = self._training_job(user)
        if job is not None:
            self._trained(job, *train_jobs(self.mlp, [job], lr=self.lr))

    def _training_job(self, user: int) -> TrainingJob | None:
        """Alg. 1 line 11 for the networks to train (all that saw new samples, or the served user's only)."""
        counts = self.history.counts
        if self.train_served_only:
            models = torch.tensor([self._model(user)], device=self.device)
        else:
            models = torch.nonzero(counts > self.trained_counts).flatten()
        if len(models) == 0:
            return None
        scale = self.mlp.width * self.lam / (2.0 * counts[models].float())  # mλ/2 per sample of Eq. 4.1
        rows = self.history.minibatch_rows(models, self.batch_size, self.generator, self.train_steps)
        return TrainingJob(self.theta[models], rows, self.history, anchor=(scale, self.theta0[models]), models=models)

    def _train_code(self, user: int) -> None:
        self._train_code_each([self], [user])

    @staticmethod
    def _train_code_each(policies: list[NeuralUCB], users: list[int]) -> None:
        """The authors' loop (``code_training``) on each policy's served network, the networks stacked in one loop
        (``neural.train_passes_each``)."""
        models = [policy._model(user) for policy, user in zip(policies, users)]
        trained = train_passes_each(
            policies[0].mlp,
            torch.stack([policy.theta[model] for policy, model in zip(policies, models)]),
            [policy.history.of(model) for policy, model in zip(policies, models)],
            [policy.generator for policy in policies],
            lr=policies[0].lr,
            optimiser="sgd",
            max_steps=500,
        )
        for policy, model, theta in zip(policies, models, trained):
            policy.theta[model] = theta
            policy.trained_counts[model] = policy.history.counts[model]

    def _trained(self, job: TrainingJob, theta: torch.Tensor) -> None:
        self.theta[job.models] = theta
        self.trained_counts[job.models] = self.history.counts[job.models]

    @classmethod
    def lockstep(cls, policies):
        return NeuralUCBLockstep(policies)

    def clusters(self):
        return np.arange(self.n_users) if self.per_user else np.zeros(self.n_users, dtype=np.int64)


class NeuralUCBLockstep(TrainingLockstep):
    """NeuralUCB's members in lockstep (seeds, and grid cells of ν and λ): every member's arms scored by one forward
    and backward pass (their networks stacked [S, p]), and on a training round (the schedule depends on t only)
    every member's networks trained by one Adam call (with ``code_training``, the authors' loops as one loop). Each
    member keeps its own Z, history and generator, so the choices are those of the members run one by one, up to
    the rounding of batched matrix products."""

    def __init__(self, policies: list[NeuralUCB]):
        super().__init__(policies)
        first = policies[0]
        # one pass for all members where the width has the closed form; otherwise select member by member
        self.batched = first.covariance == "diagonal" and first.network["gradients"] == "closed"
        self.nu = torch.tensor([policy.nu for policy in policies], dtype=torch.float64, device=first.device)[:, None]

    def select(self, views, budgets):
        if not self.batched:
            return super().select(views, budgets)
        policies = self.policies
        first = policies[0]
        models = [policy._model(view.user) for policy, view in zip(policies, views)]
        x = torch.stack([policy._inputs(view, view.arms[:]) for policy, view in zip(policies, views)])
        theta = torch.stack([policy.theta[model] for policy, model in zip(policies, models)])
        arms = ArmGradients(first.mlp, theta, arm_inputs(x, first.block))
        inverse = torch.stack([policy.Z.Z[model] for policy, model in zip(policies, models)]).reciprocal()
        ucb = arms.f.double() + self.nu * arms.weighted_squares(inverse).div(first.Z.m).sqrt()
        chosen = torch.argmax(ucb, dim=-1)
        gradients = arms.picked(chosen)
        for i, (policy, arm) in enumerate(zip(policies, chosen.tolist())):
            policy._g_chosen, policy._x, policy._arm = gradients[i], x[i, arm], arm
        return chosen.tolist()

    def train_together(self, views) -> None:
        policies = self.policies
        jobs = [policy._training_job(view.user) for policy, view in zip(policies, views)]
        for policy, job, theta in zip(policies, jobs, train_jobs(policies[0].mlp, jobs, lr=policies[0].lr)):
            if job is not None:
                policy._trained(job, theta)
