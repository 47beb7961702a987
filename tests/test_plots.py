"""The regret figure's options: the algorithms drawn, their bands, a log round axis, styles and vector files."""

from __future__ import annotations

import matplotlib.colors
import numpy as np
import pytest
from test_report import write_results

from banditbench.errors import UserError
from banditbench.report.formats import write_files
from banditbench.report.load import load_results
from banditbench.report.plot_options import PlotOptions
from banditbench.report.plots import regret_figure, regret_panels
from banditbench.report.tables import build_report


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plots") / "r"
    finals = {"random": [30.0, 34.0, 31.0], "club": [10.0, 12.0, 11.0], "bass": [10.0, 12.0, 11.0]}
    return build_report(load_results([write_results(folder, finals, rounds=40)]))


def test_titles_and_axes_name_the_quantity_and_the_band(report):
    fig = regret_figure(report)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "round t" and ax.get_ylabel() == "cumulative regret" and ax.get_title() == "toy"
    assert fig._suptitle.get_text() == "Cumulative regret (mean of 3 seeds, 95 % bootstrap band)"
    assert "or CTR" not in fig._suptitle.get_text()


def test_identical_curves_stay_apart_by_line_style_and_marker(report):
    lines = {line.get_label(): line for line in regret_figure(report).axes[0].get_lines()}
    club, bass = lines["club"], lines["bass"]
    assert np.array_equal(club.get_ydata(), bass.get_ydata())  # the same regret: only the looks tell them apart
    assert club.get_linestyle() != bass.get_linestyle() and club.get_marker() != bass.get_marker()
    assert matplotlib.colors.to_hex(club.get_color()) != matplotlib.colors.to_hex(bass.get_color())
    assert 0 < len(club.get_xydata()[club.get_markevery()[0] :: club.get_markevery()[1]]) <= 2 * 8


def test_regret_bands_never_go_below_zero(report):
    for band in ("ci", "iqr"):
        ax = regret_figure(report, PlotOptions(band=band)).axes[0]
        lows = [path.vertices[:, 1].min() for collection in ax.collections for path in collection.get_paths()]
        assert len(lows) == 3 and min(lows) >= 0
    assert list(regret_figure(report, PlotOptions(band="none")).axes[0].collections) == []


def test_a_subset_log_rounds_and_the_slides_style(report):
    paper = regret_figure(report, PlotOptions(algorithms=("CLUB", "random"), log_x=True))
    ax = paper.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["random", "club"]  # the report's order
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "round t (log scale)"
    slides = regret_figure(report, PlotOptions(style="slides"))
    assert slides.get_figwidth() > paper.get_figwidth()
    assert slides.axes[0].xaxis.label.get_fontsize() > ax.xaxis.label.get_fontsize()


@pytest.mark.parametrize(
    "options, message",
    [
        (PlotOptions(algorithms=("clubb",)), "unknown algorithm in these results 'clubb'; did you mean club"),
        (PlotOptions(band="iq"), "unknown band 'iq'; did you mean iqr"),
        (PlotOptions(style="slide"), "unknown style 'slide'; did you mean slides"),
        (PlotOptions(panels="families"), "unknown panels 'families'; did you mean family"),
    ],
)
def test_bad_options_are_one_line(report, options, message):
    with pytest.raises(UserError, match=message):
        options.checked(report.results.algorithms)


def test_panels_by_family_give_each_family_its_panel_on_one_regret_scale(tmp_path):
    finals = {
        "random": [30.0, 31.0],
        "linucb-ind": [20.0, 22.0],
        "club": [10.0, 12.0],
        "mine": [25.0, 26.0],  # a plug-in this process does not know
    }
    report = build_report(load_results([write_results(tmp_path / "r", finals, rounds=20)]))
    fig = regret_figure(report, PlotOptions(panels="family"))
    drawn = {ax.get_title(): [line.get_label() for line in ax.get_lines()] for ax in fig.axes if ax.get_visible()}
    assert drawn == {
        "clustering of bandits": ["club"],
        "linear bandits": ["linucb-ind"],
        "baselines": ["random"],
        "other algorithms": ["mine"],
    }
    assert len({ax.get_ylim() for ax in fig.axes if ax.get_visible()}) == 1
    assert all(ax.get_ylabel() == "cumulative regret" and ax.get_xlabel() == "round t" for ax in fig.axes[:4])
    assert regret_figure(report).axes[0].get_title() == "toy"  # by dataset, the default


def test_each_dataset_gets_a_row_of_its_families():
    drawn = ["neuucb-one", "club", "eps-greedy[epsilon=0.05]", "sclub"]
    assert regret_panels(["a", "b"], drawn, "family") == [
        ("a", "a: clustering of bandits", ["club", "sclub"]),
        ("a", "a: neural bandits", ["neuucb-one"]),
        ("a", "a: other algorithms", ["eps-greedy[epsilon=0.05]"]),
        ("b", "b: clustering of bandits", ["club", "sclub"]),
        ("b", "b: neural bandits", ["neuucb-one"]),
        ("b", "b: other algorithms", ["eps-greedy[epsilon=0.05]"]),
    ]
    assert regret_panels(["a", "b"], drawn, "dataset") == [("a", "a", drawn), ("b", "b", drawn)]


@pytest.mark.usefixtures("restored_registry")
def test_every_built_in_algorithm_declares_a_family_and_a_plugin_may():
    from banditbench.algos import ALGORITHMS, plugins
    from banditbench.algos.base import FAMILIES, Policy, register

    assert {spec.family for spec in ALGORITHMS.values()} == set(FAMILIES) - {"other"}
    with pytest.raises(ValueError, match="family must be one of"):
        register("new-one", ".linucb:LinUCB", paper="x", description="y", family="bayesian")
    assert "new-one" not in ALGORITHMS

    def plugin(name: str, **declared) -> type:
        return type(
            "Mine",
            (Policy,),
            {"name": name, "select": lambda s, v, b: 0, "update": lambda s, v, c, r: None, **declared},
        )

    assert ALGORITHMS[plugins.resolve(plugin("mine-linear", family="linear"))].family == "linear"
    assert ALGORITHMS[plugins.resolve(plugin("mine-plain"))].family == "other"
    with pytest.raises(UserError, match="mine-odd: family must be one of clustering, linear"):
        plugins.resolve(plugin("mine-odd", family="odd"))


def test_pdf_is_written_as_a_vector_file(report, tmp_path):
    written = write_files(report, tmp_path, ["pdf"], PlotOptions(band="iqr"))
    assert [p.name for p in written] == ["regret.pdf", "runtime.pdf"]
    assert all(p.read_bytes()[:5] == b"%PDF-" for p in written)
