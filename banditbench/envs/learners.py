"""The learners' neural models of Zhang et al. 2022 and their pre-training on the known split (§5).

Models (one set per learner; the simulator is a separate, larger model):
- item model: the two-tower click model of ``banditbench/simulator/encoders.py`` (64-d, as the paper's learners),
  trained with softmax cross-entropy over 1 click + ``npratio`` = 4 negatives of the same impression (NRMS);
- topic model (stage 1 of the two-stage policies): its own two-tower's user vector through a 2-layer MLP, dotted
  with a learned topic vector (an embedding per topic id through a 2-layer MLP with dropout 0.2, the authors'
  code; the paper also mentions the topic name, which the code does not use), trained with BCE on
  (topic of a click, topic of a non-clicked item of the same impression), labels 1 / 0, ratio 1.

Pre-training is protocol, not policy: the environment of a trial trains both models once on S_known (the first
ε = 20 % of training clicks by time) without the trial's users, with Adam (lr ``PRETRAIN_LR``), batch 64, for
``epochs`` epochs, and hands the same weights to every learner of the trial (common random numbers). The weights
are cached in ``<dataset>/learners/<key>.pt``, key = sha256 of the dataset manifest, the trial's users and every
training setting, written atomically, so the units of a trial (any process) train once.

Choices where the paper is silent or we cannot follow it: lr 1e-3 for pre-training (the code's 1e-4 fine-tunes
GloVe vectors, which are not available offline; from random word vectors 1e-4 barely moves in 5 epochs); no 90/10
validation split with best-AUC checkpoint (the last epoch is kept). Online updates use the code's lr 1e-4.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from banditbench.simulator.encoders import TwoTower, dropout
from banditbench.simulator.logged import HISTORY, LoggedData, click_rows, known_split, last_items

DIM = 64  # the paper's learner representation size
WORD_DIM = 64  # lighter than the simulator's word vectors: the learners re-encode the catalogue every 100 iterations
BATCH = 64
PRETRAIN_LR = 1e-3
ONLINE_LR = 1e-4
TOPIC_DROPOUT = 0.2


class TopicModel(nn.Module):
    """α1's neural part: score(u, v) = MLP_user(f_user(u)) · MLP_topic(e_v)."""

    def __init__(self, vocab_size: int, n_topics: int, dim: int = DIM, seed: int = 0):
        super().__init__()
        self.config = dict(vocab_size=vocab_size, n_topics=n_topics, dim=dim, seed=seed)
        self.tower = TwoTower(vocab_size, n_topics, dim=dim, word_dim=WORD_DIM, attention_dim=WORD_DIM, seed=seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)
            self.user_mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
            self.topic_embedding = nn.Embedding(n_topics, dim)
            self.topic_in, self.topic_out = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def topic_vectors(self, drop: bool = False, generator: torch.Generator | None = None) -> torch.Tensor:
        """[q, dim]; with ``drop`` one MC-dropout pass (dropout after the embedding and the hidden layer)."""
        p = TOPIC_DROPOUT if drop else 0.0
        hidden = torch.relu(self.topic_in(dropout(self.topic_embedding.weight, p, generator)))
        return self.topic_out(dropout(hidden, p, generator))

    def user_vectors(self, item_vectors: torch.Tensor, histories: torch.Tensor) -> torch.Tensor:
        return self.user_mlp(self.tower.user_vectors(item_vectors, histories))

    def logits(self, titles, topics, histories, pos_topics, neg_topics, generator=None) -> torch.Tensor:
        """[B, 2] logits of (clicked topic, other topic) for users with histories [B, H]."""
        histories = histories[:, -self.tower.history :]
        used, inverse = torch.unique(histories.reshape(-1), return_inverse=True)
        vectors = self.tower.items(titles[used], topics[used], drop=self.training, generator=generator)
        users = self.user_mlp(self.tower.users(vectors[inverse.view(histories.shape)], histories))
        topic = self.topic_vectors(self.training, generator)
        return torch.stack([(users * topic[pos_topics]).sum(-1), (users * topic[neg_topics]).sum(-1)], dim=1)


def new_item_model(vocabulary_size: int, n_topics: int, seed: int = 0) -> TwoTower:
    return TwoTower(vocabulary_size, n_topics, dim=DIM, word_dim=WORD_DIM, attention_dim=WORD_DIM, seed=seed)


def adam_epochs(model: nn.Module, n_rows: int, batch_loss, *, epochs: int, lr: float, rng: np.random.Generator) -> None:
    """``epochs`` passes over ``n_rows`` training rows in minibatches of ``BATCH`` (order from ``rng``), one step of
    a fresh Adam (as the authors' code) on ``batch_loss(rows)`` each; the model is left in eval mode."""
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        for batch in np.array_split(rng.permutation(n_rows), max(1, -(-n_rows // BATCH))):
            loss = batch_loss(batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()


def train_items(
    model: TwoTower,
    titles: torch.Tensor,
    topics: torch.Tensor,
    histories: np.ndarray,
    candidates: np.ndarray,
    *,
    epochs: int,
    lr: float,
    rng: np.random.Generator,
    generator: torch.Generator,
) -> None:
    """NRMS training: softmax cross-entropy with the click in column 0 of ``candidates`` [R, 1 + npratio]."""
    if len(candidates) == 0:
        return
    histories, candidates = torch.as_tensor(histories, dtype=torch.long), torch.as_tensor(candidates, dtype=torch.long)
    target = torch.zeros(BATCH, dtype=torch.long)
    adam_epochs(
        model,
        len(candidates),
        lambda batch: nn.functional.cross_entropy(
            model.logits(titles, topics, histories[batch], candidates[batch], generator), target[: len(batch)]
        ),
        epochs=epochs,
        lr=lr,
        rng=rng,
    )


def train_topics(
    model: TopicModel,
    titles: torch.Tensor,
    topics: torch.Tensor,
    histories: np.ndarray,
    pos_topics: np.ndarray,
    neg_topics: np.ndarray,
    *,
    epochs: int,
    lr: float,
    rng: np.random.Generator,
    generator: torch.Generator,
) -> None:
    """BCE on σ(score) of (clicked topic, label 1) and (non-clicked topic, label 0)."""
    if len(pos_topics) == 0:
        return
    histories = torch.as_tensor(histories, dtype=torch.long)
    pos, neg = torch.as_tensor(pos_topics, dtype=torch.long), torch.as_tensor(neg_topics, dtype=torch.long)
    labels = torch.tensor([1.0, 0.0]).expand(BATCH, 2)
    adam_epochs(
        model,
        len(pos),
        lambda batch: nn.functional.binary_cross_entropy_with_logits(
            model.logits(titles, topics, histories[batch], pos[batch], neg[batch], generator), labels[: len(batch)]
        ),
        epochs=epochs,
        lr=lr,
        rng=rng,
    )


def pretrain(
    data: LoggedData, exclude_users: np.ndarray, *, fraction: float, epochs: int, seed: int, topics: bool
) -> dict:
    """Item (and topic) model weights after training on S_known without ``exclude_users``."""
    split = known_split(data, fraction, exclude_users)
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    rows = click_rows(data, split.impression, split.item, rng)
    imp = data.impressions
    histories = last_items(imp.history_offsets, imp.history, rows.impression, HISTORY)
    titles, topic_of = torch.as_tensor(data.titles, dtype=torch.long), torch.as_tensor(data.topic, dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same float reductions, hence the same weights, on every run
    try:
        item_model = new_item_model(len(data.vocabulary), data.n_topics, seed)
        train_items(
            item_model,
            titles,
            topic_of,
            histories,
            rows.candidates,
            epochs=epochs,
            lr=PRETRAIN_LR,
            rng=rng,
            generator=generator,
        )
        state = {"item": item_model.state_dict()}
        if topics:
            topic_model = TopicModel(len(data.vocabulary), data.n_topics, seed=seed)
            negative = rows.candidates[:, 1] > 0
            train_topics(
                topic_model,
                titles,
                topic_of,
                histories[negative],
                data.topic[rows.candidates[negative, 0]],
                data.topic[rows.candidates[negative, 1]],
                epochs=epochs,
                lr=PRETRAIN_LR,
                rng=rng,
                generator=generator,
            )
            state["topic"] = topic_model.state_dict()
    finally:
        torch.set_num_threads(threads)
    return state


def cached_pretrain(folder: Path, data: LoggedData, exclude_users: np.ndarray, **settings) -> dict:
    """``pretrain`` once per (dataset, users, settings): later calls, in any process, load the saved weights."""
    key = hashlib.sha256(
        json.dumps(
            {
                "dataset": data.manifest_sha256,
                "users": np.sort(exclude_users).tolist(),
                "dim": DIM,
                "word_dim": WORD_DIM,
                "lr": PRETRAIN_LR,
                **settings,
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]
    path = Path(folder) / "learners" / f"{key}.pt"
    if path.exists():
        return torch.load(path, weights_only=True)
    state = pretrain(data, exclude_users, **settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        torch.save(state, partial)
        os.replace(partial, path)
    except OSError:  # a read-only dataset folder: train again next time
        pass
    return state
