"""EE-Net, Neural Exploitation and Exploration (Ban, Yan, Banerjee & He, ICLR 2022; specs/reference-implementations.md §7).

Two networks shared by all users (the paper's single-bandit setting):
  exploitation  f1(x; θ1) learns r:                         min Σ ½(f1(x_τ; θ1) − r_τ)²
  exploration   f2(φ(x); θ2), φ(x) = ∇_{θ1} f1(x; θ1_{τ−1}), learns the potential gain r − f1:
                                                            min Σ ½(f2(φ(x_τ); θ2) − (r_τ − f1(x_τ; θ1_{τ−1})))²
  decision      x_t = argmax_i f3(f1(x_i), f2(φ(x_i))) with the linear decision maker f3 = f1 + f2 (the one the
                paper's regret analysis uses; the neural f3 of its experiments is not implemented).
φ is computed for all K arms in one batched call; ``pool`` > 1 block-averages it (the code's mean pooling,
for large inputs such as MNIST's block encoding). Both networks train on M-CNB §6's schedule with Adam
(``train_steps`` minibatch steps, fresh optimiser; the paper leaves steps and rates open).

The authors' code at HEAD (banyikun/EE-Net-ICLR-2022 @08d6ed7) as a switch, ``code_decision=True``:
the f2 label is shifted, r − f1 + 1; arm = argmax f1 + w·(f2 − 1) with w = 0.1 up to round 1000 and 0.01
after; while t < 1000 and r = 0, every other arm's φ is added with label 1.2.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from banditbench.algos.base import Policy
from banditbench.algos.neural import (MLP, SCHEDULES, History, check_choice, is_training_round, resolve_device,
                                      torch_generator, train_adam)


class EENet(Policy):
    def __init__(self, *, n_users, n_arms, dim, seed, width: int = 100, depth: int = 2, bias: bool = False,
                 init: str = "paper", explore_width: int = 100, pool: int = 1, lr: float = 1e-2,
                 explore_lr: float = 1e-3, train_steps: int = 50, batch_size: int = 32, schedule: str = "paper",
                 code_decision: bool = False, gradients: str = "closed", device: str = "cpu", threads: int = 1):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.pool, self.lr, self.explore_lr, self.code_decision = max(1, pool), lr, explore_lr, code_decision
        self.train_steps, self.batch_size = train_steps, batch_size
        self.device = resolve_device(device)
        self.generator = torch_generator(seed, self.device, threads)
        self.f1 = MLP(dim, width, depth, bias, init, gradients)
        self.phi_dim = -(-self.f1.p // self.pool)
        self.f2 = MLP(self.phi_dim, explore_width, 2, bias, init, gradients)
        self.theta1 = self.f1.init(self.generator, self.device)[None]
        self.theta2 = self.f2.init(self.generator, self.device)[None]
        self.exploit_data = History(1, dim, self.device)
        self.explore_data = History(1, self.phi_dim, self.device)
        self.one = torch.zeros(1, dtype=torch.long, device=self.device)

    def _phi(self, x: torch.Tensor) -> torch.Tensor:
        G = self.f1.per_arm_gradients(self.theta1[0], x)  # [K, p], all arms in one call
        if self.pool > 1:  # block means of ``pool`` consecutive entries (zero-padded at the end)
            G = F.avg_pool1d(F.pad(G, (0, self.phi_dim * self.pool - G.shape[1]))[:, None], self.pool)[:, 0]
        return G

    def select(self, view, budget):
        x = torch.tensor(view.arms[:], dtype=torch.float32, device=self.device)
        phi = self._phi(x)
        with torch.no_grad():
            f1 = self.f1.forward(self.theta1[0], x)
            f2 = self.f2.forward(self.theta2[0], phi)
        if self.code_decision:
            score = f1 + (0.1 if view.t < 1000 else 0.01) * (f2 - 1.0)
        else:
            score = f1 + f2  # linear decision maker f3
        chosen = int(torch.argmax(score))
        self._x, self._phi_all, self._f1 = x[chosen], phi, float(f1[chosen])
        self._chosen = chosen
        return chosen

    def update(self, view, chosen, reward):
        self.exploit_data.add(self.one, self._x, reward)
        gain = reward - self._f1 + (1.0 if self.code_decision else 0.0)  # the label of f2, with θ1_{t−1}
        self.explore_data.add(self.one, self._phi_all[chosen], gain)
        if self.code_decision and view.t < 1000 and reward == 0:
            for i in range(len(self._phi_all)):
                if i != chosen:
                    self.explore_data.add(self.one, self._phi_all[i], 1.2)
        if is_training_round(view.t, self.schedule):
            x, r = self.exploit_data.sample(self.one, self.batch_size, self.generator, self.train_steps)
            self.theta1 = train_adam(self.f1, self.theta1, x, r, lr=self.lr)
            x, r = self.explore_data.sample(self.one, self.batch_size, self.generator, self.train_steps)
            self.theta2 = train_adam(self.f2, self.theta2, x, r, lr=self.explore_lr)
