"""The CI gate: save each algorithm's final regret (or CTR) per dataset as a baseline, and later compare a new
report with it. Worse beyond the tolerance (higher regret, lower CTR) or an algorithm gone missing fails."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from banditbench.errors import SettingError, UserError
from banditbench.report.tables import Report

BASELINE_VERSION = 1
METRICS = ("final_regret", "cumulative_ctr")  # lower and higher is better


def parse_tolerance(text: str) -> float:
    """ "5%" → 0.05; a bare number is a fraction ("0.05")."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise SettingError(
            "{tolerance} expects a percentage like 5% or a fraction like 0.05, got {got!r}", got=text
        ) from None
    if not np.isfinite(value) or value < 0:
        raise SettingError("{tolerance} must be non-negative, got {got!r}", got=text)
    return value


def baseline_entries(report: Report) -> dict:
    entries: dict[str, dict] = {}
    for row in report.summary.itertuples():
        kind = report.results.kinds[row.dataset]
        value = row.ctr_mean if kind == "ctr" else row.regret_mean
        rounds = int(report.results.units.loc[report.results.units["dataset"] == row.dataset, "rounds"].max())
        entries.setdefault(row.dataset, {})[row.algorithm] = {
            "metric": "cumulative_ctr" if kind == "ctr" else "final_regret",
            "value": float(value),
            "seeds": int(row.seeds),
            "rounds": rounds,
        }
    return entries


def save_baseline(report: Report, path: Path) -> Path:
    document = {"banditbench_baseline": BASELINE_VERSION, "datasets": baseline_entries(report)}
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    except OSError as e:
        raise UserError(f"cannot write the baseline {path}: {e.strerror}") from None
    return Path(path)


def load_baseline(path: Path) -> dict:
    """The baseline's entries, checked entry by entry: a baseline that cannot say what a regression is (no
    entries, a value that is missing, not a number or not finite) is bad input, refused with exit code 2 by the
    CLI, never mistaken for a regression (1) or a pass."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(document, dict) or document.get("banditbench_baseline") != BASELINE_VERSION:
            raise ValueError("not a banditbench baseline (version key missing)")
        datasets = document["datasets"]
    except FileNotFoundError:
        raise UserError(f"baseline {path} does not exist; write one with --save-baseline {path}") from None
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"baseline {path} is unreadable: {e}") from None
    problem = baseline_problem(datasets)
    if problem is not None:
        raise UserError(f"baseline {path}: {problem}; write a new one with --save-baseline")
    return datasets


def baseline_problem(datasets) -> str | None:
    """What makes the baseline's ``datasets`` entries unusable, or None."""
    if not isinstance(datasets, dict) or not any(isinstance(a, dict) and a for a in datasets.values()):
        return "it has no entries, so it could not catch any regression"
    for dataset, algorithms in datasets.items():
        if not isinstance(algorithms, dict):
            return f"dataset {dataset!r} holds {type(algorithms).__name__}, not algorithms"
        for algorithm, entry in algorithms.items():
            name = f"{algorithm} on {dataset}"
            if not isinstance(entry, dict):
                return f"{name} is {entry!r}, not an entry"
            for key, kinds in (("value", (int, float)), ("rounds", (int,)), ("metric", (str,))):
                if key not in entry:
                    return f"{name} has no {key!r}"
                if not isinstance(entry[key], kinds) or isinstance(entry[key], bool):
                    return f"{name} has {key} {entry[key]!r}, not a {'number' if key != 'metric' else 'name'}"
            if isinstance(entry["value"], float) and not np.isfinite(entry["value"]):  # JSON's NaN, Infinity
                return f"{name} has value {entry['value']!r}, not a finite number"
            if entry["metric"] not in METRICS:
                return f"{name} has metric {entry['metric']!r}, not one of {', '.join(METRICS)}"
    return None


@dataclass
class CheckOutcome:
    failures: list[str]  # regressions and missing entries: exit 1
    notes: list[str]  # improvements and new entries: reported, not failing


def check(report: Report, baseline: dict, tolerance: float) -> CheckOutcome:
    """``baseline``: what :func:`load_baseline` read."""
    current = baseline_entries(report)
    failures, notes = [], []
    for dataset, algorithms in sorted(baseline.items()):
        for algorithm, saved in sorted(algorithms.items()):
            now = current.get(dataset, {}).get(algorithm)
            name = f"{algorithm} on {dataset}"
            if now is None:
                failures.append(f"{name}: in the baseline but not in these results")
                continue
            if now["metric"] != saved["metric"] or now["rounds"] != saved["rounds"]:
                failures.append(
                    f"{name}: baseline has {saved['metric']} after {saved['rounds']} rounds, these "
                    f"results {now['metric']} after {now['rounds']} rounds"
                )
                continue
            old, new = saved["value"], now["value"]
            lower_is_better = saved["metric"] == "final_regret"
            allowed = tolerance * abs(old)
            worse = new > old + allowed if lower_is_better else new < old - allowed
            change = f"{saved['metric'].replace('_', ' ')} {old:.4g} → {new:.4g}"
            if old != 0:
                change += f" ({100 * (new - old) / abs(old):+.1f} %, tolerance {100 * tolerance:g} %)"
            if worse:
                failures.append(f"{name}: {'worse' if lower_is_better else 'lower'}: {change}")
            elif new != old:
                notes.append(f"{name}: {change}")
    for dataset, algorithms in sorted(current.items()):
        for algorithm in sorted(set(algorithms) - set(baseline.get(dataset, {}))):
            notes.append(f"{algorithm} on {dataset}: new, not in the baseline")
    return CheckOutcome(failures, notes)
