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

The network and its training are the Showdown's, as for BootRMS, Dropout and ParamNoise
(banditbench/algos/showdown_network.py): one hidden layer of 50 ReLU units, weights from U(±0.3), retrained every 50
rounds by 100 RMSProp steps from lr 0.1 with inverse-time decay on minibatches of 512 drawn from all samples,
gradients clipped to norm 5. The regressions (their code's mushroom example): a₀ = b₀ = 6, λ = 0.25, two
round-robin pulls of every arm first. Each round's sample joins its posterior under the current φ; after every
training, as their code replaces its latent data, every posterior's Λ, Φᵀy, yᵀy and n are rebuilt from the whole
history under the new φ, embedding the stored samples a chunk of rows at a time (``REBUILD_FLOATS``).
"""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos.base import same_views
from banditbench.algos.neurallinear import user_grams
from banditbench.algos.showdown_network import ShowdownNetworks
from banditbench.algos.thompson import inverse_gamma_scales

POSTERIORS = ("per_action", "shared")  # one BLR per arm position, or one for every arm
REBUILD_FLOATS = 2**24  # the most numbers of whole stored samples a rebuild holds at once (64 MiB of float32)


class NeuralLinearTS(ShowdownNetworks):
    """One network per member [M, 1, p] and its posteriors' statistics [M, K, …] (per action) or [M, 1, …] (shared)."""

    member_params = ("prior_a", "prior_b", "lam")
    domains = {"prior_a": d.POSITIVE, "prior_b": d.POSITIVE, "lam": d.POSITIVE, "posterior": d.Choice(POSTERIORS)}
    transient = (*ShowdownNetworks.transient, "_embedded")

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
        posterior: str = "per_action",
        **settings,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, **settings)
        self._start(1, inclusion=1.0, keep_prob=1.0)
        self.prior_a, self.prior_b, self.lam = self.per_member(prior_a), self.per_member(prior_b), self.per_member(lam)
        self.shared = posterior == "shared"
        M, models, m = len(seeds), 1 if self.shared else n_arms, self.mlp.width
        lam = torch.as_tensor(self.lam, device=self.device)[:, None, None, None]
        self.precision = torch.eye(m, dtype=torch.float64, device=self.device).mul(lam).repeat(1, models, 1, 1)
        self.phi_y = torch.zeros(M, models, m, dtype=torch.float64, device=self.device)
        self.y_y = torch.zeros(M, models, dtype=torch.float64, device=self.device)
        self.count = torch.zeros(M, models, dtype=torch.float64, device=self.device)
        self._embedded = None  # the last ``scores``' views and φ of their arms

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """φ under every member's network of its vectors x [M, k, d] → [M, k, m], in float64 for the regressions."""
        with torch.no_grad():
            return self.mlp.embed(self.theta[:, 0], x).double()

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
        """A posterior draw of every member's arms' rewards [M, K], each from its action's exact marginal (or all
        from one draw of the shared β̃)."""
        arms, _ = self.read_arms(views)
        phi = self.embed(torch.tensor(arms, dtype=torch.float32, device=self.device))  # [M, K, m]
        self._embedded = views, phi  # the update's chosen arms' φ
        L, solved, shape, rate = self.posterior()
        sigma = inverse_gamma_scales(self.rngs, shape.cpu().numpy(), rate.cpu().numpy())  # [M, K] or [M, 1]
        if self.shared:  # one β̃ = L⁻ᵀ(L⁻¹Φᵀy + σ̃z) for every arm
            z = np.array([rng.standard_normal(phi.shape[2]) for rng in self.rngs])
            noisy = solved[:, 0] + torch.from_numpy(sigma * z).to(self.device)
            beta = torch.linalg.solve_triangular(L[:, 0].mT, noisy[..., None], upper=True)
            return (phi @ beta)[..., 0]
        y = torch.linalg.solve_triangular(L, phi[..., None], upper=False)[..., 0]  # L⁻¹φ_a
        mean, spread = (y * solved).sum(-1), y.square().sum(-1).sqrt()  # φᵀμ and sqrt(φᵀΛ⁻¹φ)
        z = np.array([rng.standard_normal(phi.shape[1]) for rng in self.rngs])
        return mean + torch.from_numpy(sigma * z).to(self.device) * spread

    def update(self, views, chosen, rewards):
        """The sample joins its posterior under the current φ; the network stores it and trains on schedule."""
        _, x, r = self.played(views, chosen, rewards)
        r = torch.as_tensor(r, device=self.device)
        actions = torch.as_tensor(chosen, device=self.device)
        if self._embedded is not None and same_views(self._embedded[0], views):
            phi = self._embedded[1][torch.arange(len(self.members), device=self.device), actions]
        else:  # the round-robin start scores nothing
            phi = self.embed(torch.tensor(x[:, None], dtype=torch.float32, device=self.device))[:, 0]
        pair = (
            torch.arange(len(self.members), device=self.device),
            torch.zeros_like(actions) if self.shared else actions,
        )
        self.precision[pair] += phi[:, :, None] * phi[:, None, :]
        self.phi_y[pair] += r[:, None] * phi
        self.y_y[pair] += r * r
        self.count[pair] += 1
        super().update(views, chosen, rewards)

    def _train(self) -> None:
        super()._train()
        self.rebuild()

    def rebuild(self) -> None:
        """Every posterior's Λ, Φᵀy, yᵀy and n from its member's stored samples under the new φ."""
        n = self.rounds
        members = torch.arange(len(self.members), device=self.device)[:, None]
        step = max(1, REBUILD_FLOATS // (len(self.members) * self.dim))  # rows made whole at once
        rows = torch.arange(n, device=self.device).split(step)
        phi = torch.cat([self.embed(self.inputs(members, chunk)) for chunk in rows], 1)
        r, models = self.r[:, :n].double(), self.arm[:, :n]  # a sample's posterior: its action's, or the shared one
        if self.shared:
            models = torch.zeros_like(models)
        for m in range(len(self.members)):
            self.precision[m] = user_grams(phi[m], models[m], self.count.shape[1], float(self.lam[m]))
        self.phi_y = torch.zeros_like(self.phi_y).scatter_add_(1, models[..., None].expand_as(phi), r[..., None] * phi)
        self.y_y = torch.zeros_like(self.y_y).scatter_add_(1, models, r * r)
        self.count = torch.zeros_like(self.count).scatter_add_(1, models, torch.ones_like(r))

    def clusters(self, m):
        return np.zeros(self.n_users, dtype=np.int64)  # one network and one set of action models for every user
