"""Meta-Ban, Neural Collaborative Filtering Bandits via Meta Learning (Ban, Qi, Wei & He, arXiv 2201.13395,
2022).

Per round, for every arm x_i at once (Algorithm 1 lines 5–9, batched over arms and users):
  group, Eq. 4:        N̂_i = {u : |f(x_i; θ^u) − f(x_i; θ^{u_t})| ≤ (ν−1)γ/ν}
  meta step:           Θ_{t,i} = Θ_{t−1} − η₂ ∇_Θ Σ_{u∈N̂_i} w_u L(T̃^u; Θ)   (``meta_update="pooled"``, default: the
                       gradient at Θ on the group's samples, the paper's Alg. 4 (App. C) and M-CNB's Alg. 2)
                       Θ_{t,i} = Θ_{t−1} − η₂ [ Σ_u w_u ∇_{θ̂^u} L(T̃^u; θ̂^u) + (λ/√m) Σ_u sign(θ̂^u) ]
                       (``"fomaml"``: Eq. 5–6 / Alg. 2 literally, the gradient at each member's own θ̂^u; the
                       step then hardly depends on Θ and, on synthetic-cosine, plays worse than random, so the
                       spec's proposed reading A1 — pooled — is our default)
  UCB, Eq. 7–8:        U_i = f(x_i; Θ_{t,i}) + α ‖g(x_i; Θ_{t,i}) − g(x_i; Θ_0)‖₂
                       (β₂, Z₁ and Ū_{u_t} are the same for every arm, so they fold into α or drop out)
then Θ_t = Θ_{t,î}; (x_t, r_t) joins T^{u_t}, μ^{u_t} += 1 (line 12), and user-learners train by Alg. 3 on
their own T^u, with Adam on the schedule of M-CNB §6 (every user whose T^u grew). Alg. 3 restarts from
θ^u_(0) = Θ_0 "(or Θ_t)" with J₁ steps; with a bounded J₁ (``train_steps``) a restart never fits a growing T^u,
so by default (``user_start="own"``) each learner continues from its last parameters, which approximates the
full retraining; ``"initial"`` (Θ_0) and ``"meta"`` (Θ_t, the code) are the literal readings. We measured
that both literal readings keep the learners near one function, so all users form one group on
synthetic-cosine.

Choices the paper leaves open (documented defaults): w_u = 1/|N̂_i| (the mean, so η₂ does not scale with the
group size; the paper sets w_u = 1), T̃^u = ``batch_size`` samples drawn with replacement, J₂ = ``meta_steps``
= 1, η₂ = ``eta2`` = 0.05, λ = ``lam`` = 0.01 (L1 coefficient of the "fomaml" step),
α = 0.1 (the paper's grid is 0.001–1). Members without data are left out of the step.

The authors' code (banyikun/MCNB @53eb178/@104f710) as named switches:
  ``group_mode="last_arm"``     one group per round, from the last arm (Jan 2022 code); ``"union"`` (Feb 2022)
  ``ucb="grad_norm"``           U = f(x; Θ) + sqrt(λν)·‖g(x; Θ)‖ with λν = ``code_lam_nu`` = 1e-5
  ``share_data_with_group``     (x_t, r_t) is appended to every member of the chosen arm's group
  ``user_start="meta"``         Alg. 3 from θ^u_(0) = Θ_t, as the code copies the meta network into the user's
                                learner before training it
  ``code_training``             their training loops instead of the meta step and Adam on minibatches: every round
                                Θ takes single-sample Adam steps at ``eta2`` over passes of the pooled data of the
                                last arm's group (≤ 1000 steps, until a pass's mean loss is ≤ 1e-3), and
                                Θ_{t,i} = Θ for every arm; on scheduled rounds only u_t's learner trains, the same
                                way at ``lr``
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos import neural
from banditbench.algos.base import MemberPolicy

META_UPDATES = ("fomaml", "pooled")
GROUP_MODES = ("per_arm", "last_arm", "union")
UCBS = ("paper", "grad_norm")
USER_STARTS = ("own", "initial", "meta")


class MetaBan(MemberPolicy):
    """Over the members of a group: every member's Θ_0 and Θ stacked [M, p], its own user-learners and generator.
    Groups, meta steps and UCBs are each member's own (Alg. 1 for one member at a time); on a training round the
    members' user-learners train in one Adam call, and the authors' single-sample loops run as one loop."""

    member_params = ("gamma", "nu", "alpha", "lam", "eta2")  # per member: its groups, meta step and UCB
    domains = {
        **neural.NETWORK_DOMAINS,
        "gamma": d.NON_NEGATIVE,
        "nu": d.POSITIVE,
        "alpha": d.NON_NEGATIVE,
        "lam": d.POSITIVE,
        "eta2": d.POSITIVE,
        "meta_steps": d.STEPS,
        "meta_update": d.Choice(META_UPDATES),
        "group_mode": d.Choice(GROUP_MODES),
        "ucb": d.Choice(UCBS),
        "code_lam_nu": d.NON_NEGATIVE,
        "share_data_with_group": d.FLAG,
        "user_start": d.Choice(USER_STARTS),
        "code_training": d.FLAG,
    }
    authors_code = {
        **neural.NETWORK_CODE,
        "group_mode": (
            "last_arm",
            "one group a round, from the last arm (the January 2022 code; union: the February 2022 code)",
        ),
        "ucb": ("grad_norm", "U = f(x; Θ) + sqrt(λν)·‖g(x; Θ)‖ with λν = code_lam_nu"),
        "share_data_with_group": (True, "the round's sample is appended to every member of the chosen arm's group"),
        "user_start": ("meta", "a user's learner starts from the meta network Θ_t each time it trains"),
        "code_training": (
            True,
            "their training loops: single-sample Adam passes for Θ every round and for the served user's learner",
        ),
    }
    #: the network's shapes, rebuilt by the constructor; this round's picks, from ``select`` to ``update``
    transient = ("mlp", "_picked")

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        gamma=0.4,
        nu=5.0,
        alpha=0.1,
        lam=0.01,
        eta2=0.05,
        meta_steps: int = 1,
        meta_update: str = "pooled",
        group_mode: str = "per_arm",
        ucb: str = "paper",
        code_lam_nu: float = 1e-5,
        share_data_with_group: bool = False,
        user_start: str = "own",
        code_training: bool = False,
        lr: float = 1e-2,
        train_steps: int = 50,
        batch_size: int = 32,
        schedule: str = "paper",
        width: int = 100,
        depth: int = 2,
        bias: bool = False,
        init: str = "paper",
        gradients: str = "closed",
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.meta_update, self.group_mode, self.ucb, self.schedule = meta_update, group_mode, ucb, schedule
        nu, gamma = self.per_member(nu), self.per_member(gamma)
        self.threshold = (nu - 1.0) / nu * gamma
        self.alpha, self.lam, self.eta2 = self.per_member(alpha), self.per_member(lam), self.per_member(eta2)
        self.meta_steps = meta_steps
        self.code_lam_nu, self.share_data_with_group, self.batch_size = code_lam_nu, share_data_with_group, batch_size
        self.user_start = user_start
        self.code_training, self.lr = code_training, lr
        self.device = neural.resolve_device(device)
        self.generators = [neural.torch_generator(seed, self.device, threads) for seed in seeds]
        self.mlp = neural.MLP(dim, width, depth, bias, init, gradients)
        self.Theta0 = torch.stack([self.mlp.init(generator, self.device) for generator in self.generators])  # [M, p]
        self.Theta = self.Theta0.clone()
        self.users = [
            neural.UserLearners(self.mlp, Theta0, n_users, generator, lr=lr, steps=train_steps, batch_size=batch_size)
            for Theta0, generator in zip(self.Theta0, self.generators)
        ]

    def _groups(self, m: int, user: int, x: torch.Tensor) -> torch.Tensor:
        """Member m's inferred group N̂_i of every arm (Eq. 4), [K, n]."""
        P = self.users[m].predict(x)  # [n, K]
        groups = (P - P[user]).abs().T <= float(self.threshold[m])  # u_t is always a member (its difference is 0)
        if self.group_mode == "last_arm":
            groups = groups[-1].expand_as(groups)
        elif self.group_mode == "union":
            groups = groups.any(0).expand_as(groups)
        return groups

    def _adapt(self, m: int, groups: torch.Tensor) -> torch.Tensor:
        """Alg. 2 of member m for all K groups at once: one gradient per user with data, then
        Θ_{t,i} = Θ − η₂ Σ_u w_iu ∇L(T̃^u; ·)."""
        K, users, Theta = groups.shape[0], self.users[m], self.Theta[m]
        thetas = Theta.expand(K, -1).clone()
        data_users = torch.nonzero(users.mu > 0).flatten()
        if len(data_users) == 0:
            return thetas
        in_group = groups[:, data_users].float()
        weights = (in_group / in_group.sum(1, keepdim=True).clamp_min(1))[:, None, :]  # w_u = 1/|N̂_i|
        for step in range(self.meta_steps):
            xs, rs = users.history.sample(data_users, self.batch_size, self.generators[m])  # T̃^u
            if self.meta_update == "fomaml":  # Eq. 6: ∇ at each user's own θ̂^u, applied to Θ
                at = users.theta[data_users]
            else:  # pooled, at Θ_{t,i}; every arm starts from Θ_{t−1}, so one gradient per user serves all arms
                at = Theta if step == 0 else thetas[:, None, :]
            _, per_user = self.mlp.gradient(at, xs, lambda f: (f - rs) / self.batch_size)  # ∇ ½ mean_s (f − r)²
            if self.meta_update == "fomaml":
                per_user = per_user + float(self.lam[m]) / np.sqrt(self.mlp.width) * torch.sign(at)  # Eq. 6's L1 term
            thetas = thetas - float(self.eta2[m]) * (weights @ per_user)[:, 0]  # Σ_u w_iu ∇_u, [K, p]
        return thetas

    def _train_meta_code(self, groups: list[torch.Tensor]) -> None:
        """``code_training``'s meta network of every member: Θ trained on the pooled histories of its (last arm's)
        group's users. The members with data and the same η₂ (the loop's learning rate) run as one loop."""
        samples = [users.history.of(torch.nonzero(group).flatten()) for users, group in zip(self.users, groups)]
        for eta2 in sorted(set(self.eta2.tolist())):
            stepping = [m for m, (_, r) in enumerate(samples) if self.eta2[m] == eta2 and len(r)]
            if stepping:
                self.Theta[stepping] = neural.train_passes_each(
                    self.mlp,
                    self.Theta[stepping],
                    [samples[m] for m in stepping],
                    [self.generators[m] for m in stepping],
                    lr=eta2,
                    optimiser="adam",
                    max_steps=1000,
                )

    def select(self, views, budgets):
        x, groups = self._arms_and_groups(views)
        self._picked = [None] * len(self.members)
        return [self._choose(m, x[m], groups[m], thetas) for m, thetas in enumerate(self._adapted(x, groups))]

    def scores(self, views) -> torch.Tensor:
        """The UCB of every member's arms [M, K], of which ``select`` plays the largest; computed on a copy of the
        policy, because adapting Θ is part of choosing."""
        twin = copy.deepcopy(self)
        x, groups = twin._arms_and_groups(views)
        return torch.stack([twin._ucb(m, x[m], thetas) for m, thetas in enumerate(twin._adapted(x, groups))])

    def _adapted(self, x: torch.Tensor, groups: list[torch.Tensor]) -> list[torch.Tensor]:
        """Θ_{t,i} for every arm i of every member, [K, p] each."""
        if self.code_training:
            self._train_meta_code([member_groups[-1] for member_groups in groups])
            return [Theta.expand(x.shape[1], -1) for Theta in self.Theta]
        return [self._adapt(m, member_groups) for m, member_groups in enumerate(groups)]

    def _arms_and_groups(self, views) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Every member's arms x [M, K, d] and its groups of every arm."""
        arms, served = self.read_arms(views)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        return x, [self._groups(m, int(u), x[m]) for m, u in enumerate(served)]

    def _ucb(self, m: int, x: torch.Tensor, thetas: torch.Tensor) -> torch.Tensor:
        """The UCB of member m's every arm with its Θ_{t,i}."""
        K = len(x)
        if self.ucb == "grad_norm":
            arms = neural.ArmGradients(self.mlp, thetas, x)
            return arms.f + np.sqrt(self.code_lam_nu) * arms.rows().norm(dim=1)
        # f(x_i; Θ_{t,i}), g(x_i; Θ_{t,i}) and g(x_i; Θ_0) in one batched call
        arms = neural.ArmGradients(self.mlp, torch.cat([thetas, self.Theta0[m].expand(K, -1)]), torch.cat([x, x]))
        G = arms.rows()
        return arms.f[:K] + float(self.alpha[m]) * (G[:K] - G[K:]).norm(dim=1)

    def _choose(self, m: int, x: torch.Tensor, groups: torch.Tensor, thetas: torch.Tensor) -> int:
        """Member m's arm of the largest UCB, and what ``update`` needs of it."""
        chosen = int(torch.argmax(self._ucb(m, x, thetas)))
        self.Theta[m] = thetas[chosen]  # Θ_t = Θ_{t,î}
        self._picked[m] = groups[chosen], x[chosen]
        return chosen

    def update(self, views, chosen, rewards):
        served = [view.user for view in views]
        for users, user, (group, x), reward in zip(self.users, served, self._picked, rewards):
            sharing = torch.nonzero(group).flatten() if self.share_data_with_group else torch.tensor([user])
            users.history.add(sharing.to(self.device), x, reward)
        if not neural.is_training_round(views[0].t, self.schedule):  # the schedule depends on t only: every member's
            return
        starts = [self._user_start(m) for m in range(len(self.members))]
        if self.code_training:  # u_t's learner alone, from its Alg. 3 start, on its own history
            neural.train_learners_by_passes(self.users, served, starts, max_steps=1000)
        else:
            neural.train_learners(self.users, starts)

    def _user_start(self, m: int) -> torch.Tensor | None:
        """Alg. 3: θ^u_(0) = Θ_0 (or Θ_t, or the learner's own θ^u), then J₁ Adam steps on T^u."""
        return {"own": None, "initial": self.Theta0[m], "meta": self.Theta[m]}[self.user_start]

    def sharing_graph(self, m):
        return self.users[m].agreement_graph(float(self.threshold[m]))

    def clusters(self, m):
        return neural.connected_labels(self.sharing_graph(m))
