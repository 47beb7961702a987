"""The user-learners θ^u of Meta-Ban and M-CNB, their inferred clusters and their training."""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos.neural.history import History
from banditbench.algos.neural.mlp import MLP
from banditbench.algos.neural.training import TrainingJob, train_jobs, train_passes_each


class UserLearners:
    """The n user-learners θ^u of Meta-Ban and M-CNB, stacked [n, p], with their histories T^u and counts μ^u.

    ``predict`` gives every user-learner's estimate on every arm in one batched call, which the inferred-cluster test
    N̂_{u_t}(x_i) = {u : |f(x_i; θ^u) − f(x_i; θ^{u_t})| ≤ (ν−1)γ/ν} (Meta-Ban Eq. 4, M-CNB Eq. 3) reads for all K
    arms at once; ``training_job`` draws Adam's minibatches for every user whose history grew."""

    def __init__(
        self,
        mlp: MLP,
        theta0: torch.Tensor,
        n_users: int,
        generator: torch.Generator,
        *,
        lr: float,
        steps: int,
        batch_size: int,
    ):
        self.mlp, self.generator = mlp, generator
        self.lr, self.steps, self.batch_size = lr, steps, batch_size
        self.device = theta0.device
        self.theta = theta0.expand(n_users, -1).clone()  # θ^u_0 = Θ_0 for every user (Alg. 1 line 2)
        self.history = History(n_users, mlp.dim, self.device)
        self.trained_counts = torch.zeros(n_users, dtype=torch.long, device=self.device)

    @property
    def mu(self) -> torch.Tensor:
        return self.history.counts

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.mlp.forward(self.theta, x)  # [n, K]

    def training_job(self, start: torch.Tensor | None = None) -> TrainingJob | None:
        """Adam on each user's own history, for every user whose history grew since its last training, drawn but not
        run (None when none did). ``start`` (optional [p]) warm-starts them all from one vector (Meta-Ban Alg. 3
        line 2, θ^u_(0) = Θ_t)."""
        users = torch.nonzero(self.history.counts > self.trained_counts).flatten()
        if len(users) == 0:
            return None
        init = self.theta[users] if start is None else start.expand(len(users), -1)
        rows = self.history.minibatch_rows(users, self.batch_size, self.generator, self.steps)
        return TrainingJob(init, rows, self.history, models=users)

    def agreement_graph(self, threshold: float, probes: int = 64) -> np.ndarray | None:
        """Users u, v linked when their learners agree within the threshold (the inferred-cluster test) on most
        of the last ``probes`` played contexts: the "same inferred cluster" relation the runner scores (pair F1,
        ARI of its connected components) against the ground truth. Diagnostics only; decisions never use it."""
        if self.history.size == 0:
            return None
        x = self.history.inputs(torch.arange(max(0, self.history.size - probes), self.history.size, device=self.device))
        P = self.predict(x).T  # [probes, n]
        agree = ((P[:, :, None] - P[:, None, :]).abs() <= threshold).float().mean(0)
        return (agree > 0.5).cpu().numpy()


def train_learners(learners: list[UserLearners], starts: list) -> None:
    """The ``training_job`` of several policies' learners (a group's members, same network and training settings) in
    one Adam call; ``starts`` gives each its warm start (or None)."""
    jobs = [learner.training_job(start) for learner, start in zip(learners, starts)]
    for learner, job, theta in zip(learners, jobs, train_jobs(learners[0].mlp, jobs, lr=learners[0].lr)):
        if job is not None:
            learner.theta[job.models] = theta
            learner.trained_counts[job.models] = learner.history.counts[job.models]


def train_learners_by_passes(learners: list[UserLearners], users: list[int], starts: list, *, max_steps: int) -> None:
    """The authors' loop for one user-learner of each policy (a group's members stacked in one loop,
    ``train_passes_each``): learner ``users[i]`` of ``learners[i]``, from ``starts[i]`` (None: its own θ^u), by
    single-sample Adam steps at the learners' lr over passes of its own history (not empty)."""
    samples = [learner.history.of(user) for learner, user in zip(learners, users)]
    start = [learner.theta[user] if at is None else at for learner, user, at in zip(learners, users, starts)]
    trained = train_passes_each(
        learners[0].mlp,
        torch.stack(start),
        samples,
        [learner.generator for learner in learners],
        lr=learners[0].lr,
        optimiser="adam",
        max_steps=max_steps,
    )
    for learner, user, theta, (_, r) in zip(learners, users, trained, samples):
        learner.theta[user] = theta
        learner.trained_counts[user] = len(r)


def connected_labels(graph: np.ndarray | None) -> np.ndarray | None:
    if graph is None:
        return None
    from banditbench.algos.graphs import dense_components  # scipy only where a policy reports clusters

    return dense_components(graph)[1]
