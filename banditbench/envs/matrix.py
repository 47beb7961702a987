"""The matrix protocol: agents are rows of a dense reward table, arms its columns (BASS, Cherkaoui, Barlier &
Colin, Sec. 7 and App. R, "real data").

The prepared dataset (e.g. ``data/movielens_small.py``) holds the table ``rewards`` [users × K], every entry
filled, and the K arms' features ``arms`` [K × d]. Each run (seed) draws its own N agents from the users without
replacement ("we run the experiment n times to average across runs", each on a new draft of users); agent i of
the run is the i-th drawn user in increasing user order. The arms are the same in every round.

The expected reward of arm k for an agent is its table value, the observation adds σ·N(0, 1) and the regret of a
round is the agent's row maximum minus the chosen value (the runner's max(expected) − expected[chosen]).
``pulling = async``: one agent a round, drawn uniformly; ``sync``: every step all N agents act in turn on the
same arms (emitted as N consecutive Rounds sharing ``step``, as in ``envs/synchronous.py``). N, σ and the
pulling are read from the dataset's parameters (prepare options ``--agents``, ``--noise``, ``--pulling``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from banditbench.data.prepared import PreparedDataset
from banditbench.envs.round import Round
from banditbench.errors import UserError

BLOCK = 1024  # rounds of noise drawn per call to the generator


class MatrixEnvironment:
    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence):
        parameters = dataset.parameters
        table = dataset.table("rewards").sort_values("user").filter(like="r_").to_numpy()  # [users, K]
        arms = dataset.table("arms").sort_values("arm").filter(like="x_").to_numpy()  # [K, d]
        self.n_agents = int(parameters["agents"])
        if self.n_agents > table.shape[0]:
            raise UserError(f"{dataset.name}: {self.n_agents} agents asked, the table has {table.shape[0]} rows")
        self.noise = float(parameters["noise"])
        self.synchronous = parameters.get("pulling", "async") == "sync"
        self.rng = np.random.default_rng(seed)
        self.agents = np.sort(self.rng.choice(table.shape[0], self.n_agents, replace=False))  # this run's users
        self.table = table[self.agents]
        self.arm_set = arms
        self.arm_set.flags.writeable = False
        self.n_users, (self.n_arms, self.dim) = self.n_agents, arms.shape
        self.true_groups = None  # real data: no ground-truth clusters

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        N, K = self.n_users, self.n_arms
        for start in range(0, n_rounds, BLOCK):
            size = min(BLOCK, n_rounds - start)
            if self.synchronous:
                agents = np.arange(start, start + size) % N
            else:
                agents = self.rng.integers(N, size=size)
            expected = self.table[agents]
            rewards = expected + self.noise * self.rng.standard_normal((size, K))
            for i, agent in enumerate(agents.tolist()):
                t = start + i
                yield Round(
                    t, agent, self.arm_set, rewards[i], expected[i], -1, step=t // N if self.synchronous else None
                )
