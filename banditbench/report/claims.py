"""Paper vs here: what a preset's paper prints (its numbers and its stated comparisons) beside what a run of that
preset measured, each with a verdict, agrees / disagrees / not comparable, and the reason.

A run records its preset and the preparation parameters of its data in the manifest's settings; results of
runs without a preset get no such table. Verdict rules:
- a printed value: compared only when the run is the paper's setting (the paper's data, its rounds, no stand-in);
  it agrees when |here − paper| ≤ max(half the 95 % interval here, TOLERANCE × paper), and otherwise disagrees;
- the ordering of the algorithms the paper prints: disagrees when a pair the paper orders is significantly
  reversed here (the report's paired test, Holm-corrected), otherwise agrees; ties are named in the reason;
- "beats": agrees when a is significantly better than b; not comparable when a is ahead without significance;
  disagrees otherwise;
- "competitive": disagrees only when b is significantly better than a;
- "best": agrees when a is the best entry or tied with it;
- "improvement": agrees when the gain here has the paper's sign and is within half of the paper's figure;
- "faster": agrees when a's mean wall time per unit is below b's.
Orderings and comparisons are judged on any setting; the reason says when the setting is a stand-in.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from banditbench.presets import PRESETS, Claim, PaperSide
from banditbench.report.load import Results

TOLERANCE = 0.10  # relative distance within which a printed value counts as reproduced
COLUMNS = [
    "preset",
    "dataset",
    "kind",
    "claim",
    "paper",
    "paper_value",
    "here",
    "here_mean",
    "here_ci_low",
    "here_ci_high",
    "paper_order",
    "here_order",
    "verdict",
    "reason",
]
OFUL_FAMILY = "radius"  # the diagnostic of the policies that explore with OFUL's radius β (mean β used)
SCALES = (("alpha", "α"), ("alpha2", "α₂"), ("nu", "ν"))  # hyper-parameters that scale exploration
EXPLORATION = {"mcnb": (("alpha", "α"),), "metaban": (("alpha", "α"),)}  # their ν sets the clustering threshold


def run_settings(folder) -> dict[str, Any]:
    """The settings a run recorded (preset, flags, data parameters); empty for runs that recorded none."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return (manifest.get("execution") or {}).get("settings") or {}


def _tuned(folder) -> dict[str, dict]:
    try:
        return json.loads((folder / "manifest.json").read_text()).get("tuning") or {}
    except (OSError, ValueError):
        return {}


def _fmt(value: float) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:,.1f}"


def _order(means: dict[str, float], higher: bool) -> list[str]:
    return sorted(means, key=lambda a: -means[a] if higher else means[a])


def _order_text(order: list[str], means: dict[str, float]) -> str:
    return " < ".join(f"{a} ({_fmt(means[a])})" for a in order) if order else "–"


class _Judge:
    """The summary rows and paired comparisons of one dataset, and the differences from the paper's setting."""

    def __init__(self, summary: pd.DataFrame, comparisons: pd.DataFrame, higher: bool, value: str, test: str):
        self.rows = summary.set_index("algorithm")
        self.comparisons, self.higher, self.value, self.test = comparisons, higher, value, test
        prefix = value.removesuffix("_mean")
        self.low, self.high = f"{prefix}_ci_low", f"{prefix}_ci_high"

    def mean(self, algorithm: str) -> float:
        return float(self.rows.at[algorithm, self.value]) if algorithm in self.rows.index else np.nan

    def winner(self, a: str, b: str) -> tuple[str | None, float]:
        """("a" / "b" / "" for a tie, Holm-adjusted p), or (None, nan) when the pair was not compared."""
        pair = self.comparisons[
            ((self.comparisons["a"] == a) & (self.comparisons["b"] == b))
            | ((self.comparisons["a"] == b) & (self.comparisons["b"] == a))
        ]
        if pair.empty:
            return None, np.nan
        row = pair.iloc[0]
        p = float(row[f"{self.test}_p_holm"])
        return ("a" if row["winner"] == a else "b" if row["winner"] == b else ""), p

    def ahead(self, a: str, b: str) -> bool:
        return self.mean(a) > self.mean(b) if self.higher else self.mean(a) < self.mean(b)


def _p(p: float) -> str:
    return "p = –" if not np.isfinite(p) else ("p < 0.001" if p < 0.001 else f"p = {p:.3f}")


SAYS = {
    "beats": "{a} beats {b}",
    "competitive": "{a} competitive with {b}",
    "best": "{a} best of all",
    "improvement": "{a}'s gain over the best baseline",
    "faster": "{a} faster than {b}",
}


def _claim_row(claim: Claim, judge: _Judge, data: dict, stand_in: str) -> dict[str, Any]:
    row = {"kind": claim.kind, "claim": SAYS[claim.kind].format(a=claim.a, b=claim.b), "paper": claim.quote}
    missing = [n for n in (claim.a, claim.b) if n and n not in judge.rows.index]
    if missing:
        return {**row, "here": "–", "verdict": "not comparable", "reason": f"{', '.join(missing)} not run here"}
    if claim.applies is not None and data and not claim.applies(data):
        return {**row, "here": "–", "verdict": "not comparable", "reason": claim.otherwise}
    a, b = claim.a, claim.b
    caveat = f"; {stand_in}" if stand_in else ""
    if claim.kind in ("beats", "competitive"):
        winner, p = judge.winner(a, b)
        here = f"{a} {_fmt(judge.mean(a))} vs {b} {_fmt(judge.mean(b))}"
        if winner is None:
            return {**row, "here": here, "verdict": "not comparable", "reason": "fewer than 2 common seeds"}
        said = {
            "a": f"{a} significantly better ({_p(p)})",
            "b": f"{b} significantly better ({_p(p)})",
            "": f"no significant difference ({_p(p)})",
        }[winner]
        if claim.kind == "competitive":
            verdict = "disagrees" if winner == "b" else "agrees"
        elif winner == "" and judge.ahead(a, b):  # the right direction, not significant: undecided here
            verdict, said = "not comparable", f"{a} ahead but not significantly ({_p(p)}): too few seeds to decide"
        else:
            verdict = "agrees" if winner == "a" else "disagrees"
        return {**row, "here": here, "verdict": verdict, "reason": said + caveat}
    if claim.kind == "best":
        contenders = [x for x in judge.rows.index if not judge.rows.at[x, "reference"]]
        best = _order({x: judge.mean(x) for x in contenders}, judge.higher)[0]
        tied = bool(judge.rows.at[a, "tied_with_best"]) or best == a
        here = f"best: {best} {_fmt(judge.mean(best))}; {a} {_fmt(judge.mean(a))}"
        reason = (
            f"{a} is the best"
            if best == a
            else f"{a} tied with the best, {best}"
            if tied
            else f"{best} is significantly better than {a}"
        )
        return {**row, "here": here, "verdict": "agrees" if tied else "disagrees", "reason": reason + caveat}
    if claim.kind == "improvement":
        gain = float(judge.rows.at[a, "improvement_pct"])
        agrees = (
            np.isfinite(gain)
            and np.sign(gain) == np.sign(claim.value)
            and abs(gain - claim.value) <= abs(claim.value) / 2
        )
        return {
            **row,
            "paper_value": claim.value,
            "here": f"{gain:+.1f} %" if np.isfinite(gain) else "–",
            "here_mean": gain,
            "verdict": "agrees" if agrees else "disagrees",
            "reason": f"paper {claim.value:+.1f} %, here {gain:+.1f} % over the best baseline{caveat}",
        }
    if claim.kind == "faster":
        ta, tb = float(judge.rows.at[a, "wall_seconds"]), float(judge.rows.at[b, "wall_seconds"])
        return {
            **row,
            "here": f"{a} {ta:.3g} s vs {b} {tb:.3g} s per unit",
            "verdict": "agrees" if ta < tb else "disagrees",
            "reason": f"mean wall time per unit on this machine: {a} / {b} = {ta / tb:.2f}",
        }
    raise ValueError(f"unknown claim kind {claim.kind!r}")


def _differences(printed: PaperSide, spec: dict, config: dict, data: dict, allowed: dict | None = None) -> list[str]:
    """Why values measured here cannot be set against the paper's, as short phrases. ``allowed``: what the run
    recorded as differing from the data its preset declares (``--allow-stand-in``)."""
    reasons = []
    stand_in = {k: data.get(k) for k in printed.data if data.get(k) != printed.data[k]}
    if stand_in:
        ours = ", ".join(f"{k} = {v}" for k, v in stand_in.items())
        theirs = ", ".join(f"{k} = {printed.data[k]}" for k in stand_in)
        reasons.append(f"data prepared with {ours}: a stand-in for {printed.data_text or theirs}")
    if allowed:
        differ = ", ".join(f"{k} = {v['prepared']} here, {v['needed']} in the preset" for k, v in allowed.items())
        reasons.append(f"stand-in data (--allow-stand-in): {differ}")
    if config.get("rounds") != spec["rounds"]:
        reasons.append(f"{config.get('rounds')} rounds here, {spec['rounds']} in the paper")
    env = config.get("env") or {}
    changed = {k: env.get(k) for k in spec.get("env", {}) if str(env.get(k)) != str(spec["env"][k])}
    if changed:
        reasons.append(", ".join(f"{k} = {v} here, {spec['env'][k]} in the paper" for k, v in changed.items()))
    if config.get("dataset") != spec["dataset"]:
        reasons.append(f"dataset {config.get('dataset')} here, {spec['dataset']} in the preset")
    if printed.stand_in:
        reasons.append(printed.stand_in)
    return reasons


def exploration_scale(results: Results, summary: pd.DataFrame, dataset: str) -> dict[str, str]:
    """What each algorithm explored with: the mean OFUL radius β̄ it used (diagnostic ``radius``), else its α
    (or ν) hyper-parameter, as the run recorded it (the chosen cell of a tuned grid)."""
    scales = {}
    for exp in (e for e in results.experiments if e.dataset == dataset):
        tuned = _tuned(exp.folder)
        for algorithm, params in exp.config["algorithms"].items():
            params = {**params, **(tuned.get(algorithm, {}).get("chosen") or {})}
            rows = summary[(summary["dataset"] == dataset) & (summary["algorithm"] == algorithm)]
            if rows.empty:
                continue
            radius = rows[f"diag_{OFUL_FAMILY}"].iloc[0] if f"diag_{OFUL_FAMILY}" in rows else np.nan
            if np.isfinite(radius):
                scales[algorithm] = f"β̄ = {radius:.2f}"
            else:
                keys = EXPLORATION.get(algorithm, SCALES)
                if params.get("bandpy_schedule"):  # bandpy's CMLB: a LinUCB scale; its alpha is Ghosh et al.'s exponent
                    keys = (("ucb_alpha", "α"),)
                named = [f"{symbol} = {params[key]}" for key, symbol in keys if key in params]
                if named:
                    scales[algorithm] = ", ".join(named)
    return scales


def paper_vs_here(results: Results, summary: pd.DataFrame, comparisons: pd.DataFrame, test: str = "t") -> pd.DataFrame:
    """One row per printed value, per ordering and per stated comparison, for every dataset run with a preset."""
    rows = []
    for dataset in results.datasets:
        experiments = [e for e in results.experiments if e.dataset == dataset]
        settings = run_settings(experiments[0].folder)
        name = settings.get("preset")
        if name not in PRESETS:
            continue
        spec, printed = PRESETS[name], PRESETS[name]["printed"]
        config, data = experiments[0].config, settings.get("data") or {}
        higher = results.kinds[dataset] == "ctr"
        value = "ctr_mean" if higher else "regret_mean"
        judge = _Judge(
            summary[summary["dataset"] == dataset], comparisons[comparisons["dataset"] == dataset], higher, value, test
        )
        differences = _differences(printed, spec, config, data, settings.get("stand_in"))
        stand_in = "; ".join(differences)
        base = {"preset": name, "dataset": dataset}
        for v in printed.values:
            mean = judge.mean(v.algorithm)
            row = {
                **base,
                "kind": "value",
                "claim": f"{v.algorithm}: {printed.metric}",
                "paper": f"{_fmt(v.value)} ({v.where})",
                "paper_value": v.value,
            }
            if not np.isfinite(mean):
                rows.append({**row, "here": "–", "verdict": "not comparable", "reason": "not run here"})
                continue
            low, high = (float(judge.rows.at[v.algorithm, c]) for c in (judge.low, judge.high))
            here = f"{_fmt(mean)} [{_fmt(low)}, {_fmt(high)}]" if np.isfinite(low) else _fmt(mean)
            relative = f"here {100 * (mean - v.value) / abs(v.value):+.0f} % from the paper"
            row.update({"here": here, "here_mean": mean, "here_ci_low": low, "here_ci_high": high})
            if differences:
                verdict, reason = "not comparable", f"{stand_in} ({relative})"
            else:
                half = (high - low) / 2 if np.isfinite(low) else 0.0
                close = abs(mean - v.value) <= max(half, TOLERANCE * abs(v.value))
                verdict, reason = ("agrees" if close else "disagrees"), relative
            rows.append({**row, "verdict": verdict, "reason": reason})
        printed_algos = [v.algorithm for v in printed.values]
        if len(printed_algos) > 1:
            paper_means = {v.algorithm: v.value for v in printed.values}
            paper_order = _order(paper_means, higher)
            ran = [a for a in paper_order if a in judge.rows.index]
            here_means = {a: judge.mean(a) for a in ran}
            here_order = _order(here_means, higher)
            reversed_, tied = [], []
            for i, better in enumerate(ran):
                for worse in ran[i + 1 :]:
                    winner, p = judge.winner(better, worse)
                    if winner == "b":
                        reversed_.append(f"{worse} significantly better than {better} ({_p(p)})")
                    elif winner == "":
                        tied.append(f"{better} ~ {worse} ({_p(p)})")
            reason = "; ".join(
                reversed_
                or [("same order" if here_order == ran else "order differs only among ties")]
                + ([f"tied: {', '.join(tied)}"] if tied else [])
            )
            rows.append(
                {
                    **base,
                    "kind": "ordering",
                    "claim": "ordering of the printed algorithms, best first",
                    "paper": _order_text(paper_order, paper_means),
                    "here": _order_text(here_order, here_means),
                    "paper_order": " < ".join(paper_order),
                    "here_order": " < ".join(here_order),
                    "verdict": "disagrees" if reversed_ else "agrees",
                    "reason": reason + (f"; {stand_in}" if stand_in else ""),
                }
            )
        for claim in printed.claims:
            rows.append({**base, **_claim_row(claim, judge, data, stand_in)})
        scales = exploration_scale(results, summary, dataset)
        if scales:
            rows.append(
                {
                    **base,
                    "kind": "note",
                    "claim": "exploration scale",
                    "here": "; ".join(f"{a}: {s}" for a, s in scales.items()),
                    "verdict": "",
                    "reason": "mean OFUL radius β̄ used, or the α (ν) of the run",
                }
            )
        for fact in printed.facts:
            rows.append(
                {**base, "kind": "note", "claim": "known structural fact", "here": fact, "verdict": "", "reason": ""}
            )
    return pd.DataFrame(rows, columns=COLUMNS)
