"""The Showdown family of the parity harness (benchmarks/parity_showdown.py) can fail.

The authors' code is never used here. A stand-in repository with the Showdown's interface (a wheel sampler on
NumPy's global generator, ``LinearFullPosteriorSampling`` and ``UniformSampling`` built from ``(name, hparams)``
with ``action`` / ``update``) wraps our own BLR, seeded as the harness seeds ours, so that the harness can be shown
to call an exact re-implementation parity and a wrong one not.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import parity_showdown  # noqa: E402
from test_parity import load_harness  # noqa: E402

# A wheel with a small radius (δ = 0.5, whatever the harness asks), so that a short run tells learners apart.
STAND_IN_SAMPLER = """
import numpy as np


def sample_wheel_bandit_data(num_contexts, delta, mean_v, std_v, mu_large, std_large):
    angle, radius = np.random.uniform(0, 2 * np.pi, num_contexts), np.sqrt(np.random.uniform(0, 1, num_contexts))
    contexts = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    rewards = np.random.normal(mean_v, std_v, (num_contexts, len(mean_v)))
    quadrant = 2 * (contexts[:, 0] <= 0) + (contexts[:, 1] <= 0)
    best = np.where(radius >= 0.5, quadrant, int(np.argmax(mean_v)))
    outside = radius >= 0.5
    rewards[outside, quadrant[outside]] = np.random.normal(mu_large, std_large, outside.sum())
    return np.hstack([contexts, rewards]), (rewards[np.arange(num_contexts), best], best)
"""
# Their LinFullPost as our BLR (which fits their intercept itself), with the seed the harness gives run i of ours
# (recovered from the global generator, which the harness seeded with i).
STAND_IN_BLR = """
import numpy as np

from banditbench.algos import ALGORITHMS
from banditbench.envs import Budget
from banditbench.envs.round import Round
from banditbench.runner.seeds import unit_streams
from banditbench.runner.unit import group_of_one

RUN = None


class LinearFullPosteriorSampling:
    def __init__(self, name, hparams):
        self.K, self.d = hparams.num_actions, hparams.context_dim
        params = {{"prior_a": hparams.a0, "prior_b": hparams.b0, "ridge": hparams.lambda_prior{wrong},
                  "initial_pulls": hparams.initial_pulls}}
        policy = ALGORITHMS["blr-one"].build(
            n_users=1, n_arms=self.K, dim=self.K * self.d, seed=unit_streams(0, RUN)[1], params=params
        )
        self.group, self.t = group_of_one(policy), 0

    def action(self, context):
        arms = np.kron(np.eye(self.K), context)
        self.view = Round(self.t, 0, arms, np.zeros(self.K), np.zeros(self.K), block=self.d).view(Budget())
        self.t += 1
        return self.group.select([self.view], [Budget()])[0]

    def update(self, context, action, reward):
        self.group.update([self.view], [action], [reward])
"""
STAND_IN_UNIFORM = """
import numpy as np


class UniformSampling:
    def __init__(self, name, hparams):
        self.K = hparams.num_actions

    def action(self, context):
        return np.random.randint(self.K)
"""
ROUNDS, RUNS = 200, 3
MODULES = ("bandits", "bandits.algorithms", "bandits.data", "bandits.data.synthetic_data_sampler")


def stand_in(folder: Path, monkeypatch, wrong: str = "") -> Path:
    """Write the stand-in repository (``wrong``: a change to the BLR's parameters) and undo, after the test, what
    running it in this process changes."""
    for package in ("bandits/algorithms", "bandits/data"):
        (folder / package).mkdir(parents=True)
    (folder / "bandits/data/synthetic_data_sampler.py").write_text(STAND_IN_SAMPLER)
    (folder / "bandits/algorithms/linear_full_posterior_sampling.py").write_text(STAND_IN_BLR.format(wrong=wrong))
    (folder / "bandits/algorithms/uniform_sampling.py").write_text(STAND_IN_UNIFORM)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return folder


def entry(reference: Path, monkeypatch, algorithm: str = "blr-one") -> dict:
    """The harness's regret comparison on the stand-in's wheel, every side run in this process."""
    harness = load_harness()
    blr = "bandits.algorithms.linear_full_posterior_sampling"

    def in_process(side, job):
        if side == "theirs":
            for module in (*MODULES, blr, "bandits.algorithms.uniform_sampling"):
                sys.modules.pop(module, None)  # a fresh import of theirs for every run, as a fresh process has
            sys.path.insert(0, str(reference))
            __import__(blr)
            sys.modules[blr].RUN = job["seed"]
            return harness.their_worker(job)
        return harness.our_worker(job)

    monkeypatch.setattr(harness, "spawn", in_process)
    # the controls that tell learners apart within this short horizon: one model for every action, and the
    # intercept's absence, need longer
    controls = [c for c in harness.CONTROLS["blr-one"] if c.label not in ("one model", "no intercept")]
    monkeypatch.setitem(harness.CONTROLS, "blr-one", tuple(controls))
    args = Namespace(variant="code", rounds=ROUNDS, runs=RUNS, jobs=1, margin=0.05, pools=None, measure="regret")
    args.reference_dir, args.reference_deps, args.problem = reference, None, "wheel"
    job, instance = harness.prepare_instance(algorithm, args, reference)
    job.update(settings={}, ours=harness.settings_for_theirs(algorithm, {}, instance))
    return harness.regret_entry(algorithm, args, job, instance, {}, {})


def test_an_exact_reimplementation_is_parity_and_every_control_is_shown_beyond_the_margin(tmp_path, monkeypatch):
    found = entry(stand_in(tmp_path, monkeypatch), monkeypatch)
    code = found["variants"]["code"]
    assert code["final"] == found["theirs"]["final"] and np.mean(code["agreement"]) == 1.0
    assert code["verdict"] == "parity", code["reason"]
    assert set(found["controls"]) == {"uniform", "wrong prior"}


def test_their_learner_with_another_prior_differs(tmp_path, monkeypatch):
    """Their side's weights prior is 100 times as tight: it is our wrong-prior control, which ours is not."""
    found = entry(stand_in(tmp_path, monkeypatch, wrong=" * 100"), monkeypatch)
    assert found["variants"]["code"]["verdict"] == "differs"
    assert found["controls"]["wrong prior"]["compare"]["difference"] == 0.0  # theirs is the control


def test_the_contexts_ours_is_shown_follow_the_learner_keys():
    record = {"contexts": np.array([[2.0, 3.0]]), "rewards": np.zeros((1, 3)), "expected": np.zeros((1, 3))}
    rounds, own = parity_showdown.shown(record, {"intercept": True, "ridge": 1.0})
    np.testing.assert_array_equal(rounds["arms"][0, 1], [0, 0, 2, 3, 0, 0])
    assert rounds["block"] == 2 and own == {"intercept": True, "ridge": 1.0}
    rounds, own = parity_showdown.shown(record, {"per_action": False})
    assert rounds["block"] is None and rounds["arms"].shape == (1, 3, 6) and own == {}


@pytest.mark.parametrize(
    ("settings", "rounds", "problem", "message"),
    [
        ({"v": 1.0}, 2000, "wheel", "their LinearFullPosteriorSampling has no setting for v"),
        ({}, 50_000, "statlog", "their statlog sampler draws at most 43,500 rows"),
    ],
)
def test_what_their_code_cannot_run_is_refused_in_one_line(settings, rounds, problem, message):
    with pytest.raises(SystemExit, match=message):
        parity_showdown.check_settings("blr-one", settings, rounds, problem)


def test_a_checkout_without_their_learners_or_a_problem_without_its_file_is_named(tmp_path, monkeypatch):
    assert "not the Showdown's" in parity_showdown.check_reference(tmp_path, "wheel", None)
    stand_in(tmp_path / "ref", monkeypatch)
    assert parity_showdown.check_reference(tmp_path / "ref", "wheel", None) is None
    assert "shuttle.trn" in parity_showdown.check_reference(tmp_path / "ref", "statlog", tmp_path)
    assert "agaricus-lepiota.data" in parity_showdown.check_reference(tmp_path / "ref", "mushroom", None)


# Their mushroom sampler's return, for three drawn rows: one-hot contexts (edible first, as their table's first two
# columns), don't-eat and eat rewards, and their optimal expected reward of each row (5 edible, 0 poisonous).
STAND_IN_MUSHROOM = """
import numpy as np


def sample_mushroom_data(file_name, num_contexts):
    contexts = np.array([[True, False], [False, True], [False, True]])[:num_contexts]
    eat = np.array([5.0, -35.0, 5.0])[:num_contexts, None]
    return np.hstack((contexts, np.zeros((num_contexts, 1)), eat)), (np.array([5.0, 0.0, 0.0]), None)


def sample_statlog_data(*args, **kwargs):
    raise AssertionError("not the mushroom sampler")
"""


def test_the_mushroom_rows_expected_rewards_are_the_eat_and_dont_eat_means(tmp_path, monkeypatch):
    """Don't eat pays 0; eating pays 5 for an edible row and −15 in expectation for a poisonous one, whatever the
    draw (−35 or +5) their sampler realised."""
    reference = stand_in(tmp_path, monkeypatch)
    (reference / "bandits/data/data_sampler.py").write_text(STAND_IN_MUSHROOM)
    sys.path.insert(0, str(reference))
    for module in (*MODULES, "bandits.data.data_sampler"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, "tensorflow", parity_showdown.fake_tensorflow())
    contexts, rewards, expected = parity_showdown.sample("mushroom", 3, tmp_path)
    np.testing.assert_array_equal(contexts, [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(rewards, [[0.0, 5.0], [0.0, -35.0], [0.0, 5.0]])
    np.testing.assert_array_equal(expected, [[0.0, 5.0], [0.0, -15.0], [0.0, -15.0]])


def test_their_python_2_fallback_reads_a_linalg_errors_message():
    """Their LinFullPost prints ``e.message`` before its fallback draw; Python 3's exceptions have no such attribute,
    so without the harness's shim their run would stop there."""
    parity_showdown.python2_messages()
    with pytest.raises(np.linalg.LinAlgError) as error:
        raise np.linalg.LinAlgError("SVD did not converge")
    assert error.value.message == "SVD did not converge"


def ours_on_their_draws(reference: Path, monkeypatch, tmp_path, *extra: str) -> dict:
    """``parity_showdown.py --ours`` on the stand-in's wheel: NeuralLinear-TS, two runs of 100 rounds."""
    import json

    out = tmp_path / "ours.json"
    argv = ["parity_showdown.py", "--reference-dir", str(reference), "--problems", "wheel", "--rounds", "100"]
    monkeypatch.setattr(sys, "argv", [*argv, "--runs", "2", "--ours", *extra, "--out", str(out)])
    for module in MODULES:
        monkeypatch.delitem(sys.modules, module, raising=False)
    parity_showdown.main()
    return json.loads(out.read_text())


def test_ours_replays_the_rows_their_run_of_the_same_seed_draws(tmp_path, monkeypatch):
    reference = stand_in(tmp_path / "ref", monkeypatch)
    import parity

    shown_to_ours = []

    def replay(algorithm, params, rounds, seed):
        shown_to_ours.append(rounds)
        return {"chosen": [0] * len(rounds["arms"]), "regret": [0.0], "loop_seconds": 0.0}

    monkeypatch.setattr(parity, "replay", replay)
    parity_showdown.ours_run(reference, None, "wheel", 30, 4, "neurallinear-ts", {})
    np.random.seed(4)  # what their run of seed 4 draws (network_run)
    contexts, rewards, _ = parity_showdown.sample("wheel", 30, None)
    np.testing.assert_array_equal(shown_to_ours[0]["arms"][:, 2, 4:6], contexts)  # action 2's block
    np.testing.assert_array_equal(shown_to_ours[0]["rewards"], rewards)


def test_ours_against_theirs_is_equivalent_to_itself_and_differs_from_a_worse_learner(tmp_path, monkeypatch):
    import json

    reference = stand_in(tmp_path / "ref", monkeypatch)
    ours = ours_on_their_draws(reference, monkeypatch, tmp_path, "--set", "lr_reset=false")
    assert ours["settings"] == {"lr_reset": False} and [run["seed"] for run in ours["problems"]["wheel"]] == [0, 1]
    for scale, equivalent in ((1.0, True), (1.5, False)):
        theirs = {
            "problems": {
                "wheel": [{**run, "final_regret": scale * run["final_regret"]} for run in ours["problems"]["wheel"]]
            }
        }
        (tmp_path / "theirs.json").write_text(json.dumps(theirs))
        again = ours_on_their_draws(
            reference, monkeypatch, tmp_path, "--set", "lr_reset=false", "--against", str(tmp_path / "theirs.json")
        )
        low, high = again["against"]["wheel"]["interval_pct"]
        assert (-10 < low <= high < 10) is equivalent and (high < -10) is (not equivalent), (low, high)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--against", "x.json"], "add --ours"),
        (["--set", "lr=1"], "add --ours"),
        (["--algorithm", "paramnoise"], "their paramnoise cannot run on their port's LayerNorm: add --without-layer"),
    ],
)
def test_settings_and_comparisons_of_ours_need_ours(tmp_path, monkeypatch, extra, message):
    monkeypatch.setattr(sys, "argv", ["p", "--reference-dir", str(tmp_path), *extra, "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match=message):
        parity_showdown.main()


@pytest.mark.parametrize("algorithm", sorted(parity_showdown.NETWORKS))
def test_each_network_learner_of_theirs_has_ours_to_run_on_their_rows(tmp_path, monkeypatch, algorithm):
    reference = stand_in(tmp_path, monkeypatch)
    run = parity_showdown.ours_run(reference, None, "wheel", 60, 0, algorithm, {"training_freq": 20})
    assert run["seed"] == 0 and 0 <= run["final_regret"] <= 60 * 50
