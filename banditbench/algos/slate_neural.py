"""N-Greedy and N-Dropout-UCB of Zhang et al. 2022, and the neural machinery
every "N-" slate policy shares.

Each learner owns an item model (the two-tower of envs/learners.py, 64-d) and, two-stage, a topic model, both
starting from the weights the protocol pre-trained for the trial. Per iteration t (the authors' order):
1. the user vector z_u = f_user(last 50 clicks of u) is computed from the current item vectors (``prepare``);
2. the slate is chosen (slate.py); its clicks are appended to u's history (no duplicates);
3. the round (u, history it was chosen with, slate, clicks) is buffered;
4. t > 0 and t % ``topic_update_every`` (l_t = 50) == 0: the topic model trains one epoch on the rounds since
   its last update (BCE on topic of a click vs. topic of a non-click of the same round) and is re-encoded;
5. t > 0 and t % ``item_update_every`` (l_n = 100) == 0: the item model trains one epoch (batch 64, fresh Adam
   at ``neural_lr`` 1e-4) on one sample per click of the buffered rounds with at least one click and one non-click
   (4 of the round's non-clicks, padded with item 0), then every item vector is recomputed and the buffer cleared;
6. the policy's own per-iteration step (``learn_glm``: GLM statistics and weights).

N-Greedy: α(u, i) = x_iᵀz_u. N-Dropout-UCB: ``mc_passes`` = 5 dropout banks of all item vectors (rate 0.2, after
the word embedding and the word pooling, item tower only), recomputed only when the item model changes (the
authors' code); pass k gives z_u^k from bank k and ŷ^k = x_i^kᵀz_u^k; α = mean_k ŷ^k + β std_k ŷ^k (population
std, raw scores). Two-stage: α1 uses the topic model the same way (its dropout sits on the topic side: the topic
embedding and its hidden layer; the topic-user tower is deterministic, which saves five catalogue passes per topic
update).
"""

from __future__ import annotations

import numpy as np
import torch

from banditbench.algos import domains as d
from banditbench.algos.neural import torch_generator
from banditbench.algos.slate import SlatePolicy
from banditbench.envs.learners import ONLINE_LR, TopicModel, new_item_model, train_items, train_topics
from banditbench.simulator.logged import NPRATIO


class NeuralSlatePolicy(SlatePolicy):
    mc_passes = 0  # MC-dropout banks kept besides the plain item vectors (N-Dropout-UCB: 5)
    transient = ("seed",)  # used once, to seed ``generator`` (whose state is saved)

    domains = {
        "item_update_every": d.COUNT,
        "topic_update_every": d.COUNT,
        "neural_lr": d.NON_NEGATIVE,
        "threads": d.COUNT,
    }

    def __init__(
        self,
        *,
        item_update_every: int = 100,
        topic_update_every: int = 50,
        neural_lr: float = ONLINE_LR,
        threads: int = 1,
        two_stage: bool = False,
        dynamic_topics: bool = True,
        topic_groups: str = "paper",
        topic_min_size: int | None = None,
        n_users: int,
        n_arms: int,
        dim: int,
        seed: np.random.SeedSequence,
    ):
        super().__init__(
            two_stage=two_stage,
            dynamic_topics=dynamic_topics,
            topic_groups=topic_groups,
            topic_min_size=topic_min_size,
            n_users=n_users,
            n_arms=n_arms,
            dim=dim,
            seed=seed,
        )
        self.item_update_every, self.topic_update_every = item_update_every, topic_update_every
        self.neural_lr, self.threads, self.seed = neural_lr, threads, seed

    # -- models ----------------------------------------------------------------------------------------------
    def begin(self, problem) -> None:
        catalogue = problem.catalogue
        self.generator = torch_generator(self.seed, torch.device("cpu"), self.threads)
        self.titles = torch.as_tensor(catalogue.titles, dtype=torch.long)
        self.topic_of = torch.as_tensor(catalogue.topic, dtype=torch.long)
        init = int(self.rng.integers(2**31))
        self.item_model = new_item_model(catalogue.vocabulary_size, catalogue.n_topics, init)
        if problem.pretrained is not None:
            self.item_model.load_state_dict(problem.pretrained["item"])
        self.item_model.eval()
        self.rows: list[tuple] = []  # rounds since the last item-model update
        self.refresh_items()
        if self.two_stage:
            self.topic_model = TopicModel(catalogue.vocabulary_size, catalogue.n_topics, seed=init)
            if problem.pretrained is not None:
                self.topic_model.load_state_dict(problem.pretrained["topic"])
            self.topic_model.eval()
            self.topic_rows: list[tuple] = []
            self.refresh_topics()
        self.begin_glm(problem)

    def begin_glm(self, problem) -> None:
        """Set up the policy's own statistics (GLMs)."""

    @torch.no_grad()
    def refresh_items(self) -> None:
        self.item_vectors = self.item_model.item_vectors(self.titles, self.topic_of)
        if self.mc_passes:
            self.item_banks = self.item_model.item_vectors(
                self.titles, self.topic_of, passes=self.mc_passes, generator=self.generator
            )

    @torch.no_grad()
    def refresh_topics(self) -> None:
        self.topic_item_vectors = self.topic_model.tower.item_vectors(self.titles, self.topic_of)
        self.topic_vectors = self.topic_model.topic_vectors()
        if self.mc_passes:
            self.topic_banks = torch.stack(
                [self.topic_model.topic_vectors(True, self.generator) for _ in range(self.mc_passes)]
            )

    @torch.no_grad()
    def user_vectors(self, histories: np.ndarray) -> torch.Tensor:
        return self.item_model.user_vectors(self.item_vectors, histories)

    @torch.no_grad()
    def prepare(self, user: int) -> None:
        history = self.history_of([user])
        self.z = self.user_vectors(history)[0]
        if self.mc_passes:
            self.z_banks = self.item_model.user_vectors(self.item_banks, history)[:, 0]  # [passes, d]
        if self.two_stage:
            self.z_topic = self.topic_model.user_vectors(
                self.topic_item_vectors, torch.as_tensor(history, dtype=torch.long)
            )[0]

    # -- learning --------------------------------------------------------------------------------------------
    def learn(self, t: int, user: int, slate: np.ndarray, clicks: np.ndarray, history: np.ndarray) -> None:
        self.rows.append((user, history, slate, clicks))
        if self.two_stage:
            self.topic_rows.append((user, history, slate, clicks))
            if t > 0 and t % self.topic_update_every == 0:
                self.update_topic_model()
        if t > 0 and t % self.item_update_every == 0:
            self.update_item_model()
        self.learn_glm(t, user, slate, clicks)

    def learn_glm(self, t: int, user: int, slate: np.ndarray, clicks: np.ndarray) -> None:
        """The policy's per-iteration step after the neural updates."""

    def update_item_model(self) -> None:
        histories, candidates = [], []
        for _, history, slate, clicks in self.rows:
            negatives = slate[clicks == 0]
            if len(negatives) == 0:
                continue
            for positive in slate[clicks > 0]:
                drawn = self.rng.choice(negatives, min(NPRATIO, len(negatives)), replace=False)
                candidates.append(np.concatenate([[positive], drawn, np.zeros(NPRATIO - len(drawn), np.int64)]))
                histories.append(history)
        if candidates:
            train_items(
                self.item_model,
                self.titles,
                self.topic_of,
                np.array(histories),
                np.array(candidates),
                epochs=1,
                lr=self.neural_lr,
                rng=self.rng,
                generator=self.generator,
            )
            self.refresh_items()
        self.rows.clear()
        self.after_item_update()

    def after_item_update(self) -> None:
        """What changes when the item vectors do (the GLMs' sample buffers are cleared)."""

    def update_topic_model(self) -> None:
        histories, positives, negatives = [], [], []
        topic = self.catalogue.topic
        for _, history, slate, clicks in self.topic_rows:
            if clicks.all() or not clicks.any():
                continue
            for positive in slate[clicks > 0]:
                histories.append(history)
                positives.append(topic[positive])
                negatives.append(topic[self.rng.choice(slate[clicks == 0])])
        if positives:
            train_topics(
                self.topic_model,
                self.titles,
                self.topic_of,
                np.array(histories),
                np.array(positives),
                np.array(negatives),
                epochs=1,
                lr=self.neural_lr,
                rng=self.rng,
                generator=self.generator,
            )
            self.refresh_topics()
        self.topic_rows.clear()


class NeuralGreedy(NeuralSlatePolicy):
    """N-Greedy (P7) and 2-N-Greedy (P11): the item model's scores, no exploration."""

    def item_scores(self, user: int, items: np.ndarray) -> np.ndarray:
        return (self.item_vectors[items] @ self.z).numpy()

    def topic_scores(self, user: int, topics: np.ndarray) -> np.ndarray:
        return (self.topic_vectors[topics] @ self.z_topic).numpy()


class NeuralDropoutUCB(NeuralSlatePolicy):
    """N-Dropout-UCB (P8) and 2-N-Dropout-UCB (P12): mean + β·std over 5 MC-dropout passes."""

    mc_passes = 5

    domains = {"beta": d.NON_NEGATIVE}

    def __init__(self, *, beta: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.beta = beta

    def item_scores(self, user: int, items: np.ndarray) -> np.ndarray:
        passes = torch.einsum("pnd,pd->pn", self.item_banks[:, items], self.z_banks)
        return (passes.mean(0) + self.beta * passes.std(0, unbiased=False)).numpy()

    def topic_scores(self, user: int, topics: np.ndarray) -> np.ndarray:
        passes = self.topic_banks[:, topics] @ self.z_topic
        return (passes.mean(0) + self.beta * passes.std(0, unbiased=False)).numpy()
