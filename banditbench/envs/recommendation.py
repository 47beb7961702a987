"""The recommendation protocol over a prepared rating dataset (M-CNB §5.2, Meta-Ban §4.1).

Paper mode (default): each round a pool, i.e. one of the K-means user groups ("we use pre-clustering
(K-means) to form the user pool", n = 50) or, with ``serve = users``, one real user, is drawn
uniformly; its arms are 1 item it rated positively (reward 1) and K − 1 = 9 distinct items it rated
otherwise (reward 0), the positive at a uniformly random position; the context of an arm is the
item's SVD feature. A group's items are those its members rated; an item some member rated
positively is never one of the group's negatives.

The authors' code (banyikun/MCNB and the Meta-Ban code) differs and is offered as named modes:

- ``metaban-code``: a real user is drawn uniformly and mapped to its group (groups weighted by size);
  9 items are drawn *with replacement* from the group's positive entries and 1 from its negative
  entries, and the reward is on that single *negative* item; contexts pass elementwise through the
  Gaussian pdf N(0, 0.5²).
- ``mcnb-code``: as ``metaban-code`` with the context [item feature, feature of the entry's rater].

Datasets of links or listens only (Facebook, LastFM) are prepared with ``negatives = unrated``: a
pool's 0-reward arms are then items none of its members linked to / listened to ("non-links are
negatives").

Rewards are deterministic, so the expected reward of an arm is its reward.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from banditbench.data.prepared import PreparedDataset
from banditbench.data.ratings import MODES, SERVE, check_protocol  # noqa: F401  (the protocol's choices)
from banditbench.envs.round import Round, Rounds, each_round
from banditbench.envs.sampling import integer_then_choice
from banditbench.errors import UserError

BLOCK = 1024


def features(frame) -> np.ndarray:
    return frame[[c for c in frame.columns if c.startswith("f_") and c[2:].isdigit()]].to_numpy(np.float64)


class Pools:
    """Entries (item, rater) of one label, grouped by pool id: pool p owns rows start[p]:start[p + 1]."""

    def __init__(self, pool: np.ndarray, item: np.ndarray, rater: np.ndarray, n_pools: int):
        order = np.lexsort((rater, item, pool))
        self.item, self.rater = item[order], rater[order]
        self.start = np.searchsorted(pool[order], np.arange(n_pools + 1))
        self.count = np.diff(self.start)


class RecommendationEnvironment:
    provides_user_features = True  # rounds carry the served user's (or group's) SVD features (NeuA+U)

    def __init__(self, dataset: PreparedDataset, seed: np.random.SeedSequence):
        params = dataset.parameters
        self.mode, serve = params.get("mode", "paper"), params.get("serve", "groups")
        check_protocol(self.mode, serve)
        self.n_arms = int(params.get("arms", 10))
        users = dataset.table("users").sort_values("user")
        self.item_features = features(dataset.table("items").sort_values("item"))
        self.user_features = features(users)
        interactions = dataset.table("interactions")
        group_of_user = users["group"].to_numpy()
        pool_of_user = group_of_user if serve == "groups" else users["user"].to_numpy()
        self.n_users = int(pool_of_user.max()) + 1
        # Ground truth for clustering diagnostics only when real users are served (then K-means groups).
        self.true_groups = group_of_user if serve == "users" else None
        self.group_of_pool = np.full(self.n_users, -1) if serve == "groups" else group_of_user
        sums = np.zeros((self.n_users, self.user_features.shape[1]))
        np.add.at(sums, pool_of_user, self.user_features)
        self.pool_features = sums / np.maximum(np.bincount(pool_of_user, minlength=self.n_users), 1)[:, None]

        rater = interactions["user"].to_numpy()
        item = interactions["item"].to_numpy()
        label = interactions["label"].to_numpy()
        pool = pool_of_user[rater]
        positive = label > 0
        unrated = params.get("negatives", "rated") == "unrated"
        if unrated and self.mode != "paper":
            raise UserError(f"dataset {dataset.name!r} has no negative ratings, which --mode {self.mode} needs")
        if self.mode == "paper":  # distinct items per pool; an item liked by a member is no negative of the pool
            width = len(self.item_features)
            key = pool * width + item
            liked = np.unique(key[positive])
            if unrated:  # links / listens only (Facebook, LastFM): every item the pool has not liked is a 0
                neg_keys = np.setdiff1d(np.arange(self.n_users * width), liked, assume_unique=True)
            else:
                neg_keys = np.unique(key[~positive & ~np.isin(key, liked)])
            pos_keys = liked
            self.positives = Pools(pos_keys // width, pos_keys % width, np.full(len(pos_keys), -1), self.n_users)
            self.negatives = Pools(neg_keys // width, neg_keys % width, np.full(len(neg_keys), -1), self.n_users)
            eligible = (self.positives.count >= 1) & (self.negatives.count >= self.n_arms - 1)
        else:
            self.positives = Pools(pool[positive], item[positive], rater[positive], self.n_users)
            self.negatives = Pools(pool[label < 0], item[label < 0], rater[label < 0], self.n_users)
            eligible = (self.positives.count >= 1) & (self.negatives.count >= 1)
        if not eligible.any():
            need = (
                f"1 positive and {self.n_arms - 1} negatives" if self.mode == "paper" else "1 positive and 1 negative"
            )
            raise UserError(
                f"dataset {dataset.name!r}: no {serve[:-1]} has the {need} a round needs; "
                "prepare it with more users/items or fewer groups"
            )
        self.eligible = np.flatnonzero(eligible)
        # Code modes draw a real user and serve its group, so pools are weighted by their eligible members.
        self.served_users = np.flatnonzero(eligible[pool_of_user])
        first = params.get("draw_first_users")  # M-CNB's loader draws u among the first n real users only
        if first:
            self.served_users = self.served_users[self.served_users < first]
        self.pool_of_user = pool_of_user
        self.dim = self.item_features.shape[1] * (2 if self.mode == "mcnb-code" else 1)
        # The code modes' Gaussian-pdf map is elementwise, so it is applied to the feature tables once.
        self.item_arms = self.item_features if self.mode == "paper" else gaussian_density(self.item_features, 0.5)
        self.rater_arms = gaussian_density(self.user_features, 0.5)
        self.rng = np.random.default_rng(seed)

    def rounds(self, n_rounds: int) -> Iterator[Round]:
        return each_round(self.blocks(n_rounds))

    def blocks(self, n_rounds: int) -> Iterator[Rounds]:
        """The same rounds as ``rounds``, a block of up to BLOCK at a time."""
        K, rng, pos, neg = self.n_arms, self.rng, self.positives, self.negatives
        # Column j of a round's [K] arms is entry layout[position, j] of [K − 1 others…, the rewarded one]
        layout = np.array([np.insert(np.arange(K - 1), p, K - 1) for p in range(K)])
        rewarded = np.eye(K)  # row p: the rewards of a round whose rewarded arm sits at position p
        for start in range(0, n_rounds, BLOCK):
            size = min(BLOCK, n_rounds - start)
            if self.mode == "paper":
                pools = self.eligible[self.rng.integers(len(self.eligible), size=size)]
            else:
                pools = self.pool_of_user[self.served_users[self.rng.integers(len(self.served_users), size=size)]]
            positions = self.rng.integers(K, size=size)
            # Per round, in the stream's order, the draws within the pool's entries (one generator call a block)
            n_pos, n_neg = pos.count[pools], neg.count[pools]
            entries = np.empty((size, K), np.int64)  # [others…, rewarded] as offsets within the pool's entries
            if self.mode == "paper":  # 1 liked item, K − 1 distinct others
                entries[:, K - 1], entries[:, : K - 1] = integer_then_choice(rng, n_pos, n_neg, K - 1)
                others, chosen = neg, pos
            else:  # K − 1 liked entries with replacement, the rewarded arm is the one disliked entry
                entries[:] = rng.integers(0, np.hstack([np.repeat(n_pos[:, None], K - 1, axis=1), n_neg[:, None]]))
                others, chosen = pos, neg
            entries[:, : K - 1] += others.start[pools, None]
            entries[:, K - 1] += chosen.start[pools]
            order = layout[positions]

            def arranged(field: str) -> np.ndarray:  # [size, K] values of one entry field, in arm order
                values = [getattr(others, field)[entries[:, : K - 1]], getattr(chosen, field)[entries[:, K - 1 :]]]
                return np.take_along_axis(np.hstack(values), order, axis=1)

            arms = self.item_arms[arranged("item")]  # [size, K, d]
            if self.mode == "mcnb-code":
                arms = np.concatenate([arms, self.rater_arms[arranged("rater")]], axis=2)
            arms.flags.writeable = False  # shown to policies as is (envs/round.py, ArmPool)
            rewards = rewarded[positions]  # deterministic: the expected reward is the reward
            yield Rounds(start, pools, arms, rewards, rewards, self.group_of_pool[pools], self.pool_features[pools])


def gaussian_density(x: np.ndarray, scale: float) -> np.ndarray:
    """The N(0, scale²) density of every entry: scipy.stats.norm.pdf's arithmetic, without its half-second import."""
    z = x / scale
    return np.exp(-(z**2) / 2.0) / np.sqrt(2 * np.pi) / scale
