"""The results board: its pages, their links and provenance read without a browser, and in headless Chromium
where the machine has one."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

import banditbench as bb
from banditbench import api
from banditbench.data import load_dataset
from banditbench.errors import UserError
from banditbench.report.board import write_board
from banditbench.runner.settings import RunSettings
from tests.conftest import banditbench_here
from tests.site_links import CHROMIUM, rendered_problems


class Page(HTMLParser):
    """The links, table rows and figures of one page."""

    def __init__(self, path: Path):
        super().__init__()
        self.links, self.rows, self.svgs, self.row = [], [], 0, None
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs)["href"])
        elif tag == "svg":
            self.svgs += 1
        elif tag == "tr":
            self.row = []

    def handle_endtag(self, tag):
        if tag == "tr":
            self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.row is not None and data.strip():
            self.row.append(data.strip())


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory):
    """A two-member suite run: random and linucb-one on synthetic and synthetic-cosine, 2 seeds of 30 rounds."""
    root = tmp_path_factory.mktemp("board")
    bb.prepare("synthetic", users=12, clusters=2, dim=4, arms=5, data_dir=root / "datasets")
    suite = root / "s.toml"
    suite.write_text('name = "tiny"\n[[member]]\ndataset = "synthetic"\n[[member]]\ndataset = "synthetic-cosine"\n')
    flags = RunSettings(algos="random,linucb-one", rounds=30, seeds=2, jobs=1, out=str(root / "results"))
    api.run_suite(str(suite), flags, data_dir=root / "datasets")
    return root


@pytest.fixture(scope="module")
def board(suite_results):
    """The suite's board, written once: (its folder, its pages)."""
    site = suite_results / "site"
    return site, write_board([suite_results / "results"], site)


def test_the_board_has_a_page_per_folder_whose_links_resolve_and_cells_carry_provenance(suite_results, board):
    site, pages = board
    assert pages == [site / "suite-tiny" / "index.html"]
    index = Page(site / "index.html")
    assert index.links == ["suite-tiny/index.html"]
    page = Page(pages[0])
    assert page.svgs >= 4  # regret, runtime, win-loss, profile (and the critical-difference diagram when defined)
    for link in page.links:
        assert (pages[0].parent / link).resolve().is_file(), link
    shards = [link for link in page.links if link.startswith("shards/")]
    assert len(shards) == 2 * 2 * 2  # every unit: datasets × algorithms × seeds
    provenance = [row for row in page.rows if len(row) > 2 and row[2].startswith("banditbench run")]
    assert sorted((row[0], row[1]) for row in provenance) == sorted(
        (d, a) for d in ("synthetic", "synthetic-cosine") for a in ("random", "linucb-one")
    )
    for row in provenance:
        dataset, sha = row[0], row[5]
        assert sha == load_dataset(suite_results / "datasets", dataset).manifest_sha256
        assert row[3] == bb.__version__ and row[6] == "0, 1"
        assert f"--dataset {dataset} --algos random,linucb-one --rounds 30 --seeds 2" in row[2]


@pytest.mark.parametrize("test", ["t", "wilcoxon"])
def test_every_page_of_a_board_reports_with_the_paired_test_asked_for(suite_results, test):
    from banditbench.report.board import plan_pages

    pages = plan_pages([suite_results / "results"], test=test)
    assert pages and {page.report.test for page in pages} == {test}


def test_the_board_refuses_a_folder_that_is_not_a_board_and_keeps_an_old_board_when_a_source_is_broken(
    suite_results, board, tmp_path, capsys
):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("keep me")
    ran = banditbench_here("board", suite_results / "results", "--out", other, capsys=capsys)
    assert ran.returncode == 2 and "holds files but no banditbench board" in ran.stderr
    assert [p.name for p in other.iterdir()] == ["todo.txt"]
    site = tmp_path / "site"
    shutil.copytree(board[0], site)
    before = (site / "index.html").read_bytes()
    broken = tmp_path / "broken"
    shutil.copytree(suite_results / "results" / "synthetic", broken)
    shard = next((broken / "shards").glob("random-seed0.parquet"))
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(UserError, match="broken result file"):
        write_board([suite_results / "results", broken], site)
    assert (site / "index.html").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "notes", "site"]  # no staging folder left


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")
def test_the_board_renders_in_headless_chromium_without_console_errors(board):
    site, pages = board
    for page in [site / "index.html", *pages]:
        assert rendered_problems(site, page) == []
