"""NeuralLinear with Thompson sampling on the last layer (Riquelme, Tucker & Snoek, "Deep Bayesian Bandits
Showdown", ICLR 2018, §3 "NeuralLinear"): a network trained on all data gives features φ(x), its last hidden layer,
and a Bayesian linear regression on φ with a normal-inverse-gamma prior is sampled exactly every round.

Posterior of action a after n_a samples (Φ_a, y_a) (the same maths as ``thompson.BayesianLinearRegression``):
    Λ_a = Φ_aᵀΦ_a + λI,  μ_a = Λ_a⁻¹Φ_aᵀy_a,  σ_a² ~ IG(a₀ + n_a/2, b₀ + (y_aᵀy_a − μ_aᵀΛ_aμ_a)/2),
    β_a | σ_a² ~ N(μ_a, σ_a² Λ_a⁻¹),  score_a = φ(x_a)ᵀβ_a.
Arm a's score reads only its own β_a, so it is drawn from its exact marginal N(φᵀμ_a, σ_a² φᵀΛ_a⁻¹φ): one normal
and one gamma per arm instead of a Cholesky draw of β_a.

"Per action" (``posterior="per_action"``, the default) here: arms come as context vectors x_{t,a} (the
classification protocol puts x in arm a's block), so the shared network scores each arm's vector and action a keeps
its own BLR on φ(x_{t,a}), the embedding of the arm it was played with. That is the Showdown's per-action linear
model on a shared network's last layer. Where arm positions name no fixed action (item pools: synthetic,
MovieLens), position a's samples come from unrelated items and its posterior learns almost nothing.
``posterior="shared"`` keeps one BLR on the embeddings of every played arm instead (Λ = ΦᵀΦ + λI over all n samples,
as ``blr-one`` on the network's features): the arms' scores φ(x_{t,a})ᵀβ̃ then share one draw
β̃ = μ + σ̃ L⁻ᵀz ~ N(μ, σ̃²Λ⁻¹), LLᵀ = Λ, z ~ N(0, I).

Settings (the Showdown's code, its mushroom example): one hidden layer of 50 ReLU units, the network retrained
every 50 rounds for 100 minibatch steps, BLR statistics updated every round, a₀ = b₀ = 6, λ = 0.25 and two
round-robin pulls of every arm first. Ours differ in the network: one output per arm vector (theirs has one head per
action on the raw context) and Adam at a fixed lr (theirs RMSProp from lr 0.1 with decay), the training every
neural policy here shares. After each training every action's Λ, Φᵀy, yᵀy and n are rebuilt from the whole history
under the new φ in one batched embedding per member.
"""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos.base import MemberPolicy
from banditbench.algos.neural import (
    MLP,
    NETWORK_DOMAINS,
    History,
    arm_blocks,
    arm_inputs,
    group_by_block,
    resolve_device,
    start_blocks,
    torch_generator,
    train_jobs,
    whole_history_job,
)
from banditbench.algos.neurallinear import user_grams
from banditbench.algos.thompson import inverse_gamma_scales

POSTERIORS = ("per_action", "shared")  # one BLR per arm position, or one for every arm


class NeuralLinearTS(MemberPolicy):
    """Over the members of a group: every member's network [M, p], its posteriors' statistics [M, K, …] (per action)
    or [M, 1, …] (shared), history and generators (numpy for the posterior draws, torch for the network)."""

    member_params = ("prior_a", "prior_b", "lam")
    domains = {
        **{name: domain for name, domain in NETWORK_DOMAINS.items() if name != "schedule"},
        "prior_a": d.POSITIVE,
        "prior_b": d.POSITIVE,
        "lam": d.POSITIVE,
        "train_every": d.COUNT,
        "initial_pulls": d.STEPS,
        "posterior": d.Choice(POSTERIORS),
    }
    transient = ("mlp", "_picked")

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        prior_a=6.0,
        prior_b=6.0,
        lam=0.25,
        train_every: int = 50,
        initial_pulls: int = 2,
        posterior: str = "per_action",
        width: int = 50,
        depth: int = 2,
        bias: bool = True,
        init: str = "torch",
        lr: float = 1e-2,
        train_steps: int = 100,
        batch_size: int = 512,
        gradients: str = "closed",
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.prior_a, self.prior_b, self.lam = self.per_member(prior_a), self.per_member(prior_b), self.per_member(lam)
        self.train_every, self.initial_pulls = train_every, initial_pulls
        self.shared = posterior == "shared"
        models = 1 if self.shared else n_arms
        self.lr, self.train_steps, self.batch_size = lr, train_steps, batch_size
        self.device = resolve_device(device)
        self.generators = [torch_generator(seed, self.device, threads) for seed in seeds]
        self.mlp = MLP(dim, width, depth, bias, init, gradients)
        self.theta = torch.stack([self.mlp.init(generator, self.device) for generator in self.generators])
        M, m = len(seeds), width
        self.histories = [History(1, dim, self.device) for _ in seeds]
        self.arm_of_row = torch.zeros(M, 1024, dtype=torch.long, device=self.device)
        lam = torch.as_tensor(self.lam, device=self.device)[:, None, None, None]
        self.precision = torch.eye(m, dtype=torch.float64, device=self.device).mul(lam).repeat(1, models, 1, 1)
        self.phi_y = torch.zeros(M, models, m, dtype=torch.float64, device=self.device)
        self.y_y = torch.zeros(M, models, dtype=torch.float64, device=self.device)
        self.count = torch.zeros(M, models, dtype=torch.float64, device=self.device)
        self.rounds = 0
        self.blocks, self.block = True, None  # as NeuralLinear: per-block reading of block-encoded contexts

    def _embed(self, theta: torch.Tensor, x) -> torch.Tensor:
        with torch.no_grad():
            return self.mlp.embed(theta, x).double()

    def _arms(self, views) -> torch.Tensor:
        arms, _ = self.read_arms(views)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        if self.block is None:
            for m, history in enumerate(self.histories):
                self.block, self.histories[m] = start_blocks(self, views[0], history)
        return x if self.block is None else arm_blocks(x, self.block)

    def posterior(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every posterior (one per action, or the shared one): the Cholesky factor L of Λ [M, ·, m, m], L⁻¹Φᵀy
        [M, ·, m] (so μ = L⁻ᵀL⁻¹Φᵀy and μᵀΛμ = ‖L⁻¹Φᵀy‖²), and the inverse gamma's shape and rate [M, ·]."""
        L = torch.linalg.cholesky(self.precision)
        solved = torch.linalg.solve_triangular(L, self.phi_y[..., None], upper=False)[..., 0]
        residual = (self.y_y - solved.square().sum(-1)).clamp_min(0.0)
        shape = torch.as_tensor(self.prior_a, device=self.device)[:, None] + 0.5 * self.count
        rate = torch.as_tensor(self.prior_b, device=self.device)[:, None] + 0.5 * residual
        return L, solved, shape, rate

    def scores(self, views) -> torch.Tensor:
        """A posterior draw of every member's arms' rewards [M, K], each from its action's exact marginal."""
        return self._draw(views)[1]

    def _draw(self, views) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self._arms(views)
        phi = self._embed(self.theta, arm_inputs(x, self.block))  # [M, K, m]: arm a's embedding, for action a's BLR
        L, solved, shape, rate = self.posterior()
        sigma = inverse_gamma_scales(self.rngs, shape.cpu().numpy(), rate.cpu().numpy())  # [M, K] or [M, 1]
        if self.shared:  # one β̃ = L⁻ᵀ(L⁻¹Φᵀy + σ̃z) for every arm
            z = np.array([rng.standard_normal(phi.shape[2]) for rng in self.rngs])
            noisy = solved[:, 0] + torch.from_numpy(sigma * z).to(self.device)
            beta = torch.linalg.solve_triangular(L[:, 0].mT, noisy[..., None], upper=True)
            return x, (phi @ beta)[..., 0], phi
        y = torch.linalg.solve_triangular(L, phi[..., None], upper=False)[..., 0]  # L⁻¹φ_a
        mean, spread = (y * solved).sum(-1), y.square().sum(-1).sqrt()  # φᵀμ and sqrt(φᵀΛ⁻¹φ)
        z = np.array([rng.standard_normal(x.shape[1]) for rng in self.rngs])
        return x, mean + torch.from_numpy(sigma * z).to(self.device) * spread, phi

    def select(self, views, budgets):
        x, score, phi = self._draw(views)
        if self.rounds < self.initial_pulls * self.n_arms:  # the Showdown's round-robin start
            chosen = torch.full((len(views),), self.rounds % x.shape[1], device=self.device)
        else:
            chosen = torch.argmax(score, dim=-1)
        picked = torch.arange(len(views)), chosen
        self._picked = x[picked], phi[picked]
        return chosen.tolist()

    def update(self, views, chosen, rewards):
        x, phi = self._picked
        for m, arm, reward in zip(self.members, chosen, rewards):
            model = 0 if self.shared else arm
            row = self.histories[m].size
            self.histories[m].add(0, x[m], reward, arm)
            if row == self.arm_of_row.shape[1]:
                self.arm_of_row = torch.cat([self.arm_of_row, torch.zeros_like(self.arm_of_row)], dim=1)
            self.arm_of_row[m, row] = arm
            self.precision[m, model].add_(torch.outer(phi[m], phi[m]))
            self.phi_y[m, model].add_(reward * phi[m])
            self.y_y[m, model] += reward * reward
            self.count[m, model] += 1
        self.rounds += 1
        if self.rounds % self.train_every == 0:
            self._train()

    def _train(self) -> None:
        """The network on every member's whole history, then every action's posterior rebuilt under the new φ."""
        jobs = [
            whole_history_job(
                self.theta[m : m + 1], history, generator, batch_size=self.batch_size, steps=self.train_steps
            )
            for m, (history, generator) in enumerate(zip(self.histories, self.generators))
        ]
        for m, theta in enumerate(train_jobs(self.mlp, jobs, lr=self.lr)):
            self.theta[m] = theta[0]
            self.rebuild(m)

    def rebuild(self, m: int) -> None:
        """Member m's Λ, Φᵀy, yᵀy and n of every posterior from its stored samples, φ of the whole history in one
        call."""
        history = self.histories[m]
        if self.block is None:
            x, r = history.all_rows()
        else:  # every stored block, read through its block's columns of W_1
            rows = torch.arange(history.size, device=self.device)[None]
            x, r = group_by_block(rows, history.x, history.block, self.n_arms), history.r[: history.size]
        phi, r, models = self._embed(self.theta[m], x), r.double(), self.arm_of_row[m, : history.size]
        if self.shared:
            models = torch.zeros_like(models)
        n_models = self.count.shape[1]
        self.precision[m] = user_grams(phi, models, n_models, float(self.lam[m]))
        self.phi_y[m] = torch.zeros_like(self.phi_y[m]).index_add_(0, models, r[:, None] * phi)
        self.y_y[m] = torch.zeros_like(self.y_y[m]).index_add_(0, models, r * r)
        self.count[m] = torch.bincount(models, minlength=n_models).double()

    def clusters(self, m):
        return np.zeros(self.n_users, dtype=np.int64)  # one network and one set of action models for every user
