"""The off-policy estimators (report/offpolicy.py) on numbers worked by hand, their intervals, and their coverage of
a known value on logs drawn in the test."""

import numpy as np
import pytest

from banditbench.report import offpolicy as ope

# four events: rewards, propensities of the logged arms, the target's probability of the logged arm, and a reward
# model's estimates of the logged arm and of the target's choice
REWARD = np.array([1.0, 0.0, 1.0, 0.0])
PROPENSITY = np.array([0.5, 0.25, 0.25, 0.5])
TARGET = np.array([1.0, 1.0, 0.0, 0.5])
Q_LOGGED = np.array([0.5, 0.5, 0.5, 0.5])
Q_TARGET = np.array([0.6, 0.2, 0.4, 0.4])


def test_each_estimator_on_four_events_worked_by_hand():
    # w = target / propensity = [2, 4, 0, 1]
    assert ope.ips(REWARD, PROPENSITY, TARGET).value == pytest.approx((2 * 1 + 0 + 0 + 0) / 4)
    assert ope.snips(REWARD, PROPENSITY, TARGET).value == pytest.approx(2 / 7)
    assert ope.direct(Q_TARGET).value == pytest.approx(0.4)
    dr = (0.6 + 2 * 0.5) + (0.2 + 4 * -0.5) + 0.4 + (0.4 + 1 * -0.5)
    assert ope.doubly_robust(REWARD, PROPENSITY, TARGET, Q_LOGGED, Q_TARGET).value == pytest.approx(dr / 4)
    assert ope.ips(REWARD, PROPENSITY, TARGET).size == pytest.approx(49 / 21)  # Kish: (Σw)² / Σw²


def test_doubly_robust_falls_back_on_either_part():
    """With a reward model of zeros DR is IPS; with a model that knows each logged reward it is DM."""
    zeros = np.zeros(4)
    assert (
        ope.doubly_robust(REWARD, PROPENSITY, TARGET, zeros, zeros).value == ope.ips(REWARD, PROPENSITY, TARGET).value
    )
    exact = ope.doubly_robust(REWARD, PROPENSITY, TARGET, REWARD, Q_TARGET)
    assert exact.value == pytest.approx(ope.direct(Q_TARGET).value)


def test_snips_of_a_deterministic_policy_on_a_uniform_log_is_its_replay():
    rng = np.random.default_rng(0)
    reward, matched = rng.integers(2, size=500).astype(float), rng.random(500) < 0.1
    snips = ope.snips(reward, np.full(500, 0.1), matched.astype(float))
    assert snips.value == pytest.approx(ope.replay(reward[matched]).value)


def test_replay_intervals_are_wilson_score_intervals_within_the_reward_range():
    none = ope.replay(np.zeros(100))
    assert none.value == 0 and none.low == 0 and none.high == pytest.approx(0.0370, abs=1e-4)
    half = ope.replay(np.array([1.0] * 5 + [0.0] * 5))
    assert (half.low, half.high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert np.isnan(ope.replay(np.array([])).value)
    ips = ope.ips(np.array([1.0, 0, 0, 0]), np.full(4, 0.5), np.ones(4))
    assert ips.low == 0.0 and ips.value - 1.96 * ips.se < 0  # the normal interval, cut at the smallest reward
    no_click = ope.ips(np.zeros(50), np.full(50, 0.1), np.ones(50))
    assert no_click.value == 0 and np.isnan(no_click.low) and np.isnan(no_click.high)  # not a certain [0, 0]


def test_the_lift_is_a_ratio_with_a_delta_method_interval():
    a, b = ope.Estimate(0.02, 0.01, 0.03, 100, 0.005), ope.Estimate(0.01, 0.005, 0.015, 100, 0.0025)
    value, low, high = ope.ratio(a, b)
    spread = 1.959964 * np.sqrt(0.25**2 + 0.25**2)
    assert value == 2.0 and (low, high) == pytest.approx((2 * np.exp(-spread), 2 * np.exp(spread)), rel=1e-5)
    assert np.isnan(ope.ratio(a, ope.Estimate(0.0, 0.0, 0.01, 100, 0.0))[0])


def test_snips_and_dr_cover_a_known_value_at_their_nominal_level():
    """200 logs of 1000 events from a softmax logging policy over 5 arms; the target plays arm 0 with probability 0.6
    and the rest uniformly; the reward model is right on average but noisy. Its true value is known exactly. (IPS's
    normal interval covers less on short logs: its terms are the most skewed.)"""
    rng = np.random.default_rng(1)
    means = np.array([0.3, 0.5, 0.2, 0.6, 0.4])
    behaviour = np.exp(np.arange(5) / 2) / np.exp(np.arange(5) / 2).sum()
    target = np.array([0.6, 0.1, 0.1, 0.1, 0.1])
    truth = float(target @ means)
    covered = {"SNIPS": 0, "DR": 0}
    for _ in range(200):
        action = rng.choice(5, size=1000, p=behaviour)
        reward = (rng.random(1000) < means[action]).astype(float)
        model = means + rng.normal(0, 0.05, 5)
        estimates = {
            "SNIPS": ope.snips(reward, behaviour[action], target[action]),
            "DR": ope.doubly_robust(
                reward, behaviour[action], target[action], model[action], np.full(1000, target @ model)
            ),
        }
        for name, e in estimates.items():
            covered[name] += e.low <= truth <= e.high
    assert all(count / 200 >= 0.9 for count in covered.values()), covered
