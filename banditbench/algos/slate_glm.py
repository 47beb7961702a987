"""The GLM-UCB slate policies of Zhang et al. 2022 (Table 3): per-user
(disjoint) GLM-UCB on title features or neural item vectors, and the proposed shared S-N-GALM / S-N-GBLM.

All use β = 0.1 and fold every recommended item (clicked or not) into their confidence matrices by
Sherman–Morrison after each iteration (algos/glm.py). GLM weights are fitted every iteration by fresh-Adam steps
on the rounds buffered since the last item-model update: each round with a click gives its clicks plus
int(min(1.5·#clicks, #non-clicks)) of its non-clicks (the authors' code), with x and z from the current encoders.

- ``glm-ucb`` (P3, "GLM"): Eq. (2) per user on title features, 5 Adam steps at lr 0.01 on that user's samples.
  The paper sums GloVe-300 word vectors, which cannot be had offline; we use the closest distributional
  stand-in, a latent-semantic (LSA) embedding of the titles' bag of words: TF-IDF of the title tokens, truncated
  SVD to ``text_dim`` = 300 dimensions (GloVe's), rows scaled to unit norm. Two-stage: a topic's features are the
  normalised mean of its items'.
- ``n-glm-ucb`` (P5, "N-GLM"): Eq. (2) per user on the item model's 64-d vectors, one Adam step at lr 0.01.
- ``n-linucb`` (P6, code only): as N-GLM with the ridge estimate θ_u = M_u⁻¹ Σ x r and an identity link.
- ``s-n-galm-ucb`` (P9, Eq. 3): shared additive GLM, γ = 0.5 by default (the paper never gives γ; ½ weighs item
  and user halves equally, and is what the authors' γ-free mean amounts to), 5 Adam steps at lr 0.01; global
  A_x and A_z ([RECON]: the paper's A_i / A_u definitions swap u and i). ``item_only_ci=True``: the authors' code
  (no user width, no γ in the mean).
- ``s-n-gblm-ucb`` (P10, Eq. 4): shared bilinear GLM σ(xᵀΘz + b), lr 0.001, 5 Adam steps, W⁻¹ over vec(x zᵀ)
  (64·64 = 4096, no bias augmentation, as the code) kept in float32 (64 MB; float64 would be 128 MB per matrix,
  and the two-stage variant keeps a second one for topics) and updated by one rank-m Woodbury step per iteration
  (= the code's m rank-one Sherman–Morrison updates).
Two-stage ("2-"): the topic stage is the same policy on topic vectors (topic model) and the topic-user vector,
with its own statistics, fitted on the round's clicks mapped to the topics of the recommended items.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import sparse
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from banditbench.algos import domains as d
from banditbench.algos.glm import DisjointGLM, SharedGLM, balanced_rows
from banditbench.algos.slate import SlatePolicy
from banditbench.algos.slate_neural import NeuralSlatePolicy


def title_features(titles: np.ndarray, vocabulary_size: int, dim: int, seed: int = 0) -> np.ndarray:
    """[n+1, dim] LSA features of the titles' bags of words (row 0, the padding item, is zero)."""
    rows = np.repeat(np.arange(len(titles)), titles.shape[1])
    words = titles.ravel()
    keep = words > 0
    counts = sparse.csr_matrix((np.ones(keep.sum()), (rows[keep], words[keep])), shape=(len(titles), vocabulary_size))
    tfidf = TfidfTransformer().fit_transform(counts)
    dim = min(dim, vocabulary_size - 1, len(titles) - 1)
    return normalize(TruncatedSVD(dim, random_state=seed).fit_transform(tfidf))


# The GLM-UCB hyper-parameters of every GLM slate policy: β of the width, Adam's rate and steps per fit.
GLM_DOMAINS = {"beta": d.NON_NEGATIVE, "glm_lr": d.POSITIVE, "glm_steps": d.STEPS}


class PerUserGLM:
    """Mixin: one DisjointGLM on items (and one on topics), samples per user since the last item update."""

    def start_glms(self, dim: int, topic_dim: int, link: str) -> None:
        self.item_glm = DisjointGLM(dim, self.beta, self.glm_lr, self.glm_steps, link)
        self.topic_glm = (
            DisjointGLM(topic_dim, self.beta, self.glm_lr, self.glm_steps, link) if self.two_stage else None
        )
        self.samples: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

    def step_glms(
        self, user: int, slate: np.ndarray, clicks: np.ndarray, items: torch.Tensor, topics: torch.Tensor | None
    ) -> None:
        rewards = torch.as_tensor(clicks, dtype=torch.float64)
        self.item_glm.observe(user, items[slate], rewards)
        samples = self.samples.setdefault(user, [])
        samples.append((slate, clicks))
        chosen = balanced_rows([c for _, c in samples], self.rng)
        ids = np.concatenate([s[k] for (s, _), k in zip(samples, chosen)]).astype(np.int64)
        y = torch.as_tensor(np.concatenate([c[k] for (_, c), k in zip(samples, chosen)]), dtype=torch.float64)
        self.item_glm.fit(user, items[ids], y)
        if self.topic_glm is not None:
            topic = self.catalogue.topic
            self.topic_glm.observe(user, topics[topic[slate]], rewards)
            self.topic_glm.fit(user, topics[topic[ids]], y)


class GLMUCB(PerUserGLM, SlatePolicy):
    """GLM (P3): per-user GLM-UCB on LSA title features (see the module docstring)."""

    domains = {**GLM_DOMAINS, "text_dim": d.COUNT}

    def __init__(self, *, beta: float = 0.1, glm_lr: float = 0.01, glm_steps: int = 5, text_dim: int = 300, **kwargs):
        super().__init__(**kwargs)
        self.beta, self.glm_lr, self.glm_steps, self.text_dim = beta, glm_lr, glm_steps, text_dim

    def begin(self, problem) -> None:
        catalogue = problem.catalogue
        self.features = torch.as_tensor(title_features(catalogue.titles, catalogue.vocabulary_size, self.text_dim))
        means = np.stack([self.features[items].numpy().mean(0) for items in catalogue.topic_items])
        self.topic_features = torch.as_tensor(normalize(means))
        self.start_glms(self.features.shape[1], self.features.shape[1], "logistic")

    def item_scores(self, user: int, items: np.ndarray) -> np.ndarray:
        return self.item_glm.scores(user, self.features[items])

    def topic_scores(self, user: int, topics: np.ndarray) -> np.ndarray:
        return self.topic_glm.scores(user, self.topic_features[topics])

    def learn(self, t: int, user: int, slate: np.ndarray, clicks: np.ndarray, history: np.ndarray) -> None:
        self.step_glms(user, slate, clicks, self.features, self.topic_features)


class NeuralGLMUCB(PerUserGLM, NeuralSlatePolicy):
    """N-GLM (P5), and N-LinUCB (P6) with ``link="identity"``: per-user GLM-UCB on the item model's vectors."""

    domains = GLM_DOMAINS

    def __init__(
        self, *, beta: float = 0.1, glm_lr: float = 0.01, glm_steps: int = 1, link: str = "logistic", **kwargs
    ):
        super().__init__(**kwargs)
        self.beta, self.glm_lr, self.glm_steps, self.link = beta, glm_lr, glm_steps, link

    def begin_glm(self, problem) -> None:
        self.start_glms(self.item_vectors.shape[1], self.item_vectors.shape[1], self.link)

    def item_scores(self, user: int, items: np.ndarray) -> np.ndarray:
        return self.item_glm.scores(user, self.item_vectors[items])

    def topic_scores(self, user: int, topics: np.ndarray) -> np.ndarray:
        return self.topic_glm.scores(user, self.topic_vectors[topics])

    def learn_glm(self, t: int, user: int, slate: np.ndarray, clicks: np.ndarray) -> None:
        self.step_glms(user, slate, clicks, self.item_vectors, self.topic_vectors if self.two_stage else None)

    def after_item_update(self) -> None:
        self.samples.clear()  # the code clears the GLM buffer at every item-model update


class SharedGLMPolicy:
    """Mixin of S-N-GALM and S-N-GBLM: one shared GLM on items (and one on topics)."""

    def begin_glm(self, problem) -> None:
        d = self.item_vectors.shape[1]
        dtype = torch.float32 if self.kind == "bilinear" else torch.float64
        make = lambda seed: SharedGLM(
            self.kind,
            d,
            d,
            self.beta,
            self.glm_lr,
            self.glm_steps,
            self.gamma,  # noqa: E731
            self.item_only_ci,
            dtype,
            seed,
        )
        self.item_glm = make(int(self.rng.integers(2**31)))
        self.topic_glm = make(int(self.rng.integers(2**31))) if self.two_stage else None
        self.samples: list[tuple[int, np.ndarray, np.ndarray]] = []  # (user, slate, clicks) since the item update

    def item_scores(self, user: int, items: np.ndarray) -> np.ndarray:
        return self.item_glm.scores(self.item_vectors[items], self.z)

    def topic_scores(self, user: int, topics: np.ndarray) -> np.ndarray:
        return self.topic_glm.scores(self.topic_vectors[topics], self.z_topic)

    def learn_glm(self, t: int, user: int, slate: np.ndarray, clicks: np.ndarray) -> None:
        self.item_glm.observe(self.item_vectors[slate], self.z)
        if self.topic_glm is not None:
            self.topic_glm.observe(self.topic_vectors[self.catalogue.topic[slate]], self.z_topic)
        self.samples.append((user, slate, clicks))
        if t == 0:
            return
        chosen = balanced_rows([c for _, _, c in self.samples], self.rng)
        keep = [r for r, k in enumerate(chosen) if len(k)]
        if not keep:
            return
        users = [self.samples[r][0] for r in keep]
        ids = [self.samples[r][1][chosen[r]] for r in keep]
        y = torch.as_tensor(np.concatenate([self.samples[r][2][chosen[r]] for r in keep]), dtype=torch.float32)
        repeat = torch.as_tensor([len(i) for i in ids])
        ids = np.concatenate(ids)
        histories = self.history_of(users)  # z from the users' current histories (the authors' code)
        Z = self.user_vectors(histories).repeat_interleave(repeat, dim=0)
        self.item_glm.fit(self.item_vectors[ids], Z, y)
        if self.topic_glm is not None:
            with torch.no_grad():
                Z_topic = self.topic_model.user_vectors(
                    self.topic_item_vectors, torch.as_tensor(histories, dtype=torch.long)
                )
            self.topic_glm.fit(self.topic_vectors[self.catalogue.topic[ids]], Z_topic.repeat_interleave(repeat, 0), y)

    def after_item_update(self) -> None:
        self.samples.clear()


class SNGALM(SharedGLMPolicy, NeuralSlatePolicy):
    """S-N-GALM-UCB (P9, Eq. 3) and 2-S-N-GALM-UCB: shared additive GLM."""

    kind = "additive"

    domains = {**GLM_DOMAINS, "gamma": d.FRACTION, "item_only_ci": d.FLAG}

    def __init__(
        self,
        *,
        beta: float = 0.1,
        glm_lr: float = 0.01,
        glm_steps: int = 5,
        gamma: float = 0.5,
        item_only_ci: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.beta, self.glm_lr, self.glm_steps, self.gamma, self.item_only_ci = (
            beta,
            glm_lr,
            glm_steps,
            gamma,
            item_only_ci,
        )


class SNGBLM(SharedGLMPolicy, NeuralSlatePolicy):
    """S-N-GBLM-UCB (P10, Eq. 4) and 2-S-N-GBLM-UCB: shared bilinear GLM."""

    kind = "bilinear"
    gamma, item_only_ci = 0.5, False  # unused by the bilinear model

    domains = GLM_DOMAINS

    def __init__(self, *, beta: float = 0.1, glm_lr: float = 0.001, glm_steps: int = 5, **kwargs):
        super().__init__(**kwargs)
        self.beta, self.glm_lr, self.glm_steps = beta, glm_lr, glm_steps
