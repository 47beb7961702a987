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
from banditbench.report.plots import regret_figure
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
    ],
)
def test_bad_options_are_one_line(report, options, message):
    with pytest.raises(UserError, match=message):
        options.checked(report.results.algorithms)


def test_pdf_is_written_as_a_vector_file(report, tmp_path):
    written = write_files(report, tmp_path, ["pdf"], PlotOptions(band="iqr"))
    assert [p.name for p in written] == ["regret.pdf", "runtime.pdf"]
    assert all(p.read_bytes()[:5] == b"%PDF-" for p in written)
