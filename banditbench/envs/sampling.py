"""Per-round random draws of a whole block of rounds in one generator call, draw for draw the same stream.

An environment that draws, round after round, ``rng.integers(bound)`` and ``rng.choice(n, k, replace=False)``
pays numpy's per-call overhead twice a round. Both are sequences of bounded integers — each one 32-bit
output of the generator passed through Lemire's method (numpy's ``random_bounded_uint64``) — and
``Generator.choice`` without replacement is, for k ≤ n // 50 or n ≤ 10 000, Floyd's algorithm (draw
v ∈ [0, j] for j = n − k … n − 1 and keep v, or j when v was already picked) followed by a Fisher–Yates
shuffle of the k picks (swap slot i with a draw in [0, i], i = k − 1 … 1). ``rng.integers(0, highs)``
with an array of bounds draws exactly those bounded integers in order, so a block's draws come from one call
and the bookkeeping of Floyd's algorithm and the shuffle runs vectorised over rounds. tests/test_sampling.py
pins the result to ``Generator.choice`` so that a change of numpy's sampler cannot pass unnoticed.
"""

from __future__ import annotations

import numpy as np

FLOYD_ABOVE = 10_000  # numpy tail-shuffles instead of using Floyd's algorithm when n > 10 000 and k > n // 50


def integer_then_choice(
    rng: np.random.Generator, bounds: np.ndarray, populations: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The draws of ``for i: a[i] = rng.integers(bounds[i]); picks[i] = rng.choice(populations[i], k, replace=False)``
    (a [m], picks [m, k]), with the same generator state afterwards."""
    m = len(bounds)
    if ((populations > FLOYD_ABOVE) & (k > populations // 50)).any():  # numpy's other algorithm: draw per round
        pairs = [
            (rng.integers(b), rng.choice(n, k, replace=False)) for b, n in zip(bounds.tolist(), populations.tolist())
        ]
        return np.array([a for a, _ in pairs], np.int64).reshape(m), np.array([p for _, p in pairs]).reshape(m, k)
    floyd_last = populations[:, None] - k + np.arange(k)  # j = n − k … n − 1
    shuffle_last = np.arange(k - 1, 0, -1)  # i = k − 1 … 1
    highs = np.hstack([bounds[:, None], floyd_last + 1, np.broadcast_to(shuffle_last + 1, (m, k - 1))])
    draws = rng.integers(0, highs)  # [m, 1 + k + (k − 1)], row by row: the stream's order
    picks = np.empty((m, k), np.int64)
    for c in range(k):  # Floyd: v, or j when v is already among the picks
        v = draws[:, 1 + c]
        picks[:, c] = np.where((picks[:, :c] == v[:, None]).any(axis=1), floyd_last[:, c], v)
    rows = np.arange(m)
    for s, i in enumerate(shuffle_last):  # Fisher–Yates: swap slot i with slot j ∈ [0, i]
        j = draws[:, 1 + k + s]
        picks[rows, i], picks[rows, j] = picks[rows, j], picks[rows, i].copy()
    return draws[:, 0], picks
