"""The ``twostage`` protocol of Zhang et al. 2022 ("Two-Stage Neural Contextual Bandits", §1, §4, §5) over
the logged datasets ``mind`` and ``movielens-logged``, with clicks from their trained IPS simulator.

Trial = seed index. A trial draws its user set U_τ (``users`` of them, uniformly without replacement from the users
of the 80 % of training clicks after the known split, as the authors' code); every iteration t:
1. a user u_t is drawn uniformly from U_τ;
2. the candidates: B = ``--budget`` item ids drawn uniformly without replacement from the catalogue (one-stage
   policies score these; two-stage policies score topics and then items of their own choice, within the same
   budget), or the whole catalogue without a budget;
3. the policy recommends a slate of m = ``slate_size`` distinct items;
4. each slot's click is the simulator's deterministic label 1{σ(score(u, i)) ≥ THRES}, flipped with probability
   ``flip`` (0.1) by a uniform drawn in step 2, before the policy acts.
Users, candidates and flip uniforms come from the environment's stream only, so every policy of a trial sees the
same users, candidates and flips (common random numbers), and the stream never depends on the policy.

Metrics per iteration (runner/slate.py): clicks y_t, CTR_t = y_t / m, and regret against Zhang et al. 2022's optimum
1 − flip = 0.9 per slot: regret_t = 0.9 − the slate's expected CTR, where an item's expected click is 1 − flip if
its label is 1 and flip otherwise (the paper's cumulative regret 0.9·t − Σ CTR uses realised clicks; the report
computes that one from the ``ctr`` column).

Settings (``--env NAME=VALUE``, part of the unit's config): ``users`` (100; the paper: 10, 100, 1000),
``slate_size`` (5; 3, 5, 10), ``pretrain`` (true: the learners start from encoders pre-trained on the known
split without U_τ; envs/learners.py), ``pretrain_epochs`` (5), ``known_fraction`` (ε = 0.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from banditbench.data.prepared import PreparedDataset
from banditbench.envs.round import SlateRound
from banditbench.errors import SettingError, UserError


@dataclass(frozen=True)
class Catalogue:
    """Items 1..n (0 is padding): title word ids, topic of each item and the items of each topic."""

    titles: np.ndarray  # [n+1, L] int32
    topic: np.ndarray  # [n+1] int64, -1 for the padding item
    topic_items: list[np.ndarray]  # q arrays of item ids, ascending
    vocabulary_size: int

    @property
    def n_items(self) -> int:
        return len(self.topic) - 1

    @property
    def n_topics(self) -> int:
        return len(self.topic_items)


@dataclass(frozen=True)
class Problem:
    """What a recommender knows before its first iteration (handed to ``SlatePolicy.start``)."""

    catalogue: Catalogue
    slate_size: int
    users: np.ndarray  # U_τ
    histories: np.ndarray  # [U, H] every user's logged history (0 = padding)
    pretrained: dict | None  # encoder weights after pre-training on the known split, or None


def catalogue_of(data) -> Catalogue:
    order = np.argsort(data.topic[1:], kind="stable") + 1
    bounds = np.searchsorted(data.topic[order], np.arange(data.n_topics + 1))
    return Catalogue(
        data.titles, data.topic, [order[bounds[v] : bounds[v + 1]] for v in range(data.n_topics)], len(data.vocabulary)
    )


_LOGGED: dict[tuple, object] = {}


def logged_data(dataset: PreparedDataset):
    """The dataset's logged arrays, read once per process (tokenising MIND-large's titles takes seconds)."""
    from banditbench.simulator.logged import load_logged

    key = (str(dataset.path), dataset.manifest_sha256)
    if key not in _LOGGED:
        _LOGGED.clear()
        _LOGGED[key] = load_logged(dataset)
    return _LOGGED[key]


def load_simulator(dataset: PreparedDataset, data):
    from banditbench.simulator.model import Simulator

    return Simulator.load(dataset, data)


class TwoStageEnvironment:
    SETTINGS = {"users": 100, "slate_size": 5, "pretrain": True, "pretrain_epochs": 5, "known_fraction": 0.2}
    provides_user_features = False

    @staticmethod
    def check(dataset: PreparedDataset, settings: dict, budget: int | None) -> None:
        """Refuse bad settings, and a dataset without a trained simulator, before anything runs."""
        if settings["users"] < 1 or settings["slate_size"] < 1 or settings["pretrain_epochs"] < 0:
            raise SettingError("{env} users and slate_size must be at least 1, pretrain_epochs at least 0")
        if not 0 < settings["known_fraction"] < 1:
            raise SettingError("{env} known_fraction must be in (0, 1), got {got}", got=settings["known_fraction"])
        if budget is not None and budget < settings["slate_size"]:
            raise SettingError(
                "{budget} {given} is smaller than the slate (slate_size {size})",
                given=budget,
                size=settings["slate_size"],
            )
        from banditbench.simulator.train import METADATA_FILE, simulator_folder

        if not (simulator_folder(dataset.path) / METADATA_FILE).is_file():
            raise UserError(
                f"dataset {dataset.name!r} has no trained simulator; run `banditbench simulator train "
                f"{dataset.name}` first"
            )

    def __init__(
        self,
        dataset: PreparedDataset,
        seed: np.random.SeedSequence,
        settings: dict | None = None,
        budget: int | None = None,
        simulator=None,
    ):
        from banditbench.envs.learners import cached_pretrain
        from banditbench.simulator.logged import initial_histories, known_split

        settings = {**self.SETTINGS, **(settings or {})}
        self.data = data = logged_data(dataset)
        self.catalogue = catalogue_of(data)
        self.slate_size, self.budget = settings["slate_size"], budget
        self.simulator = simulator if simulator is not None else load_simulator(dataset, data)
        self.flip = float(self.simulator.flip)
        self.n_users, self.n_arms, self.dim = data.n_users, self.catalogue.n_items, 0
        trial, self.stream = seed.spawn(2)
        candidates = known_split(data, settings["known_fraction"]).candidate_users
        if settings["users"] > len(candidates):
            raise SettingError(
                "{env} users={given}: {name!r} has only {count} users after the known split",
                given=settings["users"],
                name=dataset.name,
                count=len(candidates),
            )
        self.users = np.sort(np.random.default_rng(trial).permutation(candidates)[: settings["users"]])
        pretrained = None
        if settings["pretrain"]:
            pretrained = cached_pretrain(
                dataset.path,
                data,
                self.users,
                fraction=settings["known_fraction"],
                epochs=settings["pretrain_epochs"],
                seed=int(trial.generate_state(1)[0] >> 1),
                topics=True,
            )
        self.problem = Problem(self.catalogue, self.slate_size, self.users, initial_histories(data), pretrained)

    def rounds(self, T: int):
        rng = np.random.default_rng(self.stream)
        n, m = self.catalogue.n_items, self.slate_size
        everything = np.arange(1, n + 1)
        for t in range(T):
            user = int(self.users[rng.integers(len(self.users))])
            if self.budget is None or self.budget >= n:
                candidates = everything
            else:
                candidates = rng.choice(n, self.budget, replace=False) + 1
            yield SlateRound(t, user, candidates, rng.random(m))

    def feedback(self, rnd: SlateRound, slate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clicks [m] (label, flipped where the round's uniform < flip) and expected clicks [m]."""
        clicks, expected = self.simulator.feedback(rnd.user, slate, rnd.flip_uniforms)  # flips drawn before the policy
        self.simulator.record(rnd.user, slate, clicks)  # user_history="true+clicks" only
        return clicks, expected
