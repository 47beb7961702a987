"""The verdict rules on constructed per-seed results: a clear win, a tie, a reversal, equivalence inside and outside
its margin, zero variance, two seeds, an entry behind by mean claimed best, "faster" on timing columns, and each rule
just inside its edges (the level, the margin's scale and interval, the ratio's bounds); and the statistics under
them (bootstrap intervals, degenerate paired tests, the seeds a power calculation asks for)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from banditbench.report import stats, verdicts
from banditbench.report.verdicts import AGREES, DISAGREES, INCONCLUSIVE

NOISE = np.array([3.0, -2.0, 1.0, -4.0, 2.0, 0.5, -1.5, 4.0, -3.0, 0.0])  # zero-mean seed-to-seed noise, sd 2.7
SEED_LEVEL = np.array([100.0, 300.0, 200.0, 500.0, 400.0, 250.0, 350.0, 150.0, 450.0, 320.0])  # shared by all


def seeds(**columns) -> pd.DataFrame:
    """Per-seed final regret: one column per algorithm, index the seed."""
    n = len(next(iter(columns.values())))
    return pd.DataFrame({name: np.asarray(v, dtype=float) for name, v in columns.items()}, index=range(n))


def test_a_clear_win_agrees_and_its_reversal_disagrees():
    wide = seeds(a=SEED_LEVEL - 30 + NOISE, b=SEED_LEVEL)  # a has 30 less regret on every seed, give or take 4
    win = verdicts.beats(wide, "a", "b", higher=False)
    assert win.verdict == AGREES and "a significantly better than b" in win.reason and "10 seeds" in win.reason
    loss = verdicts.beats(wide, "b", "a", higher=False)
    assert loss.verdict == DISAGREES and "a significantly better than b" in loss.reason
    ctr = verdicts.beats(wide, "b", "a", higher=True)  # the same numbers as CTRs: higher is better
    assert ctr.verdict == AGREES


def test_a_tie_is_inconclusive_and_names_the_seeds_that_would_settle_it():
    wide = seeds(a=SEED_LEVEL + NOISE + 0.5, b=SEED_LEVEL)  # a 0.5 behind on average, noise sd 2.7
    tie = verdicts.beats(wide, "a", "b", higher=False)
    assert tie.verdict == INCONCLUSIVE
    assert "a behind b by mean, inside the noise" in tie.reason
    effect = 0.5 / np.std(NOISE + 0.5, ddof=1)
    assert f"≈ {stats.seeds_for_power(0.5, np.std(NOISE, ddof=1)):.0f} seeds would settle it" in tie.reason
    assert stats.seeds_for_power(0.5, np.std(NOISE, ddof=1)) > 100 and effect < 0.2  # a tiny effect: many seeds


def test_power_calculation_gives_the_textbook_seed_counts():
    # paired t-test, two-sided α = 0.05, 80 % power (Cohen 1988, Table 2.4.1 for one-sample t): d = 0.5 → 34,
    # d = 0.8 → 15, d = 1 → 10
    assert [stats.seeds_for_power(d, 1.0) for d in (0.5, 0.8, 1.0)] == [34, 15, 10]
    assert stats.seeds_for_power(0.0, 1.0) is None and stats.seeds_for_power(1.0, 0.0) is None
    assert stats.seeds_for_power(1e-4, 1.0) == np.inf
    assert stats.seeds_for_power(5.0, 1.0) == stats.MIN_TEST_SEEDS  # a huge effect still needs a testable n


def test_two_seeds_get_no_test():
    wide = seeds(a=[380.0, 382.0], b=[362.0, 364.0])  # the SCLUB / CLUB pair on 2 seeds
    said = verdicts.beats(wide, "b", "a", higher=False)
    assert said.verdict == INCONCLUSIVE and said.reason.startswith("n = 2: no test")
    t_p, w_p, note = stats.paired_pvalues([380, 382], [362, 364])
    assert np.isnan(t_p) and np.isnan(w_p) and note == "n = 2: no test"


def test_zero_variance_differences_fall_back_to_the_exact_sign_test_and_say_so():
    level = SEED_LEVEL[:6]
    result = stats.paired_test(np.full(6, 18.0))
    assert result.p == pytest.approx(2 * 0.5**6) and result.note.startswith("degenerate: every seed differs by the")
    said = verdicts.beats(seeds(a=level - 18, b=level), "a", "b", higher=False)
    assert said.verdict == AGREES and "degenerate: every seed differs by the same amount" in said.reason
    few = verdicts.beats(seeds(a=level[:4] - 18, b=level[:4]), "a", "b", higher=False)  # p = 0.125 with 4 seeds
    assert few.verdict == INCONCLUSIVE and "p = 0.125" in few.reason and "degenerate" in few.reason
    assert "seeds that would settle it: —" in few.reason  # no spread: no power calculation
    wilcoxon = stats.paired_test(np.full(6, 18.0), "wilcoxon")  # exact, no fallback, and said so
    assert wilcoxon.p == pytest.approx(2 * 0.5**6) and wilcoxon.note == "every seed differs by the same amount"


def test_identical_results_are_no_win_and_match_exactly():
    wide = seeds(a=SEED_LEVEL, b=SEED_LEVEL)
    said = verdicts.beats(wide, "a", "b", higher=False)
    assert said.verdict == INCONCLUSIVE and said.reason.startswith("identical on every seed")
    same = verdicts.close_to(wide, "a", "b", False, 0.05, one_sided=False, word="a matches b")
    assert same.verdict == AGREES and same.reason == "identical on every seed"


def test_identical_means_every_seed_of_enough_seeds():
    """ "identical on every seed" needs every seed tied, and at least MIN_TEST_SEEDS of them: two tied seeds are no
    test, and ties on half the seeds with a gap of 100 on the others are a difference to test, not a match."""
    two = verdicts.close_to(seeds(a=[5.0, 7.0], b=[5.0, 7.0]), "a", "b", False, 0.05, one_sided=False, word="")
    assert two.verdict == INCONCLUSIVE and two.reason == "n = 2: no test"
    half = SEED_LEVEL + np.where(np.arange(10) < 5, 0.0, 100.0)  # a 100 worse on seeds 5–9, tied on 0–4
    said = verdicts.close_to(seeds(a=half, b=SEED_LEVEL), "a", "b", False, 0.05, one_sided=False, word="")
    assert said.verdict == DISAGREES and "a worse than b by more than the margin" in said.reason
    test = stats.paired_test(half - SEED_LEVEL)
    assert test.p == pytest.approx(scipy_stats.ttest_1samp(half - SEED_LEVEL, 0.0).pvalue) and test.note == ""


def test_best_agrees_only_when_better_than_every_other_holm_over_its_own_pairs():
    others = {f"x{i}": SEED_LEVEL + 40 + np.roll(NOISE, i) for i in range(6)}
    wide = seeds(a=SEED_LEVEL + NOISE, **others, tied=SEED_LEVEL + np.roll(NOISE, 3) + 0.3)
    contenders = list(wide)
    said = verdicts.best(wide, "a", contenders, higher=False)
    assert said.verdict == INCONCLUSIVE and said.reason.startswith("undecided (Holm, 10 seeds): a ahead of tied (p =")
    assert "x0" not in said.reason  # the pairs a wins significantly are not named
    behind = (wide["tied"] - wide["a"]).to_numpy()  # the undecided pair's advantages: seeds at Holm's first level
    needed = stats.seeds_for_power(behind.mean(), behind.std(ddof=1), 0.05 / 7)
    assert f"≈ {needed:.0f} seeds would settle it" in said.reason and needed > 1000
    clear = verdicts.best(wide.drop(columns="tied"), "a", contenders[:-1], higher=False)
    assert clear.verdict == AGREES and "each of the 6 others (Holm, 10 seeds)" in clear.reason
    lost = verdicts.best(wide, "x0", contenders, higher=False)
    assert lost.verdict == DISAGREES and lost.reason.startswith("significantly better than x0 (Holm, 10 seeds): a > x0")
    assert "would settle" not in lost.reason


def test_an_entry_behind_by_mean_is_never_best():
    # the BASS case: nine seeds at 0 and one at ≈ 4 077 against CMLB's ≈ 96
    bass = np.array([0.0] * 9 + [4077.0])
    cmlb = np.array([96.0, 90.0, 101.0, 99.0, 93.0, 97.0, 95.0, 98.0, 94.0, 98.0])
    wide = seeds(bass=bass, cmlb=cmlb, club=cmlb + 200)
    said = verdicts.best(wide, "bass", ["bass", "cmlb", "club"], higher=False)
    assert said.verdict != AGREES and "bass behind cmlb (p =" in said.reason
    low, high = stats.bootstrap_interval(bass)
    assert low >= 0 and high <= 4077 and low == 0.0  # the t-interval here is [−514.6, 1 329.9]


def test_ordering_agrees_only_when_every_pair_holds_and_names_the_undecided_ones():
    wide = seeds(m=SEED_LEVEL + NOISE, n=SEED_LEVEL + 60 + np.roll(NOISE, 2), o=SEED_LEVEL + 120 + np.roll(NOISE, 5))
    assert verdicts.ordering(wide, [("m", "n"), ("m", "o"), ("n", "o")], higher=False).verdict == AGREES
    reversed_ = verdicts.ordering(wide, [("o", "n"), ("o", "m"), ("n", "m")], higher=False)
    assert reversed_.verdict == DISAGREES and "m > o (p < 0.001)" in reversed_.reason
    close = seeds(m=SEED_LEVEL + NOISE, n=SEED_LEVEL + 0.2 + np.roll(NOISE, 2), o=SEED_LEVEL + 120)
    undecided = verdicts.ordering(close, [("m", "n"), ("m", "o"), ("n", "o")], higher=False)
    assert undecided.verdict == INCONCLUSIVE and undecided.reason.startswith("undecided (Holm, 10 seeds): m ahead of n")
    # every pair undecided: the seeds named are those the hardest pair needs at the Bonferroni level α/3
    tight = seeds(m=SEED_LEVEL + NOISE, n=SEED_LEVEL + 0.5 + np.roll(NOISE, 2), o=SEED_LEVEL + 2 + np.roll(NOISE, 5))
    said = verdicts.ordering(tight, [("m", "n"), ("m", "o"), ("n", "o")], higher=False)
    differences = [tight[b] - tight[a] for a, b in (("m", "n"), ("m", "o"), ("n", "o"))]
    needed = [stats.seeds_for_power(d.mean(), d.std(ddof=1), stats.ALPHA / 3) for d in differences]
    assert said.verdict == INCONCLUSIVE and len(set(needed)) == 3 and np.isfinite(needed).all()
    assert f"≈ {max(needed):.0f} seeds would settle it" in said.reason


def test_equivalence_inside_and_outside_the_margin():
    base = SEED_LEVEL + 1000  # means ≈ 1300: a 5 % margin is ≈ 65
    inside = seeds(a=base + 10 + NOISE, b=base)
    said = verdicts.close_to(inside, "a", "b", False, 0.05, one_sided=False, word="a matches b")
    assert said.verdict == AGREES and said.reason.startswith("a matches b: a's shortfall against b [")
    outside = seeds(a=base + 200 + NOISE, b=base)
    assert verdicts.close_to(outside, "a", "b", False, 0.05, one_sided=False, word="").verdict == DISAGREES
    edge = seeds(a=base + 65 + 10 * NOISE, b=base)  # the interval straddles +65
    assert verdicts.close_to(edge, "a", "b", False, 0.05, one_sided=False, word="").verdict == INCONCLUSIVE
    assert verdicts.close_to(edge, "a", "b", False, 0.05, one_sided=True, word="").verdict == INCONCLUSIVE
    # "competitive" bounds only the shortfall: far better is still competitive, far worse is not
    better = seeds(a=base - 200 + NOISE, b=base)
    assert verdicts.close_to(better, "a", "b", False, 0.05, one_sided=True, word="").verdict == AGREES
    assert verdicts.close_to(better, "a", "b", False, 0.05, one_sided=False, word="").verdict == DISAGREES
    assert verdicts.close_to(outside, "a", "b", False, 0.05, one_sided=True, word="").verdict == DISAGREES


def test_the_margin_is_a_share_of_the_reference_algorithms_mean():
    b = 1000 + NOISE
    a = b + 52 + 0.1 * np.roll(NOISE, 3)  # 52 behind: over 5 % of b's mean (50), under 5 % of a's (52.6)
    assert verdicts.close_to(seeds(a=a, b=b), "a", "b", False, 0.05, one_sided=False, word="").verdict == DISAGREES


def test_the_equivalence_interval_is_the_90_percent_t_interval_of_the_mean():
    """Schuirmann's two one-sided tests at α = 0.05: the (1 − 2α) interval, not the 95 % one."""
    differences = 10 + 20 * NOISE
    _, (low, high) = verdicts.within_margin(differences, 1e9)
    expected = scipy_stats.ttest_1samp(differences, 0).confidence_interval(0.90)
    np.testing.assert_allclose([low, high], [expected.low, expected.high])


def test_a_win_at_p_between_the_level_and_twice_it_is_not_significant():
    advantage = 1.7 + NOISE  # two-sided p = 0.070: a one-sided test, or a level of 0.1, would call it a win
    assert 0.05 < scipy_stats.ttest_1samp(advantage, 0).pvalue < 0.1
    assert verdicts.beats(seeds(a=SEED_LEVEL - advantage, b=SEED_LEVEL), "a", "b", False).verdict == INCONCLUSIVE


def test_a_printed_value_is_an_equivalence_test_against_the_papers_number():
    here = 4447.1 + 20 * NOISE
    assert verdicts.printed_value(here, 4447.1, 444.7).verdict == AGREES
    assert verdicts.printed_value(here + 1000, 4447.1, 444.7).verdict == DISAGREES
    wide = verdicts.printed_value(here + 444.7 + 10 * NOISE, 4447.1, 444.7)
    assert wide.verdict == INCONCLUSIVE and wide.reason.startswith("undecided, the interval crosses the margin")
    assert verdicts.printed_value(here[:2], 4447.1, 444.7).reason == "n = 2: no test"


def test_a_value_printed_from_one_run_allows_for_that_runs_spread_and_can_still_disagree():
    """The Showdown README's mushroom totals are single runs: one run lies anywhere in a seed's spread (here sd 400),
    so a value 1.1 sd from our mean is no disagreement, while taken as exact it is one. Far outside the spread, a
    one-run value still disagrees, and inside the margin it still agrees."""
    here = 1340.0 + 150.0 * NOISE  # sd 405 over 10 seeds
    paper, margin = 870.0, 87.0
    assert verdicts.printed_value(here, paper, margin).verdict == DISAGREES
    one_run = verdicts.printed_value(here, paper, margin, runs=1)
    assert one_run.verdict == INCONCLUSIVE and "the paper's value from 1 run, its spread taken" in one_run.reason
    assert verdicts.printed_value(here, 5000.0, margin, runs=1).verdict == DISAGREES
    assert verdicts.printed_value(here, 1340.0, 2000.0, runs=1).verdict == AGREES
    # the interval of the mean less one more run: √(1/n + 1) times as wide as the mean's alone
    low, high = stats.mean_interval(here, 0.9, runs=1)
    alone_low, alone_high = stats.mean_interval(here, 0.9)
    assert (high - low) / (alone_high - alone_low) == pytest.approx(np.sqrt(1 + 10))


def test_an_improvement_agrees_within_half_the_papers_gain():
    baseline = SEED_LEVEL + 1000
    wide = seeds(mine=baseline * 0.92 + NOISE, club=baseline, locb=baseline + 50)
    said, gain = verdicts.improvement(wide, "mine", ["club", "locb"], False, 8.1, 0.5)
    assert said.verdict == AGREES and gain == pytest.approx(8.0, abs=0.2) and "gain over club" in said.reason
    none, gain = verdicts.improvement(seeds(mine=baseline + NOISE, club=baseline), "mine", ["club"], False, 8.1, 0.5)
    assert none.verdict == DISAGREES and abs(gain) < 0.5


def test_faster_is_judged_on_seconds_per_round_with_a_margin_and_the_machine():
    machine = "on Test CPU (2 cores)"
    jitter = 1 + NOISE / 100  # ± 4 % from one unit to the next
    quick = seeds(a=1e-4 * 0.6 * jitter, b=1e-4 * np.roll(jitter, 3))
    said, ratio = verdicts.faster(quick, "a", "b", 0.10, machine)
    assert said.verdict == AGREES and ratio == pytest.approx(0.6, abs=0.03) and said.reason.endswith(machine)
    slow, _ = verdicts.faster(quick, "b", "a", 0.10, machine)
    assert slow.verdict == DISAGREES
    close = seeds(a=1e-4 * 0.93 * jitter, b=1e-4 * np.roll(jitter, 3))  # 7 % faster: inside the margin
    assert verdicts.faster(close, "a", "b", 0.10, machine)[0].verdict == INCONCLUSIVE
    # the edges are t_a/t_b = 0.9 and 1/0.9 = 1.11: 9.5 % faster and 10.5 % slower are both inside them
    steady = 1 + NOISE / 1000
    for ratio in (0.905, 1.105):
        inside = seeds(a=1e-4 * ratio * steady, b=1e-4 * steady)
        assert verdicts.faster(inside, "a", "b", 0.10, machine)[0].verdict == INCONCLUSIVE
    spread = 1 + NOISE / 20  # ± 20 %: the interval [0.80, 0.97] around 0.88 reaches past 0.9
    crossing = seeds(a=1e-4 * 0.88 * spread, b=1e-4 * np.roll(spread, 3))
    assert verdicts.faster(crossing, "a", "b", 0.10, machine)[0].verdict == INCONCLUSIVE


def test_the_bootstrap_interval_is_the_percentile_bootstrap_deterministic_and_inside_the_values():
    from scipy.stats import bootstrap

    sample = np.random.default_rng(3).exponential(size=10)
    low, high = stats.bootstrap_interval(sample)
    reference = bootstrap((sample,), np.mean, method="percentile", rng=np.random.default_rng(1)).confidence_interval
    # scipy's 9 999 resamples against our 1 000: the ends agree within the Monte Carlo error (sd ≈ 0.015 here)
    assert low == pytest.approx(reference.low, abs=0.05) and high == pytest.approx(reference.high, abs=0.05)
    assert stats.bootstrap_interval(sample) == (low, high)  # a fixed generator: the same interval every time
    columns = np.stack([sample, 2 * sample], axis=1)  # the columns of a curve share the resamples
    both = stats.bootstrap_interval(columns)
    assert both[0][0] == low and both[1][1] == pytest.approx(2 * high)
    assert stats.bootstrap_interval([5.0, 5.0, 5.0]) == (5.0, 5.0) and np.isnan(stats.bootstrap_interval([1.0])[0])
