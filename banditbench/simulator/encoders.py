"""A light two-tower click model for Zhang et al. 2022, used by the IPS simulator and by the learners (each with its own
instance and weights): ``score(u, i) = f_user(u)ᵀ f_item(i)``, a dot product (NRMS-style two towers, Wu et al. 2019).

Item tower: learned word embeddings of the title tokens (dropout) → additive attention over the words
(``word_pooling="attention"``, default) or their mean (``"mean"``, a bag of words over the real words only,
cheaper; the simulator's choice), padding masked → dropout → concatenated with a learned topic embedding
→ Linear → ``dim``.
User tower: additive attention over the item vectors of the user's last ``history`` items (padding masked)
→ Linear → ``dim``; an empty history gives a learned vector ``empty_user``.

Against the paper's NRMS (Wu et al. 2019; authors' code: GloVe-300 fine-tuned, 20×20-head word and item
self-attention, additive attention 200, no padding mask; 64-d learners, 400-d simulator) this is lighter, for
CPUs: no multi-head self-attention (additive attention pools the words and the history directly), learned word
embeddings instead of GloVe (no pretrained vectors can be downloaded here), the topic (subcategory / first genre)
embedding added to the item, and padding masked. Dropout sits where NRMS has it: after the word embedding and
after the word-level layer, item tower only. ``mask_padding=False`` reproduces the unmasked padding of the code.

MC dropout (N-Dropout-UCB): ``item_vectors(..., passes=n, generator=g)`` returns n dropout banks [n, N, d],
drawn from ``g`` so they repeat exactly. All randomness (initialisation, dropout) comes from explicit seeds or
torch generators, never the global torch RNG, so a seed fixes the model on CPU.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from banditbench.errors import UserError
from banditbench.simulator.logged import HISTORY

WORD_POOLING = ("attention", "mean")


def dropout(x: torch.Tensor, p: float, generator: torch.Generator | None) -> torch.Tensor:
    """Inverted dropout whose mask is drawn from ``generator`` (the global RNG when None).

    An element is dropped when a 16-bit uniform falls below round(p·2¹⁶): the rate is p to within 2⁻¹⁷, and kept
    values are scaled by the exact 1 / (1 − rate). Each 64-bit draw of the generator gives four such uniforms, a
    quarter of the generator calls of ``torch.rand`` (whose masks took a third of the simulator's training).
    """
    if p <= 0:
        return x
    cut = round(p * 65536)
    draws = torch.empty(-(-x.numel() // 4), dtype=torch.int64, device=x.device).random_(
        -(2**63), None, generator=generator
    )
    uniforms = draws.view(torch.int16)[: x.numel()].view(x.shape)  # uniform on [−2¹⁵, 2¹⁵)
    return torch.where(uniforms >= cut - 32768, x, 0.0) * (65536 / (65536 - cut))


class AdditiveAttention(nn.Module):
    """Pool [..., n, in_dim] over n with weights softmax(qᵀ tanh(W h + b)); masked entries get weight 0, and a
    fully masked row pools to 0."""

    def __init__(self, in_dim: int, query_dim: int):
        super().__init__()
        self.project = nn.Linear(in_dim, query_dim)
        self.query = nn.Parameter(torch.empty(query_dim).uniform_(-0.1, 0.1))

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = torch.tanh(self.project(h)) @ self.query
        weights = torch.softmax(scores.masked_fill(~mask, -1e4), dim=-1) * mask
        return (weights.unsqueeze(-1) * h).sum(-2)


class ItemEncoder(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        n_topics: int,
        dim: int,
        word_dim: int,
        attention_dim: int,
        dropout: float,
        mask_padding: bool,
        word_pooling: str = "attention",
    ):
        super().__init__()
        self.words = nn.Embedding(vocab_size, word_dim, padding_idx=0)
        self.topics = nn.Embedding(n_topics + 1, word_dim)  # row 0: no topic (padding item)
        self.attention = AdditiveAttention(word_dim, attention_dim) if word_pooling == "attention" else None
        self.out = nn.Linear(2 * word_dim, dim)
        self.dropout, self.mask_padding = dropout, mask_padding

    def forward(
        self, titles: torch.Tensor, topics: torch.Tensor, drop: bool, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """titles [N, L] word indices, topics [N] (-1 = none) -> [N, dim]."""
        p = self.dropout if drop else 0.0
        if self.attention is None:
            title = self.bag_of_words(titles, p, generator)
        else:
            if self.mask_padding:  # masked padding changes nothing: cut the columns no title of the batch uses
                titles = titles[:, : max(1, int((titles > 0).sum(1).max()))] if len(titles) else titles
            words = dropout(self.words(titles), p, generator)
            mask = titles > 0 if self.mask_padding else torch.ones_like(titles, dtype=torch.bool)
            title = self.attention(words, mask)
        title = dropout(title, p, generator)
        return self.out(torch.cat([title, self.topics(topics + 1)], dim=-1))

    def bag_of_words(self, titles: torch.Tensor, p: float, generator: torch.Generator | None) -> torch.Tensor:
        """Mean of the title's word vectors (after dropout). Only the real words are embedded and dropped out:
        a padding word's vector is 0 (row 0 of the embedding is fixed at 0), so it adds nothing to the sum, and
        skipping it spares the padded [N, L, word_dim] tensor, most of it padding on real titles."""
        real = titles > 0
        words = dropout(self.words(titles[real]), p, generator)  # [T, word_dim], row-major order of ``real``
        sums = words.new_zeros(len(titles), words.shape[1]).index_add(0, real.nonzero()[:, 0], words)
        count = real.sum(-1, keepdim=True).clamp_min(1) if self.mask_padding else titles.shape[1]  # code: padding too
        return sums / count


class UserEncoder(nn.Module):
    def __init__(self, dim: int, attention_dim: int, mask_padding: bool):
        super().__init__()
        self.attention = AdditiveAttention(dim, attention_dim)
        self.out = nn.Linear(dim, dim)
        self.empty_user = nn.Parameter(torch.zeros(dim))
        self.mask_padding = mask_padding

    def forward(self, history_vectors: torch.Tensor, history: torch.Tensor) -> torch.Tensor:
        """history_vectors [U, H, dim] of the items history [U, H] (0 = padding) -> [U, dim]."""
        mask = history > 0 if self.mask_padding else torch.ones_like(history, dtype=torch.bool)
        users = self.out(self.attention(history_vectors, mask))
        return torch.where(mask.any(-1, keepdim=True), users, self.empty_user)


class TwoTower(nn.Module):
    """Two-tower click model; logit(u, i) = f_user(history of u) · f_item(title, topic of i).

    Parameters (defaults: the learners' 64-d of the paper; the simulator uses a larger ``dim``):
    vocab_size, n_topics: from ``LoggedData`` (``len(vocabulary)``, ``n_topics``);
    dim: item and user vector size (paper: 64 learners, 400 simulator); word_dim: word and topic embedding size
    (NRMS: 300 GloVe); attention_dim: additive-attention query size (NRMS: 200); dropout: rate after the word
    embedding and after word pooling (paper: 0.2); history: last items of a user's history used (paper: 50);
    mask_padding: mask history / title padding (True; the authors' code does not: False); word_pooling: attention |
    mean (see the module docstring); seed: initialisation.
    """

    def __init__(
        self,
        vocab_size: int,
        n_topics: int,
        dim: int = 64,
        word_dim: int = 128,
        attention_dim: int = 128,
        dropout: float = 0.2,
        history: int = HISTORY,
        mask_padding: bool = True,
        word_pooling: str = "attention",
        seed: int = 0,
    ):
        super().__init__()
        if word_pooling not in WORD_POOLING:
            raise UserError(f"word pooling must be one of {', '.join(WORD_POOLING)}, got {word_pooling!r}")
        self.config = dict(
            vocab_size=vocab_size,
            n_topics=n_topics,
            dim=dim,
            word_dim=word_dim,
            attention_dim=attention_dim,
            dropout=dropout,
            history=history,
            mask_padding=mask_padding,
            word_pooling=word_pooling,
            seed=seed,
        )
        self.history = history
        with torch.random.fork_rng(devices=[]):  # initialise from the seed, leave the global RNG alone
            torch.manual_seed(seed)
            self.items = ItemEncoder(
                vocab_size, n_topics, dim, word_dim, attention_dim, dropout, mask_padding, word_pooling
            )
            self.users = UserEncoder(dim, attention_dim, mask_padding)

    @classmethod
    def from_state(cls, config: dict, state: dict) -> TwoTower:
        """Rebuild a saved model: ``TwoTower.from_state(model.config, model.state_dict())``."""
        model = cls(**config)
        model.load_state_dict(state)
        return model.eval()

    # -- batched inference (no gradients) -------------------------------------------------------------------
    @torch.no_grad()
    def item_vectors(
        self,
        titles: np.ndarray | torch.Tensor,
        topics: np.ndarray | torch.Tensor,
        passes: int = 0,
        generator: torch.Generator | None = None,
        batch: int = 16384,
    ) -> torch.Tensor:
        """Vectors of all items: [N, dim] without dropout (passes=0), or ``passes`` MC-dropout banks
        [passes, N, dim] with dropout on, masks drawn from ``generator``."""
        titles, topics = torch.as_tensor(titles, dtype=torch.long), torch.as_tensor(topics, dtype=torch.long)
        banks = []
        for _ in range(max(passes, 1)):
            banks.append(
                torch.cat(
                    [
                        self.items(titles[s : s + batch], topics[s : s + batch], drop=passes > 0, generator=generator)
                        for s in range(0, len(titles), batch)
                    ]
                )
                if len(titles)
                else torch.zeros(0, self.config["dim"])
            )
        return torch.stack(banks) if passes > 0 else banks[0]

    @torch.no_grad()
    def user_vectors(self, item_vectors: torch.Tensor, histories: np.ndarray | torch.Tensor) -> torch.Tensor:
        """User vectors [U, dim] from precomputed ``item_vectors`` [N+1, dim] (or banks [n, N+1, dim] ->
        [n, U, dim]) and histories [U, H] of item indices (0 = padding; only the last ``history`` columns)."""
        histories = torch.as_tensor(histories, dtype=torch.long)[:, -self.history :]
        return self.users(item_vectors[..., histories, :], histories)

    # -- training forward ------------------------------------------------------------------------------------
    def logits(
        self,
        titles: torch.Tensor,
        topics: torch.Tensor,
        histories: torch.Tensor,
        candidates: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Logits [B, C] of candidates [B, C] for users with histories [B, H], encoding only the items the batch
        uses (``titles`` [N+1, L], ``topics`` [N+1] of all items), with dropout when the module is training."""
        histories = histories[:, -self.history :]
        used, inverse = torch.unique(torch.cat([histories.reshape(-1), candidates.reshape(-1)]), return_inverse=True)
        vectors = self.items(titles[used], topics[used], drop=self.training, generator=generator)
        split = histories.numel()
        history_vectors = vectors[inverse[:split].view(histories.shape)]
        users = self.users(history_vectors, histories)
        return torch.einsum("bd,bcd->bc", users, vectors[inverse[split:].view(candidates.shape)])
