"""Held-out metrics of a click model (Zhang et al. 2022, §4: simulator selection and threshold): mean per-impression
AUC (the authors' checkpoint criterion), global AUC, log-loss, score quantiles of positives and negatives, a text
histogram, and the F1-maximising threshold of the precision–recall curve (how the paper's THRES were picked)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import log_loss, precision_recall_curve, roc_auc_score

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def per_group_auc(groups: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """ROC AUC of every group (impression) that has both a positive and a negative, vectorised: the
    Mann–Whitney statistic of within-group ranks (ties get their average rank). Sorted by group id."""
    order = np.lexsort((scores, groups))
    g, s, y = groups[order], scores[order], labels[order].astype(np.float64)
    n = len(g)
    group_start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    group_of = np.cumsum(np.r_[True, g[1:] != g[:-1]]) - 1
    run_start = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (s[1:] != s[:-1])])
    run_end = np.r_[run_start[1:], n]
    run_of = np.cumsum(np.r_[True, (g[1:] != g[:-1]) | (s[1:] != s[:-1])]) - 1
    rank = (run_start + run_end - 1)[run_of] / 2 - group_start[group_of] + 1  # 1-based average rank in the group
    positives = np.bincount(group_of, weights=y)
    size = np.bincount(group_of)
    negatives = size - positives
    rank_sum = np.bincount(group_of, weights=rank * y)
    both = (positives > 0) & (negatives > 0)
    return ((rank_sum - positives * (positives + 1) / 2) / np.maximum(positives * negatives, 1))[both]


def f1_threshold(scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """The threshold maximising F1 on the precision–recall curve, with its precision, recall and F1."""
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    f1 = 2 * precision[:-1] * recall[:-1] / np.maximum(precision[:-1] + recall[:-1], 1e-12)
    best = int(np.argmax(f1))
    return {
        "threshold": float(thresholds[best]),
        "precision": float(precision[best]),
        "recall": float(recall[best]),
        "f1": float(f1[best]),
    }


def click_metrics(groups: np.ndarray, probabilities: np.ndarray, labels: np.ndarray) -> dict:
    """All held-out figures of the simulator from its predicted click probabilities."""
    labels = labels.astype(np.int8)
    positive, negative = probabilities[labels == 1], probabilities[labels == 0]
    both_classes = 0 < len(positive) < len(labels)
    impression_auc = per_group_auc(groups, probabilities, labels)
    return {
        "auc_mean_per_impression": float(impression_auc.mean()) if len(impression_auc) else float("nan"),
        "auc_global": float(roc_auc_score(labels, probabilities)) if both_classes else float("nan"),
        "log_loss": float(log_loss(labels, np.clip(probabilities, 1e-7, 1 - 1e-7), labels=[0, 1])),
        "candidates": int(len(labels)),
        "positive_rate": float(labels.mean()),
        "impressions_with_auc": int(len(impression_auc)),
        "positive_quantiles": [float(q) for q in np.quantile(positive, QUANTILES)] if len(positive) else [],
        "negative_quantiles": [float(q) for q in np.quantile(negative, QUANTILES)] if len(negative) else [],
        "f1_best": f1_threshold(probabilities, labels) if both_classes else None,
    }


def at_threshold(probabilities: np.ndarray, labels: np.ndarray, threshold: float, strict: bool) -> dict:
    """Share of candidates labelled a click by the threshold, and that labelling's precision and recall."""
    predicted = probabilities > threshold if strict else probabilities >= threshold
    hits = int((predicted & (labels == 1)).sum())
    return {
        "threshold": threshold,
        "predicted_click_rate": float(predicted.mean()),
        "precision": hits / max(int(predicted.sum()), 1),
        "recall": hits / max(int((labels == 1).sum()), 1),
    }


def text_histogram(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10, width: int = 40) -> list[str]:
    """Lines of a histogram of predicted click probabilities, positives and negatives side by side (each
    normalised to its own count, so their shapes compare)."""
    edges = np.linspace(0, 1, bins + 1)
    lines = [f"{'probability':<12}  {'positives':<{width + 7}}  negatives"]
    shares = []
    for label in (1, 0):
        counts = np.histogram(probabilities[labels == label], bins=edges)[0]
        shares.append(counts / max(counts.sum(), 1))
    for k in range(bins):
        bars = [f"{'#' * int(round(share[k] * width)):<{width}} {share[k]:5.1%}" for share in shares]
        span = f"[{edges[k]:.1f}, {edges[k + 1]:.1f}{']' if k == bins - 1 else ')'}"
        lines.append(f"{span:<12}  {bars[0]:<{width + 7}}  {bars[1]}")
    return lines
