"""Every hyper-parameter declares its domain; values outside it are refused at parse time with the domain named.
The registry's declarations (papers, capabilities) agree with the policies they name."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import banditbench

from banditbench.algos import ALGORITHMS
from banditbench.algos import domains as d
from banditbench.algos.base import AlgorithmSpec
from banditbench.errors import UserError
from banditbench.runner import grid


def resolve(*texts: str) -> dict:
    assignments = grid.parse_assignments(list(texts))
    return grid.resolve(assignments, list(assignments))


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_hyper_parameter_has_a_domain_that_holds_its_default(name):
    parameters = ALGORITHMS[name].parameters()
    missing = [key for key, p in parameters.items() if p.domain is None]
    assert not missing, f"{name}: no domain for {missing}"
    outside = [key for key, p in parameters.items() if not p.domain.contains(p.default)]
    assert not outside, f"{name}: defaults outside their domains: {outside}"


def bad_switches(spec) -> list[str]:
    """The switches to the authors' code that select nothing: no such hyper-parameter, a value outside its domain or
    its default."""
    parameters = spec.parameters()
    problems = [  # a switch names a hyper-parameter of the class that declares it (a subclass may drop it)
        f"{key} is no hyper-parameter"
        for kind in spec.policy.__mro__
        for key in vars(kind).get("authors_code", {})
        if not any(key in vars(other).get("domains", {}) for other in kind.__mro__)
    ]
    for key, (value, what) in spec.authors_code().items():
        if not parameters[key].domain.contains(value):
            problems.append(f"{key}={value!r} is outside {parameters[key].domain.describe()}")
        elif value == parameters[key].default:
            problems.append(f"{key}={value!r} is the default, the paper's")
        if not what:
            problems.append(f"{key}: says nothing of what it changes")
    return problems


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_switch_to_the_authors_code_selects_another_value_of_its_domain(name):
    assert not bad_switches(ALGORITHMS[name]), f"{name}: {bad_switches(ALGORITHMS[name])}"


def test_switches_are_inherited_and_a_bad_one_is_reported():
    assert set(ALGORITHMS["neurallinear"].authors_code()) == {"bias", "init", "schedule"}  # the shared network's
    assert {"code_training", "schedule"} <= set(ALGORITHMS["mcnb"].authors_code())
    assert ALGORITHMS["club"].authors_code()["random_init_graph"][0] is True
    assert "reset_checks" in ALGORITHMS["sclub"].authors_code() and not ALGORITHMS["linucb-ind"].authors_code()

    class Broken(ALGORITHMS["club"].policy):
        authors_code = {"reference_ucb": (False, "the default"), "ridge": (-1.0, ""), "not_a_parameter": (1, "x")}

    spec = AlgorithmSpec("broken", Broken, "Nobody 2026", "a test")
    assert bad_switches(spec) == [
        "not_a_parameter is no hyper-parameter",
        "ridge=-1.0 is outside a finite real number > 0",
        "ridge: says nothing of what it changes",
        "reference_ucb=False is the default, the paper's",
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("linucb-ind.alpha=-1", "alpha must be a finite real number ≥ 0"),
        ("linucb-ind.ridge=0", "ridge must be a finite real number > 0"),
        ("linucb-ind.ridge=-1", "ridge must be a finite real number > 0"),
        ("linucb-ind.alpha=nan", "alpha must be a finite real number ≥ 0"),
        ("linucb-ind.alpha=inf", "alpha must be a finite real number ≥ 0"),
        ("linucb-ind.alpha=-inf", "alpha must be a finite real number ≥ 0"),
        ("linucb-ind.alpha=0.5,-1", "alpha must be a finite real number ≥ 0"),  # every value of a grid
        ("bass.radius_convention=foo", "radius_convention must be one of paper, bandpy"),
        ("bass.delta=1", "delta must be a finite real number in (0, 1)"),
        ("bass.epsilon=1.5", "epsilon must be a finite real number in [0, 1]"),
        ("mcnb.width=0", "width must be an integer ≥ 1"),
        ("mcnb.width=2.5", "width must be an integer ≥ 1"),
        ("mcnb.device=tpu", "device must be one of cpu, cuda, auto"),
        ("club.reference_ucb=maybe", "reference_ucb must be a bool (true or false)"),
        ("2-glm-ucb.topic_min_size=0", "topic_min_size must be none or an integer ≥ 1"),
    ],
)
def test_values_outside_the_domain_are_refused_with_the_domain(text, message):
    with pytest.raises(UserError) as error:
        resolve(text)
    assert str(error.value) == f"params {text.split('=')[0]}={text.split('=')[1].split(',')[-1]!r}: {message}"


def test_values_inside_the_domain_are_cast_to_its_type():
    assert resolve("linucb-ind.alpha=0", "linucb-ind.ridge=1e-9")["linucb-ind"] == {"alpha": 0.0, "ridge": 1e-9}
    assert resolve("mcnb.width=64", "mcnb.bias=true")["mcnb"]["width"] == 64
    assert resolve("2-glm-ucb.topic_min_size=none")["2-glm-ucb"]["topic_min_size"] is None
    assert resolve("2-glm-ucb.topic_min_size=3")["2-glm-ucb"]["topic_min_size"] == 3
    assert resolve("bass.radius_convention=bandpy,paper")["bass"]["radius_convention"] == ["bandpy", "paper"]


def test_toml_values_are_checked_too():
    resolved = grid.resolve({"cmlb": {"horizon": [500], "delta": [0.5]}}, ["cmlb"])
    assert resolved["cmlb"]["horizon"] == 500 and resolved["cmlb"]["delta"] == 0.5
    for bad in ({"horizon": [True]}, {"horizon": [2.5]}, {"delta": [float("nan")]}, {"averaged_noise": [1.0]}):
        with pytest.raises(UserError, match="cmlb"):
            grid.resolve({"cmlb": bad}, ["cmlb"])


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("cofiba", {"item_pool": 0}, "cofiba.item_pool=0: item_pool must be an integer ≥ 1"),
        ("dynucb", {"centroid": "median"}, "dynucb.centroid='median': centroid must be one of ridge, mean"),
        ("neuucb-one", {"covariance": "low-rank"}, "neuucb-one.covariance='low-rank': covariance must be one of"),
        ("linucb-ind", {"ridge": 0.0}, "linucb-ind.ridge=0.0: ridge must be a finite real number > 0"),
    ],
)
def test_a_policy_built_from_python_refuses_a_value_outside_its_domain(name, params, message):
    seed = np.random.SeedSequence(0)
    with pytest.raises(UserError) as error:
        ALGORITHMS[name].build(n_users=4, n_arms=3, dim=2, seed=seed, params=params)
    assert str(error.value).startswith(message)
    assert ALGORITHMS[name].build(n_users=4, n_arms=3, dim=2, seed=seed, params={}) is not None  # the defaults hold


def test_domains_describe_themselves():
    assert d.real(0, 1, low_open=True).describe() == "a finite real number in (0, 1]"
    assert d.real(high=2, high_open=True).short() == "<2" and d.integer(1).short() == "int ≥1"
    assert d.Optional(d.COUNT).parse("None") is None and d.Choice(("a", "b")).short() == "a|b"
    assert not d.POSITIVE.contains(math.inf) and d.FLAG.contains(False) and not d.COUNT.contains(True)


def test_the_command_line_refuses_a_bad_value_in_one_line(data_dir, tmp_path):
    done = banditbench(
        "run",
        "--data-dir",
        data_dir,
        "--dataset",
        "synthetic",
        "--algos",
        "linucb-ind",
        "--set",
        "linucb-ind.ridge=0",
        "--rounds",
        10,
        "--seeds",
        1,
        "--out",
        tmp_path / "out",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --set linucb-ind.ridge='0': ridge must be a finite real number > 0"
    ]
    assert not (tmp_path / "out").exists()


# -- the declarations ----------------------------------------------------------------------------------------------


def test_papers_are_cited_by_author_and_year():
    for name, spec in ALGORITHMS.items():
        assert "seed" not in spec.paper and ".md" not in spec.paper, name


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_capabilities_agree_with_the_policy(name):
    spec = ALGORITHMS[name]
    capabilities = spec.capabilities
    assert capabilities.slate == getattr(spec.policy, "slate", False)
    assert capabilities.two_stage == bool(spec.fixed.get("two_stage", False))
    assert capabilities.user_features == bool(spec.fixed.get("user_features", False))
    assert capabilities.device == ("device" in spec.defaults())
    assert capabilities.checkpoint
    assert not capabilities.two_stage or capabilities.slate
