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
from banditbench.algos import neural
from banditbench.algos.base import MemberPolicy
from banditbench.algos.graphs import dense_components
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
    of a group stacked on the leading axis (φ [M, k, m], gram [M, m, m], b_C [M, m]; λ and α scalars or
    [M] tensors). With A_C = LLᵀ, y_i = L⁻¹φ_i and y_b = L⁻¹b_C: φ_iᵀA_C⁻¹φ_i = ‖y_i‖² and φ_iᵀw_C = y_iᵀy_b, so one
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


class NeuralLinear(MemberPolicy):
    """Over the members of a group: every member's network stacked [M, p] (one forward pass embeds every member's
    arms, one batched factorisation scores them), its own statistics [M, n, …], user graph [M, n, n], history and
    generator."""

    member_params = ("alpha", "alpha2", "lam")  # per member: its exploration, cluster test and ridge
    domains = {**neural.NETWORK_DOMAINS, "alpha": d.NON_NEGATIVE, "alpha2": d.NON_NEGATIVE, "lam": d.POSITIVE}
    authors_code = neural.NETWORK_CODE
    transient = ("mlp", "_picked")  # the network's shapes; this round's picks, from ``select`` to ``update``

    def __init__(
        self,
        *,
        n_users,
        n_arms,
        dim,
        seeds,
        alpha=0.1,
        alpha2=1.0,
        lam=1.0,
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
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seeds=seeds)
        self.schedule = schedule
        self.alpha, self.alpha2, self.lam = self.per_member(alpha), self.per_member(alpha2), self.per_member(lam)
        self.lr, self.train_steps, self.batch_size = lr, train_steps, batch_size
        self.device = neural.resolve_device(device)
        self.generators = [neural.torch_generator(seed, self.device, threads) for seed in seeds]
        self.mlp = neural.MLP(dim, width, depth, bias, init)
        self.theta = torch.stack([self.mlp.init(generator, self.device) for generator in self.generators])  # [M, p]
        M, m = len(seeds), width
        self.histories = [neural.History(1, dim, self.device) for _ in seeds]
        self.user_of_row = torch.zeros(M, 1024, dtype=torch.long, device=self.device)
        lam = torch.as_tensor(self.lam, device=self.device)[:, None, None, None]
        self.A = torch.eye(m, dtype=torch.float64, device=self.device).mul(lam).expand(-1, n_users, -1, -1).clone()
        self.b = torch.zeros(M, n_users, m, dtype=torch.float64, device=self.device)
        self.w = torch.zeros(M, n_users, m, dtype=torch.float64, device=self.device)
        self.count = torch.zeros(M, n_users, dtype=torch.long, device=self.device)
        self.graph = np.ones((M, n_users, n_users), dtype=bool)
        self._labels: list = [None] * M  # connected components of each member's graph, None until first asked for
        # per component: Σ_{j∈C}(A_j − λI) and Σ_{j∈C} b_j, kept up to date until the components or embedding change
        self._component_A: list = [None] * M
        self._component_b: list = [None] * M
        self.blocks = True  # read block-encoded contexts per block where the round declares them; False: dense
        self.block: int | None = None  # the block width once a block-encoded first round is seen, else None

    def _embed(self, theta: torch.Tensor, x) -> torch.Tensor:
        with torch.no_grad():
            return self.mlp.embed(theta, x).double()

    def _component_sums(self, m: int, user: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_{j∈C}(A_j − λI) and Σ_{j∈C} b_j of u's component C in member m's graph, summed for every component once
        per change of the components or the embedding, then kept current by ``update``."""
        labels = self.clusters(m)
        if self._component_A[m] is None:
            A, b = self.A[m], self.b[m]
            index = torch.as_tensor(labels, device=self.device)
            eye = torch.eye(A.shape[1], dtype=torch.float64, device=self.device) * float(self.lam[m])
            n = int(labels.max()) + 1
            self._component_A[m] = A.new_zeros(n, *A.shape[1:]).index_add_(0, index, A - eye)
            self._component_b[m] = b.new_zeros(n, b.shape[1]).index_add_(0, index, b)
        component = int(labels[user])
        return self._component_A[m][component], self._component_b[m][component]

    def select(self, views, budgets):
        x, phi, ucb = self._ucb(views)
        chosen = torch.argmax(ucb, dim=-1)
        picked = torch.arange(len(chosen)), chosen
        self._picked = x[picked], phi[picked]
        return chosen.tolist()

    def scores(self, views) -> torch.Tensor:
        """The upper confidence bound of every member's arms [M, K], of which ``select`` plays the largest."""
        return self._ucb(views)[2]

    def _ucb(self, views) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every member's arms x as its history keeps them ([M, K, d], or in block mode each arm's block [M, K, b]),
        their embeddings φ and the UCB of each arm on its user's component's statistics."""
        arms, served = self.read_arms(views)
        x = torch.tensor(arms, dtype=torch.float32, device=self.device)
        if self.block is None:  # block mode (``neural.start_blocks``), decided on the first block-encoded round
            for m, history in enumerate(self.histories):
                self.block, self.histories[m] = neural.start_blocks(self, views[0], history)
        if self.block is not None:
            x = neural.arm_blocks(x, self.block)
        phi = self._embed(self.theta, neural.arm_inputs(x, self.block))
        grams, b_Cs = zip(*(self._component_sums(m, user) for m, user in zip(self.members, served.tolist())))
        return x, phi, cluster_ucb(phi, torch.stack(grams), torch.stack(b_Cs), self.lam, self.alpha, views[0].t)

    def update(self, views, chosen, rewards):
        served = [view.user for view in views]
        x, phi = self._picked
        for m, u, reward, arm in zip(self.members, served, rewards, chosen):
            self._observe(m, u, x[m], phi[m], reward, arm)
        if neural.is_training_round(views[0].t, self.schedule):  # the schedule depends on t only: every member's
            jobs = [
                neural.whole_history_job(start, history, g, batch_size=self.batch_size, steps=self.train_steps)
                for start, history, g in zip(self.theta.split(1), self.histories, self.generators)
            ]
            for m, theta in enumerate(neural.train_jobs(self.mlp, jobs, lr=self.lr)):
                self.theta[m] = theta[0]
                self._rebuild(m)
        linked = [(m, u) for m, u in zip(self.members, served) if self._linked(m, u)]
        if linked:  # every refit of the round in one batched solve
            at = tuple(torch.tensor(index) for index in zip(*linked))
            for (m, u), w in zip(linked, spd_solve(self.A[at], self.b[at])):
                self.w[m, u] = w
                self._cut_edges(m, u)

    def _observe(self, m: int, u: int, x: torch.Tensor, phi: torch.Tensor, reward: float, arm: int) -> None:
        """Member m's sample, in its history and its user's statistics."""
        row = self.histories[m].size
        self.histories[m].add(0, x, reward, arm)
        if row == self.user_of_row.shape[1]:
            self.user_of_row = torch.cat([self.user_of_row, torch.zeros_like(self.user_of_row)], dim=1)
        self.user_of_row[m, row] = u
        outer, gain = torch.outer(phi, phi), reward * phi
        self.A[m, u].add_(outer)  # an int index is a view: in place, no write-back
        self.b[m, u].add_(gain)
        if self._component_A[m] is not None:
            component = self.clusters(m)[u]
            self._component_A[m][component].add_(outer)
            self._component_b[m][component].add_(gain)
        self.count[m, u].add_(1)

    def _linked(self, m: int, users=slice(None)):
        """Whether these users (default all) still have an edge in member m's graph. w_u is read only by the edge
        test, on u's edges, and CLUB never adds an edge back, so a user without edges never needs w_u again: its
        solves are skipped (the choices are the same)."""
        return self.graph[m, users].sum(-1) > 1  # a row holds the user's own loop

    def _rebuild(self, m: int) -> None:
        """Every user's A and b of member m from its stored samples under the new embedding (``user_grams``)."""
        history = self.histories[m]
        if self.block is None:
            x, r = history.all_rows()
        else:  # every stored block, read through its block's columns of W_1
            rows = torch.arange(history.size, device=self.device)[None]
            x, r = neural.group_by_block(rows, history.x, history.block, self.n_arms), history.r[: history.size]
        phi = self._embed(self.theta[m], x)
        users = self.user_of_row[m, : len(r)]
        self.A[m] = user_grams(phi, users, self.n_users, float(self.lam[m]))
        self.b[m] = torch.zeros_like(self.b[m]).index_add_(0, users, r.double()[:, None] * phi)
        linked = torch.from_numpy(self._linked(m)).to(self.device)
        self.w[m, linked] = spd_solve(self.A[m, linked], self.b[m, linked])
        self._component_A[m] = self._component_b[m] = None

    def _cut_edges(self, m: int, u: int) -> None:
        """CLUB's test on u_t's edges: delete (u_t, j) when ‖w_u − w_j‖ > α₂ (CB(T_u) + CB(T_j))."""
        gap = (self.w[m] - self.w[m, u]).norm(dim=1)
        cb = confidence(self.count[m])
        cut = (gap > float(self.alpha2[m]) * (cb + cb[u])).cpu().numpy()
        cut[u] = False
        graph = self.graph[m]
        if (cut & graph[u]).any():
            graph[u, cut] = False
            graph[cut, u] = False
            labels = dense_components(graph)[1]
            if not np.array_equal(labels, self._labels[m]):  # the edge split a component: its sums are stale
                self._component_A[m] = self._component_b[m] = None
            self._labels[m] = labels

    def sharing_graph(self, m):
        return self.graph[m]

    def clusters(self, m):
        """Connected components of member m's user graph (canonically labelled: equal labels, equal partition)."""
        if self._labels[m] is None:
            self._labels[m] = dense_components(self.graph[m])[1]
        return self._labels[m]
