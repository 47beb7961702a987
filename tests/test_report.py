"""`banditbench report`: statistics against hand-computed values, planted differences and ties, every output format
parsed back, plots, the CI check and the errors. Shards are written with the real writer (planted final regrets),
plus one experiment run by the real runner."""

import copy
import csv
import json
import os
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import banditbench, banditbench_here

from banditbench.errors import SettingError, UserError
from banditbench.report import check as gate
from banditbench.report import stats
from banditbench.report.formats import to_markdown, write_files
from banditbench.report.load import latest_experiment, load_experiment, load_results
from banditbench.report.tables import build_report, curves
from banditbench.results.shards import write_shard
from banditbench.runner.settings import RunSettings
from banditbench.runner.unit import Unit, UnitResult

ROUNDS = 50


@pytest.fixture
def report_cli(capsys):
    """`banditbench report ARGS` in this process (the subprocess start-up would dominate these tests)."""
    return lambda *args: banditbench_here("report", *args, capsys=capsys)


SEED_EFFECT = [100.0, 300.0, 200.0, 500.0, 400.0, 250.0]  # large differences between seeds: only pairing sees 5 units


def write_results(
    folder,
    finals: dict[str, list[float]],
    *,
    dataset="toy",
    rounds=ROUNDS,
    extra=None,
    timing_extra=None,
    meta_rounds=None,
    master_seed=0,
    budget=None,
    params=None,
):
    """A results folder whose unit (algorithm, seed i) has final cumulative regret finals[algorithm][i] (and the
    hyper-parameters ``params[algorithm]``, none by default)."""
    params = params or {}
    units = []
    for algorithm, values in finals.items():
        for i, final in enumerate(values):
            unit = Unit(
                dataset, "linear", algorithm, params.get(algorithm, {}), master_seed, i, meta_rounds or rounds, budget
            )
            t = np.arange(rounds)
            columns = {"t": t, "reward": np.full(rounds, 0.5), "regret": np.full(rounds, final / rounds)}
            columns.update((extra or {}).get(algorithm, lambda i, t: {})(i, t))
            timing = {"t": t, "select_seconds": np.full(rounds, 0.001), "update_seconds": np.full(rounds, 0.002)}
            timing.update({name: np.full(rounds, value) for name, value in (timing_extra or {}).items()})
            result = UnitResult(pa.table(columns), pa.table(timing), 0.25 * (1 + i), peak_rss_mb=100.0 * (1 + i))
            write_shard(folder, unit, result, "sha")
            units.append(unit.id)
    config = {
        "dataset": dataset,
        "dataset_manifest_sha256": "sha",
        "protocol": "linear",
        "algorithms": {a: params.get(a, {}) for a in finals},
        "seeds": max(map(len, finals.values())),
        "master_seed": master_seed,
        "rounds": rounds,
        "budget": budget,
    }
    (folder / "manifest.json").write_text(json.dumps({"config": config, "units": units}))
    return folder


def planted(folder, dataset="toy", worse=0.0):
    """ "mine" (a proposed method) has 30 less regret than linucb-ind on every seed (10 % of the mean); "twin" differs
    from linucb-ind by
    zero-mean noise; random is far worse; the oracle has regret 0."""
    base = np.array(SEED_EFFECT[:5])
    return write_results(
        folder,
        {
            "random": list(base * 3),
            "linucb-ind": list(base * (1 + worse)),
            "twin": list(base + [3, -3, 2, -2, 0.5]),
            "mine": list(base - 30 + [0.5, -0.5, 0.3, -0.2, 0.1]),
            "oracle": [0.0] * 5,
        },
        dataset=dataset,
    )


def test_describe_mean_std_and_a_bootstrap_interval_inside_the_values():
    d = stats.describe([1.0, 2.0, 3.0, 4.0])
    assert d["n"] == 4 and d["mean"] == 2.5 and d["std"] == pytest.approx(1.2909944487)
    # the resampled means of 4 values are multiples of 1/4 between 1 and 4: the 2.5 % and 97.5 % quantiles of 1000
    # of them lie near 1.5 and 3.5 (the t-interval, [0.446, 4.554], leaves the values' range)
    assert 1.25 <= d["ci_low"] <= 1.75 and 3.25 <= d["ci_high"] <= 3.75
    half = 3.182446305284263 * 1.2909944487 / 2  # Student t, 3 degrees of freedom, 97.5 % quantile (tables: 3.182)
    assert stats.mean_interval([1.0, 2.0, 3.0, 4.0], 0.95) == pytest.approx((2.5 - half, 2.5 + half))
    single = stats.describe([7.0])
    assert single["mean"] == 7.0 and np.isnan(single["std"]) and np.isnan(single["ci_low"])


def test_holm_by_hand():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → monotone 0.06
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = stats.holm([0.02, np.nan, 0.04, 0.9])  # NaN is no test: m = 3
    assert adjusted[[0, 2, 3]] == pytest.approx([0.06, 0.08, 0.9]) and np.isnan(adjusted[1])
    assert stats.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_pairwise_winners_need_holms_adjusted_p_below_the_level():
    """a beats b at a raw p of 0.026 over 10 seeds; with c, far noisier, in the table the dataset has three pairs,
    Holm multiplies that smallest p by 3 (0.078), and a tie it becomes."""
    noise = np.array([3.0, -2.0, 1.0, -4.0, 2.0, 0.5, -1.5, 4.0, -3.0, 0.0])
    base = np.arange(10) * 100.0
    values = {
        "a": base - noise - 2.2,
        "b": base,
        "c": base + 50 * np.array([1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5, 3, -3]),
    }
    units = pd.DataFrame(
        [{"dataset": "d", "seed": s, "algorithm": a, "regret": v[s]} for a, v in values.items() for s in range(10)]
    )
    two = stats.pairwise(units[units["algorithm"] != "c"], "regret", False, ["a", "b"])
    assert two["t_p"].tolist() == pytest.approx([0.025987], abs=1e-6) and two["winner"].tolist() == ["a"]
    three = stats.pairwise(units, "regret", False, ["a", "b", "c"]).set_index(["a", "b"])
    assert three.loc[("a", "b"), "t_p_holm"] == pytest.approx(3 * 0.025987, abs=1e-5)
    assert three["winner"].tolist() == ["", "", ""]


def test_paired_pvalues_edge_cases_and_exact_wilcoxon():
    t_p, w_p, note = stats.paired_pvalues([1, 2, 3], [1, 2, 3])  # no difference at all: no test, not p = 1
    assert np.isnan(t_p) and np.isnan(w_p) and note == "identical on every seed"
    t_p, w_p, note = stats.paired_pvalues([2, 3, 4, 5, 6], [1, 2, 3, 4, 5])
    # zero variance: the t statistic is undefined, so the t column is the exact sign test, 2·(1/2)^5, as Wilcoxon's
    assert t_p == pytest.approx(2 / 32) and w_p == pytest.approx(2 / 32) and note.startswith("degenerate")
    t_p, _, note = stats.paired_pvalues([1, 2, 3, 4, 5], [0, 0, 0, 0, 0])  # t = 3/(1.5811/√5) = 4.243, 4 df
    assert t_p == pytest.approx(0.01324, abs=1e-4) and note == ""
    t_p, w_p, note = stats.paired_pvalues([1.0, 3.0], [2.0, 5.0])
    assert np.isnan(t_p) and np.isnan(w_p) and note == "n = 2: no test"


def test_improvement_as_the_papers_state_it():
    assert stats.improvement_pct(80.0, 100.0, higher_is_better=False) == pytest.approx(20.0)
    assert stats.improvement_pct(1100.0, 1000.0, higher_is_better=True) == pytest.approx(10.0)
    assert np.isnan(stats.improvement_pct(5.0, 0.0, higher_is_better=False))


def test_planted_better_algorithm_is_detected_and_planted_tie_is_not(tmp_path):
    report = build_report(load_results([planted(tmp_path / "r")]))
    rows = report.summary.set_index("algorithm")
    assert rows.loc["mine", "best"] and rows["best"].sum() == 1
    assert not rows.loc["linucb-ind", "tied_with_best"] and not rows.loc["twin", "tied_with_best"]
    assert rows.loc["oracle", "reference"] and not rows.loc["oracle", "best"]  # regret 0, but a reference line
    pair = report.comparisons.set_index(["a", "b"])
    assert pair.loc[("linucb-ind", "twin"), "winner"] == ""  # the planted tie
    assert pair.loc[("linucb-ind", "mine"), "winner"] == "mine"
    assert pair.loc[("random", "linucb-ind"), "winner"] == "linucb-ind"
    assert len(report.comparisons) == 6  # 4 non-reference algorithms, all pairs
    # mine is proposed (not in the registry); best baseline = linucb-ind (oracle excluded): 10 % less regret
    assert rows.loc["mine", "role"] == "proposed" and rows.loc["linucb-ind", "role"] == "baseline"
    expected = 100 * (np.sum(SEED_EFFECT[:5]) - rows.loc["mine", "regret_mean"] * 5) / np.sum(SEED_EFFECT[:5])
    assert rows.loc["mine", "improvement_pct"] == pytest.approx(expected) and expected == pytest.approx(10, abs=0.1)
    assert rows.loc["mine", "regret_std"] == pytest.approx(
        np.std(np.array(SEED_EFFECT[:5]) + [0.5, -0.5, 0.3, -0.2, 0.1], ddof=1)
    )


def test_a_tie_with_the_best_is_marked(tmp_path):
    base = np.array(SEED_EFFECT[:5])
    folder = write_results(
        tmp_path / "r", {"a": list(base), "b": list(base + [1, -1, 2, -2, 0.5]), "c": list(base * 2)}
    )
    rows = build_report(load_results([folder])).summary.set_index("algorithm")
    assert rows.loc["a", "best"] and rows.loc["b", "tied_with_best"] and not rows.loc["c", "tied_with_best"]
    assert rows.loc["b", "p_vs_best"] > 0.05
    pair = build_report(load_results([folder])).comparisons.set_index(["a", "b"]).loc[("a", "c")]
    assert (
        rows.loc["c", "p_vs_best"] == pair["t_p_holm"] == pytest.approx(3 * pair["t_p"])
    )  # Holm: the least of 3 p-values × 3
    assert "| b | 5 | 300.10 ± 156.93 †" in to_markdown(build_report(load_results([folder])))


def test_a_grid_cell_takes_its_algorithms_role_and_one_seed_shows_no_spread(tmp_path):
    folder = write_results(tmp_path / "r", {"linucb-ind[alpha=0.1]": [12.0], "mine": [10.0]})
    report = build_report(load_results([folder]))
    rows = report.summary.set_index("algorithm")
    assert rows.loc["linucb-ind[alpha=0.1]", "role"] == "baseline" and rows.loc["mine", "role"] == "proposed"
    assert rows.loc["mine", "improvement_pct"] == pytest.approx(100 * 2 / 12)
    assert "| mine | 1 | **10.00** | – |" in to_markdown(report)  # no "± nan"


def test_a_two_seed_table_and_a_zero_variance_pair_warn_instead_of_printing_p_values(tmp_path):
    # the SCLUB / CLUB seeds: 380, 382 against 362, 364, a difference of exactly 18 on both
    two = build_report(load_results([write_results(tmp_path / "two", {"sclub": [380, 382], "club": [362, 364]})]))
    text = to_markdown(two)
    assert "rests on 2 seeds of 50 rounds. **Warning: fewer than 5 seeds**" in text
    assert "| toy | sclub | club | 2 | 18.00 | – | – | tie | n = 2: no test |" in text
    assert "With 2 seeds the exact Wilcoxon test cannot go below p = 0.5." in text
    assert "| club | 2 | **363.00 ± 1.41** |" in text and "| sclub | 2 | 381.00 ± 1.41 † |" in text  # no test: tied
    base = np.array(SEED_EFFECT[:6])
    six = build_report(load_results([write_results(tmp_path / "six", {"a": list(base + 18), "b": list(base)})]))
    pair = six.comparisons.iloc[0]
    assert pair["note"].startswith("degenerate: every seed differs by the same amount") and pair["t_p"] == 2 / 64
    text = to_markdown(six)
    assert "rests on 6 seeds of 50 rounds. Mean" in text and "Warning" not in text
    assert "With 6 seeds the exact Wilcoxon test cannot go below p = 0.03125." in text  # 2·(1/2)^6


def test_a_table_whose_algorithms_ran_different_seeds_warns_and_floors_by_the_fewest(tmp_path):
    """Two algorithms on 10 seeds and one on 3: the table rests on 3 to 10 seeds, warns, and the Wilcoxon floor
    is that of the pairs on 3 common seeds (0.25), not of those on 10 (0.00195, no note)."""
    base = np.array(SEED_EFFECT + [150.0, 350.0, 450.0, 50.0])
    ten = write_results(tmp_path / "ten", {"a": list(base), "b": list(base * 1.5)})
    three = write_results(tmp_path / "three", {"c": list(base[:3] * 2)})
    text = to_markdown(build_report(load_results([ten, three])))
    assert "rests on 3 to 10 seeds per algorithm of 50 rounds. **Warning: fewer than 5 seeds**" in text
    assert "With 3 seeds the exact Wilcoxon test cannot go below p = 0.25." in text


def test_win_tie_loss_and_average_rank_across_datasets(tmp_path):
    base = np.array(SEED_EFFECT[:5])
    one = write_results(tmp_path / "one", {"x": list(base), "y": list(base * 1.2), "z": list(base * 3)}, dataset="one")
    two = write_results(
        tmp_path / "two", {"x": list(base + [1, -1, 2, -2, 0.5]), "y": list(base), "z": list(base * 3)}, dataset="two"
    )
    report = build_report(load_results([one, two]))
    assert report.results.datasets == ["one", "two"]
    wtl = report.win_tie_loss
    assert wtl.loc["x", "y"] == "1/1/0" and wtl.loc["y", "x"] == "0/1/1" and wtl.loc["z", "x"] == "0/0/2"
    ranks = report.ranks.set_index("algorithm")
    # one: x 1, y 2, z 3; two: y 1 (mean 300 < 300.1), x 2, z 3
    assert ranks.loc["x", "average_rank"] == 1.5 and ranks.loc["y", "average_rank"] == 1.5
    assert ranks.loc["z", "average_rank"] == 3.0 and ranks.loc["z", "datasets"] == 2
    plots = write_files(report, tmp_path / "out", ["png"])
    shown = ["regret.png", "runtime.png", "ranks.png", "winloss.png", "profile.png"]
    assert [p.name for p in plots] == shown  # no diag_*: no clusters plot
    assert all(p.stat().st_size > 1000 for p in plots)


def test_friedman_and_nemenyi_critical_difference_by_hand():
    # 4 datasets, 3 algorithms, always ranked a < b < c: χ² = 12N/(k(k+1))·Σ R_j² − 3N(k+1) = 4·14 − 48 = 8, df 2
    means = pd.DataFrame(
        [(d, a, m) for d in "wxyz" for a, m in zip("abc", (1.0, 2.0, 3.0))], columns=["dataset", "algorithm", "mean"]
    )
    result = stats.friedman_nemenyi(means, dict.fromkeys("wxyz", False))
    assert result["friedman_p"] == pytest.approx(np.exp(-8 / 2))  # χ²(2) survival function = e^(−x/2)
    assert result["critical_difference"] == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 4)), abs=1e-3)  # q = 2.343
    assert stats.friedman_nemenyi(means[means.algorithm != "c"], dict.fromkeys("wxyz", False)) is None


def test_ctr_runs_are_detected_and_ranked_by_highest_ctr(tmp_path):
    rounds = 40

    def slates(clicks):
        return lambda i, t: {"slate_size": np.full(rounds, 5), "clicks": np.full(rounds, clicks)}

    folder = write_results(
        tmp_path / "r",
        {"random": [0.0] * 3, "linucb-ind": [0.0] * 3, "mine": [0.0] * 3},
        rounds=rounds,
        extra={"random": slates(1), "linucb-ind": slates(2), "mine": slates(4)},
    )
    report = build_report(load_results([folder]))
    assert report.results.kinds == {"toy": "ctr"}
    rows = report.summary.set_index("algorithm")
    assert rows.loc["mine", "ctr_mean"] == pytest.approx(40 * 4 / 5)  # Σ_t clicks/m = 32
    assert rows.loc["mine", "ctr_regret_mean"] == pytest.approx(0.9 * 40 - 32)
    # the best baseline is the one of highest CTR: linucb-ind's 16, not random's 8
    assert rows.loc["mine", "best"] and rows.loc["mine", "improvement_pct"] == pytest.approx(100.0)
    assert "regret vs 0.9/round" in to_markdown(report)
    # every seed clicks alike, so each round's CTR interval is the point itself
    last = curves(report.results).set_index(["algorithm", "t"]).loc[("mine", rounds - 1)]
    assert last["cumulative_ctr_ci_low"] == last["cumulative_ctr_mean"] == last["cumulative_ctr_ci_high"] == 32


def test_cost_columns_include_extra_timing_columns(tmp_path):
    folder = write_results(tmp_path / "r", {"mine": [1.0, 2.0]}, timing_extra={"clustering_seconds": 0.01})
    report = build_report(load_results([folder]))
    row = report.summary.iloc[0]
    assert row["clustering_seconds"] == pytest.approx(0.01 * ROUNDS)
    assert row["wall_seconds"] == pytest.approx((0.25 + 0.5) / 2)
    assert row["rounds_per_second"] == pytest.approx(2 * ROUNDS / 0.75)
    assert row["peak_rss_mb"] == 200.0  # the largest of the units' peaks (100 and 200 MB), not their mean
    assert "clustering s/unit" in to_markdown(report)


class TableParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.cell, self.svgs = [], None, 0

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = ""
        elif tag == "svg":
            self.svgs += 1

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def markdown_tables(text):
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if current is None:
                current = [cells]
                tables.append(current)
            elif not set("".join(cells)) <= set("-:"):
                current.append(cells)
        else:
            current = None
    return tables


def test_every_format_parses_back_to_the_same_numbers(tmp_path):
    folder = planted(tmp_path / "r")
    report = build_report(load_results([folder]))
    written = write_files(report, tmp_path / "out", ["md", "csv", "latex", "html"])
    assert {p.name for p in written} == {
        "report.md",
        "report.csv",
        "comparisons.csv",
        "win_tie_loss.csv",
        "ranks.csv",
        "curves.csv",
        "report.tex",
        "report.html",
    }
    summary = pd.read_csv(tmp_path / "out" / "report.csv").set_index("algorithm")
    assert summary.loc["mine", "regret_mean"] == pytest.approx(
        report.summary.set_index("algorithm").loc["mine", "regret_mean"]
    )
    mine = "{:.2f} ± {:.2f}".format(summary.loc["mine", "regret_mean"], summary.loc["mine", "regret_std"])

    md = markdown_tables((tmp_path / "out" / "report.md").read_text())
    main = {row[0]: row for row in md[0][1:]}
    assert main["mine"][2] == f"**{mine}**" and main["mine"][1] == "5" and main["mine"][6] == "+10.0 %"
    assert len(md[0]) == 6  # header + 5 algorithms

    tex = (tmp_path / "out" / "report.tex").read_text()
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0]
    rows = {r.split(" & ")[0].strip(): r.split(" & ") for r in body.strip().split(r"\\") if r.strip()}
    assert rows["mine"][2] == r"\textbf{" + mine.replace("±", r"$\pm$") + "}"
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") >= 4

    parser = TableParser()
    parser.feed((tmp_path / "out" / "report.html").read_text())
    html_main = {row[0]: row for row in parser.tables[0][1:]}
    assert html_main["mine"][2] == mine and html_main["mine"][5] == "best"
    assert [r[0] for r in parser.tables[0][1:]] == ["random", "linucb-ind", "twin", "mine", "oracle"]
    assert parser.svgs >= 2  # the figures are inline: one self-contained file
    assert "src=" not in (tmp_path / "out" / "report.html").read_text()

    comparisons = list(csv.DictReader((tmp_path / "out" / "comparisons.csv").open()))
    assert {(r["a"], r["b"]): r["winner"] for r in comparisons}[("linucb-ind", "twin")] == ""
    curves = pd.read_csv(tmp_path / "out" / "curves.csv")
    last = curves[(curves.algorithm == "mine") & (curves.t == ROUNDS - 1)].iloc[0]
    assert last["cumulative_regret_mean"] == pytest.approx(summary.loc["mine", "regret_mean"])
    assert last["cumulative_regret_ci_low"] == pytest.approx(summary.loc["mine", "regret_ci_low"])


def test_outputs_and_plots_are_byte_identical_and_non_empty(tmp_path):
    folder = write_results(
        tmp_path / "r",
        {"random": [30.0, 32.0, 31.0], "mine": [10.0, 12.0, 11.0]},
        extra={"mine": lambda i, t: {"diag_n_clusters": np.where(t % 10 == 9, 1.0 + t // 10, np.nan)}},
    )
    formats = ["md", "csv", "latex", "html", "png", "svg"]
    first = write_files(build_report(load_results([folder])), tmp_path / "a", formats)
    second = write_files(build_report(load_results([folder])), tmp_path / "b", formats)
    plots = sorted(p.name for p in first if p.parent.name == "plots")
    assert plots == ["clusters.png", "clusters.svg", "regret.png", "regret.svg", "runtime.png", "runtime.svg"]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
        assert a.stat().st_size > (500 if a.parent.name == "plots" else 50), a.name
    assert (tmp_path / "a" / "plots" / "regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "a" / "plots" / "clusters.svg").read_text()
    assert "<svg" in svg and "<dc:date>" not in svg


def test_check_exits_1_on_a_planted_regression_and_0_otherwise(tmp_path, report_cli):
    before, same = planted(tmp_path / "before"), planted(tmp_path / "same")
    slightly, worse = planted(tmp_path / "slightly", worse=0.03), planted(tmp_path / "worse", worse=0.10)
    baseline = tmp_path / "baseline.json"
    saved = report_cli(before, "--format", "none", "--quiet", "--save-baseline", baseline)
    assert saved.returncode == 0 and saved.stdout == "", saved.stderr
    assert json.loads(baseline.read_text())["datasets"]["toy"]["mine"]["metric"] == "final_regret"
    assert report_cli(same, "--format", "none", "--check", baseline).returncode == 0
    within = report_cli(slightly, "--format", "none", "--check", baseline, "--tolerance", "5%")
    assert within.returncode == 0 and "check passed" in within.stdout
    failed = report_cli(worse, "--format", "none", "--quiet", "--check", baseline, "--tolerance", "5%")
    assert failed.returncode == 1
    assert failed.stdout.strip().splitlines() == [
        "REGRESSION linucb-ind on toy: worse: final regret 300 → 330 (+10.0 %, tolerance 5 %)"
    ]
    missing = report_cli(same, "--format", "md", "--check", tmp_path / "nope.json")
    assert missing.returncode == 2 and "does not exist" in missing.stderr and not (same / "report.md").exists()
    strict = report_cli(slightly, "--format", "none", "-q", "--check", baseline, "--tolerance", "0.01")
    assert strict.returncode == 1 and "linucb-ind" in strict.stdout


def test_report_of_several_folders_from_the_command_line(tmp_path):
    one = planted(tmp_path / "results" / "one", dataset="one")
    two = planted(tmp_path / "results" / "two", dataset="two")
    shown = banditbench("report", one, two, "--format", "md")
    assert shown.returncode == 0, shown.stderr
    assert "Win / tie / loss" in shown.stdout and "\x1b[" not in shown.stdout  # no colour outside a terminal
    text = (tmp_path / "results" / "report.md").read_text()  # the folders' common parent
    assert "## one: final cumulative regret" in text and "## two: final cumulative regret" in text
    assert "Nemenyi critical difference CD = 3.32" in text  # k = 4, N = 2: q = 2.569, 2.569·√(4·5/(6·2))


def test_missing_and_empty_results_folders_are_clear_errors(tmp_path, report_cli):
    missing = report_cli(tmp_path / "nope")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = report_cli(tmp_path / "empty")
    assert empty.returncode == 2 and "is not a results folder" in empty.stderr


def test_a_broken_shard_is_a_problem_and_not_also_a_unit_still_missing(tmp_path):
    folder = write_results(tmp_path / "r", {"a": [1.0, 2.0, 3.0]})
    (folder / "shards" / "a-seed1.parquet").write_bytes(b"not parquet")
    for suffix in ("parquet", "timing.parquet", "sha256.json"):
        (folder / "shards" / f"a-seed2.{suffix}").unlink()
    experiment = load_experiment(folder)
    assert [p.split(":")[0] for p in experiment.problems] == ["a-seed1.parquet"]
    assert experiment.missing == ["a-seed2"]


def test_an_experiment_folder_holding_another_experiment_is_reported_as_itself(tmp_path):
    outer = write_results(tmp_path / "outer", {"x": [1.0, 2.0]})
    write_results(outer / "inner", {"y": [1.0, 2.0]})  # a run written inside another's folder
    assert load_results([outer]).algorithms == ["x"]
    assert load_results([tmp_path]).algorithms == ["x"]  # a folder of experiments: the ones one level below


def test_without_folders_the_report_reads_the_newest_experiment(tmp_path):
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text("{}")
    for newest, older in (("second", "first"), ("first", "second")):
        os.utime(tmp_path / older / "manifest.json", (1_000_000, 1_000_000))
        os.utime(tmp_path / newest / "manifest.json", (2_000_000, 2_000_000))
        assert latest_experiment(tmp_path) == tmp_path / newest


def test_a_dataset_reported_from_a_ctr_folder_and_a_regret_folder_is_a_regret_dataset_in_either_order(tmp_path):
    clicks = {"y": lambda i, t: {"slate_size": np.full(ROUNDS, 5), "clicks": np.full(ROUNDS, 2)}}
    regret = write_results(tmp_path / "regret", {"x": [1.0, 2.0]})
    ctr = write_results(tmp_path / "ctr", {"y": [1.0, 2.0]}, extra=clicks)
    assert load_results([ctr]).kinds == {"toy": "ctr"}
    assert load_results([ctr, regret]).kinds == load_results([regret, ctr]).kinds == {"toy": "regret"}


def test_incompatible_shards_are_refused_unless_allow_mixed(tmp_path, report_cli):
    folder = planted(tmp_path / "r")
    write_results(tmp_path / "other", {"twin": [1.0]}, meta_rounds=99)  # a shard of another config, with its record
    for name in ("twin-seed0.parquet", "twin-seed0.timing.parquet", "twin-seed0.sha256.json"):
        (tmp_path / "other" / "shards" / name).replace(folder / "shards" / name)
    refused = report_cli(folder, "--format", "none")
    assert refused.returncode == 2 and "twin-seed0.parquet does not belong" in refused.stderr
    assert "rounds = 99" in refused.stderr and "--allow-mixed" in refused.stderr
    assert report_cli(folder, "--format", "none", "--allow-mixed").returncode == 0


@pytest.mark.parametrize("setting, value", [("rounds", 60), ("master_seed", 1), ("budget", 5)])
def test_folders_of_one_dataset_with_other_settings_are_refused(tmp_path, setting, value):
    a = write_results(tmp_path / "a", {"x": [1.0, 2.0]})
    b = write_results(tmp_path / "b", {"y": [1.0, 2.0]}, **{setting: value})
    with pytest.raises(Exception, match=f"differ in {setting}; pass --allow-mixed"):
        load_results([a, b])
    merged = load_results([a, b], allow_mixed=True)
    assert merged.datasets == ["toy"] and merged.warnings
    c = write_results(tmp_path / "c", {"y": [3.0, 4.0]})  # same settings: the two folders merge into one table
    assert build_report(load_results([a, c])).summary["algorithm"].tolist() == ["x", "y"]


def test_folders_of_one_dataset_that_run_an_algorithm_with_other_hyper_parameters_are_refused(tmp_path):
    a = write_results(tmp_path / "a", {"x": [1.0, 2.0]}, params={"x": {"alpha": 1.0}})
    b = write_results(tmp_path / "b", {"x": [1.0, 2.0]}, params={"x": {"alpha": 2.0}})
    with pytest.raises(UserError, match="differ in x hyper-parameters; pass --allow-mixed"):
        load_results([a, b])


def test_a_ctr_above_the_optimum_ends_with_the_last_rounds_negative_ctr_regret(tmp_path):
    """Every slate of one item clicked: a CTR of 1 > 0.9 a round, so the CTR regret 0.9·t − t falls to −0.1·T."""
    clicked = {"x": lambda i, t: {"slate_size": np.ones(ROUNDS), "clicks": np.ones(ROUNDS)}}
    results = load_results([write_results(tmp_path / "r", {"x": [0.0]}, extra=clicked)])
    assert results.units["ctr_regret"].iloc[0] == pytest.approx(-0.1 * ROUNDS)


def test_a_corrupt_shard_is_named_nothing_is_written_and_exit_is_non_zero(tmp_path, report_cli):
    folder = planted(tmp_path / "r")
    (folder / "shards" / "twin-seed3.parquet").write_bytes(b"not parquet at all")
    (folder / "shards" / "mine-seed1.timing.parquet").write_bytes(b"")
    shown = report_cli(folder, "--format", "md")
    assert shown.returncode == 2
    assert "twin-seed3.parquet: its bytes do not match its checksum record" in shown.stderr
    assert "mine-seed1.parquet: the bytes of its timing sidecar mine-seed1.timing.parquet do not match" in shown.stderr
    assert "Traceback" not in shown.stderr
    assert not (folder / "report.md").exists()  # shards are verified before any file is written


def test_real_runner_results_give_every_format(data_dir, tmp_path, report_cli):
    from banditbench.runner.experiment import execute, plan, prepare_output

    experiment = plan(
        RunSettings.with_defaults(
            dataset="synthetic",
            algos=["random", "linucb-one", "linucb-ind"],
            rounds=200,
            seeds=3,
            seed=0,
            budget=None,
            params=[],
        ),
        data_dir=data_dir,
    )
    out = tmp_path / "results"
    execute(experiment, prepare_output(out, experiment, overwrite=False, resume=False), out)
    shown = report_cli(out, "--format", "md,csv,latex,html,png,svg", "--test", "wilcoxon")
    assert shown.returncode == 0, shown.stderr
    rows = pd.read_csv(out / "report.csv").set_index("algorithm")
    assert rows.loc[rows["regret_mean"].idxmin(), "best"] and rows["best"].sum() == 1
    assert rows["regret_mean"].idxmax() == "random"
    assert rows.loc["linucb-ind", "diag_n_clusters"] == 20  # one model per user: 20 singleton clusters
    assert (out / "plots" / "clusters.png").stat().st_size > 1000
    assert "Wilcoxon signed-rank test" in (out / "report.md").read_text()


def test_check_fails_on_other_rounds_or_a_missing_algorithm_even_with_every_value_unchanged(tmp_path):
    report = build_report(load_results([write_results(tmp_path / "r", {"a": [10.0, 12.0], "b": [20.0, 22.0]})]))
    saved = gate.baseline_entries(report)
    assert gate.check(report, saved, 0.05).failures == []
    other_rounds = copy.deepcopy(saved)
    other_rounds["toy"]["a"]["rounds"] += 1
    failures = gate.check(report, other_rounds, 0.05).failures
    assert len(failures) == 1 and "a on toy" in failures[0] and "rounds" in failures[0]
    ghost = copy.deepcopy(saved)
    ghost["toy"]["ghost"] = dict(saved["toy"]["a"])
    assert gate.check(report, ghost, 0.05).failures == ["ghost on toy: in the baseline but not in these results"]


def test_a_baseline_records_each_datasets_own_rounds_and_each_algorithms_seeds(tmp_path):
    short = write_results(tmp_path / "short", {"a": [10.0, 12.0, 11.0]}, dataset="small", rounds=20)
    long = write_results(tmp_path / "long", {"a": [10.0, 12.0], "b": [5.0, 6.0]}, dataset="large")
    entries = gate.baseline_entries(build_report(load_results([short, long])))
    assert {(d, a): (e["rounds"], e["seeds"]) for d, algorithms in entries.items() for a, e in algorithms.items()} == {
        ("small", "a"): (20, 3),
        ("large", "a"): (ROUNDS, 2),
        ("large", "b"): (ROUNDS, 2),
    }


@pytest.mark.parametrize("text", ["-1%", "nan", "inf", "inf%"])
def test_a_tolerance_of_zero_is_the_strictest_gate_and_a_negative_or_infinite_one_is_refused(text):
    """An infinite tolerance would pass every regression, so it is refused as a negative one is."""
    assert gate.parse_tolerance("0") == gate.parse_tolerance("0%") == 0.0
    with pytest.raises(SettingError):
        gate.parse_tolerance(text)


def test_check_notes_improvements_and_new_algorithms_without_failing(tmp_path):
    before = build_report(load_results([write_results(tmp_path / "before", {"a": [10.0, 12.0]})]))
    after = build_report(load_results([write_results(tmp_path / "after", {"a": [8.0, 10.0], "b": [20.0, 22.0]})]))
    outcome = gate.check(after, gate.baseline_entries(before), 0.05)
    assert outcome.failures == []
    assert outcome.notes == [
        "a on toy: final regret 11 → 9 (-18.2 %, tolerance 5 %)",
        "b on toy: new, not in the baseline",
    ]


def test_a_json_file_without_the_baseline_version_key_is_not_read_as_a_baseline(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"datasets": {"toy": {"a": {"metric": "final_regret", "value": 1.0, "rounds": 9}}}}))
    with pytest.raises(UserError, match="not a banditbench baseline"):
        gate.load_baseline(path)


def test_check_on_ctr_fails_when_ctr_falls(tmp_path, report_cli):
    def slates(clicks):
        return {"mine": lambda i, t: {"slate_size": np.full(ROUNDS, 5), "clicks": np.full(ROUNDS, clicks)}}

    before = write_results(tmp_path / "before", {"mine": [0.0, 0.0]}, extra=slates(4))
    higher = write_results(tmp_path / "higher", {"mine": [0.0, 0.0]}, extra=slates(5))
    lower = write_results(tmp_path / "lower", {"mine": [0.0, 0.0]}, extra=slates(3))
    baseline = tmp_path / "baseline.json"
    assert report_cli(before, "--format", "none", "-q", "--save-baseline", baseline).returncode == 0
    assert report_cli(higher, "--format", "none", "-q", "--check", baseline).returncode == 0
    assert report_cli(lower, "--format", "none", "-q", "--check", baseline, "--tolerance", "30%").returncode == 0
    failed = report_cli(lower, "--format", "none", "-q", "--check", baseline)
    assert failed.returncode == 1
    assert failed.stdout.strip() == "REGRESSION mine on toy: lower: cumulative ctr 40 → 30 (-25.0 %, tolerance 5 %)"


def test_regret_relative_to_random_in_the_table_and_per_round(tmp_path):
    """Ghosh et al.'s Last.FM measure (Fig. 1(e)): cumulative regret ÷ that of random recommendation."""
    results = load_results([planted(tmp_path / "r")])  # random has 3× linucb-ind's regret on every seed
    rows = build_report(results).summary.set_index("algorithm")
    assert rows.loc["linucb-ind", "regret_vs_random"] == pytest.approx(1 / 3)
    assert rows.loc["random", "regret_vs_random"] == 1.0 and rows.loc["oracle", "regret_vs_random"] == 0.0
    per_round = curves(results).set_index(["algorithm", "t"])["cumulative_regret_vs_random"]
    np.testing.assert_allclose(per_round.loc["linucb-ind"].to_numpy(), 1 / 3)
    assert "| ÷ random |" in to_markdown(build_report(results))
    without = load_results([write_results(tmp_path / "n", {"linucb-ind": [1.0, 2.0], "mine": [0.5, 1.0]})])
    assert "regret_vs_random" not in build_report(without).summary
    assert "cumulative_regret_vs_random" not in curves(without)
