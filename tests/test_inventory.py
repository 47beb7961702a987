"""The inventory of the five papers' tables and figures: every one with results is listed, covered by a preset or
said to be not reproduced, and every value and claim of a preset names one of its paper's."""

import re

import pytest
from fixtures_raw import SHARED

from banditbench import presets
from banditbench.presets import BASS, GHOSH, INVENTORY, MCNB, METABAN, TWOSTAGE

# Read from the papers: every table and figure that prints a result (numbers, curves or a stated comparison).
WITH_RESULTS = {
    MCNB: ["Table 1", "Table 2", "Table 3", "Table 4", "Fig. 2", "Fig. 3", "Fig. 4", "Fig. 5", "Fig. 6", "Fig. 7"],
    METABAN: ["Fig. 1", "Fig. 2", "Fig. 3", "Fig. 4"],
    GHOSH: ["Fig. 1", "Fig. 2"],
    BASS: ["Table 2", "Table 3", "Table 4", "Fig. 3", "Fig. 4", "Fig. 6", "Fig. 7", "Fig. 8", "Fig. 9"],
    TWOSTAGE: ["Table 4", "Table 5", "Table 6", "Fig. 2", "Fig. 3", "Fig. 4"],
}
TITLES = {  # how each paper's text begins, to find it among the stored papers
    MCNB: "Meta Clustering of Neural Bandits",
    METABAN: "Neural Collaborative Filtering Bandits via Meta Learning",
    GHOSH: "Collaborative Learning and Personalization in Multi-Agent",
    BASS: "Adaptive Sample Sharing for Multi Agent Linear Bandits",
    TWOSTAGE: "Two-Stage Neural Contextual Bandits",
}
PAPERS = SHARED.parent / "seeds"


@pytest.mark.parametrize("paper", presets.PAPERS, ids=lambda p: presets.SHORT[p])
def test_the_inventory_lists_every_table_and_figure_with_results_of_each_paper(paper):
    listed = [e.name for e in INVENTORY if e.paper == paper]
    assert listed == WITH_RESULTS[paper]
    assert not set(listed) & set(presets.ILLUSTRATIONS.get(paper, ()))


def test_the_five_papers_have_31_and_none_is_silent():
    assert sum(e.paper in presets.PAPERS for e in INVENTORY) == 31 == sum(map(len, WITH_RESULTS.values()))
    for exhibit in INVENTORY:
        covered = presets.covering(exhibit)
        assert covered or exhibit.missing, f"{exhibit.name} of {presets.SHORT[exhibit.paper]}: no preset and no reason"
        assert all(presets.PRESETS[name]["paper"] == exhibit.paper for name in covered)
    not_reproduced = [f"{presets.SHORT[e.paper]} {e.name}" for e in INVENTORY if not presets.covering(e)]
    assert len(not_reproduced) == 14, not_reproduced  # the Showdown's regret table and δ sweep among them
    for required in ("M-CNB (KDD'24) Table 2", "BASS Table 3", "two-stage Table 6"):
        assert required not in not_reproduced


def test_every_value_and_claim_names_a_table_or_figure_of_its_paper():
    for name, spec in presets.PRESETS.items():
        printed = spec["printed"]
        named = {e.name for e in INVENTORY if e.paper == spec["paper"]}
        for item in (*printed.values, *printed.claims):
            assert item.exhibit in named, (name, item)
        assert set(printed.also) <= named and set(printed.also.values()) <= named, name


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' text is not beside the checkout")
def test_the_papers_mention_no_table_or_figure_outside_the_inventory():
    texts = {}
    for path in PAPERS.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        paper = next(p for p, title in TITLES.items() if title in text[:2000])
        texts[paper] = text
    assert set(texts) == set(presets.PAPERS)
    for paper, text in texts.items():
        mentioned = {
            f"{'Table' if kind.startswith('Table') else 'Fig.'} {number}"
            for kind, number in re.findall(r"\b(Tables?|Figures?|Fig\.) ?(\d+)", text)
        }
        known = set(WITH_RESULTS[paper]) | set(presets.ILLUSTRATIONS.get(paper, ()))
        assert mentioned == known, presets.SHORT[paper]
