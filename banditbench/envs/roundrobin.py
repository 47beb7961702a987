"""The round-robin protocol of Ghosh, Sankararaman & Ramchandran (2021 §6.2, Fig. 1(e)) on Last.FM.

Prepared by ``banditbench prepare lastfm --pipeline ghosh``: real users, artists with 25-d tag tf-idf PCA contexts,
reward 1 when the user listened to the artist, 0 otherwise. Users are pulled in turn (0, 1, …, N−1, 0, …); every
step (N consecutive rounds, one per user, ``t = step·N + user`` as in the synchronous protocol, ``RoundView.step``
set) shows all users the same K = 25 artists drawn uniformly without replacement from the catalogue ("a set of 25
randomly sampled items was shown as contexts"). Rewards are deterministic, so the expected reward is the reward,
and a round whose artists the user never listened to has regret 0 whatever is chosen.

``guaranteed_positive`` (prepare option ``--guaranteed-positive``): the protocol the paper gives CLUB, 24 shared
random artists plus one artist drawn among those the served user listened to, at a uniformly random position, so
every round has a best reward of 1 (errata 15: the paper runs CMLB without it; here every algorithm of a run sees
the same protocol).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from banditbench.data.prepared import PreparedDataset
from banditbench.envs.recommendation import features
from banditbench.envs.round import Round
from banditbench.errors import UserError


class RoundRobinEnvironment:
    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence):
        params = dataset.parameters
        self.arms_table = features(dataset.table("items").sort_values("item"))
        self.n_items, self.dim = self.arms_table.shape
        self.n_users = int(dataset.table("users")["user"].max()) + 1
        self.n_arms = int(params.get("arms", 25))
        self.guaranteed_positive = bool(params.get("guaranteed_positive", False))
        interactions = dataset.table("interactions")
        listened = interactions[interactions["label"] > 0]
        self.listened = np.unique(
            listened["user"].to_numpy() * self.n_items + listened["item"].to_numpy()
        )  # sorted keys
        self.first_listen = np.searchsorted(self.listened // self.n_items, np.arange(self.n_users + 1))
        self.listen_count = np.diff(self.first_listen)
        if self.guaranteed_positive and (self.listen_count == 0).any():
            raise UserError(
                f"dataset {dataset.name!r}: {int((self.listen_count == 0).sum())} users listened to no "
                "artist, so no listened artist can be guaranteed in their rounds"
            )
        self.rng = np.random.default_rng(seed)

    def rewards_of(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """1.0 where user u listened to item i (``users`` and ``items`` broadcast together)."""
        keys = users * self.n_items + items
        found = np.minimum(np.searchsorted(self.listened, keys), len(self.listened) - 1)
        return (self.listened[found] == keys).astype(float)

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        N, K = self.n_users, self.n_arms
        for step in range(-(-n_rounds // N)):
            users = np.arange(min(N, n_rounds - step * N))
            if self.guaranteed_positive:  # 24 shared artists and one listened artist per user, at a random position
                drawn = self.rng.choice(self.n_items, K - 1, replace=False)
                liked = self.first_listen[users] + (self.rng.random(len(users)) * self.listen_count[users]).astype(int)
                positions = self.rng.integers(K, size=len(users))
                items = np.empty((len(users), K), dtype=np.int64)
                items[np.arange(K) != positions[:, None]] = np.tile(drawn, len(users))
                items[users, positions] = self.listened[liked] % self.n_items
            else:
                items = np.broadcast_to(self.rng.choice(self.n_items, K, replace=False), (len(users), K))
            rewards = self.rewards_of(users[:, None], items)
            shared = self.arms_table[items[0]]
            for user in users:
                arms = self.arms_table[items[user]] if self.guaranteed_positive else shared
                yield Round(step * N + user, int(user), arms, rewards[user], rewards[user], step=step)
