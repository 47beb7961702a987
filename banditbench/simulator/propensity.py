"""The learned logistic propensity model, the alternative to the empirical propensity in the authors' code for
Zhang et al. 2022, §4 (their ``PropensityScoreModel``; propensities estimated by logistic regression as in
Schnabel et al. 2016, §5, and used for inverse propensity weighting as in Imbens & Rubin 2015).

On frozen user vectors z [U, d] and item vectors x [N+1, d] of a click model,

    logit(u, i) = w_uᵀ z_u + w_iᵀ x_i + z_uᵀ W x_i + b,        p̂(u, i) = σ(logit(u, i)),

trained with BCE to tell the items *displayed* to a user (shown in one of the user's training impressions,
clicked or not) from items never displayed to the user. One sample per user and epoch: ``POSITIVES`` = 2
displayed items and ``NEGATIVES`` = 10 non-displayed items, each drawn uniformly without replacement (the
authors' ``propensity_score_num_pos`` / ``num_neg``); when a user has fewer, the missing slots are masked out of
the loss, which is the mean over users of the mean BCE of their unmasked slots. Adam, batch 64 users, 10 epochs
(the authors' ``EPOCHS``; ``--propensity-epochs``) with the simulator's ``--lr`` (as the authors' code),
initialisation and draws from the seed.

Where the frozen vectors come from (the chicken-and-egg order; the authors' ``preprocess.py`` computes them from
a click model trained *without* IPS, with the simulator's architecture): the simulator's two towers are first
fitted with the plain logistic loss (``--variant none``, same settings and early stopping), then frozen; x_i are
its item vectors, z_u the user tower on the user's logged history (the history the personalised simulator reads,
``initial_histories``). The IPS-weighted simulator is then trained from a fresh initialisation with p̂ in place of
the empirical p(u, i). p̂ is clipped below at ``floor`` so that 1/p̂ stays finite; the padding item 0 keeps p = 1
as in the empirical propensity.

Held-out check: the users of the validation impressions, each with 2 items displayed to them in their validation
impressions and 10 not displayed there (one fixed draw, as the authors' ``val_user_news_obs``); the figure is the
ROC AUC of p̂ over those items (displayed = positive).

Choices where the paper and code are silent or unused: the authors' last version of the training set
(``PropensityScoreDatasetWithRealLabels``) regresses the displayed items on n(u, i)/n(u) instead of 1; here the
target is the 0/1 "was displayed" of the model's description. The authors never selected an epoch (their
validation is commented out); here the last epoch is kept. The floor is 0.01 (weights at most 100 before
normalisation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from torch import nn

from banditbench.simulator.logged import LoggedData, sample_without_replacement

POSITIVES = 2
NEGATIVES = 10
BATCH = 64
EPOCHS = 10
FLOOR = 0.01


@dataclass(frozen=True)
class Displayed:
    """The distinct items displayed to every user, flat: user u's are ``items[offsets[u]:offsets[u + 1]]``,
    sorted."""

    items: np.ndarray  # [D] int64, 1..n_items
    offsets: np.ndarray  # [U+1] int64

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


def displayed_items(data: LoggedData, chosen: np.ndarray) -> Displayed:
    """The distinct real items shown to each user in the impressions selected by ``chosen`` (a bool mask)."""
    imp = data.impressions
    stride = np.int64(data.n_items + 1)
    entry = chosen[imp.shown_impression] & (imp.shown > 0)
    pairs = np.unique(imp.user[imp.shown_impression[entry]] * stride + imp.shown[entry])
    users, items = pairs // stride, pairs % stride
    counts = np.bincount(users, minlength=data.n_users)
    return Displayed(items, np.concatenate([[0], np.cumsum(counts)]))


def draw_samples(
    displayed: Displayed, users: np.ndarray, n_items: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items [R, 12], labels [R, 12] and mask [R, 12] of one sample per user of ``users``: ``POSITIVES``
    displayed items then ``NEGATIVES`` non-displayed ones, each uniform without replacement; masked slots hold
    item 0."""
    counts = displayed.counts[users]
    starts = displayed.offsets[users]
    position = sample_without_replacement(counts, POSITIVES, rng)
    flat = displayed.items
    positive = np.where(position >= 0, flat[np.minimum(starts[:, None] + np.maximum(position, 0), len(flat) - 1)], 0)
    # The k-th (0-based) item a user was not shown is k + 1 + #{d displayed : d − 1 − j(d) ≤ k}, j(d) the rank of d
    # among the user's displayed items: d − 1 − j(d) counts the items below d not shown. One sorted key per
    # (user, that count) answers every row in one searchsorted.
    stride = np.int64(n_items + 1)
    owner = np.repeat(np.arange(len(displayed.counts)), displayed.counts)
    keys = owner * stride + flat - 1 - (np.arange(len(flat)) - displayed.offsets[owner])
    rank = sample_without_replacement(n_items - counts, NEGATIVES, rng)
    below = np.searchsorted(keys, users[:, None] * stride + rank, "right") - starts[:, None]
    negative = np.where(rank >= 0, rank + 1 + below, 0)
    items = np.concatenate([positive, negative], axis=1)
    labels = np.zeros(items.shape, np.float32)
    labels[:, :POSITIVES] = 1
    return items, labels, items > 0


class LogisticPropensity(nn.Module):
    """logit(u, i) = w_uᵀ z + w_iᵀ x + zᵀ W x + b on frozen user vectors z and item vectors x (one bias b: the
    authors' two linear biases add up to one)."""

    def __init__(self, user_dim: int, item_dim: int, seed: int = 0):
        super().__init__()
        with torch.random.fork_rng(devices=[]):  # initialise from the seed, leave the global RNG alone
            torch.manual_seed(seed)
            self.user_linear = nn.Linear(user_dim, 1)
            self.item_linear = nn.Linear(item_dim, 1, bias=False)
            self.bilinear = nn.Linear(item_dim, user_dim, bias=False)  # W

    def forward(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits [B, C] of users z [B, d_u] and their items x [B, C, d_i]."""
        interaction = torch.einsum("be,bce->bc", z @ self.bilinear.weight, x)  # zᵀW once per user, not per item
        return self.user_linear(z) + self.item_linear(x).squeeze(-1) + interaction


class LearnedPropensity:
    """p̂(u, i) = max(σ(logit(u, i)), floor), 1 for the padding item 0; called like the empirical propensity."""

    def __init__(self, model: LogisticPropensity, user_vectors: np.ndarray, item_vectors: np.ndarray, floor: float):
        self.model, self.floor = model.eval(), floor
        self.user_vectors, self.item_vectors = torch.as_tensor(user_vectors), torch.as_tensor(item_vectors)

    @torch.no_grad()
    def raw(self, users: np.ndarray, items: np.ndarray, batch: int = 65536) -> np.ndarray:
        """σ(logit) [R, C] of users [R] and items [R, C], unclipped; in batches of rows, so that the gathered
        item vectors of a MIND-large epoch never sit in memory at once."""
        users, items = torch.as_tensor(users), torch.as_tensor(items)
        logits = [
            self.model(self.user_vectors[users[s : s + batch]], self.item_vectors[items[s : s + batch]])
            for s in range(0, len(users), batch)
        ]
        return torch.sigmoid(torch.cat(logits)).numpy().astype(np.float64) if logits else np.ones(items.shape)

    def __call__(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Propensities of user-item pairs (users [R, 1] with items [R, C]); 1 for the padding item."""
        users, items = np.broadcast_arrays(np.asarray(users, np.int64), np.asarray(items, np.int64))
        p = np.maximum(self.raw(users[:, 0], items), self.floor) if items.size else np.ones(items.shape)
        return np.where(items > 0, p, 1.0)


def heldout_auc(propensity: LearnedPropensity, users: np.ndarray, items: np.ndarray, labels, mask) -> float:
    """ROC AUC of p̂ at telling displayed (1) from non-displayed (0) items over the unmasked slots."""
    y = labels[mask]
    if not 0 < y.sum() < len(y):
        return float("nan")
    return float(roc_auc_score(y, propensity.raw(users, items)[mask]))


def fit_propensity(
    data: LoggedData,
    user_vectors: np.ndarray,
    item_vectors: np.ndarray,
    rng: np.random.Generator,
    seed: int,
    lr: float,
    epochs: int = EPOCHS,
    floor: float = FLOOR,
) -> tuple[LearnedPropensity, dict]:
    """Fit the logistic propensity model on the training impressions' displays; return it and its figures
    (per-epoch loss and held-out AUC, the held-out AUC of the last epoch)."""
    imp = data.impressions
    train = displayed_items(data, imp.train)
    users = np.flatnonzero(train.counts > 0)
    valid = displayed_items(data, imp.valid)
    valid_users = np.flatnonzero(valid.counts > 0)
    heldout = draw_samples(valid, valid_users, data.n_items, rng)  # one fixed draw before training

    model = LogisticPropensity(user_vectors.shape[1], item_vectors.shape[1], seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    z, x = torch.as_tensor(user_vectors), torch.as_tensor(item_vectors)
    propensity = LearnedPropensity(model, user_vectors, item_vectors, floor)
    log = []
    for epoch in range(1, epochs + 1):
        items, labels, mask = draw_samples(train, users, data.n_items, rng)
        items, labels, mask = (
            torch.as_tensor(items),
            torch.as_tensor(labels),
            torch.as_tensor(mask, dtype=torch.float32),
        )
        model.train()
        total = 0.0
        for batch in np.array_split(rng.permutation(len(users)), max(1, -(-len(users) // BATCH))):
            rows = torch.as_tensor(batch)
            logits = model(z[torch.as_tensor(users[batch])], x[items[rows]])
            bce = nn.functional.binary_cross_entropy_with_logits(logits, labels[rows], reduction="none")
            loss = ((bce * mask[rows]).sum(1) / mask[rows].sum(1).clamp_min(1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        model.eval()
        log.append(
            {
                "epoch": epoch,
                "train_loss": total / max(len(users), 1),
                "heldout_auc": heldout_auc(propensity, valid_users, *heldout),
            }
        )
    figures = {
        "heldout_auc": log[-1]["heldout_auc"] if log else float("nan"),
        "heldout_users": int(len(valid_users)),
        "training_users": int(len(users)),
        "positives": POSITIVES,
        "negatives": NEGATIVES,
        "batch": BATCH,
        "floor": floor,
        "epochs": log,
    }
    return propensity, figures
