"""Per-user sample histories over one shared log, block-encoded samples kept as their block."""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos.neural.mlp import take


class History:
    """Per-user sample histories over one shared log of (x, r): a round's sample is stored once, and every
    user it is shared with (M-CNB's cluster members) only records its row index. With ``n_blocks`` the log keeps
    block-encoded samples as their non-zero block and its index; training reads them per block (``train_jobs``),
    every other reader gets them back dense (``inputs``)."""

    def __init__(self, n_users: int, dim: int, device: torch.device, capacity: int = 1024, n_blocks: int | None = None):
        self.device = device
        self.x = torch.zeros(capacity, dim, device=device)
        self.r = torch.zeros(capacity, device=device)
        # Block-encoded samples: x holds each sample's non-zero block (dim = b) and ``block`` which of n_blocks it is
        self.n_blocks = n_blocks
        self.block = torch.zeros(capacity if n_blocks else 0, dtype=torch.long, device=device)
        self.rows = torch.zeros(n_users, 16, dtype=torch.long, device=device)  # [n, cap] row indices per user
        self.counts = torch.zeros(n_users, dtype=torch.long, device=device)
        self.size = 0

    def add(self, users: int | np.integer | torch.Tensor, x: torch.Tensor, r: float, block: int = 0) -> None:
        """Store sample (x, r) once and list it in the histories of ``users``: one user (an int: fewer and cheaper
        tensor operations) or a tensor of them."""
        if self.size == self.x.shape[0]:  # full: double the log
            self.x, self.r, self.block = (torch.cat([t, torch.zeros_like(t)]) for t in (self.x, self.r, self.block))
        row = self.size
        self.x[row], self.r[row] = x, r
        if self.n_blocks:
            self.block[row] = block
        self.size += 1
        if isinstance(users, (int, np.integer)):
            count = int(self.counts[users])
            self._room_for(count)
            self.rows[users, count] = row
            self.counts[users].add_(1)  # an int index is a view: in place
        else:
            counts = self.counts[users]
            self._room_for(int(counts.max()))
            self.rows[users, counts] = row
            self.counts[users] = counts + 1

    def _room_for(self, count: int) -> None:
        """Double the row lists when a user's list is full."""
        if count == self.rows.shape[1]:
            self.rows = torch.cat([self.rows, torch.zeros_like(self.rows)], dim=1)

    def inputs(self, rows: torch.Tensor) -> torch.Tensor:
        """The samples of these rows [...] as the network reads them: x [..., d], or in block mode [..., K·b] with the
        stored block in its place and zeros elsewhere."""
        if not self.n_blocks:
            return take(self.x, rows)
        dense = self.x.new_zeros(rows.numel(), self.n_blocks, self.x.shape[1])
        flat = rows.flatten()
        dense[torch.arange(flat.numel(), device=flat.device), take(self.block, flat)] = take(self.x, flat)
        return dense.view(*rows.shape, -1)

    def sample(self, users: torch.Tensor, size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``size`` samples drawn uniformly with replacement from each user's history → x [U, size, d], r [U, size].
        Every listed user must have at least one sample."""
        rows = self.minibatch_rows(users, size, generator, 1)[0]
        return self.inputs(rows), take(self.r, rows)

    def minibatch_rows(self, users: torch.Tensor, size: int, generator: torch.Generator, steps: int) -> torch.Tensor:
        """The rows of ``steps`` such samples, one per optimiser step, [steps, U, size], drawn with one call to the
        generator (the same numbers as ``steps`` calls of ``sample``)."""
        counts = self.counts[users][:, None]
        pick = (torch.rand(steps, len(users), size, generator=generator, device=self.device) * counts).long()
        return take(self.rows.view(-1), users[:, None] * self.rows.shape[1] + pick)  # the picked entries only

    def all_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.inputs(torch.arange(self.size, device=self.device)), self.r[: self.size]

    def of(self, users: int | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The samples of one user's history, or of several users' (a 1-d tensor) pooled, each user's in the order
        they came: x [n, d], r [n]."""
        users = torch.as_tensor(users, device=self.device).reshape(-1)
        rows = self.rows[users]  # row-major: user by user, each user's first counts[u] rows
        rows = rows[torch.arange(rows.shape[1], device=self.device) < self.counts[users, None]]
        return self.inputs(rows), take(self.r, rows)


def start_blocks(policy, view, history: History) -> tuple[int | None, History]:
    """Whether a neural policy reads arms and keeps samples per block, decided on its first round: its ``blocks``
    switch on, block-encoded contexts with arm a in block a, no sample stored yet, and the networks on the CPU. On a
    GPU the dense product is one kernel where the per-block one is a kernel for every (network, block) pair, which
    on MNIST made a CUDA lockstep group 9–15 times slower than dense. → (the block width b, or None for the dense
    input; the history to keep: a fresh per-block one in block mode, else ``history``)."""
    on_cpu = history.device.type == "cpu"
    if not (policy.blocks and on_cpu and view.block and history.size == 0 and policy.dim == view.block * policy.n_arms):
        return None, history
    return view.block, History(len(history.counts), view.block, history.device, n_blocks=policy.n_arms)
