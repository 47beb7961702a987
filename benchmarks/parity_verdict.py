"""The parity verdict: ours equivalent to the authors' code within a declared margin, on an instance shown to tell
implementations apart.

Two implementations with the same final regret on an instance where every algorithm scores alike say nothing.
So a parity run also plays negative controls (a learner that should *not* match theirs: a non-clustering baseline
for a clustering algorithm, an untrained or greedy copy of a neural learner), and the verdict is

- **parity**: ours is equivalent to theirs (two one-sided tests, Schuirmann 1987, at level 0.05 against the margin
  ±m, m a declared share of their mean) *and* every control is shown different from theirs (its difference lies
  beyond the margin, by the one-sided test on the side where it lies, at level 0.05);
- **not discriminating**: ours is equivalent, but some control is not shown different: the instance cannot tell
  ours from a learner that should differ, so the equivalence is no evidence;
- **differs**: ours is shown beyond the margin;
- **inconclusive**: neither equivalence nor a difference beyond the margin is shown.

Both tests read the same 90 % interval of the difference of means (ours − theirs): equivalence when it lies
inside (−m, m), a difference beyond the margin when it lies wholly above m or below −m. When run i of both sides
faced the same draws, the interval is the paired t interval of the run-by-run differences; otherwise Welch's.
A difference with no spread at all (identical runs) is exact: its interval is the point.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.05  # each one-sided test; the two-sided interval that carries both is the 90 % one
VERDICTS = ("parity", "not discriminating", "differs", "inconclusive")


def compare(ours, theirs, margin: float, paired: bool) -> dict:
    """ours − theirs (final regrets of the runs), against the margin ``margin`` × their mean.

    Returns the means, the difference with its 90 % interval (also in % of their mean), the TOST p-value of
    equivalence (``p_equivalent``) and the p-value of a difference beyond the margin (``p_beyond``)."""
    a, b = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    scale = abs(b.mean()) or 1.0
    m = margin * scale
    if paired:
        differences = a - b
        # the same trajectory summed in another order is the same result
        differences[np.abs(differences) <= 1e-9 * max(np.abs(b).max(), 1.0)] = 0.0
        difference = float(differences.mean())
        spread = differences.std(ddof=1) / np.sqrt(len(differences)) if len(differences) > 1 else np.nan
        df = len(differences) - 1
    else:
        difference = float(a.mean() - b.mean())
        va = a.var(ddof=1) / len(a) if len(a) > 1 else np.nan
        vb = b.var(ddof=1) / len(b) if len(b) > 1 else np.nan
        spread = np.sqrt(va + vb)
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if spread > 0 else np.nan
    if spread == 0:  # exact: no run-to-run spread in the difference
        low = high = difference
        p_equivalent = 0.0 if abs(difference) < m else 1.0
        p_beyond = 0.0 if abs(difference) > m else 1.0
    elif np.isnan(spread):  # a single run a side: nothing can be shown
        low, high, p_equivalent, p_beyond = np.nan, np.nan, 1.0, 1.0
    else:
        # imported here: the harness's workers import this module, and their fresh-process ("cold") time is to
        # measure the learners, not scipy's half-second import
        from scipy import stats

        t = stats.t(df)
        half = t.ppf(1 - LEVEL) * spread
        low, high = difference - half, difference + half
        p_equivalent = max(t.sf((difference + m) / spread), t.cdf((difference - m) / spread))
        p_beyond = t.sf((difference - m) / spread) if difference > 0 else t.cdf((difference + m) / spread)
    return {
        "ours": [float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0],
        "theirs": [float(b.mean()), float(b.std(ddof=1)) if len(b) > 1 else 0.0],
        "difference": difference,
        "interval": [float(low), float(high)],
        "difference_pct": 100 * difference / scale,
        "interval_pct": [100 * float(low) / scale, 100 * float(high) / scale],
        "margin_pct": 100 * margin,
        "p_equivalent": float(p_equivalent),
        "p_beyond": float(p_beyond),
        "test": "paired" if paired else "welch",
    }


def verdict(main: dict, controls: dict[str, dict]) -> tuple[str, str]:
    """(verdict, reason) from ``compare`` of ours and of every control against theirs."""
    if main["p_beyond"] < LEVEL:
        return "differs", f"ours {signed(main)} beyond ±{main['margin_pct']:g} %"
    if main["p_equivalent"] >= LEVEL:
        return "inconclusive", f"ours {signed(main)}: neither within nor beyond ±{main['margin_pct']:g} %"
    if not controls:
        return "not discriminating", "no control was run"
    close = {name: c for name, c in controls.items() if c["p_beyond"] >= LEVEL}
    if close:
        figures = "; ".join(f"{name} {signed(c)}" for name, c in close.items())
        return "not discriminating", f"ours {signed(main)}, but not shown beyond ±{main['margin_pct']:g} %: {figures}"
    figures = "; ".join(f"{name} {signed(c)}" for name, c in controls.items())
    return "parity", f"ours {signed(main)}; controls {figures}"


def signed(c: dict) -> str:
    """The difference in % of their mean with its 90 % interval, e.g. '+1.2 % (−0.4 … +2.8)'."""
    low, high = c["interval_pct"]
    text = f"{percent(c['difference_pct'])} %"
    if np.isnan(low):
        return text
    return f"{text} (exact)" if low == high else f"{text} ({percent(low)} … {percent(high)})"


def percent(x: float) -> str:
    return f"{x:+.1f}".replace("-", "−")


def pair_f1(labels_or_graph, truth: np.ndarray) -> float:
    """F1 of the user pairs a clustering puts together against the pairs of the true clusters (bandpy's score:
    scikit-learn's f1 over the upper triangle). A square [N, N] array is read as the sharing graph itself."""
    from sklearn.metrics import f1_score

    truth = np.asarray(truth)
    shown = np.asarray(labels_or_graph)
    together = shown.astype(bool) if shown.ndim == 2 else shown[:, None] == shown[None, :]
    upper = np.triu_indices(len(truth), 1)
    return float(f1_score((truth[:, None] == truth[None, :])[upper], together[upper], zero_division=0.0))
