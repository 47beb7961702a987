"""NeuralLinear with clustering, the M-CNB baseline (KDD 2024 §6, after Zahavy & Mannor 2019; Nabati et al. 2021):
"A shared neural network is built for all users to get an embedding for each arm, which is fed into the
linear bandit with the clustering procedure."

The paper names neither the clustering procedure nor the embedding's refresh; our documented choices:
  embedding   φ(x) = the last hidden layer σ(W_{L−1} … σ(W_1 x)) ∈ R^m of one network trained on every
              user's data (squared loss, Adam, M-CNB §6's schedule), as in Zahavy & Mannor;
  linear part CLUB (Gentile, Li & Zappella, ICML 2014) on φ: per-user ridge statistics A_u = λI + Σ φφᵀ,
              b_u = Σ rφ; a user graph, complete at the start, loses edge (u_t, j) when
              ‖w_{u_t} − w_j‖ > α₂ (CB(T_{u_t}) + CB(T_j)), CB(T) = sqrt((1 + ln(1 + T)) / (1 + T));
              u_t's cluster is its connected component C, scored with
              U = φᵀ w_C + α sqrt(φᵀ A_C⁻¹ φ · ln(t + 1)),  A_C = λI + Σ_{j∈C}(A_j − λI),  b_C = Σ_{j∈C} b_j;
  refresh     after every training of the network, every A_u and b_u is rebuilt from the stored history
              with the new embedding (Zahavy & Mannor's recomputation), in one batched call; the graph keeps
              its deleted edges.

Block-encoded contexts (the classification protocol's, arm a in block a, as the round declares): the history keeps
each sample's block, and the network reads and trains on the blocks through W_1's columns of each block only
(``neural.BlockRows``): the embedding of the dense computation up to rounding. The attribute ``blocks`` set to
False keeps the dense input.
"""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos.base import Lockstep, Policy
from banditbench.algos.graphs import dense_components
from banditbench.algos.neural import (
    MLP,
    NETWORK_CODE,
    NETWORK_DOMAINS,
    SCHEDULES,
    History,
    TrainingJob,
    arm_blocks,
    arm_inputs,
    check_choice,
    group_by_block,
    is_training_round,
    resolve_device,
    start_blocks,
    torch_generator,
    train_jobs,
)
from banditbench.errors import UserError


def cholesky(A: torch.Tensor) -> torch.Tensor:
    """The lower Cholesky factor L of SPD matrices A [..., m, m] (A = LLᵀ). On the CPU through numpy's LAPACK: for
    the 100 × 100 statistics here it factors in 0.6 of torch's time, and half the time of the LU behind
    ``torch.linalg.solve``."""
    try:
        if A.device.type == "cpu":
            return torch.from_numpy(np.linalg.cholesky(A.numpy()))
        return torch.linalg.cholesky(A)
    except (np.linalg.LinAlgError, torch.linalg.LinAlgError):
        raise UserError(
            "neurallinear's statistics λI + Σ φφᵀ are not positive definite in float64: its lam is too small for "
            "them; set a larger neurallinear.lam"
        ) from None


def spd_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A⁻¹b for SPD A [..., m, m] and b [..., m], through A = LLᵀ: two triangular solves."""
    L = cholesky(A)
    y = torch.linalg.solve_triangular(L, b[..., None], upper=False)
    return torch.linalg.solve_triangular(L.mT, y, upper=True)[..., 0]


def user_grams(phi: torch.Tensor, users: torch.Tensor, n_users: int, lam: float) -> torch.Tensor:
    """A_u = λI + Φ_uᵀΦ_u for every user u, Φ_u the rows of φ [n, m] whose user [n] is u: one product per user over
    the rows grouped by user (no [n, m, m] outer products), through numpy, whose matmul computes ΦᵀΦ as a symmetric
    rank-k update in 0.6 of torch's time."""
    grouped = phi[torch.argsort(users, stable=True)].cpu().numpy()
    ends = np.cumsum(torch.bincount(users, minlength=n_users).tolist())
    A = np.zeros((n_users, phi.shape[1], phi.shape[1]))
    for u, rows in enumerate(np.split(grouped, ends[:-1])):
        np.matmul(rows.T, rows, out=A[u])
    A = torch.from_numpy(A).to(phi.device)
    A.diagonal(dim1=-2, dim2=-1).add_(lam)
    return A


def cluster_ucb(phi, gram, b_C, lam, alpha, t: int) -> torch.Tensor:
    """U = φᵀ w_C + α sqrt(φᵀ A_C⁻¹ φ · ln(t + 1)) for every arm, with A_C = λI + gram and w_C = A_C⁻¹ b_C; members
    of a lockstep group stacked on the leading axis (φ [S, k, m], gram [S, m, m], b_C [S, m]; λ and α scalars or
    [S] tensors). With A_C = LLᵀ, y_i = L⁻¹φ_i and y_b = L⁻¹b_C: φ_iᵀA_C⁻¹φ_i = ‖y_i‖² and φ_iᵀw_C = y_iᵀy_b, so one
    factorisation and one triangular solve give every arm's score."""
    lam, alpha = (torch.as_tensor(v, dtype=torch.float64, device=phi.device) for v in (lam, alpha))
    A_C = torch.eye(phi.shape[-1], dtype=torch.float64, device=phi.device) * lam.reshape(-1, 1, 1) + gram
    y = torch.linalg.solve_triangular(cholesky(A_C), torch.cat([phi.mT, b_C[..., None]], dim=-1), upper=False)
    y_arms, y_b = y[..., :-1], y[..., -1:]
    width = y_arms.square().sum(-2) * np.log(t + 2)
    return (y_arms * y_b).sum(-2) + alpha.reshape(-1, 1) * width.sqrt()


def confidence(count: torch.Tensor) -> torch.Tensor:
    """CLUB's CB(T) = sqrt((1 + ln(1 + T)) / (1 + T))."""
    count = count.double()
    return ((1 + torch.log1p(count)) / (1 + count)).sqrt()


class NeuralLinear(Policy):
    member_params = ("alpha", "alpha2", "lam")  # per member: its exploration, cluster test and ridge
    domains = {**NETWORK_DOMAINS, "alpha": d.NON_NEGATIVE, "alpha2": d.NON_NEGATIVE, "lam": d.POSITIVE}
    authors_code = NETWORK_CODE

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seed,
        alpha: float = 0.1,
        alpha2: float = 1.0,
        lam: float = 1.0,
        width: int = 100,
        depth: int = 2,
        bias: bool = False,
        init: str = "paper",
        lr: float = 1e-2,
        train_steps: int = 50,
        batch_size: int = 32,
        schedule: str = "paper",
        device: str = "cpu",
        threads: int = 1,
    ):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.alpha, self.alpha2, self.lam = alpha, alpha2, lam
        self.lr, self.train_steps, self.batch_size = lr, train_steps, batch_size
        self.device = resolve_device(device)
        self.generator = torch_generator(seed, self.device, threads)
        self.mlp = MLP(dim, width, depth, bias, init)
        self.theta = self.mlp.init(self.generator, self.device)[None]
        self.history = History(1, dim, self.device)
        self.user_of_row = torch.zeros(1024, dtype=torch.long, device=self.device)
        m = width
        self.A = torch.eye(m, dtype=torch.float64, device=self.device).mul(lam).repeat(n_users, 1, 1)  # [n, m, m]
        self.b = torch.zeros(n_users, m, dtype=torch.float64, device=self.device)
        self.w = torch.zeros(n_users, m, dtype=torch.float64, device=self.device)
        self.count = torch.zeros(n_users, dtype=torch.long, device=self.device)
        self.graph = np.ones((n_users, n_users), dtype=bool)
        self._labels: np.ndarray | None = None  # connected components of the graph, None until first asked for
        # per component: Σ_{j∈C}(A_j − λI) and Σ_{j∈C} b_j, kept up to date until the components or embedding change
        self._component_A: torch.Tensor | None = None
        self._component_b: torch.Tensor | None = None
        self.one = torch.zeros(1, dtype=torch.long, device=self.device)
        self._arm = 0
        self.blocks = True  # read block-encoded contexts per block where the round declares them; False: dense
        self.block: int | None = None  # the block width once a block-encoded first round is seen, else None

    def _arms(self, view) -> torch.Tensor:
        """The round's arms as the history keeps them: x [K, d], or in block mode each arm's block [K, b] (decided
        on the first round of block-encoded contexts)."""
        x = torch.tensor(view.arms[:], dtype=torch.float32, device=self.device)
        if self.block is None:
            self.block, self.history = start_blocks(self, view, self.history)
        return x if self.block is None else arm_blocks(x, self.block)

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.mlp.embed(self.theta[0], x).double()

    def _component_sums(self, user: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_{j∈C}(A_j − λI) and Σ_{j∈C} b_j of u's component C, summed for every component once per change of the
        components or the embedding, then kept current by ``update``."""
        labels = self.clusters()
        if self._component_A is None:
            index = torch.as_tensor(labels, device=self.device)
            eye = torch.eye(self.A.shape[1], dtype=torch.float64, device=self.device) * self.lam
            n = int(labels.max()) + 1
            self._component_A = self.A.new_zeros(n, *self.A.shape[1:]).index_add_(0, index, self.A - eye)
            self._component_b = self.b.new_zeros(n, self.b.shape[1]).index_add_(0, index, self.b)
        component = int(labels[user])
        return self._component_A[component], self._component_b[component]

    def select(self, view, budget):
        x, phi, ucb = self._ucb(view)
        chosen = int(torch.argmax(ucb))
        self._x, self._phi, self._arm = x[chosen], phi[chosen], chosen
        return chosen

    def scores(self, view) -> torch.Tensor:
        """The upper confidence bound of every arm of the round, of which ``select`` plays the largest."""
        return self._ucb(view)[2]

    def _ucb(self, view) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The round's arms x, their embeddings φ and the UCB of each arm on its user's component's statistics."""
        x = self._arms(view)
        phi = self._embed(arm_inputs(x, self.block))
        gram, b_C = self._component_sums(view.user)
        return x, phi, cluster_ucb(phi[None], gram[None], b_C[None], self.lam, self.alpha, view.t)[0]

    def update(self, view, chosen, reward):
        self._observe(view, reward)
        if is_training_round(view.t, self.schedule):
            self._trained(*train_jobs(self.mlp, [self._training_job()], lr=self.lr))
        self._refit(view.user)

    def _observe(self, view, reward) -> None:
        u = view.user
        row = self.history.size
        self.history.add(0, self._x, reward, self._arm)
        if row == len(self.user_of_row):
            self.user_of_row = torch.cat([self.user_of_row, torch.zeros_like(self.user_of_row)])
        self.user_of_row[row] = u
        outer, gain = torch.outer(self._phi, self._phi), reward * self._phi
        self.A[u].add_(outer)  # an int index is a view: in place, no write-back
        self.b[u].add_(gain)
        if self._component_A is not None:
            component = self.clusters()[u]
            self._component_A[component].add_(outer)
            self._component_b[component].add_(gain)
        self.count[u].add_(1)

    def _training_job(self) -> TrainingJob:
        rows = self.history.minibatch_rows(self.one, self.batch_size, self.generator, self.train_steps)
        return TrainingJob(self.theta, rows, self.history)

    def _trained(self, theta: torch.Tensor) -> None:
        self.theta = theta
        self._rebuild()

    def _refit(self, u: int) -> None:
        if self._linked(u):
            self.w[u] = spd_solve(self.A[u], self.b[u])
            self._cut_edges(u)

    def _linked(self, users=slice(None)):
        """Whether these users (default all) still have an edge. w_u is read only by the edge test, on u's edges, and
        CLUB never adds an edge back, so a user without edges never needs w_u again: its solves are skipped (the
        choices are the same)."""
        return self.graph[users].sum(-1) > 1  # a row holds the user's own loop

    @classmethod
    def lockstep(cls, policies):
        return NeuralLinearLockstep(policies)

    def _rebuild(self) -> None:
        """Every user's A and b from its stored samples under the new embedding (``user_grams``)."""
        if self.block is None:
            x, r = self.history.all_rows()
        else:  # every stored block, read through its block's columns of W_1
            history = self.history
            rows = torch.arange(history.size, device=self.device)[None]
            x, r = group_by_block(rows, history.x, history.block, self.n_arms), history.r[: history.size]
        phi = self._embed(x)
        users = self.user_of_row[: len(r)]
        self.A = user_grams(phi, users, self.n_users, self.lam)
        self.b = torch.zeros_like(self.b).index_add_(0, users, r.double()[:, None] * phi)
        linked = torch.from_numpy(self._linked()).to(self.device)
        self.w[linked] = spd_solve(self.A[linked], self.b[linked])
        self._component_A = self._component_b = None

    def _cut_edges(self, u: int) -> None:
        """CLUB's test on u_t's edges: delete (u_t, j) when ‖w_u − w_j‖ > α₂ (CB(T_u) + CB(T_j))."""
        gap = (self.w - self.w[u]).norm(dim=1)
        cb = confidence(self.count)
        cut = (gap > self.alpha2 * (cb + cb[u])).cpu().numpy()
        cut[u] = False
        if (cut & self.graph[u]).any():
            self.graph[u, cut] = False
            self.graph[cut, u] = False
            labels = dense_components(self.graph)[1]
            if not np.array_equal(labels, self._labels):  # the edge split a component: its sums are stale
                self._component_A = self._component_b = None
            self._labels = labels

    def sharing_graph(self):
        return self.graph

    def clusters(self):
        """Connected components of the user graph (canonically labelled: equal labels, equal partition)."""
        if self._labels is None:
            self._labels = dense_components(self.graph)[1]
        return self._labels


class NeuralLinearLockstep(Lockstep):
    """NeuralLinear's members in lockstep (seeds, and grid cells of α, α₂ and λ): every member's arms embedded by one
    forward pass (their networks stacked [S, p]) and scored through one batched factorisation, every served user's
    w_u refitted by one batched solve, and on a training round every member's network trained by one Adam call. Each
    member keeps its own statistics, graph and generator."""

    def __init__(self, policies: list[NeuralLinear]):
        super().__init__(policies)
        device = policies[0].device
        self.lam, self.alpha = (
            torch.as_tensor(self.per_member(name), dtype=torch.float64, device=device) for name in ("lam", "alpha")
        )

    def select(self, views, budgets):
        policies, first = self.policies, self.policies[0]
        x = torch.stack([policy._arms(view) for policy, view in zip(policies, views)])
        with torch.no_grad():
            phi = first.mlp.embed(torch.cat([policy.theta for policy in policies]), arm_inputs(x, first.block)).double()
        grams, b_Cs = zip(*(policy._component_sums(view.user) for policy, view in zip(policies, views)))
        ucb = cluster_ucb(phi, torch.stack(grams), torch.stack(b_Cs), self.lam, self.alpha, views[0].t)
        chosen = torch.argmax(ucb, dim=-1).tolist()
        for i, (policy, arm) in enumerate(zip(policies, chosen)):
            policy._x, policy._phi, policy._arm = x[i, arm], phi[i, arm], arm
        return chosen

    def update(self, views, chosen, rewards):
        policies = self.policies
        for policy, view, reward in zip(policies, views, rewards):
            policy._observe(view, reward)
        if is_training_round(views[0].t, policies[0].schedule):
            jobs = [policy._training_job() for policy in policies]
            for policy, theta in zip(policies, train_jobs(policies[0].mlp, jobs, lr=policies[0].lr)):
                policy._trained(theta)
        linked = [(policy, view.user) for policy, view in zip(policies, views) if policy._linked(view.user)]
        if linked:
            A = torch.stack([policy.A[u] for policy, u in linked])
            b = torch.stack([policy.b[u] for policy, u in linked])
            for (policy, u), w in zip(linked, spd_solve(A, b)):
                policy.w[u] = w
                policy._cut_edges(u)
