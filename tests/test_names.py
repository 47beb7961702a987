"""Typed names: a typo, another case or a paper's name gets one line with the closest valid names, never the
whole registry; the same answer from every command and from the Python API."""

from __future__ import annotations

import json

import pytest
from conftest import banditbench_here

import banditbench as bb
from banditbench import names
from banditbench.algos import ALGORITHMS
from banditbench.api import algorithm_names
from banditbench.errors import UserError
from banditbench.runner.experiment import protocol_settings


def test_case_and_separators_resolve_when_one_name_fits():
    assert names.resolve("CLUB", ALGORITHMS) == "club"
    assert names.resolve("Meta-Ban", ALGORITHMS) == "metaban"
    assert names.resolve("EE-Net", ALGORITHMS) == "eenet"
    assert names.resolve("LinUCB_Ind", ALGORITHMS) == "linucb-ind"
    assert names.resolve("clubb", ALGORITHMS) is None
    assert names.resolve("ab", ["a-b", "A_B"]) is None  # two names fold to it: no guess


def test_an_alias_resolves_only_when_it_means_one_name():
    aliases = {"Paper": (("x", "the one"),), "Both": (("x", "first"), ("y", "second"))}
    assert names.resolve("paper", ["x", "y"], aliases) == "x"
    assert names.resolve("both", ["x", "y"], aliases) is None
    assert names.did_you_mean("both", ["x", "y"], aliases) == "both is x (first) or y (second)"


def test_the_api_takes_other_cases_and_the_papers_names():
    assert algorithm_names("CLUB, Meta-Ban, OFUL, M-CNB") == ["club", "metaban", "oful-ind", "mcnb"]


@pytest.mark.parametrize(
    "typed, expected",
    [
        ("clubb", "unknown algorithm 'clubb'; did you mean club"),
        ("neuralucb", "neuralucb is neuucb-one (one network) or neuucb-ind (one network per user)"),
        ("NeuralUCB", "NeuralUCB is neuucb-one (one network) or neuucb-ind (one network per user)"),
        ("LinUCB", "LinUCB is linucb-one (one model shared by all users) or linucb-ind (one model per user)"),
        ("sclubb", "did you mean sclub"),
        ("neural", "did you mean neu-au, neuralts-one or neuralts-ind?"),
    ],
)
def test_algorithm_mistakes_name_the_closest(typed, expected):
    with pytest.raises(UserError) as error:
        algorithm_names(typed)
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_a_name_close_to_nothing_lists_no_registry():
    with pytest.raises(UserError) as error:
        algorithm_names("qqqq")
    message = str(error.value)
    assert message.startswith("unknown algorithm 'qqqq'; `banditbench list algorithms`")
    assert not [name for name in ALGORITHMS if f" {name}," in message or f" {name} " in message]


def test_suggestions_offer_at_most_three_names():
    assert len(names.closest("linucb", ALGORITHMS)) <= names.CLOSEST
    assert names.closest("linucbind", ALGORITHMS)[0] == "linucb-ind"


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "--algos", "clubb"], "unknown algorithm 'clubb'; did you mean club"),
        (["run", "--algos", "linucb-ind,neuralucb"], "neuralucb is neuucb-one (one network) or neuucb-ind"),
        (["run", "--dataset", "movielen", "--algos", "club"], "unknown dataset 'movielen'; did you mean movielens"),
        (["run", "--preset", "bass-synthtic"], "unknown preset 'bass-synthtic'; did you mean bass-synthetic"),
        (
            ["run", "--algos", "club", "--set", "club.alhpa=1"],
            "club has no hyper-parameter 'alhpa'; did you mean alpha",
        ),
        (["run", "--algos", "club", "--set", "clubb.alpha=1"], "'clubb' is not among --algos; did you mean club"),
        (["report", "--format", "pnd"], "unknown format 'pnd'; did you mean png"),
        (["report", "--test", "wilcoxn"], "unknown --test 'wilcoxn'; did you mean wilcoxon"),
        (["list", "algoritms"], "unknown list 'algoritms'; did you mean algorithms"),
    ],
)
def test_command_line_mistakes_are_one_line_with_the_closest(args, expected, capsys, tmp_path):
    done = banditbench_here(*command(args, tmp_path), capsys=capsys)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0]


def command(args: list[str], tmp_path) -> list:
    """``args`` pointed at an empty data folder and a results folder of the test's own."""
    if args[0] == "run":
        return [*args, "--data-dir", tmp_path / "data", "--out", tmp_path / "out"]
    if args[0] == "report":
        return [*args, tmp_path]
    return args


def test_protocol_settings_and_datasets_suggest_too(tmp_path):
    with pytest.raises(UserError, match="has no such setting; did you mean "):
        protocol_settings("twostage", {"slate_sise": 5})
    with pytest.raises(UserError, match="unknown dataset 'movielen'; did you mean movielens"):
        bb.prepare("movielen", data_dir=tmp_path)


def test_list_json_names_every_entry(capsys):
    done = banditbench_here("list", "protocols", "--json", capsys=capsys)
    assert done.returncode == 0
    from banditbench.envs import PROTOCOLS

    assert [entry["name"] for entry in json.loads(done.stdout)] == list(PROTOCOLS)


def shown(capsys, monkeypatch, columns: int, *args) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    done = banditbench_here("list", *args, capsys=capsys)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_list_fits_80_columns_and_never_splits_a_word(capsys, monkeypatch):
    from rich.cells import cell_len

    narrow = shown(capsys, monkeypatch, 80)
    whole_words = set(shown(capsys, monkeypatch, 1000).split())
    assert max(cell_len(line) for line in narrow.splitlines()) <= 80
    assert set(narrow.split()) <= whole_words  # a word folded at the edge would leave pieces that are no word
    assert "linucb-ind" in narrow.split() and "(Gentile et al. 2014)" in " ".join(narrow.split())


def test_list_wide_keeps_the_full_tables(capsys, monkeypatch):
    assert "alpha=1.0" in shown(capsys, monkeypatch, 200, "algorithms", "--wide")
    assert "alpha=1.0" not in shown(capsys, monkeypatch, 200, "algorithms")


@pytest.mark.parametrize(
    "paper, short",
    [
        ("Gentile, Li & Zappella, ICML 2014", "Gentile et al. 2014"),
        ("Ban & He, NeurIPS 2021", "Ban & He 2021"),
        ("Zhang et al. 2022, Two-Stage Neural Contextual Bandits", "Zhang et al. 2022"),
        ("NeuralLinear baseline of M-CNB, KDD 2024 (Zahavy & Mannor 2019)", "NeuralLinear baseline of M-CNB, KDD 2024"),
        ("baseline", "baseline"),
    ],
)
def test_short_citations(paper, short):
    from banditbench.cli import short_citation

    assert short_citation(paper) == short
