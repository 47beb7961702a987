"""M-CNB, Meta Clustering of Neural Bandits (Ban, Qi, Wei, Liu & He, KDD 2024).

Per round, for every arm x_i at once (Algorithm 1 lines 6–10, batched over arms and users):
  (1) clustering, Eq. 3:  N̂_i = {u : |f(x_i; θ^u) − f(x_i; θ^{u_t})| ≤ (ν−1)γ/ν}
  (2) meta adaptation, Alg. 2:  Θ_{t,i} = Θ_{t−1} − η₂ ∇_Θ (1/|N̂_i|) Σ_{u∈N̂_i} ½(f(x_u; Θ_{t−1}) − r_u)²,
      one sample (x_u, r_u) drawn from each member's T^u; every arm starts from Θ_{t−1}
  (3) UCB, line 9:  U_i = f(x_i; Θ_{t,i}) + ‖g(x_i; Θ_{t,i}) − g(x_i; Θ_0)‖₂ / m^{1/4}
                      + sqrt((S+1)/(2μ^{u_t})) + sqrt(2 log(1/δ)/μ^{u_t})
then Θ_t = Θ_{t,î} (line 13). User-learners train with Adam on the schedule of §6 (every user whose T^u grew).

Lines 14–17 give (x_t, r_t) to every member of the chosen arm's cluster N̂_î: μ^u grows and T^u gains the sample
for each of them (default, ``share_with_cluster=True``). With θ^u_0 = Θ_0 for every u (line 2) all learners agree
at round 1, so early clusters are all of N and the early samples reach every T^u; the learners then differ only
through their own minibatch noise. ``share_with_cluster=False`` is the other reading, the authors' code at HEAD:
T^u and μ^u grow only on the rounds u is served; the cluster still decides which members' data adapt Θ (Alg. 2).
The two play alike on the authors' Yelp pools (docs/fidelity.md), so the paper's reading is the default.

Choices the paper leaves open (documented defaults): η₂ = ``eta2`` (0.05, one step, ``meta_steps`` more);
the draw of one sample per user is shared by the K arms of a round (all K adaptations are then one matrix
product); members without data yet are left out of the meta loss (the paper's "observe one data for each
user" warm start is not available in our protocols); μ counts from 0 and the user-side term uses max(μ, 1);
``alpha`` scales the meta-side bonus (1 = the paper, which has no scale).

The authors' code (banyikun/MCNB @cf79294) as named switches, all off by default:
  ``meta_every_10th_in_place``  adapt only when t % 10 == 0, cumulatively in place across arms, keeping the
                                last arm's group for the update (≤ 100 single-sample SGD steps of lr 1e-2 over
                                passes of the group's data)
  ``group_cap``                 cap a group at n/5 members drawn with replacement, plus u_t
  ``code_exploration``          U = f(x; Θ) + sqrt(code_nu)·‖g(x; Θ)‖ + code_nu·sqrt(1/count), code_nu = 1e-4
  ``meta_pooled_training``      on scheduled rounds also train Θ with Adam on all users' data
  ``code_threshold``            the test |diff| < γ (0.4 itself, strict) instead of ≤ (ν−1)γ/ν
  ``code_training``             their training loops: on scheduled rounds only u_t's learner trains, by single-sample
                                Adam steps at ``lr`` over passes of its history (≤ 500 steps, until a pass's mean
                                loss is ≤ 1e-3); with ``meta_pooled_training``, Θ likewise on all users' data pooled
                                (≤ 1000 steps, reshuffled every pass), before the learner
``share_with_cluster=False`` is the code's history: (x_t, r_t) goes to u_t's T^u only.

Block-encoded contexts (the classification protocol's, arm a in block a, as the round declares): the histories keep
each sample's block and the user-learners train per block, the clustering reads each arm through its block's
columns of W_1, and the UCB's gradient distance is taken layer by layer (the first layer's gradients share x). The
meta step reads the dense contexts. The choices are those of the dense computation up to rounding (tested); the
attribute ``blocks`` set to False keeps the dense computation throughout.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos import neural
from banditbench.algos.base import MemberPolicy


def meta_adapt(mlp: neural.MLP, Theta: torch.Tensor, weights: torch.Tensor, draw, eta2, steps: int) -> torch.Tensor:
    """Alg. 2 for every arm, members of a group stacked on the leading axis: from Θ [M, p], ``steps`` times
    Θ_{t,i} ← Θ_{t,i} − η₂ Σ_u w_iu ∇ ½(f(x_u; Θ_{t,i}) − r_u)² with weights [M, K, n] and one sample per user from
    ``draw()`` (x [M, n, d], r [M, n]). Every arm starts from Θ_{t−1}, so the first step backpropagates once for
    all arms; Σ_u w_iu ∇_u is assembled per layer as Σ_u w_iu δ_u h_uᵀ. η₂: a scalar or [M, 1, 1]. → [M, K, p]."""
    M, K, _ = weights.shape
    thetas = Theta[:, None, :]
    for _ in range(steps):
        xs, rs = draw()
        _, hs, deltas = mlp.backprop(thetas, xs[:, None], lambda f: f - rs[:, None])  # δ [M, 1 or K, n, out]
        step = torch.empty(M, K, mlp.p, device=Theta.device)
        for (W_grad, b_grad), delta, h in zip(mlp.layers(step), deltas, hs):
            weighted = weights[..., None] * delta  # [M, K, n, out]
            W_grad.copy_(weighted.mT @ h)
            if b_grad is not None:
                b_grad.copy_(weighted.sum(-2, keepdim=True))
        thetas = torch.sub(thetas, step.mul_(eta2), out=step)  # Θ − η₂·step in step's memory, the same numbers
    return thetas.expand(-1, K, -1)


class MCNB(MemberPolicy):
    """Over the members of a group: every member's Θ_0 and Θ stacked [M, p] (one meta step and one UCB pass for the
    group), its own user-learners (its clustering from one forward pass of them) and generator."""

    timing_columns = ("clustering", "meta_adaptation", "user_training")  # M-CNB Table 1's split
    member_params = ("gamma", "nu", "S", "delta", "eta2", "alpha")  # per member: its clusters, meta step, UCB

    domains = {
        **neural.NETWORK_DOMAINS,
        "gamma": d.NON_NEGATIVE,
        "nu": d.POSITIVE,
        "S": d.POSITIVE,
        "delta": d.PROBABILITY,
        "eta2": d.POSITIVE,
        "meta_steps": d.STEPS,
        "alpha": d.NON_NEGATIVE,
        "meta_every_10th_in_place": d.FLAG,
        "group_cap": d.FLAG,
        "code_exploration": d.FLAG,
        "code_nu": d.NON_NEGATIVE,
        "meta_pooled_training": d.FLAG,
        "code_threshold": d.FLAG,
        "code_training": d.FLAG,
        "share_with_cluster": d.FLAG,
    }
    authors_code = {
        **neural.NETWORK_CODE,
        "meta_every_10th_in_place": (True, "adapt only when t % 10 == 0, cumulatively in place across arms"),
        "group_cap": (True, "a group is capped at n/5 members drawn with replacement, plus the served user"),
        "code_exploration": (True, "U = f(x; Θ) + sqrt(code_nu)·‖g(x; Θ)‖ + code_nu·sqrt(1/count)"),
        "meta_pooled_training": (True, "on scheduled rounds Θ also trains with Adam on all users' data"),
        "code_threshold": (True, "the cluster test |diff| < γ instead of ≤ (ν − 1)γ/ν"),
        "code_training": (
            True,
            "their training loops: single-sample Adam passes over the served user's history, at most 500 steps",
        ),
        "share_with_cluster": (
            False,
            "a user's data and count grow only on the rounds it is served (the code at HEAD)",
        ),
    }
    #: the network's shapes, rebuilt by the constructor; this round's picks, from ``select`` to ``update``, and its
    #: meta-side bonus (a diagnostic)
    transient = ("mlp", "_picked", "bonus")

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        gamma=0.4,
        nu=5.0,
        S=1.0,
        delta=0.1,
        eta2=0.05,
        meta_steps: int = 1,
        alpha=1.0,
        lr: float = 1e-2,
        train_steps: int = 50,
        batch_size: int = 32,
        schedule: str = "paper",
        width: int = 100,
        depth: int = 2,
        bias: bool = False,
        init: str = "paper",
        meta_every_10th_in_place: bool = False,
        group_cap: bool = False,
        code_exploration: bool = False,
        code_nu: float = 1e-4,
        meta_pooled_training: bool = False,
        code_threshold: bool = False,
        code_training: bool = False,
        share_with_cluster: bool = True,
        gradients: str = "closed",
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        M = len(seeds)
        self.schedule = schedule
        nu, self.gamma = self.per_member(nu), self.per_member(gamma)
        self.threshold = (nu - 1.0) / nu * self.gamma  # 0.32 with the paper's ν = 5, γ = 0.4
        self.code_threshold, self.share_with_cluster = code_threshold, share_with_cluster
        self.S, self.delta, self.eta2, self.alpha = (self.per_member(v) for v in (S, delta, eta2, alpha))
        self.meta_steps, self.lr, self.train_steps, self.batch_size = meta_steps, lr, train_steps, batch_size
        self.meta_every_10th_in_place, self.group_cap = meta_every_10th_in_place, group_cap
        self.code_exploration, self.code_nu, self.meta_pooled_training = code_exploration, code_nu, meta_pooled_training
        self.code_training = code_training
        self.device = neural.resolve_device(device)
        self.generators = [neural.torch_generator(seed, self.device, threads) for seed in seeds]
        self.mlp = neural.MLP(dim, width, depth, bias, init, gradients)
        self.Theta0 = torch.stack([self.mlp.init(g, self.device) for g in self.generators])  # frozen, for g(x; Θ_0)
        self.Theta = self.Theta0.clone()
        self.users = [
            neural.UserLearners(self.mlp, Theta0, n_users, generator, lr=lr, steps=train_steps, batch_size=batch_size)
            for Theta0, generator in zip(self.Theta0, self.generators)
        ]
        self.served = torch.zeros(M, n_users, dtype=torch.long, device=self.device)  # code's per-user select count
        self.last_timings = {name: np.zeros(M) for name in self.timing_columns}
        self.bonus: torch.Tensor | None = None  # last round's meta-side exploration bonus per arm [M, K]
        self._code_group: list = [None] * M  # the last arm's group of the code's latest adaptation
        self.blocks = True  # keep block-encoded samples per block and cluster on them; False: dense throughout
        self.block: int | None = None  # the block width once a block-encoded first round is seen, else None

    def _sample(self, x: torch.Tensor, arm: int) -> torch.Tensor:
        """Arm ``arm``'s context as the history keeps it: dense, or its block."""
        return x[arm] if self.block is None else neural.arm_blocks(x, self.block)[arm]

    def _arms_input(self, x: torch.Tensor):
        """x [..., K, d] for the user-learners: dense, or each arm's block as ``BlockRows``."""
        return x if self.block is None else neural.arm_inputs(neural.arm_blocks(x, self.block), self.block)

    # (1) user clustering, all arms at once
    def _clusters(self, served: np.ndarray, x: torch.Tensor) -> torch.Tensor:
        """Eq. 3 for every member and arm [M, K, n], from every user-learner's estimates, one forward pass per member
        (one pass over the stacked [M, n, p] learners costs more: stacking them copies every member's networks)."""
        P = torch.stack([users.predict(self._arms_input(xs)) for users, xs in zip(self.users, x)])  # [M, n, K]
        gap = (P - P[torch.arange(len(P)), torch.as_tensor(served)][:, None, :]).abs().mT  # [M, K, n]
        limit = self.gamma if self.code_threshold else self.threshold
        limit = torch.tensor(limit, dtype=gap.dtype, device=self.device)[:, None, None]
        groups = gap < limit if self.code_threshold else gap <= limit  # the code: γ itself, strict
        if self.group_cap:
            for m, user in enumerate(served):
                self._cap(m, groups[m], int(user))  # in place, from the member's own generator
        return groups

    def _cap(self, m: int, groups: torch.Tensor, user: int) -> torch.Tensor:
        """The code's cap of member m's groups [K, n]: more than n/5 users → n/5 drawn with replacement (so fewer
        distinct), plus u_t."""
        cap = max(1, self.n_users // 5)
        sizes = groups.sum(1)
        over = torch.nonzero(sizes > cap).flatten()
        if len(over) == 0:
            return groups
        users = torch.nonzero(groups[over])[:, 1].split(sizes[over].tolist())  # each capped arm's, in arm order
        draws = [u[torch.randint(len(u), (cap,), generator=self.generators[m], device=self.device)] for u in users]
        groups[over] = False
        groups[over.repeat_interleave(cap), torch.cat(draws)] = True
        groups[over, user] = True
        return groups

    # (2) meta adaptation, Alg. 2 for all K arms in one vectorised step
    def _adapt(self, groups: torch.Tensor) -> torch.Tensor:
        """Alg. 2 for every member and arm [M, K, p]; each member draws its samples from its own stream."""
        weights = torch.stack([self._weights(m, member_groups) for m, member_groups in enumerate(groups)])
        eta2 = torch.tensor(self.eta2, dtype=torch.float32, device=self.device)[:, None, None]
        return meta_adapt(self.mlp, self.Theta, weights, self._draw, eta2, self.meta_steps)

    def _user_side(self, m: int, user: int) -> float:
        """sqrt((S+1)/(2μ)) + sqrt(2 log(1/δ)/μ) with μ = μ^{u_t}_{t−1} (at least 1): the same for every arm."""
        mu = max(int(self.users[m].mu[user]), 1)
        return np.sqrt((float(self.S[m]) + 1) / (2 * mu)) + np.sqrt(2 * np.log(1 / float(self.delta[m])) / mu)

    def _weights(self, m: int, groups: torch.Tensor) -> torch.Tensor:
        """w_iu = 1/|N̂_i| for the users of arm i's group with data (the mean over N̂_i), 0 elsewhere: [K, n]."""
        with_data = (groups & (self.users[m].mu > 0)).float()
        return with_data / with_data.sum(1, keepdim=True).clamp_min(1)

    def _draw(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One sample (x_u, r_u) from every member's users' T^u, zeros for users without data: x [M, n, d], r [M, n]."""
        xs = torch.zeros(len(self.users), self.n_users, self.mlp.dim, device=self.device)
        rs = torch.zeros(len(self.users), self.n_users, device=self.device)
        for m, users in enumerate(self.users):
            data_users = torch.nonzero(users.mu > 0).flatten()
            if len(data_users):
                x, r = users.history.sample(data_users, 1, self.generators[m])
                xs[m, data_users], rs[m, data_users] = x[:, 0], r[:, 0]
        return xs, rs

    def _adapt_code(self, groups: torch.Tensor) -> torch.Tensor:
        """The code's adaptation (members stacked, arm by arm, in one loop): per arm, plain-SGD (lr 1e-2) single-sample
        steps over passes of the pooled data of the arm's group, reshuffled every pass, until 100 steps or a pass's
        mean loss ≤ 1e-3; in place on Θ and cumulative across arms; the last arm's group is kept. → Θ for every
        member and arm [M, K, p]."""
        M, K = groups.shape[:2]
        for i in range(K):
            with_data = [torch.nonzero(groups[m, i] & (users.mu > 0)).flatten() for m, users in enumerate(self.users)]
            stepping = [m for m in range(M) if len(with_data[m])]
            if stepping:
                self.Theta[stepping] = neural.train_passes_each(
                    self.mlp,
                    self.Theta[stepping],
                    [self.users[m].history.of(with_data[m]) for m in stepping],
                    [self.generators[m] for m in stepping],
                    lr=1e-2,
                    optimiser="sgd",
                    max_steps=100,
                    reshuffle=True,
                )
        self._code_group = [member_groups[-1].clone() for member_groups in groups]
        return self.Theta[:, None].expand(M, K, -1)

    # (3) the UCB's estimate and meta-side gradient distance
    def _estimates_and_distances(self, thetas: torch.Tensor, x: torch.Tensor):
        """f(x_i; Θ_{t,i}) and ‖g(x_i; Θ_{t,i}) − g(x_i; Θ_0)‖ for every member's arms (thetas [M, K, p], x [M, K, d]):
        one per-arm call on the 2K networks and inputs, or in block mode one per-arm call and one of Θ_0, compared
        layer by layer without the gradient rows (``ArmGradients.distances``; the rows would be 2K × 784 100 numbers
        on MNIST)."""
        K, p = thetas.shape[-2:]
        if self.block is not None and self.mlp.gradients == "closed":
            adapted = neural.ArmGradients(self.mlp, thetas.reshape(-1, p), x.reshape(-1, x.shape[-1]))
            distances = adapted.distances(neural.ArmGradients(self.mlp, self.Theta0, x))
            return adapted.f.reshape(thetas.shape[:-1]), distances.reshape(thetas.shape[:-1])
        starts = self.Theta0[..., None, :].expand(thetas.shape)
        arms = neural.ArmGradients(
            self.mlp, torch.cat([thetas, starts], -2).reshape(-1, p), torch.cat([x, x], -2).reshape(-1, x.shape[-1])
        )
        G = arms.rows().reshape(*thetas.shape[:-2], 2 * K, p)
        return arms.f.reshape(*thetas.shape[:-2], 2 * K)[..., :K], (G[..., :K, :] - G[..., K:, :]).norm(dim=-1)

    def _code_exploration(self, thetas: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``code_exploration``'s estimate f(x_i; Θ_{t,i}) and bonus sqrt(ν)·‖g(x_i; Θ_{t,i})‖ for every arm: thetas
        [..., K, p], x [..., K, d]."""
        arms = neural.ArmGradients(self.mlp, thetas.reshape(-1, thetas.shape[-1]), x.reshape(-1, x.shape[-1]))
        shape = thetas.shape[:-1]
        return arms.f.reshape(shape), self.code_nu**0.5 * arms.rows().norm(dim=1).reshape(shape)

    def select(self, views, budgets):
        x, groups, served = self._clustered(views)
        thetas = self._adapted(views[0].t, groups)
        chosen = torch.argmax(self._ucb(served, x, thetas), dim=-1).tolist()
        self._picked = []
        for m, arm in enumerate(chosen):
            if self.meta_every_10th_in_place:
                group = groups[m, arm] if self._code_group[m] is None else self._code_group[m]
            else:
                self.Theta[m] = thetas[m, arm]  # line 13: Θ_t = Θ_{t,î}
                group = groups[m, arm]
            self._picked.append((group, self._sample(x[m], arm), arm))
        return chosen

    def scores(self, views) -> torch.Tensor:
        """The UCB of every member's arms [M, K], of which ``select`` plays the largest; computed on a copy of the
        policy, because adapting Θ and counting the user's visits are part of choosing."""
        twin = copy.deepcopy(self)
        x, groups, served = twin._clustered(views)
        return twin._ucb(served, x, twin._adapted(views[0].t, groups))

    def _adapted(self, t: int, groups: torch.Tensor) -> torch.Tensor:
        """(2) Θ_{t,i} for every member and arm i, [M, K, p]."""
        t0 = time.perf_counter()
        if not self.meta_every_10th_in_place:
            thetas = self._adapt(groups)
        elif t % 10 == 0:
            thetas = self._adapt_code(groups)
        else:
            thetas = self.Theta[:, None].expand(*groups.shape[:2], -1)
        self._time("meta_adaptation", t0)
        return thetas

    def _clustered(self, views) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
        """Every member's arms x [M, K, d], (1) their groups [M, K, n] and the served users [M]."""
        arms, served = self.read_arms(views)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        if self.block is None:  # block mode (``neural.start_blocks``): the user-learners' histories keep each block
            for users in self.users:
                self.block, users.history = neural.start_blocks(self, views[0], users.history)
        t0 = time.perf_counter()
        groups = self._clusters(served, x)
        self._time("clustering", t0)
        return x, groups, served

    def _time(self, name: str, since: float) -> None:
        """The seconds since ``since`` as every member's share of the component ``name``."""
        self.last_timings[name][:] = (time.perf_counter() - since) / len(self.users)

    def _ucb(self, served: np.ndarray, x: torch.Tensor, thetas: torch.Tensor) -> torch.Tensor:
        """(3) the UCB with the adapted Θ_{t,i}, every member's arms at once [M, K] (u_t's visit counted)."""
        at = self.at(served)
        self.served[at] += 1
        if self.code_exploration:
            if self.block is None:
                f, self.bonus = self._code_exploration(thetas, x)
            else:  # a member at a time: every arm's gradient row has 784 100 numbers on MNIST
                f, self.bonus = (torch.stack(part) for part in zip(*map(self._code_exploration, thetas, x)))
            return f + self.bonus + (self.code_nu * (1.0 / self.served[at].float()).sqrt())[:, None]
        f, distances = self._estimates_and_distances(thetas, x)  # f(x_i; Θ_{t,i}), ‖g − g(x_i; Θ_0)‖
        alpha = torch.tensor(self.alpha, dtype=torch.float32, device=self.device)[:, None]
        self.bonus = alpha * distances / self.mlp.width**0.25
        user_side = [self._user_side(m, int(user)) for m, user in enumerate(served)]
        return f + self.bonus + torch.tensor(user_side, dtype=f.dtype, device=f.device)[:, None]

    def update(self, views, chosen, rewards):
        t0 = time.perf_counter()
        for users, view, (group, x, arm), reward in zip(self.users, views, self._picked, rewards):
            # lines 14–17 (every user of N̂_{u_t}(x_t)) or u_t only
            sharing = torch.nonzero(group).flatten() if self.share_with_cluster else torch.tensor([view.user])
            users.history.add(sharing.to(self.device), x, reward, arm)
        if neural.is_training_round(views[0].t, self.schedule):  # the schedule depends on t only: every member's
            if self.code_training:
                self._train_code([view.user for view in views])
            else:
                neural.train_learners(self.users, [None] * len(self.users))
                self._train_meta()
        self._time("user_training", t0)

    def _train_meta(self) -> None:
        if self.meta_pooled_training:  # Adam on every user's data pooled
            for m, (users, generator) in enumerate(zip(self.users, self.generators)):
                history = users.history
                shape = (self.train_steps, 1, self.batch_size)
                pick = torch.randint(history.size, shape, generator=generator, device=self.device)
                batches = ((history.inputs(rows), neural.take(history.r, rows)) for rows in pick)
                self.Theta[m] = neural.train_adam(self.mlp, self.Theta[m : m + 1], batches, lr=self.lr)[0]

    def _train_code(self, served: list[int]) -> None:
        """``code_training`` (members stacked in one loop): Θ on the pooled data (with ``meta_pooled_training``), then
        u_t's learner alone (u_t has just observed, so neither is empty)."""
        if self.meta_pooled_training:
            self.Theta[:] = neural.train_passes_each(
                self.mlp,
                self.Theta,
                [users.history.all_rows() for users in self.users],
                self.generators,
                lr=self.lr,
                optimiser="adam",
                max_steps=1000,
                reshuffle=True,
            )
        neural.train_learners_by_passes(self.users, served, [None] * len(self.users), max_steps=500)

    def sharing_graph(self, m):
        return self.users[m].agreement_graph(float(self.threshold[m]))

    def clusters(self, m):
        return neural.connected_labels(self.sharing_graph(m))
