"""The verdict rules of the paper-vs-here table: how per-seed results decide a paper's claim.

Three verdicts: *agrees*, *disagrees* and *inconclusive*, each with its reason. A claim of direction ("beats",
"best", an ordering) agrees only when the direction holds significantly (a paired test over seeds, Holm-corrected
over the pairs that one claim involves) and disagrees only on a significant reversal; everything else is
inconclusive, and the reason gives the seeds that a paired t-test would need to settle it (80 % power at the
observed effect). A claim of closeness ("matches", "competitive", a printed value, an improvement of a given size,
"faster" by a margin) is an equivalence or non-inferiority test (Schuirmann 1987's two one-sided tests): the
(1 − 2α) interval of the difference inside the declared margin agrees, entirely beyond it disagrees, and across its
edge is inconclusive. A tie is never agreement, and an entry behind by mean is never the best.

Every rule takes the per-seed values as a table indexed by seed with one column per algorithm; seeds missing for
one algorithm of a pair are dropped from that pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from banditbench.report.stats import ALPHA, MIN_TEST_SEEDS, Paired, holm, mean_interval, paired_test, seeds_for_power

AGREES, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE = "agrees", "disagrees", "inconclusive", "not comparable"
INTERVAL = 1 - 2 * ALPHA  # the (1 − 2α) interval of a two one-sided tests procedure at level α


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str


def percent(fraction: float) -> str:
    return f"{100 * fraction:.0f} %"


def p_text(p: float) -> str:
    return "p = –" if not np.isfinite(p) else ("p < 0.001" if p < 0.001 else f"p = {p:.3f}")


def number(value: float) -> str:
    """A figure as the tables print it: thousands separated, three significant digits below 10."""
    if value is None or not np.isfinite(value):
        return "–"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"


def seeds_text(needed: float | None) -> str:
    if needed is None:
        return "seeds that would settle it: — (no difference, or no spread, on these seeds)"
    if math.isinf(needed):
        return "more than 10 000 seeds would be needed to settle it"
    return f"≈ {needed:.0f} seeds would settle it (80 % power)"


def gains(wide: pd.DataFrame, a: str, b: str, higher: bool) -> np.ndarray:
    """a's advantage over b on each common seed: positive when a is better (higher CTR, lower regret)."""
    common = wide[[a, b]].dropna()
    difference = (common[a] - common[b]).to_numpy()
    return difference if higher else -difference


def beats(wide: pd.DataFrame, a: str, b: str, higher: bool, test: str = "t") -> Verdict:
    """ "a beats b": agrees when a is significantly better, disagrees when b is, inconclusive otherwise."""
    result = paired_test(gains(wide, a, b, higher), test)
    if np.isfinite(result.p) and result.p < ALPHA:
        winner, loser = (a, b) if result.mean > 0 else (b, a)
        return Verdict(
            AGREES if winner == a else DISAGREES,
            f"{winner} significantly better than {loser} ({_evidence(result)})",
        )
    return Verdict(INCONCLUSIVE, _undecided(a, b, result, ALPHA))


def _evidence(result: Paired) -> str:
    note = f"; {result.note}" if result.note else ""
    return f"{p_text(result.p)}, {result.n} seeds{note}"


def _undecided(a: str, b: str, result: Paired, alpha: float) -> str:
    """Why the pair a, b is undecided, and how many seeds would decide it."""
    if result.n < MIN_TEST_SEEDS or result.note == "identical on every seed":
        why = result.note
    else:
        why = f"{a} {_side(result.mean)} {b} by mean, inside the noise ({_evidence(result)})"
    return f"{why}; {seeds_text(seeds_for_power(result.mean, result.std, alpha))}"


def _side(advantage: float) -> str:
    return "ahead of" if advantage > 0 else "behind" if advantage < 0 else "level with"


def claimed_pairs(
    wide: pd.DataFrame, pairs: list[tuple[str, str]], higher: bool, test: str = "t"
) -> tuple[list[str], list[str], str, str]:
    """Each claimed pair (better, worse) tested on its seeds, Holm-corrected over these pairs only: the pairs
    significantly reversed, the undecided ones (with why), the seed counts, and the seeds a paired t-test at the
    Bonferroni level α/m (Holm's first step) would need for the hardest undecided pair. The pairs that are neither
    hold significantly."""
    results = [paired_test(gains(wide, better, worse, higher), test) for better, worse in pairs]
    adjusted = holm([r.p for r in results])
    reversed_, undecided, needed = [], [], []
    for (better, worse), result, p in zip(pairs, results, adjusted):
        if np.isfinite(p) and p < ALPHA:
            if result.mean < 0:
                degenerate = ", degenerate" if result.note else ""
                reversed_.append(f"{worse} > {better} ({p_text(p)}{degenerate})")
            continue
        if result.n < MIN_TEST_SEEDS or result.note == "identical on every seed":
            undecided.append(f"{better} vs {worse}: {result.note}")
        else:
            degenerate = ", degenerate" if result.note else ""
            undecided.append(f"{better} {_side(result.mean)} {worse} ({p_text(p)}{degenerate})")
        needed.append(seeds_for_power(result.mean, result.std, ALPHA / len(pairs)))
    counts = sorted({r.n for r in results})
    seeds = f"{counts[0]} seeds" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} seeds"
    decidable = [n for n in needed if n is not None]
    return reversed_, undecided, seeds, seeds_text(max(decidable) if decidable else None)


def best(wide: pd.DataFrame, a: str, contenders: list[str], higher: bool, test: str = "t") -> Verdict:
    """ "a is the best of all": a against every other contender, Holm over those k − 1 pairs. Agrees only when a
    is significantly better than every other; disagrees when any other is significantly better than a."""
    others = [x for x in contenders if x != a]
    if not others:
        return Verdict(NOT_COMPARABLE, "no other algorithm ran")
    reversed_, undecided, seeds, settle = claimed_pairs(wide, [(a, x) for x in others], higher, test)
    if reversed_:
        return Verdict(DISAGREES, f"significantly better than {a} (Holm, {seeds}): {', '.join(reversed_)}")
    if not undecided:
        return Verdict(AGREES, f"{a} significantly better than each of the {len(others)} others (Holm, {seeds})")
    return Verdict(INCONCLUSIVE, f"undecided (Holm, {seeds}): {', '.join(undecided)}; {settle}")


def ordering(wide: pd.DataFrame, pairs: list[tuple[str, str]], higher: bool, test: str = "t") -> Verdict:
    """The paper's order of its printed algorithms: every pair (better, worse) it orders, Holm over those pairs.
    Agrees only when every pair holds significantly; disagrees on any significant reversal."""
    if not pairs:
        return Verdict(NOT_COMPARABLE, "fewer than two of the printed algorithms ran")
    reversed_, undecided, seeds, settle = claimed_pairs(wide, pairs, higher, test)
    if reversed_:
        return Verdict(DISAGREES, f"significantly reversed (Holm, {seeds}): {', '.join(reversed_)}")
    if not undecided:
        return Verdict(AGREES, f"every one of the {len(pairs)} ordered pairs holds significantly (Holm, {seeds})")
    return Verdict(INCONCLUSIVE, f"undecided (Holm, {seeds}): {', '.join(undecided)}; {settle}")


def within_margin(
    differences: np.ndarray, margin: float, *, one_sided: bool = False, runs: int = 0
) -> tuple[str, tuple[float, float]]:
    """Equivalence of a difference to 0 within ± ``margin`` (Schuirmann's two one-sided tests at level α: the
    (1 − 2α) t-interval inside the margin), or with ``one_sided`` non-inferiority (the interval below +margin).
    Disagrees when the interval lies entirely beyond the margin (beyond +margin for ``one_sided``). A sample of
    one repeated difference has a point for its interval. ``runs``: the differences are to a number averaged over
    that many runs of its own, whose spread the interval adds (``stats.mean_interval``)."""
    n = differences.size
    if n < MIN_TEST_SEEDS:
        return INCONCLUSIVE, (np.nan, np.nan)
    low, high = mean_interval(differences, INTERVAL, runs)
    if one_sided:
        verdict = AGREES if high < margin else DISAGREES if low > margin else INCONCLUSIVE
    else:
        inside, outside = -margin < low and high < margin, low > margin or high < -margin
        verdict = AGREES if inside else DISAGREES if outside else INCONCLUSIVE
    return verdict, (low, high)


def _interval_text(low: float, high: float, unit: str = "") -> str:
    return f"[{number(low)}{unit}, {number(high)}{unit}]"


def close_to(wide: pd.DataFrame, a: str, b: str, higher: bool, margin: float, *, one_sided: bool, word: str) -> Verdict:
    """ "a matches b" (equivalence within ± margin·|mean of b|) or, with ``one_sided``, "a is competitive with b"
    (a not worse than b by more than that margin: non-inferiority; being far better does not contradict it)."""
    advantage = gains(wide, a, b, higher)
    shortfall = -advantage  # a's deficit against b: what "competitive" bounds
    scale = abs(float(wide[b].dropna().mean())) * margin
    if advantage.size >= MIN_TEST_SEEDS and np.all(advantage == 0):
        return Verdict(AGREES, "identical on every seed")
    verdict, (low, high) = within_margin(shortfall, scale, one_sided=one_sided)
    if not np.isfinite(low):
        return Verdict(INCONCLUSIVE, f"n = {advantage.size}: no test")
    degenerate = "; degenerate: every seed differs by the same amount" if low == high else ""
    said = (
        f"{a}'s shortfall against {b} {_interval_text(low, high)} ({percent(INTERVAL)} interval, {advantage.size} "
        f"seeds), margin {percent(margin)} of {b}'s mean ({number(scale)})"
    )
    lead = {
        AGREES: f"{word}",
        DISAGREES: f"{a} worse than {b} by more than the margin" if low > scale else f"{a} better by more than it",
        INCONCLUSIVE: "undecided, the interval crosses the margin (more seeds would narrow it)",
    }[verdict]
    return Verdict(verdict, f"{lead}: {said}{degenerate}")


def printed_value(values: np.ndarray, paper: float, margin: float, runs: int = 0) -> Verdict:
    """A number the paper prints against here's mean over seeds: equivalence of (here − paper) within ± margin.
    The paper's value is taken as exact (its own run-to-run spread is rarely printed), unless its source says it
    averages ``runs`` runs: then their spread, estimated by ours, widens the interval (a single run, ``runs=1``,
    varies as much as one seed here)."""
    values = values[np.isfinite(values)]
    verdict, (low, high) = within_margin(values - paper, margin, runs=runs)
    if not np.isfinite(low):
        return Verdict(INCONCLUSIVE, f"n = {values.size}: no test")
    spread = f"; the paper's value from {runs} run{'s' * (runs > 1)}, its spread taken as ours" if runs else ""
    interval = f"here − paper {_interval_text(low, high)} ({percent(INTERVAL)} interval, {values.size} seeds{spread})"
    lead = {
        AGREES: "within the margin",
        DISAGREES: "outside the margin",
        INCONCLUSIVE: "undecided, the interval crosses the margin",
    }[verdict]
    return Verdict(verdict, f"{lead} (± {number(margin)}): {interval}")


def improvement(
    wide: pd.DataFrame, a: str, baselines: list[str], higher: bool, paper_gain: float, tolerance: float
) -> tuple[Verdict, float]:
    """The papers' "a improves on the best baseline by g %": the relative gain of a over the baseline with the best
    mean here, per seed, 100·(advantage)/|baseline's mean| (the denominator, a mean over every seed, taken as
    fixed). Agrees when its (1 − 2α) interval lies within g ± tolerance·|g|; disagrees when it lies entirely
    outside; inconclusive otherwise. Returns the verdict and the mean gain here."""
    ran = [x for x in baselines if x in wide and wide[x].notna().any()]
    if not ran:
        return Verdict(INCONCLUSIVE, "no baseline ran"), np.nan
    means = wide[ran].mean()
    rival = str(means.idxmax() if higher else means.idxmin())
    gain = 100.0 * gains(wide, a, rival, higher) / abs(float(means[rival]))
    if gain.size < MIN_TEST_SEEDS:
        return Verdict(INCONCLUSIVE, f"n = {gain.size}: no test"), float(gain.mean()) if gain.size else np.nan
    verdict, (low, high) = within_margin(gain - paper_gain, tolerance * abs(paper_gain))
    lead = {
        AGREES: f"within the paper's gain ± {percent(tolerance)}",
        DISAGREES: f"outside the paper's gain ± {percent(tolerance)}",
        INCONCLUSIVE: f"undecided, the interval crosses the edge of the paper's gain ± {percent(tolerance)}",
    }[verdict]
    interval = _interval_text(low + paper_gain, high + paper_gain, " %")
    reason = (
        f"{lead}: gain over {rival} (the best baseline here) {interval} ({percent(INTERVAL)} interval, {gain.size} "
        f"seeds), paper {paper_gain:+.1f} %"
    )
    return Verdict(verdict, reason), float(gain.mean())


def faster(seconds: pd.DataFrame, a: str, b: str, margin: float, machine: str) -> tuple[Verdict, float]:
    """ "a is faster than b" on the paper's measure, seconds per round (per iteration) of a unit: a paired test on
    the per-seed log ratio log(t_a / t_b). Agrees when the (1 − 2α) interval of the mean log ratio lies below
    log(1 − margin) (faster by more than the margin); disagrees when it lies above −log(1 − margin) (slower by more
    than it); inconclusive when it reaches into the margin, where a shared machine's load can put it. Returns the
    verdict and the geometric-mean ratio t_a / t_b."""
    common = seconds[[a, b]].dropna()
    common = common[(common > 0).all(axis=1)]
    ratios = np.log((common[a] / common[b]).to_numpy())
    if ratios.size < MIN_TEST_SEEDS:
        ratio = float(np.exp(ratios.mean())) if ratios.size else np.nan
        return Verdict(INCONCLUSIVE, f"n = {ratios.size}: no test; {machine}"), ratio
    edge = -math.log(1 - margin)
    low, high = mean_interval(ratios, INTERVAL)
    verdict = AGREES if high < -edge else DISAGREES if low > edge else INCONCLUSIVE
    lead = {
        AGREES: f"{a} faster by more than {percent(margin)}",
        DISAGREES: f"{a} slower by more than {percent(margin)}",
        INCONCLUSIVE: f"undecided, the interval reaches into ± {percent(margin)}, where a machine's load moves times",
    }[verdict]
    times = f"{a} {1e3 * common[a].mean():.3g} ms, {b} {1e3 * common[b].mean():.3g} ms per round"
    interval = f"{a}/{b} = {math.exp(ratios.mean()):.2f} [{math.exp(low):.2f}, {math.exp(high):.2f}]"
    reason = f"{lead}: {times}, {interval} ({percent(INTERVAL)} interval, {ratios.size} seeds); {machine}"
    return Verdict(verdict, reason), float(math.exp(ratios.mean()))
