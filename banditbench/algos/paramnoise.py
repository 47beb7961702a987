"""ParamNoise, the Deep Bayesian Bandits Showdown's parameter-noise sampling (Riquelme, Tucker & Snoek, ICLR 2018,
§3; after Plappert et al.'s parameter space noise for exploration, ICLR 2018).

One network, trained as the Showdown's other networks (banditbench/algos/showdown_network.py). Each round its
parameters are perturbed, θ̃ = θ + σ ε with ε ~ N(0, I) over every weight and bias, and the greedy arm of f(·; θ̃) is
played. σ (``noise_std``, 0.05) adapts after every training, as Plappert et al.'s adaptive scale: on a minibatch of
``kl_samples`` = 300 past rounds, the mean KL divergence between the softmax over the arms of f(·; θ) and of f(·; θ̃)
(one perturbation for the minibatch) is compared with δ = −log(1 − ε + ε/K): σ ← 1.01 σ below it, σ / 1.01 above,
and then ε ← 0.99 ε (``eps``, 0.1). The Showdown draws the minibatch from all past contexts; a network scoring arm
vectors needs every arm of those rounds, so each member keeps a uniform sample of ``kl_samples`` past rounds'
arms (Vitter's reservoir) and the minibatch is drawn from it with replacement: the same distribution while the
history is no longer than the reservoir, a uniform subsample of it after. Under a block encoding it keeps each arm's
block alone, K times smaller, and puts the blocks back in place for the minibatch.
"""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos.base import same_views
from banditbench.algos.neural import arm_blocks
from banditbench.algos.showdown_network import ShowdownNetworks, forward


class ParamNoise(ShowdownNetworks):
    """One network per member, stacked [M, 1, p], each with its own noise scale σ and ε [M] (which may start apart
    in the members of a group)."""

    member_params = ("noise_std", "eps")
    domains = {"noise_std": d.POSITIVE, "eps": d.PROBABILITY, "kl_samples": d.COUNT}

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        noise_std: float = 0.05,
        eps: float = 0.1,
        kl_samples: int = 300,
        **settings,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds, **settings)
        self._start(1, inclusion=1.0, keep_prob=1.0)
        self.noise_std = self.per_member(noise_std)  # σ of every member, adapted after each training
        self.eps = self.per_member(eps)
        self.kl_samples = kl_samples
        self.reservoir = None  # past rounds' arms [M, S, K, d] (or their blocks [M, S, K, w]), from the first round
        self.offered = torch.zeros(len(seeds), kl_samples, n_arms, dtype=torch.bool, device=self.device)  # arms held
        self.seen = 0  # rounds offered to the reservoir

    def _build(self, block: int | None) -> None:
        super()._build(block)
        shape = (len(self.members), self.kl_samples, self.n_arms, block or self.dim)
        self.reservoir = torch.zeros(shape, device=self.device)

    def perturbed(self) -> torch.Tensor:
        """Every member's θ̃ = θ + σ ε [M, p], ε ~ N(0, I) from its own generator."""
        noise = torch.stack([torch.randn(self.mlp.p, generator=g, device=self.device) for g in self.generators])
        sigma = torch.as_tensor(self.noise_std, dtype=torch.float32, device=self.device)[:, None]
        return self.theta[:, 0] + sigma * noise

    def scores(self, views) -> torch.Tensor:
        """Every member's arms [M, K] scored by its perturbed network: a fresh perturbation per call."""
        arms, _ = self.read_arms(views)
        return forward(self.mlp, self.perturbed(), torch.tensor(arms, dtype=torch.float32, device=self.device))

    def update(self, views, chosen, rewards):
        self._prepare(views)
        read = getattr(self, "_read", None)
        arms = read[1] if read is not None and same_views(read[0], views) else self.read_arms(views)[0]
        self._keep_arms(torch.tensor(arms, dtype=torch.float32, device=self.device))
        super().update(views, chosen, rewards)

    def _keep_arms(self, arms: torch.Tensor) -> None:
        """Offer this round's arms [M, K, d] to every member's reservoir (Algorithm R: slot j ~ U{0..seen}, kept if
        j < size), the slot drawn from the member's generator; a round of fewer than ``n_arms`` arms fills the
        first K places of its slot."""
        size, K = self.reservoir.shape[1], arms.shape[1]
        if self.block is not None:  # arm a's block a alone
            arms = arm_blocks(arms, self.block)
        for m, g in enumerate(self.generators):
            slot = self.seen
            if self.seen >= size:
                slot = int(torch.randint(self.seen + 1, (), generator=g, device=self.device))
            if slot < size:
                self.reservoir[m, slot, :K] = arms[m]
                self.offered[m, slot] = torch.arange(self.n_arms, device=self.device) < K
        self.seen += 1

    def _train(self) -> None:
        super()._train()
        self._adapt_noise()

    def _adapt_noise(self) -> None:
        """Plappert et al.'s adaptive σ against the KL divergence of the arms' softmax, as the Showdown applies it."""
        kl = self.kl_divergence()
        delta = -np.log1p(-self.eps + self.eps / self.n_arms)
        self.noise_std = np.where(kl < delta, self.noise_std * 1.01, self.noise_std / 1.01)
        self.eps = self.eps * 0.99

    def kl_divergence(self) -> np.ndarray:
        """KL(softmax f(·; θ) ‖ softmax f(·; θ̃)) of every member [M], mean over a minibatch of its reservoir's rounds
        drawn with replacement, under one fresh perturbation θ̃."""
        size = self.reservoir.shape[1]
        held = min(self.seen, size)
        rows = torch.stack([torch.randint(held, (size,), generator=g, device=self.device) for g in self.generators])
        arms = self.reservoir[torch.arange(len(self.members), device=self.device)[:, None], rows]  # [M, S, K, ·]
        if self.block is not None:  # arm a's block back in block a
            arms = self.whole(arms, torch.arange(arms.shape[2], device=self.device).expand(arms.shape[:3]))
        offered = self.offered[torch.arange(len(self.members), device=self.device)[:, None], rows]  # [M, S, K]
        plain = forward(self.mlp, self.theta[:, 0, None], arms).double().masked_fill(~offered, -torch.inf)
        noisy = forward(self.mlp, self.perturbed()[:, None], arms).double().masked_fill(~offered, -torch.inf)
        log_p, log_q = plain.log_softmax(-1), noisy.log_softmax(-1)
        terms = torch.where(offered, log_p.exp() * (log_p - log_q), 0.0)
        return terms.sum(-1).clamp(min=0).mean(-1).cpu().numpy()
