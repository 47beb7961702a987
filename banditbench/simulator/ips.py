"""Inverse-propensity weighting of the simulator's logistic loss
(Zhang et al. 2022, §4: inverse-frequency propensities; IPS as in Imbens & Rubin 2015 and Schnabel et al. 2016).

Empirical propensity (the authors' ``compute_empirical_ips``): p(u, i) = n(u, i) / n(u), with n(u) the number of
logged impressions of user u and n(u, i) the number of those that showed item i (clicked or not); p = 1 for a
pair never shown (e.g. the padding item 0). The loss of a training row r with candidates j is BCE-with-logits
weighted by 1/p_rj, self-normalised over the row (``normalise=True``, the authors' ``ips_normalize``):

    L = mean_{r,j} BCE(s_rj, y_rj) · (1/p_rj) / Σ_k (1/p_rk)

``--propensity learned`` puts the logistic propensity model of banditbench/simulator/propensity.py in place of
p; the weighting rules of ``--variant`` are the same for both. ``propensity_summary`` describes a propensity on
training rows: its mean and quantiles, and Kish's effective sample size (Σw)²/Σw² of the weights it gives.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from banditbench.simulator.logged import LoggedData
from banditbench.simulator.metrics import QUANTILES

# --propensity of `simulator train`: which p(u, i) the IPS weights divide by.
PROPENSITIES = {
    "empirical": "p = n(u,i)/n(u), the inverse-frequency propensity (the paper's IPS, the authors' default)",
    "learned": "a logistic model of display on frozen click-model vectors (banditbench/simulator/propensity.py)",
}

# --variant of `simulator train`: how a training row is weighted.
VARIANTS = {
    "empirical": "1/p(u,i) with p = n(u,i)/n(u), self-normalised per row (the paper's IPS, the authors' default)",
    "empirical-unnormalised": "1/p(u,i) without the per-row normalisation (the authors' ips_normalize=False)",
    "none": "no IPS: every candidate weighs the same (the plain logistic loss)",
}


class EmpiricalPropensity:
    """p(u, i) = n(u, i) / n(u) counted over the impressions selected by ``chosen`` (a bool mask)."""

    def __init__(self, data: LoggedData, chosen: np.ndarray):
        imp = data.impressions
        self.stride = np.int64(data.n_items + 1)
        self.n_user = np.bincount(imp.user[chosen], minlength=data.n_users)
        impression = imp.shown_impression
        keep = chosen[impression]
        # an item shown twice in one impression counts once: unique (impression, item), then count per (user, item)
        once = np.unique(impression[keep] * self.stride + imp.shown[keep])
        pairs = imp.user[once // self.stride] * self.stride + once % self.stride
        self.keys, self.counts = np.unique(pairs, return_counts=True)

    def __call__(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Propensities of user-item pairs (broadcast: users [R, 1] with items [R, C]); 1 when never shown."""
        users, items = np.broadcast_arrays(np.asarray(users, np.int64), np.asarray(items, np.int64))
        key = users * self.stride + items
        at = np.minimum(np.searchsorted(self.keys, key), max(len(self.keys) - 1, 0))
        found = (self.keys[at] == key) if len(self.keys) else np.zeros(key.shape, bool)
        shown = np.where(found, self.counts[at] if len(self.keys) else 0, 0)
        return np.where(found, shown / np.maximum(self.n_user[users], 1), 1.0)


def ips_weights(propensity: np.ndarray, normalise: bool = True) -> np.ndarray:
    """Row weights [R, C] = 1/p, divided by the row's Σ 1/p when ``normalise``."""
    inverse = 1.0 / propensity
    return inverse / inverse.sum(axis=1, keepdims=True) if normalise else inverse


def row_weights(variant: str, propensity: Callable, users: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The [R, C] float32 loss weights of training rows under ``variant`` (see VARIANTS)."""
    if variant == "none":
        return np.full(candidates.shape, 1.0 / candidates.shape[1], np.float32)
    p = propensity(users[:, None], candidates)
    return ips_weights(p, normalise=variant == "empirical").astype(np.float32)


def weighted_logistic_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """mean over rows and candidates of BCE-with-logits · weight."""
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    return (bce * weights).mean()


def effective_sample_size(weights: np.ndarray) -> float:
    """Kish's effective sample size (Σw)² / Σw² of a set of importance weights."""
    weights = np.asarray(weights, np.float64).ravel()
    return float(weights.sum() ** 2 / max((weights**2).sum(), np.finfo(float).tiny))


def propensity_summary(variant: str, propensity: Callable, users: np.ndarray, candidates: np.ndarray) -> dict:
    """Mean and quantiles of the propensities of training rows' real candidates (the padding item 0 left out),
    and the effective sample size of the rows' loss weights under ``variant`` (``none`` is summarised under the
    self-normalised rule, the weights IPS would give): over all weights, as a share of them, and the mean over
    rows of each row's own."""
    p = propensity(users[:, None], candidates)
    real = p[candidates > 0]
    weights = row_weights("empirical" if variant == "none" else variant, propensity, users, candidates)
    per_row = weights.sum(1) ** 2 / (weights.astype(np.float64) ** 2).sum(1)
    ess = effective_sample_size(weights)
    return {
        "mean": float(real.mean()) if len(real) else float("nan"),
        "quantiles": [float(q) for q in np.quantile(real, QUANTILES)] if len(real) else [],
        "min": float(real.min()) if len(real) else float("nan"),
        "ess": ess,
        "ess_share": ess / max(weights.size, 1),
        "ess_per_row_mean": float(per_row.mean()) if len(per_row) else float("nan"),
        "weights": int(weights.size),
    }
