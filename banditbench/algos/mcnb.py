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
from banditbench.algos.base import Policy
from banditbench.algos.neural import (
    MLP,
    NETWORK_CODE,
    NETWORK_DOMAINS,
    SCHEDULES,
    ArmGradients,
    TrainingLockstep,
    UserLearners,
    arm_blocks,
    arm_inputs,
    check_choice,
    connected_labels,
    is_training_round,
    resolve_device,
    start_blocks,
    take,
    torch_generator,
    train_adam,
    train_learners,
    train_learners_by_passes,
    train_passes_each,
)


def meta_adapt(mlp: MLP, Theta: torch.Tensor, weights: torch.Tensor, draw, eta2, steps: int) -> torch.Tensor:
    """Alg. 2 for every arm, members of a lockstep group stacked on the leading axis: from Θ [S, p], ``steps`` times
    Θ_{t,i} ← Θ_{t,i} − η₂ Σ_u w_iu ∇ ½(f(x_u; Θ_{t,i}) − r_u)² with weights [S, K, n] and one sample per user from
    ``draw()`` (x [S, n, d], r [S, n]). Every arm starts from Θ_{t−1}, so the first step backpropagates once for
    all arms; Σ_u w_iu ∇_u is assembled per layer as Σ_u w_iu δ_u h_uᵀ. η₂: a scalar or [S, 1, 1]. → [S, K, p]."""
    S, K, _ = weights.shape
    thetas = Theta[:, None, :]
    for _ in range(steps):
        xs, rs = draw()
        _, hs, deltas = mlp.backprop(thetas, xs[:, None], lambda f: f - rs[:, None])  # δ [S, 1 or K, n, out]
        step = torch.empty(S, K, mlp.p, device=Theta.device)
        for (W_grad, b_grad), delta, h in zip(mlp.layers(step), deltas, hs):
            weighted = weights[..., None] * delta  # [S, K, n, out]
            W_grad.copy_(weighted.mT @ h)
            if b_grad is not None:
                b_grad.copy_(weighted.sum(-2, keepdim=True))
        thetas = torch.sub(thetas, step.mul_(eta2), out=step)  # Θ − η₂·step in step's memory, the same numbers
    return thetas.expand(-1, K, -1)


class MCNB(Policy):
    timing_columns = ("clustering", "meta_adaptation", "user_training")  # M-CNB Table 1's split
    member_params = ("gamma", "nu", "S", "delta", "eta2", "alpha")  # per member: its clusters, meta step, UCB

    domains = {
        **NETWORK_DOMAINS,
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
        **NETWORK_CODE,
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

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        gamma: float = 0.4,
        nu: float = 5.0,
        S: float = 1.0,
        delta: float = 0.1,
        eta2: float = 0.05,
        meta_steps: int = 1,
        alpha: float = 1.0,
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
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.threshold = (nu - 1.0) / nu * gamma  # 0.32 with the paper's ν = 5, γ = 0.4
        self.gamma, self.code_threshold, self.share_with_cluster = gamma, code_threshold, share_with_cluster
        self.S, self.delta, self.eta2, self.meta_steps, self.alpha = S, delta, eta2, meta_steps, alpha
        self.lr, self.train_steps, self.batch_size = lr, train_steps, batch_size
        self.meta_every_10th_in_place, self.group_cap = meta_every_10th_in_place, group_cap
        self.code_exploration, self.code_nu, self.meta_pooled_training = code_exploration, code_nu, meta_pooled_training
        self.code_training = code_training
        self.device = resolve_device(device)
        self.generator = torch_generator(seed, self.device, threads)
        self.mlp = MLP(dim, width, depth, bias, init, gradients)
        self.Theta0 = self.mlp.init(self.generator, self.device)  # frozen, for g(x; Θ_0)
        self.Theta = self.Theta0.clone()
        self.users = UserLearners(
            self.mlp, self.Theta0, n_users, self.generator, lr=lr, steps=train_steps, batch_size=batch_size
        )
        self.served = torch.zeros(n_users, dtype=torch.long, device=self.device)  # code's per-user select count
        self.last_timings = {name: 0.0 for name in self.timing_columns}
        self.bonus: torch.Tensor | None = None  # last round's meta-side exploration bonus per arm
        self._group: torch.Tensor | None = None
        self._code_group: torch.Tensor | None = None
        self._arm = 0
        self.blocks = True  # keep block-encoded samples per block and cluster on them; False: dense throughout
        self.block: int | None = None  # the block width once a block-encoded first round is seen, else None

    def _start_blocks(self, view) -> None:
        """On the first round of block-encoded contexts (arm a in block a): the user-learners' histories keep each
        sample's block, so they train per block, and the clustering reads each arm through its block's columns of
        W_1 (``neural.BlockRows``). The meta step and the UCB read the dense contexts."""
        self.block, self.users.history = start_blocks(self, view, self.users.history)

    def _sample(self, x: torch.Tensor, arm: int) -> torch.Tensor:
        """Arm ``arm``'s context as the history keeps it: dense, or its block."""
        return x[arm] if self.block is None else arm_blocks(x, self.block)[arm]

    def _arms_input(self, x: torch.Tensor):
        """x [..., K, d] for the user-learners: dense, or each arm's block as ``BlockRows``."""
        return x if self.block is None else arm_inputs(arm_blocks(x, self.block), self.block)

    # (1) user clustering, all arms at once
    def _clusters(self, user: int, x: torch.Tensor) -> torch.Tensor:
        P = self.users.predict(self._arms_input(x))
        if self.code_threshold:
            groups = self.users.groups(P, user, self.gamma, strict=True)
        else:
            groups = self.users.groups(P, user, self.threshold)
        if self.group_cap:
            groups = self._cap(groups, user)
        return groups

    def _cap(self, groups: torch.Tensor, user: int) -> torch.Tensor:
        """The code's cap: more than n/5 members → n/5 drawn with replacement (so fewer distinct), plus u_t."""
        cap = max(1, self.n_users // 5)
        sizes = groups.sum(1)
        over = torch.nonzero(sizes > cap).flatten()
        if len(over) == 0:
            return groups
        members = torch.nonzero(groups[over])[:, 1].split(sizes[over].tolist())  # each capped arm's, in arm order
        draws = [m[torch.randint(len(m), (cap,), generator=self.generator, device=self.device)] for m in members]
        groups[over] = False
        groups[over.repeat_interleave(cap), torch.cat(draws)] = True
        groups[over, user] = True
        return groups

    # (2) meta adaptation, Alg. 2 for all K arms in one vectorised step
    def _adapt(self, groups: torch.Tensor) -> torch.Tensor:
        def draw():
            xs, rs = self._draw()
            return xs[None], rs[None]

        return meta_adapt(self.mlp, self.Theta[None], self._weights(groups)[None], draw, self.eta2, self.meta_steps)[0]

    def _user_side(self, user: int) -> float:
        """sqrt((S+1)/(2μ)) + sqrt(2 log(1/δ)/μ) with μ = μ^{u_t}_{t−1} (at least 1): the same for every arm."""
        mu = max(int(self.users.mu[user]), 1)
        return np.sqrt((self.S + 1) / (2 * mu)) + np.sqrt(2 * np.log(1 / self.delta) / mu)

    def _weights(self, groups: torch.Tensor) -> torch.Tensor:
        """w_iu = 1/|N̂_i| for the members of arm i's group with data (the mean over N̂_i), 0 elsewhere: [K, n]."""
        members = (groups & (self.users.mu > 0)).float()
        return members / members.sum(1, keepdim=True).clamp_min(1)

    def _draw(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One sample (x_u, r_u) from each user's T^u, zeros for users without data: x [n, d], r [n]."""
        xs = torch.zeros(self.n_users, self.mlp.dim, device=self.device)
        rs = torch.zeros(self.n_users, device=self.device)
        data_users = torch.nonzero(self.users.mu > 0).flatten()
        if len(data_users):
            x, r = self.users.history.sample(data_users, 1, self.generator)
            xs[data_users], rs[data_users] = x[:, 0], r[:, 0]
        return xs, rs

    def _adapt_code(self, groups: torch.Tensor) -> torch.Tensor:
        return self._adapt_code_each([self], [groups])[0]

    @staticmethod
    def _adapt_code_each(policies: list[MCNB], groups_each: list[torch.Tensor]) -> list[torch.Tensor]:
        """The code's adaptation of each policy (a lockstep group's members stacked, arm by arm, in one loop): per
        arm, plain-SGD (lr 1e-2) single-sample steps over passes of the pooled data of the arm's group, reshuffled
        every pass, until 100 steps or a pass's mean loss ≤ 1e-3; in place on Θ and cumulative across arms; the
        last arm's group is kept. → each policy's Θ for every arm [K, p]."""
        K = groups_each[0].shape[0]
        for i in range(K):
            stepping, samples = [], []
            for policy, groups in zip(policies, groups_each):
                members = torch.nonzero(groups[i] & (policy.users.mu > 0)).flatten()
                if len(members):
                    stepping.append(policy)
                    samples.append(policy.users.history.of(members))
            if not stepping:
                continue
            trained = train_passes_each(
                stepping[0].mlp,
                torch.stack([policy.Theta for policy in stepping]),
                samples,
                [policy.generator for policy in stepping],
                lr=1e-2,
                optimiser="sgd",
                max_steps=100,
                reshuffle=True,
            )
            for policy, Theta in zip(stepping, trained):
                policy.Theta = Theta
        for policy, groups in zip(policies, groups_each):
            policy._code_group = groups[-1].clone()
        return [policy.Theta.expand(K, -1) for policy in policies]

    # (3) the UCB's estimate and meta-side gradient distance
    def _estimates_and_distances(self, thetas: torch.Tensor, Theta0: torch.Tensor, x: torch.Tensor):
        """f(x_i; Θ_{t,i}) and ‖g(x_i; Θ_{t,i}) − g(x_i; Θ_0)‖ for every arm (members of a lockstep group stacked on
        the leading axis: thetas [..., K, p], Θ_0 [..., p], x [..., K, d]): one per-arm call on the 2K networks and
        inputs, or in block mode one per-arm call and one of Θ_0, compared layer by layer without the gradient rows
        (``ArmGradients.distances``; the rows would be 2K × 784 100 numbers on MNIST)."""
        K, p = thetas.shape[-2:]
        if self.block is not None and self.mlp.gradients == "closed":
            adapted = ArmGradients(self.mlp, thetas.reshape(-1, p), x.reshape(-1, x.shape[-1]))
            distances = adapted.distances(ArmGradients(self.mlp, Theta0, x))
            return adapted.f.reshape(thetas.shape[:-1]), distances.reshape(thetas.shape[:-1])
        starts = Theta0[..., None, :].expand(thetas.shape)
        arms = ArmGradients(
            self.mlp, torch.cat([thetas, starts], -2).reshape(-1, p), torch.cat([x, x], -2).reshape(-1, x.shape[-1])
        )
        G = arms.rows().reshape(*thetas.shape[:-2], 2 * K, p)
        return arms.f.reshape(*thetas.shape[:-2], 2 * K)[..., :K], (G[..., :K, :] - G[..., K:, :]).norm(dim=-1)

    def _code_exploration(self, thetas: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``code_exploration``'s estimate f(x_i; Θ_{t,i}) and bonus sqrt(ν)·‖g(x_i; Θ_{t,i})‖ for every arm: thetas
        [..., K, p], x [..., K, d] (members of a lockstep group stacked on the leading axis)."""
        arms = ArmGradients(self.mlp, thetas.reshape(-1, thetas.shape[-1]), x.reshape(-1, x.shape[-1]))
        shape = thetas.shape[:-1]
        return arms.f.reshape(shape), self.code_nu**0.5 * arms.rows().norm(dim=1).reshape(shape)

    def select(self, view, budget):
        x, groups = self._clustered(view)
        return self._choose(view, x, groups, self._adapted(view, x, groups))

    def scores(self, view) -> torch.Tensor:
        """The UCB of every arm of the round, of which ``select`` plays the largest; computed on a copy of the policy,
        because adapting Θ and counting the user's visits are part of choosing."""
        twin = copy.deepcopy(self)
        x, groups = twin._clustered(view)
        return twin._ucb(view.user, x, twin._adapted(view, x, groups))

    def _adapted(self, view, x: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """(2) Θ_{t,i} for every arm i."""
        t0 = time.perf_counter()
        if self.meta_every_10th_in_place:
            thetas = self._adapt_code(groups) if view.t % 10 == 0 else self.Theta.expand(len(x), -1)
        else:
            thetas = self._adapt(groups)
        self.last_timings["meta_adaptation"] = time.perf_counter() - t0
        return thetas

    def _clustered(self, view) -> tuple[torch.Tensor, torch.Tensor]:
        """The round's arms x [K, d] and (1), their groups [K, n]."""
        x = torch.tensor(view.arms[:], dtype=torch.float32, device=self.device)
        if self.block is None:
            self._start_blocks(view)
        t0 = time.perf_counter()
        groups = self._clusters(view.user, x)
        self.last_timings["clustering"] = time.perf_counter() - t0
        return x, groups

    def _ucb(self, user: int, x: torch.Tensor, thetas: torch.Tensor) -> torch.Tensor:
        """(3) the UCB with the adapted Θ_{t,i}, every arm at once (u_t's visit counted)."""
        self.served[user] += 1
        if self.code_exploration:
            f, self.bonus = self._code_exploration(thetas, x)
            return f + self.bonus + self.code_nu * (1.0 / self.served[user].float()).sqrt()
        f, distances = self._estimates_and_distances(thetas, self.Theta0, x)  # f(x_i; Θ_{t,i}), ‖g − g(x_i; Θ_0)‖
        self.bonus = self.alpha * distances / self.mlp.width**0.25
        return f + self.bonus + self._user_side(user)

    def _choose(self, view, x: torch.Tensor, groups: torch.Tensor, thetas: torch.Tensor) -> int:
        """The arm of the largest UCB, and what ``update`` needs of it."""
        chosen = int(torch.argmax(self._ucb(view.user, x, thetas)))
        if not self.meta_every_10th_in_place:
            self.Theta = thetas[chosen].clone()  # line 13: Θ_t = Θ_{t,î}
        self._group = (
            self._code_group if (self.meta_every_10th_in_place and self._code_group is not None) else groups[chosen]
        )
        self._x, self._arm = self._sample(x, chosen), chosen
        return chosen

    def update(self, view, chosen, reward):
        t0 = time.perf_counter()
        self._observe(view, reward)
        if is_training_round(view.t, self.schedule):
            if self.code_training:
                self._train_code(view.user)
            else:
                self.users.train()
                self._train_meta()
        self.last_timings["user_training"] = time.perf_counter() - t0

    def _observe(self, view, reward) -> None:
        members = (
            torch.nonzero(self._group).flatten()
            if self.share_with_cluster
            else torch.tensor([view.user], device=self.device)
        )
        self.users.add(members, self._x, reward, self._arm)  # lines 14–17 (every member of N̂_{u_t}(x_t)) or u_t only

    def _train_meta(self) -> None:
        if self.meta_pooled_training:
            history = self.users.history
            pick = torch.randint(
                history.size, (self.train_steps, 1, self.batch_size), generator=self.generator, device=self.device
            )  # Adam on every user's data pooled
            batches = ((history.inputs(rows), take(history.r, rows)) for rows in pick)
            self.Theta = train_adam(self.mlp, self.Theta[None], batches, lr=self.lr)[0]

    def _train_code(self, user: int) -> None:
        self._train_code_each([self], [user])

    @staticmethod
    def _train_code_each(policies: list[MCNB], users: list[int]) -> None:
        """``code_training`` of each policy (a lockstep group's members stacked in one loop): Θ on the pooled data
        (with ``meta_pooled_training``), then u_t's learner alone (u_t has just observed, so neither is empty)."""
        first = policies[0]
        if first.meta_pooled_training:
            trained = train_passes_each(
                first.mlp,
                torch.stack([policy.Theta for policy in policies]),
                [policy.users.history.all_rows() for policy in policies],
                [policy.generator for policy in policies],
                lr=first.lr,
                optimiser="adam",
                max_steps=1000,
                reshuffle=True,
            )
            for policy, Theta in zip(policies, trained):
                policy.Theta = Theta
        learners = [policy.users for policy in policies]
        train_learners_by_passes(learners, users, [None] * len(policies), max_steps=500)

    @classmethod
    def lockstep(cls, policies):
        return MCNBLockstep(policies)

    def sharing_graph(self):
        return self.users.agreement_graph(self.threshold)

    def clusters(self):
        return connected_labels(self.users.agreement_graph(self.threshold))


class MCNBLockstep(TrainingLockstep):
    """M-CNB's members in lockstep (seeds, and grid cells of γ, ν, S, δ, η₂ and α): every member's meta step and UCB
    in one batched pass each (the meta networks stacked [S, p]), each member's clustering from one forward pass of
    its own user-learners, and on a training round every member's user-learners trained in one Adam call. With the
    authors' switches, each member caps its groups alone (``group_cap``, from its own generator), the adaptations of
    every 10th round run as one loop (``meta_every_10th_in_place``), and so do the training loops
    (``code_training``). Times are the group's, shared equally."""

    def __init__(self, policies: list[MCNB]):
        super().__init__(policies)
        first = policies[0]

        def column(values):
            return torch.tensor(values, device=first.device)[:, None, None]

        self.threshold = column([p.gamma if p.code_threshold else p.threshold for p in policies])
        self.eta2 = column([p.eta2 for p in policies])
        self.alpha = column([p.alpha for p in policies])[:, 0]

    def select(self, views, budgets):
        clock = time.perf_counter
        policies, first = self.policies, self.policies[0]
        users = torch.tensor([view.user for view in views], device=first.device)
        x = torch.stack([torch.tensor(view.arms[:], dtype=torch.float32, device=first.device) for view in views])
        for policy, view in zip(policies, views):
            if policy.block is None:
                policy._start_blocks(view)
        S, K = x.shape[:2]
        t0 = clock()
        groups = self._clusters(users, x)  # [S, K, n]
        if first.group_cap:
            for policy, member_groups, view in zip(policies, groups, views):
                policy._cap(member_groups, view.user)  # in place, from the member's own generator
        t1 = clock()
        if not first.meta_every_10th_in_place:
            thetas = self._adapt(groups)  # [S, K, p]
        elif views[0].t % 10 == 0:
            thetas = torch.stack(MCNB._adapt_code_each(policies, list(groups)))
        else:
            thetas = torch.stack([policy.Theta for policy in policies])[:, None].expand(S, K, -1)
        t2 = clock()
        for policy, view in zip(policies, views):
            policy.served[view.user] += 1
        if first.code_exploration:
            if first.block is None:
                f, bonus = first._code_exploration(thetas, x)
            else:  # a member at a time: every arm's gradient row has 784 100 numbers on MNIST
                f, bonus = (torch.stack(part) for part in zip(*map(first._code_exploration, thetas, x)))
            served = torch.stack([policy.served[view.user] for policy, view in zip(policies, views)]).float()
            ucb = f + bonus + (first.code_nu * (1.0 / served).sqrt())[:, None]
        else:
            Theta0 = torch.stack([policy.Theta0 for policy in policies])
            f, distances = first._estimates_and_distances(thetas, Theta0, x)
            bonus = self.alpha * distances / first.mlp.width**0.25
            user_side = [policy._user_side(view.user) for policy, view in zip(policies, views)]
            ucb = f + bonus + torch.tensor(user_side, dtype=f.dtype, device=f.device)[:, None]
        chosen = torch.argmax(ucb, dim=-1).tolist()
        for i, (policy, arm) in enumerate(zip(policies, chosen)):
            policy.bonus = bonus[i]
            if first.meta_every_10th_in_place:
                policy._group = groups[i, arm] if policy._code_group is None else policy._code_group
            else:
                policy.Theta = thetas[i, arm].clone()  # line 13: Θ_t = Θ_{t,î}
                policy._group = groups[i, arm]
            policy._x, policy._arm = policy._sample(x[i], arm), arm
            policy.last_timings["clustering"] = (t1 - t0) / S
            policy.last_timings["meta_adaptation"] = (t2 - t1) / S
        return chosen

    def _clusters(self, users: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Eq. 3 for every member and arm, from every user-learner's estimates, one forward pass per member (one
        pass over the stacked [S, n, p] learners costs more: stacking them copies every member's networks)."""
        policies = self.policies
        P = torch.stack([policy.users.predict(policy._arms_input(xs)) for policy, xs in zip(policies, x)])  # [S, n, K]
        own = P[torch.arange(len(users)), users]  # [S, K]
        gap = (P - own[:, None, :]).abs().mT  # [S, K, n]
        return gap < self.threshold if policies[0].code_threshold else gap <= self.threshold

    def _adapt(self, groups: torch.Tensor) -> torch.Tensor:
        """Alg. 2 for every member and arm; each member draws its samples from its own stream, as alone."""
        policies = self.policies

        def draw():
            xs, rs = zip(*(policy._draw() for policy in policies))
            return torch.stack(xs), torch.stack(rs)

        weights = torch.stack([policy._weights(member) for policy, member in zip(policies, groups)])
        Theta = torch.stack([policy.Theta for policy in policies])
        return meta_adapt(policies[0].mlp, Theta, weights, draw, self.eta2, policies[0].meta_steps)

    def update(self, views, chosen, rewards):
        t0 = time.perf_counter()
        super().update(views, chosen, rewards)
        seconds = (time.perf_counter() - t0) / len(self.policies)
        for policy in self.policies:
            policy.last_timings["user_training"] = seconds

    def train_together(self, views) -> None:
        train_learners([policy.users for policy in self.policies], [None] * len(self.policies))
        for policy in self.policies:
            policy._train_meta()
