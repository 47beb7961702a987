"""Paper vs here: what a preset's paper prints (its numbers and its stated comparisons) beside what a run of that
preset measured, each with a verdict (agrees / disagrees / inconclusive, or not comparable) and the reason.

A run records its preset and the preparation parameters of its data in the manifest's settings; results of runs
without a preset get no such table. The rules are report/verdicts.py's. A printed value is judged only on the
paper's own setting (its data, its protocol settings, a run reaching the value's round, nothing the paper lost),
and is otherwise *not comparable*, with the differences as the reason; an ordering or a stated comparison is
judged on any setting, and its row names the differences (column ``differences``). A claim about an algorithm
that did not run is not comparable.

What the rules read of a run is a :class:`Run`: one row per unit with its per-seed values. It is built from
loaded results, and can be stored as JSON and read back (``banditbench claims --save-evidence``), so that a
scorecard regenerates from a few kilobytes instead of the run's shards.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from banditbench.presets import PRESETS, Claim, PaperSide, PaperValue
from banditbench.report import verdicts
from banditbench.report.load import Results
from banditbench.report.stats import bootstrap_interval
from banditbench.report.verdicts import INCONCLUSIVE, NOT_COMPARABLE, Verdict, number

VALUE_MARGIN = 0.10  # a printed value is reproduced when here's mean is within ± 10 % of it (equivalence test)
MATCH_MARGIN = 0.05  # "matches" / "competitive": within 5 % of the second algorithm's mean
SPEED_MARGIN = 0.10  # "faster": by more than 10 % in time per round; smaller gaps move with a shared machine's load
GAIN_TOLERANCE = 0.5  # an improvement of g % is reproduced by a gain within g ± g/2
COLUMNS = [
    "preset",
    "dataset",
    "exhibit",
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
    "differences",
]
OFUL_FAMILY = "radius"  # the diagnostic of the policies that explore with OFUL's radius β (mean β used)
SCALES = (("alpha", "α"), ("alpha2", "α₂"), ("nu", "ν"))  # hyper-parameters that scale exploration
EXPLORATION = {"mcnb": (("alpha", "α"),), "metaban": (("alpha", "α"),)}  # their ν sets the clustering threshold


@dataclass(frozen=True)
class Metric:
    """What a printed value or a claim compares: the :class:`Run` column holding it per unit (``{at}``: the round
    of the value), whether higher is better (None: the run's, CTR higher, regret lower), and the equivalence margin
    of a printed value, relative to the paper's value or absolute (a score in [0, 1] printed with one decimal)."""

    column: str
    higher: bool | None = None
    margin: float = VALUE_MARGIN
    relative: bool = True


METRICS = {
    "": Metric("at_{at}"),
    "regret per round": Metric("per_round_at_{at}", higher=False),
    "pair F1": Metric("diag_pair_f1", higher=True, margin=0.1, relative=False),
    "seconds": Metric("seconds_per_round"),  # select + update seconds of a round
    "select seconds": Metric("select_seconds_per_round"),  # the recommendation step alone
}


@dataclass
class Run:
    """One dataset of a run made with a preset, as the paper's claims read it. ``units``: one row per unit with
    algorithm, seed, role, reference, ``at_T`` (the preset's metric, cumulative at round T, for the run's last round
    and every round a printed value names), ``per_round_at_T`` (cumulative regret ÷ T), the final clustering F1 and
    seconds per round. ``config``: the run's dataset, rounds, protocol settings, budget and the hyper-parameters of
    each algorithm that the paper's columns name (``depth``; the chosen cell of a tuned grid); ``data``: the
    dataset's preparation parameters."""

    preset: str
    dataset: str
    higher: bool
    rounds: int
    units: pd.DataFrame
    config: dict[str, Any]
    data: dict[str, Any] = field(default_factory=dict)
    stand_in: str = ""
    machine: str = ""
    notes: list[dict[str, str]] = field(default_factory=list)  # the exploration scale of each algorithm

    def values(self, column: str) -> pd.DataFrame:
        """Per-seed values of ``column``: index seed, one column per algorithm."""
        if column not in self.units:
            return pd.DataFrame()
        return self.units.pivot(index="seed", columns="algorithm", values=column).astype(float)

    def to_json(self) -> dict[str, Any]:
        """The run as JSON values: the units as columns and rows, NaN as null."""
        units = self.units.astype(object).where(self.units.notna(), None)
        return {**asdict(self), "units": {"columns": list(units), "rows": units.to_numpy().tolist()}}

    @classmethod
    def from_json(cls, stored: dict[str, Any]) -> Run:
        units = pd.DataFrame(stored["units"]["rows"], columns=stored["units"]["columns"])
        numeric = [c for c in units if c not in ("algorithm", "role", "reference")]
        units[numeric] = units[numeric].astype(float)
        return cls(**{**stored, "units": units})


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


def _stand_in_flag(settings: dict[str, Any]) -> str:
    """A run on stand-in data says so in its settings: ``stand_in`` holds, per preparation parameter that differs
    from what its preset declares, the value ``prepared`` here and the one ``needed`` (``--allow-stand-in``)."""
    differ = settings.get("stand_in")
    if not differ:
        return ""
    if not isinstance(differ, dict):
        return "run on stand-in data (--allow-stand-in)"
    said = ", ".join(f"{k} = {v['prepared']} here, {v['needed']} in the preset" for k, v in differ.items())
    return f"stand-in data (--allow-stand-in): {said}"


def _rounds_named(printed: PaperSide, spec: dict) -> list[int]:
    return sorted({v.at or spec["rounds"] for v in printed.values} | {spec["rounds"]})


def build_runs(results: Results, summary: pd.DataFrame) -> list[Run]:
    """A :class:`Run` for every dataset of ``results`` run with a preset; ``summary`` gives each algorithm's role."""
    runs = []
    for dataset in results.datasets:
        experiments = [e for e in results.experiments if e.dataset == dataset]
        settings = run_settings(experiments[0].folder)
        name = settings.get("preset")
        if name not in PRESETS:
            continue
        spec, config = PRESETS[name], experiments[0].config
        higher = results.kinds[dataset] == "ctr"
        units = _unit_values(results, dataset, higher, _rounds_named(spec["printed"], spec), config["rounds"])
        roles = summary[summary["dataset"] == dataset][["algorithm", "role", "reference"]]
        units = units.merge(roles, on="algorithm", how="left")
        tuned = _tuned(experiments[0].folder)
        named = {key for item in (*spec["printed"].values, *spec["printed"].claims) for key in item.setting}
        algorithms = {
            a: {k: v for k, v in {**params, **(tuned.get(a, {}).get("chosen") or {})}.items() if k in named}
            for a, params in config["algorithms"].items()
        }
        of_dataset = results.units[results.units["dataset"] == dataset]
        machines = sorted(set(of_dataset["machine"].dropna())) if "machine" in of_dataset else []
        runs.append(
            Run(
                name,
                dataset,
                higher,
                int(config["rounds"]),
                units,
                {
                    "dataset": config.get("dataset"),
                    "rounds": config.get("rounds"),
                    "env": config.get("env") or {},
                    "budget": config.get("budget"),
                    "algorithms": algorithms,
                },
                settings.get("data") or {},
                _stand_in_flag(settings),
                "; ".join(machines),
                _notes(results, summary, dataset),
            )
        )
    return runs


def _unit_values(results: Results, dataset: str, higher: bool, named: list[int], rounds: int) -> pd.DataFrame:
    """One row per unit: the preset's metric at every named round the run reached, regret per round there, the
    final diagnostics and the seconds per round."""
    units = results.units[results.units["dataset"] == dataset]
    table = units[["algorithm", "seed"]].copy()
    curve = "cumulative_ctr" if higher else "cumulative_regret"
    of_dataset = results.rounds[results.rounds["dataset"] == dataset]
    for at in [t for t in named if t <= rounds] + ([rounds] if rounds not in named else []):
        reached = of_dataset[of_dataset["t"] == at - 1].set_index(["algorithm", "seed"])[curve]
        table[f"at_{at}"] = reached.reindex(pd.MultiIndex.from_frame(table[["algorithm", "seed"]])).to_numpy()
        if not higher:
            table[f"per_round_at_{at}"] = table[f"at_{at}"] / at
    for diagnostic in ("diag_pair_f1", "diag_n_clusters"):
        if diagnostic in units:
            table[diagnostic] = units[diagnostic].to_numpy()
    if {"select_seconds", "update_seconds"} <= set(units):  # 4 significant digits: the rest is the clock's noise
        seconds = (units["select_seconds"] + units["update_seconds"]) / units["rounds"]
        table["seconds_per_round"] = [float(f"{s:.4g}") for s in seconds]
        table["select_seconds_per_round"] = [float(f"{s:.4g}") for s in units["select_seconds"] / units["rounds"]]
    return table.reset_index(drop=True)


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


def _notes(results: Results, summary: pd.DataFrame, dataset: str) -> list[dict[str, str]]:
    """What the run says beside the verdicts: each algorithm's exploration scale."""
    scales = exploration_scale(results, summary, dataset)
    if not scales:
        return []
    here = "; ".join(f"{a}: {s}" for a, s in scales.items())
    return [{"claim": "exploration scale", "here": here, "reason": "mean OFUL radius β̄ used, or the α (ν) of the run"}]


# ---- which of a preset's printed values and claims a run can be set against ------------------------------------


def _algorithms_of(item: PaperValue | Claim) -> list[str]:
    return [item.algorithm] if isinstance(item, PaperValue) else [x for x in (item.a, item.b) if x]


def _setting_here(run: Run, item: PaperValue | Claim, key: str) -> list[Any]:
    """The values the run has for a setting of the paper's: a protocol setting, the budget, or an algorithm's
    hyper-parameter (one per algorithm of the item that ran)."""
    if key in run.config["env"]:
        return [run.config["env"][key]]
    if key == "budget":
        return [run.config["budget"]]
    return [run.config["algorithms"][a].get(key) for a in _algorithms_of(item) if a in run.config["algorithms"]]


def _setting_differences(run: Run, spec: dict, item: PaperValue | Claim) -> list[str]:
    """The protocol settings, budget and hyper-parameters in which the run differs from the item's column."""
    wanted = {**spec.get("env", {}), "budget": spec.get("budget"), **item.setting}
    differences = []
    for key, paper in wanted.items():
        if key == "budget" and key not in item.setting and paper is None:
            continue  # the preset sets no budget: any run's budget is the paper's "none"
        here = _setting_here(run, item, key)
        if any(str(h) != str(paper) for h in here):
            differences.append(f"{key} = {here[0]} here, {paper} in the paper's column")
    return differences


def _own_column(spec: dict, item: PaperValue | Claim) -> bool:
    """Whether an item's column is the preset's own (its protocol settings and budget; hyper-parameters aside)."""
    own = {**spec.get("env", {}), "budget": spec.get("budget")}
    return all(str(own[k]) == str(v) for k, v in item.setting.items() if k in own)


def shown_items(run: Run, spec: dict) -> list[PaperValue | Claim]:
    """The printed values and claims to set against this run: those of the columns the run's setting matches (and
    those that belong to no column); for an exhibit whose columns it matches none of, the preset's own column."""
    printed = spec["printed"]
    items = [*printed.values, *printed.claims]
    exhibits = dict.fromkeys(item.exhibit for item in items)
    shown = []
    for exhibit in exhibits:
        of_exhibit = [item for item in items if item.exhibit == exhibit]
        matching = [i for i in of_exhibit if not i.setting or not _setting_differences(run, spec, i)]
        if any(i.setting for i in matching) or all(not i.setting for i in of_exhibit):
            shown += matching
            continue
        columned = [i for i in of_exhibit if i.setting]
        own = next((i.column for i in columned if _own_column(spec, i)), columned[0].column)
        shown += [i for i in of_exhibit if not i.setting or i.column == own]
    return shown


def _differences(run: Run, spec: dict, item: PaperValue | Claim) -> list[str]:
    """Why values measured here cannot be set against the paper's ``item``, as short phrases."""
    printed: PaperSide = spec["printed"]
    reasons = []
    stand_in = {k: run.data.get(k) for k in printed.data if run.data.get(k) != printed.data[k]}
    if stand_in:
        ours = ", ".join(f"{k} = {v}" for k, v in stand_in.items())
        theirs = ", ".join(f"{k} = {printed.data[k]}" for k in stand_in)
        reasons.append(f"data prepared with {ours}: a stand-in for {printed.data_text or theirs}")
    if run.stand_in:
        reasons.append(run.stand_in)
    if isinstance(item, PaperValue):
        at = item.at or spec["rounds"]
        if run.rounds < at:
            reasons.append(f"the run stops at {run.rounds} rounds, before the printed value's round")
    elif run.rounds != spec["rounds"]:
        reasons.append(f"{run.rounds} rounds here, {spec['rounds']} in the paper")
    reasons += _setting_differences(run, spec, item)
    if run.config["dataset"] != spec["dataset"]:
        reasons.append(f"dataset {run.config['dataset']} here, {spec['dataset']} in the preset")
    if printed.stand_in:
        reasons.append(printed.stand_in)
    return reasons


# ---- rows ------------------------------------------------------------------------------------------------------

SAYS = {
    "beats": "{a} beats {b}",
    "competitive": "{a} competitive with {b}",
    "matches": "{a} matches {b}",
    "best": "{a} best of all",
    "improvement": "{a}'s gain over the best baseline",
    "faster": "{a} faster than {b}",
}


def _column_of(run: Run, metric: str, at: int = 0) -> tuple[str, bool]:
    """The Run column of a metric at round ``at`` (the last round the run reached when it stopped earlier), and
    whether higher is better."""
    chosen = METRICS[metric]
    at = min(at or run.rounds, run.rounds)
    column = chosen.column.format(at=at)
    if "{at}" in chosen.column and column not in run.units:
        column = chosen.column.format(at=run.rounds)
    return column, run.higher if chosen.higher is None else chosen.higher


def _here(values: pd.Series) -> tuple[str, float, float, float]:
    values = values.dropna().to_numpy(dtype=float)
    mean = float(values.mean()) if values.size else np.nan
    low, high = (float(x) for x in bootstrap_interval(values))
    text = f"{number(mean)} [{number(low)}, {number(high)}]" if np.isfinite(low) else number(mean)
    return text, mean, low, high


def _value_row(run: Run, spec: dict, value: PaperValue) -> dict[str, Any]:
    metric = f"{value.metric} at {value.at}" if value.at else (value.metric or spec["printed"].metric)
    row = {
        "kind": "value",
        "claim": f"{value.algorithm}: {metric}",
        "paper": f"{number(value.value)} ({value.where})",
        "paper_value": value.value,
    }
    chosen = METRICS[value.metric]
    column = chosen.column.format(at=value.at or spec["rounds"])
    if value.algorithm not in set(run.units["algorithm"]):
        return {**row, "here": "–", "verdict": NOT_COMPARABLE, "reason": "not run here"}
    here = run.values(column)
    if value.algorithm not in here or here[value.algorithm].isna().all():
        reason = "; ".join(_differences(run, spec, value)) or "not measured by this run"
        return {**row, "here": "–", "verdict": NOT_COMPARABLE, "reason": reason}
    text, mean, low, high = _here(here[value.algorithm])
    if value.value:
        text += f", {100 * (mean - value.value) / abs(value.value):+.0f} %"
    row.update({"here": text, "here_mean": mean, "here_ci_low": low, "here_ci_high": high})
    differences = _differences(run, spec, value)
    if differences:
        return {**row, "verdict": NOT_COMPARABLE, "reason": "; ".join(differences)}
    margin = chosen.margin * (abs(value.value) if chosen.relative else 1.0)
    said = verdicts.printed_value(here[value.algorithm].to_numpy(dtype=float), value.value, margin, value.runs)
    return {**row, "verdict": said.verdict, "reason": said.reason}


def _ordering_row(run: Run, spec: dict, values: list[PaperValue]) -> dict[str, Any] | None:
    """The order of the printed algorithms of one column, best first: every pair the paper orders."""
    column, higher = _column_of(run, values[0].metric, values[0].at or spec["rounds"])
    here = run.values(column)
    paper = {v.algorithm: v.value for v in values}
    paper_order = sorted(paper, key=lambda a: -paper[a] if higher else paper[a])
    ran = [a for a in paper_order if a in here and here[a].notna().any()]
    pairs = [(x, y) for i, x in enumerate(ran) for y in ran[i + 1 :] if paper[x] != paper[y]]
    means = {a: float(here[a].mean()) for a in ran}
    here_order = sorted(ran, key=lambda a: -means[a] if higher else means[a])
    said = verdicts.ordering(here, pairs, higher) if pairs else Verdict(NOT_COMPARABLE, "no pair the paper orders ran")
    differences = _differences(run, spec, values[0])
    return {
        "kind": "ordering",
        "claim": f"ordering of {values[0].where}, best first",
        "paper": _chain(paper_order, paper),
        "here": _chain(here_order, means) or "–",
        "paper_order": " > ".join(paper_order),
        "here_order": " > ".join(here_order),
        "verdict": said.verdict,
        "reason": said.reason,
        "differences": "; ".join(d for d in differences if "before the printed value's round" not in d),
    }


def _chain(order: list[str], values: dict[str, float]) -> str:
    """Algorithms best first with their values, ">" between different values and "=" between equal ones."""
    text = ""
    for i, a in enumerate(order):
        if i:
            text += " = " if values[a] == values[order[i - 1]] else " > "
        text += f"{a} ({number(values[a])})"
    return text


def _claim_row(run: Run, spec: dict, claim: Claim, test: str) -> dict[str, Any]:
    said = SAYS[claim.kind].format(a=claim.a, b=claim.b)
    row = {"kind": claim.kind, "claim": f"{said} in {claim.metric}" if claim.metric else said, "paper": claim.quote}
    ran = set(run.units["algorithm"])
    missing = [n for n in (claim.a, claim.b) if n and n not in ran]
    if missing:
        return {**row, "here": "–", "verdict": NOT_COMPARABLE, "reason": f"{', '.join(missing)} not run here"}
    if claim.applies is not None and run.data and not claim.applies(run.data):
        return {**row, "here": "–", "verdict": NOT_COMPARABLE, "reason": claim.otherwise}
    judged = _faster(run, claim) if claim.kind == "faster" else _compared(run, claim, test)
    return {**row, **judged, "differences": "; ".join(_differences(run, spec, claim))}


def _compared(run: Run, claim: Claim, test: str) -> dict[str, Any]:
    """A stated comparison of the run's per-seed values: its "here" text and its verdict."""
    column, higher = _column_of(run, claim.metric)
    here = run.values(column)
    a, b = claim.a, claim.b
    unmeasured = [x for x in (a, b) if x and (x not in here or here[x].isna().all())]
    if unmeasured:
        what = claim.metric or "the preset's metric"
        return {"here": "–", "verdict": NOT_COMPARABLE, "reason": f"{what} not recorded for {', '.join(unmeasured)}"}
    means = here.mean()
    if claim.metric == "pair F1" and _one_cluster(run, a):
        reason = (
            f"{a} kept every agent in one cluster on every seed: its pair F1 ({number(means[a])}) is the complete "
            "graph's, which any policy that never clusters scores"
        )
        return {"here": f"{a} {number(means[a])}, 1 cluster", "verdict": verdicts.INCONCLUSIVE, "reason": reason}
    if claim.kind == "best":
        contenders = [x for x in here if not _is_reference(run, x) and here[x].notna().any()]
        verdict = verdicts.best(here, a, contenders, higher, test)
        leader = max(contenders, key=lambda x: means[x] if higher else -means[x]) if contenders else a
        text = f"best: {leader} {number(means[leader])}" + (f"; {a} {number(means[a])}" if leader != a else "")
        return {"here": text, **_said(verdict)}
    if claim.kind == "improvement":
        baselines = [x for x in here if _role(run, x) == "baseline" and not _is_reference(run, x)]
        verdict, gain = verdicts.improvement(here, a, baselines, higher, claim.value, GAIN_TOLERANCE)
        text = f"{gain:+.1f} %" if np.isfinite(gain) else "–"
        return {"paper_value": claim.value, "here": text, "here_mean": gain, **_said(verdict)}
    if claim.kind == "beats":
        verdict = verdicts.beats(here, a, b, higher, test)
    else:  # competitive, matches
        one_sided, word = claim.kind == "competitive", SAYS[claim.kind].format(a=a, b=b)
        verdict = verdicts.close_to(here, a, b, higher, MATCH_MARGIN, one_sided=one_sided, word=word)
    return {"here": f"{a} {number(means.get(a, np.nan))} vs {b} {number(means.get(b, np.nan))}", **_said(verdict)}


def _one_cluster(run: Run, algorithm: str) -> bool:
    clusters = run.values("diag_n_clusters")
    return algorithm in clusters and bool((clusters[algorithm] == 1).all())


def _said(verdict: Verdict) -> dict[str, str]:
    return {"verdict": verdict.verdict, "reason": verdict.reason}


def _faster(run: Run, claim: Claim) -> dict[str, Any]:
    column, _ = _column_of(run, claim.metric or "seconds")
    seconds = run.values(column)
    if seconds.empty:
        return {"here": "–", "verdict": NOT_COMPARABLE, "reason": "this run recorded no per-round timing"}
    machine = f"on {run.machine}" if run.machine else "machine not recorded"
    verdict, ratio = verdicts.faster(seconds, claim.a, claim.b, SPEED_MARGIN, machine)
    paper = f"; paper {claim.a}/{claim.b} = {claim.value:.2f}" if np.isfinite(claim.value) else ""
    return {
        "here": f"{claim.a}/{claim.b} = {ratio:.2f}",
        "here_mean": ratio,
        "paper_value": claim.value,
        "verdict": verdict.verdict,
        "reason": verdict.reason + paper,
    }


def _role(run: Run, algorithm: str) -> str:
    rows = run.units[run.units["algorithm"] == algorithm]
    return str(rows["role"].iloc[0]) if "role" in rows and len(rows) else ""


def _is_reference(run: Run, algorithm: str) -> bool:
    rows = run.units[run.units["algorithm"] == algorithm]
    return bool(rows["reference"].iloc[0]) if "reference" in rows and len(rows) else False


def judge(run: Run, test: str = "t") -> pd.DataFrame:
    """The paper-vs-here rows of one run: per column of the paper's exhibits, its values, their ordering and the
    claims, then the notes."""
    spec = PRESETS[run.preset]
    rows = []
    shown = shown_items(run, spec)
    groups: dict[tuple[str, str], list[PaperValue]] = {}
    for value in (i for i in shown if isinstance(i, PaperValue)):
        groups.setdefault((value.exhibit, value.column), []).append(value)
    for (exhibit, _), values in groups.items():
        rows += [{"exhibit": exhibit, **_value_row(run, spec, v)} for v in values]
        if len({v.algorithm for v in values}) > 1:
            rows.append({"exhibit": _with_also(exhibit, spec), **_ordering_row(run, spec, values)})
    for claim in (i for i in shown if isinstance(i, Claim)):
        rows.append({"exhibit": _with_also(claim.exhibit, spec), **_claim_row(run, spec, claim, test)})
    facts = [{"claim": "known structural fact", "here": fact, "reason": ""} for fact in spec["printed"].facts]
    rows += [{"exhibit": "", "kind": "note", "verdict": "", **note} for note in run.notes + facts]
    table = pd.DataFrame([{"preset": run.preset, "dataset": run.dataset, **row} for row in rows], columns=COLUMNS)
    return table


def _with_also(exhibit: str, spec: dict) -> str:
    """An exhibit and the figures that show its runs (PaperSide.also), which its comparisons judge too."""
    return "; ".join([exhibit, *(figure for figure, of in spec["printed"].also.items() if of == exhibit)])


def paper_vs_here(results: Results, summary: pd.DataFrame, test: str = "t") -> pd.DataFrame:
    """One row per printed value, per ordering and per stated comparison, for every dataset run with a preset."""
    tables = [judge(run, test) for run in build_runs(results, summary)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=COLUMNS)


__all__ = ["INCONCLUSIVE", "METRICS", "Run", "build_runs", "judge", "paper_vs_here", "run_settings"]
