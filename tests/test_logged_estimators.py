"""The off-policy estimators (report/offpolicy.py) on numbers worked by hand, their intervals, and their coverage of
a known value on logs drawn in the test."""

import numpy as np
import pandas as pd
import pytest

from banditbench.report import offpolicy as ope
from banditbench.report.load import replay_ctr
from banditbench.report.logged import logged_table, mean_estimate, unit_estimates

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


def test_a_replay_of_graded_rewards_takes_the_normal_interval_of_their_mean():
    """Wilson's interval is for 0/1 clicks; rewards such as ratings get the mean's normal interval."""
    graded = ope.replay(np.array([0.5, 1.0, 0.0, 0.25]))
    se = np.std([0.5, 1.0, 0.0, 0.25], ddof=1) / 2
    assert graded.value == 0.4375 and graded.se == pytest.approx(se)
    assert (graded.low, graded.high) == pytest.approx((0.4375 - 1.959964 * se, 0.4375 + 1.959964 * se))


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


def test_each_estimators_standard_error_size_and_interval_on_the_four_events_worked_by_hand():
    """w = [2, 4, 0, 1]. IPS's terms w·r = [2, 0, 0, 0]: mean ½, sample sd 1, se ½; its interval ½ ± 0.98 is cut to
    the rewards' range at both ends. SNIPS's delta-method terms w(r − 2/7)/(7/4) = [40, −32, 0, −8]/49: sample sd
    √896/49. DM's terms [0.6, 0.2, 0.4, 0.4]: sample sd √(0.08/3), on n = 4 events. DR's terms
    [1.6, −1.8, 0.4, −0.1]: mean 0.025, sample sd √(5.9675/3). IPS, SNIPS and DR are worth Kish's 49/21 events."""
    ips = ope.ips(REWARD, PROPENSITY, TARGET)
    assert (ips.se, ips.low, ips.high) == pytest.approx((0.5, 0.0, 1.0))
    snips = ope.snips(REWARD, PROPENSITY, TARGET)
    assert snips.se == pytest.approx(np.sqrt(896) / 49 / 2)
    assert (snips.low, snips.high) == pytest.approx((0.0, 2 / 7 + 1.959964 * snips.se))
    dm = ope.direct(Q_TARGET)
    assert (dm.se, dm.size) == pytest.approx((np.sqrt(0.08 / 3) / 2, 4))
    assert (dm.low, dm.high) == pytest.approx((0.4 - 1.959964 * dm.se, 0.4 + 1.959964 * dm.se))
    dr = ope.doubly_robust(REWARD, PROPENSITY, TARGET, Q_LOGGED, Q_TARGET)
    assert dr.se == pytest.approx(np.sqrt(5.9675 / 3) / 2)
    assert snips.size == dr.size == pytest.approx(49 / 21)
    replay = ope.replay(np.array([1.0] * 2 + [0.0] * 8))
    assert (replay.value, replay.size, replay.se) == pytest.approx((0.2, 10, np.sqrt(0.2 * 0.8 / 10)))


def test_a_policy_that_never_picks_a_logged_arm_has_no_snips_estimate_and_a_zero_lift_is_undefined():
    never = ope.snips(np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.zeros(2))
    assert np.isnan(never.value) and never.size == 0
    clicks = ope.replay(np.array([1.0] * 10 + [0.0] * 90))
    no_click = ope.replay(np.zeros(100))
    assert np.isnan(ope.ratio(no_click, clicks)).all() and np.isnan(ope.ratio(clicks, no_click)).all()


def unit(matched, kept, reward, propensity) -> pd.DataFrame:
    """One unit's logged columns, as runner/logged.py writes them (a reward model of ½ everywhere)."""
    n = len(matched)
    return pd.DataFrame(
        {
            "matched": matched,
            "kept": kept,
            "logged_reward": reward,
            "propensity": propensity,
            "estimate_logged": [0.5] * n,
            "estimate_chosen": [0.5] * n,
        }
    )


def test_a_units_replay_reads_its_kept_events_and_the_weights_its_matched_ones():
    """Rejection sampling keeps two of four matched events: the replay is their mean; the importance weights are
    matched / p = [2, 10, 2, 10, 0, 0] whatever was kept, so IPS = 4/6 and SNIPS = 4/24."""
    frame = unit(
        [True] * 4 + [False] * 2, [True, False, True, False, False, False], [1.0, 0.0] * 3, [0.5, 0.1] * 2 + [0.5] * 2
    )
    estimates = unit_estimates(frame, (0.0, 1.0))
    assert (estimates["replay"].value, estimates["replay"].size) == (1.0, 2)
    assert (estimates["IPS"].value, estimates["SNIPS"].value) == pytest.approx((4 / 6, 4 / 24))


def test_a_units_doubly_robust_corrects_the_model_of_its_choice_by_the_logged_arms_residual():
    """DR term = q̂(π) + w (r − q̂(a_t)): the reward model's estimate of the policy's choice, plus the weighted residual
    of its estimate of the logged arm; here q̂(π) = 0.3 and q̂(a_t) = 0.6, the one matched event (w = 2) has r = 1."""
    frame = unit([True, False], [True, False], [1.0, 0.0], [0.5, 0.5]).assign(
        estimate_logged=[0.6, 0.6], estimate_chosen=[0.3, 0.3]
    )
    estimates = unit_estimates(frame, (0.0, 1.0))
    assert estimates["DM"].value == pytest.approx(0.3)
    assert estimates["DR"].value == pytest.approx(0.3 + (2 * (1.0 - 0.6)) / 2)


def test_the_logged_table_bounds_intervals_by_the_logs_reward_range():
    """Ratings from 1 to 5: the interval of a mean near 5 reaches above 1 and is cut at 5, the range's top."""
    ratings = [5.0, 4.0, 5.0, 5.0, 3.0, 5.0]
    frame = unit([True] * 6, [True] * 6, ratings, [0.5] * 6).assign(dataset="log", algorithm="a", seed=0)
    table = logged_table(frame, {"log": {"reward_range": [1.0, 5.0]}}, ["a"]).set_index("estimator")
    assert table.loc["replay", "ci_low"] > 1.0 and table.loc["replay", "ci_high"] == 5.0


def test_the_mean_over_seeds_leaves_out_a_seed_without_an_estimate():
    defined = ope.Estimate(0.4, 0.3, 0.5, 100, 0.05)
    assert mean_estimate([defined, ope.Estimate.undefined()]) == defined
    both = mean_estimate([defined, ope.Estimate(0.2, 0.1, 0.3, 50, 0.05)])
    assert (both.value, both.low, both.high, both.size, both.se) == pytest.approx((0.3, 0.2, 0.4, 75, 0.05))
    assert np.isnan(mean_estimate([ope.Estimate.undefined(3.0)]).value)


def test_the_logged_table_counts_events_per_seed_and_lifts_over_random():
    """Two seeds of 50 events each: 50 events, 2 seeds; the algorithm whose replay CTR is twice random's has a lift
    of 2, with the delta-method interval of the two replays' standard errors."""
    frames = []
    for algorithm, clicks in (("random", 5), ("linucb", 10)):
        for seed in range(2):
            frame = unit([True] * 50, [True] * 50, [1.0] * clicks + [0.0] * (50 - clicks), [0.5] * 50)
            frames.append(frame.assign(dataset="log", algorithm=algorithm, seed=seed))
    table = logged_table(pd.concat(frames), {"log": {"reward_range": [0.0, 1.0]}}, ["random", "linucb"])
    assert set(table["events"]) == {50} and set(table["seeds"]) == {2}
    replay = table[table["estimator"] == "replay"].set_index("algorithm")
    assert replay.loc["random", "lift"] == 1.0 and replay.loc["linucb", "lift"] == pytest.approx(2.0)
    spread = 1.959964 * np.sqrt(0.8 / (0.2 * 50) + 0.9 / (0.1 * 50))  # (se / p)² = (1 − p) / (p·n)
    low, high = replay.loc["linucb", ["lift_low", "lift_high"]]
    assert (low, high) == pytest.approx((2 * np.exp(-spread), 2 * np.exp(spread)), rel=1e-5)


def test_a_logged_runs_ctr_after_each_round_is_the_mean_reward_of_the_events_kept_so_far():
    """Events matched but not kept (rejection sampling) carry a reward the replay never saw: they do not count."""
    rounds = pd.DataFrame(
        {"algorithm": "a", "seed": 0, "kept": [False, True, False, True], "reward": [1.0, 1.0, 1.0, 0.0]}
    )
    ctr = replay_ctr(rounds).to_numpy()
    assert np.isnan(ctr[0]) and ctr[1:].tolist() == [1.0, 1.0, 0.5]
