"""The ``logged`` protocol: a policy evaluated on a log of real (or simulated) events instead of a simulator.

Each round is the log's next event (docs/protocols.md, "logged"): the policy sees the event's user, its user
features and the arms offered, and picks one. The evaluator decides whether the event counts:

- ``replay`` (Li, Chu, Langford & Wang, WSDM 2011, Algorithm 3): the event counts when the policy picked the logged
  arm; the policy then sees the logged reward and learns from it, otherwise the event is skipped and the policy
  learns nothing. On a log whose logging policy was uniform over K arms, the events kept are distributed as the
  policy's own online rounds (their Theorem 1), so the mean reward over them estimates its online CTR.
- ``rejection`` (Dudík, Erhan, Langford & Li, UAI 2012, rejection sampling): for a log with other propensities p_t,
  a matched event is kept with probability min(1, c / p_t); with c ≤ every p_t each context is kept with the same
  probability c, so the kept events are again the policy's online rounds. c is the ``rejection_quantile`` of the
  log's propensities: 0 (the smallest, unbiased) keeps fewest; a higher quantile keeps more events at the price of
  a bias on the events whose p_t < c.

Every round also carries, hidden from the policy, the logged arm, reward and propensity and the reward model's
estimate of every arm (data/logs.py), from which the report computes the off-policy estimates of the policy's
choices (report/offpolicy.py). The events are read a batch at a time, so a log of millions of events never sits in
memory whole.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq

from banditbench.data.logs import Log, arm_contexts
from banditbench.data.prepared import PreparedDataset
from banditbench.envs.round import ArmPool, Budget, RoundView
from banditbench.errors import SettingError, UserError

EVALUATORS = ("auto", "replay", "rejection")
BATCH = 1024  # events read and encoded at once: a few MB of contexts for 80 arms


@dataclass(slots=True)
class Event:
    """One logged event as a round: what a policy may see, and what only the evaluator and the report see."""

    t: int
    user: int
    arms: np.ndarray  # [K, d] the contexts of the arms offered
    user_features: np.ndarray | None
    logged: int  # the logged arm, an index into ``arms`` (hidden)
    reward: float  # the logged reward (hidden)
    propensity: float  # the logging policy's probability of the logged arm (hidden)
    acceptance: float  # the probability of keeping the event when the policy picks the logged arm (hidden)
    draw: float  # a uniform in [0, 1): the event is kept when the policy matched and draw < acceptance (hidden)
    estimates: np.ndarray  # [K] the reward model's estimate of every arm, clipped to the rewards' range (hidden)

    def view(self, budget: Budget) -> RoundView:
        return RoundView(self.t, self.user, ArmPool(self.arms, budget), self.user_features)


def evaluator_of(dataset: PreparedDataset, setting: str) -> str:
    """The evaluator a setting means on this log: ``auto`` replays a log whose propensities are all one value and
    rejection-samples any other."""
    counts = dataset.manifest["counts"]
    if setting == "auto":
        return "replay" if counts["propensity_min"] == counts["propensity_max"] else "rejection"
    return setting


class LoggedEnvironment:
    SETTINGS = {"evaluator": "auto", "rejection_quantile": 0.0}
    provides_user_features = True
    true_groups = None  # a log knows no ground-truth clusters

    def __init__(self, dataset: PreparedDataset, seed, settings: dict | None = None):
        settings = {**self.SETTINGS, **(settings or {})}
        counts = dataset.manifest["counts"]
        self.path = dataset.path / dataset.manifest["tables"]["events"]["file"]
        self.contexts = dataset.parameters["contexts"]
        self.n_users, self.n_arms, self.dim = counts["users"], counts["largest_pool"], counts["context_dim"]
        self.positions = counts["positions"]
        self.reward_range = (counts["reward_min"], counts["reward_max"])
        arms = dataset.table("arms")
        self.catalogue = arms[[c for c in arms.columns if c.startswith("x_")]].to_numpy(np.float64)
        model = dataset.arrow("reward_model")
        folds = int(model["fold"].to_numpy().max()) + 1
        self.theta = np.asarray(model["theta"].combine_chunks().flatten()).reshape(folds, self.n_users + 1, -1)
        self.evaluator = evaluator_of(dataset, settings["evaluator"])
        self.scale = self.rejection_scale(settings["rejection_quantile"]) if self.evaluator == "rejection" else None
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def dimensions(dataset: PreparedDataset) -> tuple[int, int, int, None]:
        counts = dataset.manifest["counts"]
        return counts["users"], counts["largest_pool"], counts["context_dim"], None

    @staticmethod
    def most_rounds(dataset: PreparedDataset) -> int:
        """A replay streams the log once: at most one round per event."""
        return dataset.manifest["counts"]["events"]

    @staticmethod
    def check(dataset: PreparedDataset, settings: dict, budget: int | None) -> None:
        if settings["evaluator"] not in EVALUATORS:
            raise SettingError(
                "{env} evaluator must be one of {names}, got {got!r}",
                names=", ".join(EVALUATORS),
                got=settings["evaluator"],
            )
        if not 0 <= settings["rejection_quantile"] <= 1:
            raise SettingError(
                "{env} rejection_quantile must be in [0, 1], got {got}", got=settings["rejection_quantile"]
            )
        if settings["evaluator"] == "replay" and not dataset.manifest["counts"]["uniform_log"]:
            raise UserError(
                f"{dataset.name} was not logged uniformly at random, so replay would be biased (Li et al. 2011 "
                "assume a uniform log); use --env evaluator=rejection (or auto)"
            )

    def rejection_scale(self, quantile: float) -> float:
        """c, the ``quantile`` of the log's propensities (Dudík et al. 2012's rejection sampling)."""
        propensity = pq.read_table(self.path, columns=["propensity"])["propensity"].to_numpy()
        return float(np.quantile(propensity, quantile, method="inverted_cdf"))

    def acceptance(self, propensity: np.ndarray) -> np.ndarray:
        if self.scale is None:
            return np.ones_like(propensity)
        return np.minimum(1.0, self.scale / propensity)

    def estimates(self, contexts: np.ndarray, fold: np.ndarray, user: np.ndarray, position) -> np.ndarray:
        """The reward model's estimates [B, K] of B events' arms (data/logs.py), clipped to the rewards' range:
        the contexts' part (one matrix product when the events share their contexts), plus the slot's."""
        theta = self.theta[fold, user]  # [B, d + positions]
        d = contexts.shape[2]
        if len(contexts) == 1:
            estimates = theta[:, :d] @ contexts[0].T
        else:
            estimates = np.einsum("bkd,bd->bk", contexts, theta[:, :d])
        if self.positions:
            estimates += theta[np.arange(len(theta)), d + position - 1][:, None]
        return np.clip(estimates, *self.reward_range, out=estimates)

    def rounds(self, n_rounds: int) -> Iterator[Event]:
        t = 0
        for batch in pq.ParquetFile(self.path).iter_batches(batch_size=BATCH):
            columns = {name: batch.column(name) for name in batch.schema.names}
            size = min(batch.num_rows, n_rounds - t)
            user = columns["user"].to_numpy()[:size]
            action = columns["action"].to_numpy()[:size]
            reward = columns["reward"].to_numpy()[:size]
            propensity = columns["propensity"].to_numpy()[:size]
            fold = columns["fold"].to_numpy()[:size].astype(np.int64)
            position = columns["position"].to_numpy()[:size].astype(np.int64) if "position" in columns else None
            users = flat(columns.get("user_features"), size)
            draws = self.rng.random(size)
            acceptance = self.acceptance(propensity)
            if "candidates" in columns:
                pools = columns["candidates"].to_pylist()[:size]
                yield from self.pooled_events(
                    t, pools, user, action, reward, propensity, acceptance, draws, fold, position, users
                )
            else:
                extras = flat(columns.get("extras"), size)
                extras = None if extras is None else extras.reshape(size, len(self.catalogue), -1)
                contexts = arm_contexts(self.contexts, self.catalogue, extras, users)
                estimates = self.estimates(contexts, fold, user, position)
                shared = len(contexts) == 1
                for i in range(size):
                    yield Event(
                        t + i,
                        int(user[i]),
                        contexts[0 if shared else i],
                        None if users is None else users[i],
                        int(action[i]),
                        float(reward[i]),
                        float(propensity[i]),
                        float(acceptance[i]),
                        float(draws[i]),
                        estimates[i],
                    )
            t += size
            if t >= n_rounds:
                return
        if t < n_rounds:
            raise UserError(f"the log holds {t} events, fewer than the {n_rounds} rounds asked for")

    def pooled_events(self, t, pools, user, action, reward, propensity, acceptance, draws, fold, position, users):
        """Events whose pool of arms changes from one to the next (``candidates``): encoded one at a time."""
        for i, pool in enumerate(pools):
            pool = np.asarray(pool)
            contexts = arm_contexts(
                self.contexts, self.catalogue[pool][None], None, None if users is None else users[i : i + 1]
            )
            at = None if position is None else position[i : i + 1]
            estimates = self.estimates(contexts, fold[i : i + 1], user[i : i + 1], at)[0]
            yield Event(
                t + i,
                int(user[i]),
                contexts[0],
                None if users is None else users[i],
                int(np.flatnonzero(pool == action[i])[0]),
                float(reward[i]),
                float(propensity[i]),
                float(acceptance[i]),
                float(draws[i]),
                estimates,
            )


def flat(column, size: int) -> np.ndarray | None:
    """A fixed-size list column as a float64 array [size, width], or None when the log has no such column."""
    if column is None:
        return None
    width = column.type.list_size
    return np.asarray(column.flatten().to_numpy(zero_copy_only=False), np.float64)[: size * width].reshape(size, width)


def simulate_log(environment, n_events: int, behaviour=None, seed=0) -> tuple[Log, np.ndarray]:
    """A log of ``n_events`` rounds of ``environment`` (any one-arm protocol) played by a known logging policy:
    ``behaviour(round)`` gives its probabilities of the round's K arms (None: uniform). Returns the log, whose arm
    contexts are the rounds' own (per-event extras), and the expected rewards [n, K] that a real log never has: the
    ground truth against which the evaluators are checked (benchmarks/ope.py)."""
    rng = np.random.default_rng(seed)
    rounds = list(itertools.islice(environment.rounds(n_events), n_events))
    K = len(rounds[0].arms)
    probabilities = np.array([np.full(K, 1.0 / K) if behaviour is None else behaviour(r) for r in rounds])
    action = np.minimum((rng.random((n_events, 1)) > probabilities.cumsum(axis=1)).sum(axis=1), K - 1)
    events = np.arange(n_events)
    log = Log(
        user=np.array([r.user for r in rounds], np.int64),
        action=action.astype(np.int64),
        reward=np.array([r.rewards[a] for r, a in zip(rounds, action)]),
        propensity=probabilities[events, action],
        arm_features=np.zeros((K, 0), np.float32),
        items=np.arange(K).astype(str),
        extras=np.array([r.arms for r in rounds], np.float32),
    )
    return log, np.array([r.expected for r in rounds])
