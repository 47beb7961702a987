"""Off-policy estimates of a policy's value from a log, with 95 % intervals and their sample sizes.

Per logged event t: the reward r_t of the logged arm a_t, its propensity p_t under the logging policy, the target
policy's probability π_t of choosing a_t (for a policy replayed on the log, 1 when it picked a_t and 0 otherwise),
and a reward model's estimates q̂_t(a_t) of the logged arm and q̂_t(π) = Σ_a π_t(a) q̂_t(a) of the target's choice.
With the importance weight w_t = π_t / p_t:

- replay (Li, Chu, Langford & Wang, WSDM 2011): the mean reward of the events kept (runner/logged.py);
- IPS, inverse propensity scoring (Horvitz & Thompson 1952): V̂ = (1/n) Σ w_t r_t;
- SNIPS, self-normalised IPS (Swaminathan & Joachims, NeurIPS 2015): V̂ = Σ w_t r_t / Σ w_t;
- DM, the direct method: V̂ = (1/n) Σ q̂_t(π);
- DR, doubly robust (Dudík, Langford & Li, ICML 2011, eq. 2): V̂ = (1/n) Σ [q̂_t(π) + w_t (r_t − q̂_t(a_t))].

Intervals: a replay of 0/1 rewards gets Wilson's score interval; the others the normal interval of a mean of
independent terms, SNIPS's by the delta method (its terms w_t (r_t − V̂) / mean(w)), and none when the terms do not
vary. Each interval is intersected with the rewards' range, where every policy's value lies (which keeps its
coverage). Sample size: the events kept
(replay), the n events (DM), or Kish's effective sample size (Σw)² / Σw² of the importance weights (IPS, SNIPS, DR):
how many equally weighted events the weighted ones are worth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

LEVEL = 0.95
ESTIMATORS = ("replay", "IPS", "SNIPS", "DM", "DR")
# What each estimate needs to be unbiased (or consistent), for the report's tables.
ASSUMPTIONS = {
    "replay": "uniform logging over the offered arms (or rejection sampling with known propensities)",
    "IPS": "known propensities, positive wherever the policy acts",
    "SNIPS": "as IPS; consistent, with a bias of order 1/n",
    "DM": "a correct reward model",
    "DR": "known propensities or a correct reward model",
}


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    size: float  # events kept, or the effective sample size of the weights
    se: float  # standard error before the interval is intersected with the rewards' range

    @classmethod
    def undefined(cls, size: float = 0.0) -> Estimate:
        return cls(np.nan, np.nan, np.nan, size, np.nan)


def z_value() -> float:
    return float(ndtri(0.5 + LEVEL / 2))


def normal(value: float, se: float, size: float, bounds: tuple[float, float]) -> Estimate:
    """The normal interval value ± z·se; undefined (NaN) when the terms do not vary (se = 0, such as no reward among
    the matched events), where a zero-width interval would claim a certainty the log does not give."""
    if not se > 0:
        return Estimate(value, np.nan, np.nan, size, se)
    half = z_value() * se
    return Estimate(value, max(value - half, bounds[0]), min(value + half, bounds[1]), size, se)


def mean_of(terms: np.ndarray, size: float, bounds: tuple[float, float]) -> Estimate:
    """The mean of independent per-event terms and its normal interval."""
    n = len(terms)
    if n == 0:
        return Estimate.undefined()
    se = float(terms.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    return normal(float(terms.mean()), se, size, bounds)


def kish(weights: np.ndarray) -> float:
    squares = float(np.square(weights).sum())
    return float(weights.sum()) ** 2 / squares if squares > 0 else 0.0


def replay(kept_rewards: np.ndarray, bounds: tuple[float, float] = (0.0, 1.0)) -> Estimate:
    """The mean reward of the kept events; Wilson's score interval for clicks (every reward 0 or 1)."""
    n = len(kept_rewards)
    if n == 0:
        return Estimate.undefined()
    if not np.isin(kept_rewards, (0.0, 1.0)).all():
        return mean_of(kept_rewards, n, bounds)
    from scipy.stats import binomtest  # half a second to import: only where a log is reported

    clicks = int(kept_rewards.sum())
    p = clicks / n
    interval = binomtest(clicks, n).proportion_ci(LEVEL, method="wilson")
    return Estimate(p, max(interval.low, bounds[0]), min(interval.high, bounds[1]), n, np.sqrt(p * (1 - p) / n))


def ips(reward, propensity, target, bounds=(0.0, 1.0)) -> Estimate:
    w = np.asarray(target, float) / np.asarray(propensity, float)
    return mean_of(w * np.asarray(reward, float), kish(w), bounds)


def snips(reward, propensity, target, bounds=(0.0, 1.0)) -> Estimate:
    w = np.asarray(target, float) / np.asarray(propensity, float)
    reward = np.asarray(reward, float)
    if w.sum() <= 0:
        return Estimate.undefined()
    value = float((w * reward).sum() / w.sum())
    terms = w * (reward - value) / w.mean()  # the delta method's linearisation
    se = float(terms.std(ddof=1) / np.sqrt(len(w))) if len(w) > 1 else np.nan
    return normal(value, se, kish(w), bounds)


def direct(q_target, bounds=(0.0, 1.0)) -> Estimate:
    q_target = np.asarray(q_target, float)
    return mean_of(q_target, len(q_target), bounds)


def doubly_robust(reward, propensity, target, q_logged, q_target, bounds=(0.0, 1.0)) -> Estimate:
    w = np.asarray(target, float) / np.asarray(propensity, float)
    terms = np.asarray(q_target, float) + w * (np.asarray(reward, float) - np.asarray(q_logged, float))
    return mean_of(terms, kish(w), bounds)


def every_estimate(kept_rewards, reward, propensity, target, q_logged, q_target, bounds) -> dict[str, Estimate]:
    """Every estimator of the module, by name."""
    return {
        "replay": replay(kept_rewards, bounds),
        "IPS": ips(reward, propensity, target, bounds),
        "SNIPS": snips(reward, propensity, target, bounds),
        "DM": direct(q_target, bounds),
        "DR": doubly_robust(reward, propensity, target, q_logged, q_target, bounds),
    }


def ratio(a: Estimate, b: Estimate) -> tuple[float, float, float]:
    """a / b with a 95 % interval by the delta method on log a − log b, the two estimates taken as independent
    (their kept events rarely overlap); NaN when either is zero or undefined."""
    if not (a.value > 0 and b.value > 0):
        return np.nan, np.nan, np.nan
    value = a.value / b.value
    spread = z_value() * np.sqrt((a.se / a.value) ** 2 + (b.se / b.value) ** 2)
    return value, value * np.exp(-spread), value * np.exp(spread)
