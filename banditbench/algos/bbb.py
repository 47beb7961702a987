"""Bayes by Backprop (Blundell, Cornebise, Kavukcuoglu & Wierstra, ICML 2015), the Deep Bayesian Bandits Showdown's
BBB (Riquelme, Tucker & Snoek, ICLR 2018, §3): Thompson sampling from a mean-field Gaussian posterior over the
parameters of the Showdown's network (banditbench/algos/showdown_network.py), fitted by variational inference.

Posterior (Blundell et al. §3.2): q(w | μ, ρ) = Π_j N(w_j; μ_j, σ_j²) with σ = log(1 + exp(ρ)), over every weight
and bias. Each round every member draws one network w = μ + σ ⊙ ε, ε ~ N(0, I), from its own generator and plays
the greedy arm of f(·; w).

Training minimises, per sample, the negative evidence lower bound (Blundell et al. Eq. 1, weighted over minibatches
as their Eq. 8 with π_i = 1/M, i.e. the KL divided by the data size n):

    L(μ, ρ) = (1/B) Σ_i (f(x_i; w) − r_i)² / (2 s²) + KL(q ‖ p) / n,    w = μ + σ ⊙ ε (one ε per step),

on minibatches of B = ``batch_size`` of the n samples held (drawn with replacement), the Gaussian likelihood's noise
s = ``noise_sigma`` fixed, the prior p(w) = N(0, 1) per parameter, and the KL of the two diagonal Gaussians in
closed form,  KL = Σ_j log(s_p / σ_j) + (σ_j² + μ_j²) / (2 s_p²) − ½  (s_p the prior's deviation); the gradient
reaches μ and ρ through w (the reparameterisation trick, Blundell et al. §3.1–3.2).

The Showdown's code departs from this in four ways, each a switch (``authors_code``): σ = exp(ρ) (``sigma="exp"``,
their ``use_sigma_exp_transform``); the prior N(0, 2/n_in) on each layer's weights (``prior="fan-in"``, n_in its
inputs); biases that are point estimates, neither sampled nor in the KL (``sample_biases=False``); and the loss's
expectation by the local reparameterisation trick (Kingma, Salimans & Welling, NeurIPS 2015): each layer's
pre-activations drawn per sample, z ~ N(h μ_Wᵀ + b, h² σ_W²ᵀ + 10⁻⁶) (``local_reparam=True``).

Settings the papers leave open are those of the Showdown's code (its example script): Adam (Kingma & Ba 2015,
banditbench/algos/adam.py) at a constant rate ``lr`` = 0.1, one optimiser for the whole run (its moments and step
count carried from one training to the next), no gradient clipping; μ ~ N(0, ``init_std``²) with init_std = 0.05 and
ρ ~ N(``rho_init``, init_std²) with rho_init = −5, so that σ ≈ 0.007 and training starts near a point fit; the
training schedule, minibatches and round-robin start of the other Showdown networks.
"""

from __future__ import annotations

import torch

from banditbench.algos import domains as d
from banditbench.algos.adam import Adam
from banditbench.algos.neural import MLP
from banditbench.algos.showdown_network import ShowdownNetworks, forward

PRIORS = ("unit", "fan-in")
SIGMA_TRANSFORMS = ("softplus", "exp")
VARIANCE_FLOOR = 1e-6  # added to each sampled pre-activation's variance by the local reparameterisation (their code)


def gaussian_kl(mean: torch.Tensor, std: torch.Tensor, prior_std: torch.Tensor) -> torch.Tensor:
    """KL(N(μ, σ²) ‖ N(0, s_p²)) of diagonal Gaussians in closed form, summed over the last axis: [..., p] → [...]."""
    ratio = std / prior_std
    return (-torch.log(ratio) + (ratio.square() + (mean / prior_std).square() - 1) / 2).sum(-1)


def local_forward(mlp: MLP, mean: torch.Tensor, std: torch.Tensor, x: torch.Tensor, noise: list) -> torch.Tensor:
    """f(x) under the local reparameterisation: each layer's pre-activations z = m + sqrt(v + 10⁻⁶) ε with
    m = h μ_Wᵀ + μ_b, v = h² σ_Wᵀ² + σ_b² and ε = ``noise[layer]`` [..., k, out]: μ, σ [..., p], x [..., k, d]
    → [..., k]."""
    h = x
    for layer, ((W, b), (W_std, b_std)) in enumerate(zip(mlp.layers(mean), mlp.layers(std))):
        variance = h.square() @ W_std.square().mT + b_std.square()
        z = h @ W.mT + b + (variance + VARIANCE_FLOOR).sqrt() * noise[layer]
        h = z if layer == mlp.depth - 1 else torch.relu(z)
    return h[..., 0]


class BayesByBackprop(ShowdownNetworks):
    """μ and ρ of every member stacked [M, 2, p] (``posterior``); ``noise_sigma`` may differ between the members of
    a group. The Showdown network's RMSProp settings (``init_scale``, ``lr_decay``, ``lr_reset``, ``max_grad_norm``)
    keep their defaults and are never read."""

    member_params = ("noise_sigma",)
    domains = {
        "noise_sigma": d.POSITIVE,
        "prior": d.Choice(PRIORS),
        "sigma": d.Choice(SIGMA_TRANSFORMS),
        "sample_biases": d.FLAG,
        "local_reparam": d.FLAG,
        "init_std": d.NON_NEGATIVE,
        "rho_init": d.real(),
    }
    authors_code = {
        "sigma": ("exp", "σ = exp(ρ) instead of log(1 + exp(ρ))"),
        "prior": ("fan-in", "the prior N(0, 2/n_in) on each layer's weights instead of N(0, 1)"),
        "sample_biases": (False, "biases are point estimates: not sampled, not in the KL"),
        "local_reparam": (True, "the loss samples each layer's pre-activations per sample (Kingma et al. 2015)"),
    }

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        noise_sigma: float = 0.1,
        prior: str = "unit",
        sigma: str = "softplus",
        sample_biases: bool = True,
        local_reparam: bool = False,
        init_std: float = 0.05,
        rho_init: float = -5.0,
        width: int = 50,
        depth: int = 2,
        lr: float = 0.1,
        train_steps: int = 100,
        batch_size: int = 512,
        training_freq: int = 50,
        initial_pulls: int = 2,
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(
            n_users=n_users,
            n_arms=n_arms,
            dim=dim,
            seeds=seeds,
            width=width,
            depth=depth,
            lr=lr,
            train_steps=train_steps,
            batch_size=batch_size,
            training_freq=training_freq,
            initial_pulls=initial_pulls,
            device=device,
            threads=threads,
        )
        self.noise_sigma = self.per_member(noise_sigma)
        self.prior, self.sigma, self.sample_biases, self.local_reparam = prior, sigma, sample_biases, local_reparam
        self._start_samples(1)
        p = self.mlp.p
        starts = [torch.randn(2, p, generator=g, device=self.device) * init_std for g in self.generators]
        self.posterior = torch.stack(starts) + torch.tensor([0.0, rho_init], device=self.device)[:, None]
        self.optimiser = Adam(self.posterior, lr=lr)  # one for the run, as their code's
        self.prior_std, self.sampled = self._prior_and_sampled()

    def _prior_and_sampled(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The prior's deviation of every parameter [p] and which parameters q samples [p] (bool)."""
        prior_std, sampled = torch.ones(self.mlp.p, device=self.device), torch.ones(self.mlp.p, device=self.device)
        for (W, b), (_, b_sampled), ((_, n_in), _) in zip(
            self.mlp.layers(prior_std), self.mlp.layers(sampled), self.mlp.shapes
        ):
            if self.prior == "fan-in":  # a layer's biases, where sampled, take its weights' deviation
                W.fill_((2 / n_in) ** 0.5)
                b.fill_((2 / n_in) ** 0.5)
            if not self.sample_biases:
                b_sampled.zero_()
        return prior_std, sampled.bool()

    def std(self, rho: torch.Tensor) -> torch.Tensor:
        """σ [..., p] of ρ [..., p]: log(1 + exp(ρ)) or exp(ρ), and 0 where q does not sample."""
        sigma = torch.nn.functional.softplus(rho) if self.sigma == "softplus" else rho.exp()
        return sigma * self.sampled

    def sampled_networks(self) -> torch.Tensor:
        """One w = μ + σ ⊙ ε [M, p] per member, ε from its own generator."""
        noise = torch.stack([torch.randn(self.mlp.p, generator=g, device=self.device) for g in self.generators])
        mean, rho = self.posterior.unbind(1)
        return mean + self.std(rho) * noise

    def scores(self, views) -> torch.Tensor:
        """Every member's arms [M, K] scored by one network drawn from its posterior (a fresh draw per call)."""
        arms, _ = self.read_arms(views)
        return forward(self.mlp, self.sampled_networks(), torch.tensor(arms, dtype=torch.float32, device=self.device))

    def loss(self, posterior: torch.Tensor, x: torch.Tensor, r: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Every member's L(μ, ρ) [M] on its minibatch x [M, B, d], r [M, B], with its draw ``noise``: the weights'
        ε [M, p], or under ``local_reparam`` the pre-activations' ε [M, B, width·(depth − 1) + 1]."""
        mean, rho = posterior.unbind(1)
        std = self.std(rho)
        if self.local_reparam:
            f = local_forward(self.mlp, mean, std, x, noise.split([self.mlp.width] * (self.mlp.depth - 1) + [1], -1))
        else:
            f = forward(self.mlp, mean + std * noise, x)
        noise_variance = torch.as_tensor(self.noise_sigma**2, dtype=torch.float32, device=self.device)
        misfit = (f - r).square().mean(-1) / (2 * noise_variance)
        kl = gaussian_kl(mean[:, self.sampled], std[:, self.sampled], self.prior_std[self.sampled])
        return misfit + kl / self.rounds

    def _train(self) -> None:
        """``train_steps`` Adam steps of every member's μ and ρ on its own minibatches and draws, stacked (each
        member's loss depends on its rows only, so the gradient of their sum is each one's own)."""
        rows = self.minibatch_rows()[:, :, 0]  # [steps, M, batch]
        shape = (self.batch_size, self.mlp.width * (self.mlp.depth - 1) + 1) if self.local_reparam else (self.mlp.p,)
        members = torch.arange(len(self.members), device=self.device)[:, None]
        for step in range(self.train_steps):
            x, r = self.inputs(members, rows[step]), self.r[members, rows[step]]
            noise = torch.stack([torch.randn(shape, generator=g, device=self.device) for g in self.generators])
            leaf = self.posterior.detach().requires_grad_(True)
            with torch.enable_grad():
                (gradient,) = torch.autograd.grad(self.loss(leaf, x, r, noise).sum(), leaf)
            self.optimiser.step(gradient)
        self.steps += self.train_steps
