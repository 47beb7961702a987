"""A block of rounds' draws in one generator call gives the stream of one call per round (envs/sampling.py)."""

import numpy as np
import pytest

from banditbench.envs.sampling import integer_then_choice


def one_call_per_round(rng, bounds, populations, k):
    pairs = [(rng.integers(b), rng.choice(n, k, replace=False)) for b, n in zip(bounds, populations)]
    return np.array([a for a, _ in pairs]), np.array([p for _, p in pairs])


@pytest.mark.parametrize("k", [1, 2, 9, 24, 200])
def test_batched_draws_equal_integers_then_choice_round_by_round(k):
    sizes = np.random.default_rng(k)
    for seed in range(20):
        bounds = sizes.integers(1, 500, size=40)
        populations = sizes.integers(k, 50_000, size=40)
        populations[:3] = [k, k + 1, 10_000]  # every draw forced; the largest population numpy samples by Floyd
        expected_rng, batched_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        first, picks = one_call_per_round(expected_rng, bounds, populations, k)
        got_first, got_picks = integer_then_choice(batched_rng, bounds, populations, k)
        np.testing.assert_array_equal(got_first, first)
        np.testing.assert_array_equal(got_picks, picks)
        assert batched_rng.integers(1 << 62) == expected_rng.integers(1 << 62)  # the stream continues alike


def test_populations_numpy_samples_by_tail_shuffle_fall_back_to_choice():
    bounds, populations = np.array([3, 7]), np.array([10_001, 400])  # 201 > 10 001 // 50: not Floyd's algorithm
    first, picks = one_call_per_round(np.random.default_rng(5), bounds, populations, 201)
    got_first, got_picks = integer_then_choice(np.random.default_rng(5), bounds, populations, 201)
    np.testing.assert_array_equal(got_first, first)
    np.testing.assert_array_equal(got_picks, picks)
