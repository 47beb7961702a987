"""The parity harness (benchmarks/parity.py) can fail: its verdict, its controls, its settings on both sides.

The authors' code is never used here. A stand-in repository with the interface of the Ban-family code (a loader
``load_data.load_movielen_dif_user`` and a ``club.CLUB`` with ``recommend`` / ``store_info`` / ``update``) wraps our
own CLUB, so that the harness can be shown to call a correct implementation parity and a wrong one not.
"""

from __future__ import annotations

import sys
import types
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import parity_pools  # noqa: E402
import parity_verdict  # noqa: E402
from test_parity import load_harness  # noqa: E402


# ------------------------------------------------------------------------------------------------ the verdict
def runs(mean: float, spread: float = 10.0, n: int = 8, seed: int = 0) -> np.ndarray:
    return mean + spread * np.random.default_rng(seed).standard_normal(n)


def test_equivalent_and_every_control_beyond_the_margin_is_parity():
    theirs = runs(1000)
    ours = theirs + runs(2, spread=3, seed=1)  # run by run within 0.5 % of theirs
    controls = {"pooled": theirs * 1.4, "alone": theirs * 0.8 + runs(0, seed=2)}
    main = parity_verdict.compare(ours, theirs, 0.05, paired=True)
    found = {k: parity_verdict.compare(v, theirs, 0.05, paired=True) for k, v in controls.items()}
    assert main["p_equivalent"] < 0.05 and main["interval_pct"][1] < 5
    assert parity_verdict.verdict(main, found)[0] == "parity"


def test_a_control_as_close_as_ours_makes_the_instance_not_discriminating():
    theirs = runs(1000)
    ours = theirs + runs(0, spread=3, seed=1)
    controls = {"pooled": theirs * 1.4, "alone": theirs * 1.01 + runs(0, spread=3, seed=3)}
    main = parity_verdict.compare(ours, theirs, 0.05, paired=True)
    found = {k: parity_verdict.compare(v, theirs, 0.05, paired=True) for k, v in controls.items()}
    verdict, reason = parity_verdict.verdict(main, found)
    assert verdict == "not discriminating" and "alone" in reason and "pooled" not in reason


def test_ours_beyond_the_margin_differs_and_a_wide_interval_is_inconclusive():
    theirs = runs(1000)
    assert parity_verdict.verdict(parity_verdict.compare(theirs * 1.2, theirs, 0.05, True), {})[0] == "differs"
    noisy = theirs + runs(0, spread=120, seed=4)  # mean difference near 0, interval far wider than ±5 %
    assert parity_verdict.verdict(parity_verdict.compare(noisy, theirs, 0.05, True), {})[0] == "inconclusive"


def test_without_a_control_run_equivalence_is_no_parity():
    theirs = runs(1000)
    main = parity_verdict.compare(theirs, theirs, 0.05, paired=True)
    assert main["p_equivalent"] < 0.05 and parity_verdict.verdict(main, {})[0] == "not discriminating"


def test_only_rounding_is_taken_for_an_exact_match():
    theirs = np.array([900.0, 1000, 1100, 950])
    close = parity_verdict.compare(theirs + np.array([0.5, 0.3, 0.6, 0.4]), theirs, 0.05, paired=True)  # ≈ 0.05 %
    assert close["difference"] == pytest.approx(0.45) and close["interval"][0] < close["interval"][1]
    assert parity_verdict.compare(theirs + 1e-10, theirs, 0.05, paired=True)["interval"] == [0.0, 0.0]


def test_a_difference_exactly_at_the_margin_is_neither_inside_nor_beyond_it():
    theirs = np.array([900.0, 1000, 1100])
    at_margin = parity_verdict.compare(theirs + 500.0, theirs, 0.5, paired=True)  # 50 % of a mean of 1 000
    assert at_margin["p_equivalent"] == at_margin["p_beyond"] == 1.0
    assert parity_verdict.verdict(at_margin, {})[0] == "inconclusive"
    at_level = {"p_beyond": 1.0, "p_equivalent": 0.05, "difference_pct": 0.0, "interval_pct": [-1.0, 1.0]}
    control = {"p_beyond": 0.0, "p_equivalent": 1.0, "difference_pct": 40.0, "interval_pct": [39.0, 41.0]}
    said = parity_verdict.verdict({**at_level, "margin_pct": 5}, {"c": {**control, "margin_pct": 5}})
    assert said[0] == "inconclusive"  # equivalence needs p below the level, not at it


def test_identical_runs_are_exactly_equivalent_and_welch_counts_shared_noise_twice():
    theirs = np.array([160.0, 190, 200, 215, 235])
    paired = parity_verdict.compare(theirs, theirs, 0.05, paired=True)
    assert paired["interval"] == [0.0, 0.0] and paired["p_equivalent"] == 0.0 and paired["p_beyond"] == 1.0
    welch = parity_verdict.compare(theirs, theirs, 0.05, paired=False)
    # Welch's 90 % interval: ±t(0.95; 8)·sqrt(2 · 787.5 / 5) = ±1.860 · 17.75 = ±33.0, 16.5 % of the mean
    assert welch["interval_pct"][1] == pytest.approx(16.5, abs=0.05) and welch["p_equivalent"] > 0.05


def test_the_paired_interval_is_the_90_percent_t_interval_of_the_mean_difference():
    """Paired runs: mean difference ± t(0.95; n − 1)·sd/√n. Differences 2, 4, 6, 8 (mean 5, sd 2.582): ±2.353 · 1.291
    = ±3.038 (Student's t tables, 3 degrees of freedom: 2.353)."""
    theirs = np.array([160.0, 190, 200, 215])
    paired = parity_verdict.compare(theirs + [2.0, 4, 6, 8], theirs, 0.05, paired=True)
    assert paired["difference"] == 5.0
    assert paired["interval"] == pytest.approx([5 - 2.353363 * 1.290994, 5 + 2.353363 * 1.290994], abs=1e-5)


def test_pair_f1_scores_a_graph_or_labels_against_the_true_clusters():
    truth = np.array([0, 0, 1, 1])
    assert parity_verdict.pair_f1(np.array([5, 5, 7, 7]), truth) == 1.0
    assert parity_verdict.pair_f1(np.zeros(4), truth) == pytest.approx(0.5)  # 2 true pairs of the 6 put together
    graph = np.ones((4, 4), bool)
    graph[0, 1] = graph[1, 0] = False  # one of the 2 true pairs and the 4 false ones: F1 = 2/(2 + 4 + 1)
    assert parity_verdict.pair_f1(graph, truth) == pytest.approx(2 / 7)


# ------------------------------------------------------------------------------------------------ their settings
def test_a_literal_in_their_method_is_replaced_in_memory_only():
    import parity_ban

    def edge_test(norm):
        alpha = 1
        return norm > alpha * 0.5

    def optimiser():
        return dict(lr=1e-3, tolerance=1e-3)

    assert parity_ban.replace_literal(edge_test, 1, 4, store="alpha")(1.0) is False  # 1.0 > 4 · 0.5 is false
    assert edge_test(1.0) is True  # the original is untouched
    assert parity_ban.replace_literal(optimiser, 1e-3, 0.05, keyword="lr")() == {"lr": 0.05, "tolerance": 1e-3}
    with pytest.raises(SystemExit, match="expected one"):
        parity_ban.replace_literal(optimiser, 1e-3, 0.05, store="lr")  # no local lr = 1e-3 there


# What their constructors take when run.py does not pass an argument (their defaults) and the attributes COFIBA's
# constructor sets, for a dimension d = 20.
THEIR_DEFAULTS = {
    ("cofiba", "beta"): 0.1,
    ("cofiba", "alpha"): 4 * np.sqrt(20),
    ("neuucb-ind", "lamdba"): 1.0,
    ("neuucb-ind", "nu"): 0.01,
    ("metaban", "nu"): 0.01,
}


def test_a_setting_at_our_code_value_leaves_their_code_as_their_run_py_runs_it():
    """Each knob maps our name and scale to theirs: passing our code variant's own value must give their code the
    value it already has, else a setting would silently change their side (Meta-Ban's γ is our (ν − 1)γ/ν)."""
    import parity_ban

    harness = load_harness()
    for algorithm, knobs in parity_ban.KNOBS.items():
        ours = harness.settings_for_theirs(algorithm, {}, {})
        arguments = parity_ban.run_py_arguments(algorithm, 40, 20, 3000)
        for name, knob in knobs.items():
            if isinstance(knob, parity_ban.Literal):
                theirs = knob.old
            else:
                theirs = arguments.get(knob.name, THEIR_DEFAULTS.get((algorithm, knob.name), 100))  # hidden = 100
            assert knob.value(ours, 20) == pytest.approx(theirs), (algorithm, name)


@pytest.mark.parametrize(
    "algorithm,settings,rounds,message",
    [
        ("club", {"alpha": 0.5}, 3000, r"^their CLUB \(club.py\) has no setting for alpha: .*alpha2\)$"),
        ("sclub", {"alpha_p": 2.0}, 3000, "their SCLUB .* no setting for alpha_p"),
        ("sclub", {}, 20_001, "beyond their code's limit of 20000: their SCLUB logs cluster counts"),
        ("cmlb", {"alpha": 0.5}, 3000, r"their CMLB \(bandpy\) has no setting for alpha: .*ucb_alpha"),
        ("eenet", {"decision": "neural"}, 300, "their EE_Net .* no setting for decision"),
        ("club", {"alpha3": 1.0}, 3000, "^club has no hyper-parameter alpha3$"),
    ],
)
def test_a_setting_their_code_cannot_take_is_refused_with_one_line(algorithm, settings, rounds, message):
    harness = load_harness()
    with pytest.raises(SystemExit) as refused:
        harness.check_settings(algorithm, settings, rounds, None)
    assert "\n" not in str(refused.value)
    assert refused.match(message)


@pytest.fixture(scope="module")
def small_pools(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pools")
    return parity_pools.write(
        folder, name="movie", users=60, groups=GROUPS, tastes=3, items=100, liked=30, disliked=8, spread=0.2
    )


def test_the_command_refuses_before_running_or_writing_anything(small_pools, tmp_path, monkeypatch):
    (tmp_path / "club.py").write_text("")
    out = tmp_path / "out.json"
    argv = ["parity.py", "--reference-dir", str(tmp_path), "--pools", str(small_pools), "--algos", "club"]
    monkeypatch.setattr(sys, "argv", [*argv, "--set", "alpha=0.5", "--out", str(out)])
    with pytest.raises(SystemExit) as refused:
        load_harness().main()
    assert "has no setting for alpha" in str(refused.value) and not out.exists()


@pytest.mark.parametrize(
    "option, message",
    [
        (["--margin", "0"], "--margin is a share of their mean, between 0 and 1"),
        (["--margin", "1"], "--margin is a share of their mean, between 0 and 1"),
        (["--margin", "-0.05"], "--margin is a share of their mean, between 0 and 1"),
        (["--rounds", "9"], "--rounds must be at least 10"),
        (["--runs", "0"], "--runs and --jobs must be at least 1"),
        (["--jobs", "0"], "--runs and --jobs must be at least 1"),
    ],
)
def test_a_margin_outside_zero_to_one_or_too_few_rounds_runs_or_jobs_is_refused(
    option, message, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(sys, "argv", ["parity.py", "--reference-dir", str(tmp_path), "--algos", "club", *option])
    with pytest.raises(SystemExit) as refused:
        load_harness().main()
    assert refused.value.code == 2 and capsys.readouterr().err.strip().endswith(f"error: {message}")


def test_no_two_controls_of_an_algorithm_are_the_same_learner():
    harness = load_harness()
    for algorithm in harness.CONTROLS:
        if harness.FAMILY[algorithm] == "bandpy":  # built from an instance; its two controls are other algorithms
            continue
        learners = harness.learners(algorithm, ["code"], {}, {}, {})
        controls = [repr(v) for k, v in learners.items() if k.startswith("control: ")]
        assert len(set(controls)) == len(controls) > 0, (algorithm, controls)


def test_a_pool_records_each_users_taste_and_its_groups_dislike_exactly_that_kind(tmp_path):
    folder = parity_pools.write(tmp_path, name="t", users=40, groups=8, tastes=2, items=60, liked=6, disliked=4, seed=1)
    np.testing.assert_array_equal(np.load(folder / "t_40users_truth.npy"), (np.arange(40) % 8) % 2)
    rows = np.load(folder / "t_40users_60items_entry.npy")  # (user, item, rating)
    np.testing.assert_array_equal(rows[:, 2] == -1, rows[:, 1] % 2 == (rows[:, 0] % 8) % 2)


def test_settings_reach_every_variant_and_the_controls_that_share_them():
    harness = load_harness()
    every = harness.learners("club", ["code", "default"], {}, {"alpha2": 2.0}, {"ridge": 0.5})
    assert every["code"] == ("club", {"reference_ucb": True, "served_pairs_only": True, "alpha2": 2.0, "ridge": 0.5})
    assert every["default"] == ("club", {"alpha2": 2.0, "ridge": 0.5})
    assert every["control: pooled LinUCB"][1]["alpha2"] == 1e9  # a control keeps what makes it a control
    neural = harness.learners("neuucb-one", ["code"], {}, {"nu": 0.05}, {})
    assert neural["control: untrained"][1]["nu"] == 0.05 and neural["control: untrained"][1]["lr"] == 1e-7
    assert neural["control: no exploration"][1]["nu"] == 0.0
    # CLUB's pooled and independent controls take none of the run's settings: they differ in what makes them controls
    club = harness.learners("club", ["code"], {}, {"ridge": 0.5, "alpha": 0.3}, {})
    pooled, alone = club["control: pooled LinUCB"][1], club["control: independent LinUCB"][1]
    own = ("alpha2", "served_pairs_only")
    assert "ridge" not in alone and {k: v for k, v in pooled.items() if k not in own} == {
        k: v for k, v in alone.items() if k not in own
    }


def test_the_same_arm_is_the_same_whole_context_and_a_tie_either_side_breaks_agrees():
    harness = load_harness()
    arms = np.zeros((4, 3, 2))
    arms[:, :, 0], arms[:, :, 1] = np.arange(3), 0.7  # the second column constant, as the SVD layout's
    assert harness.agreement(arms, [0, 1, 2, 0], [0, 2, 2, 1]) == 0.5
    arms[:, 2] = arms[:, 1]  # two identical entries
    assert harness.agreement(arms, [1, 1, 1, 1], [2, 2, 2, 0]) == 0.75


# ------------------------------------------------------------------------------------------------ end to end
# A stand-in for the authors' repository with their interface only: the loader serves the prepared pools through
# our own recommendation environment (M-CNB's code mode), and CLUB wraps our CLUB with SWITCHES.
STAND_IN_LOADER = """
import tempfile
from pathlib import Path

import numpy as np

from banditbench.data import authors, load_dataset
from banditbench.envs import PROTOCOLS


class load_movielen_dif_user:
    def __init__(self, n_users):
        folder = Path(tempfile.mkdtemp())
        authors.prepare(folder, source=Path("."), mode="mcnb-code", groups=n_users)
        dataset = load_dataset(folder, "authors-movie")
        self.groups = dataset.table("users").sort_values("user")["group"].to_numpy()
        seed = np.random.SeedSequence(int(np.random.randint(2**31)))  # from the global draws the harness seeded
        self.rounds = PROTOCOLS["recommendation"].environment(dataset, seed).rounds(10**6)
        self.num_user, self.n_arm, self.dim = n_users, 10, 20

    def step(self):
        rnd = next(self.rounds)
        return rnd.user, np.array(rnd.arms), np.array(rnd.rewards)
"""
STAND_IN_CLUB = """
import networkx as nx
import numpy as np

from banditbench.algos import ALGORITHMS
from banditbench.envs import Budget
from banditbench.envs.round import Round

SWITCHES = {switches}


class CLUB:
    def __init__(self, nu, d, T=10000):
        params = {{**ALGORITHMS["club"].defaults(), **SWITCHES}}
        seed = np.random.SeedSequence(0)
        self.policy = ALGORITHMS["club"].build(n_users=nu, n_arms=10, dim=d, seed=seed, params=params)

    def recommend(self, i, items, t):
        self.view = Round(t, i, items, np.zeros(len(items)), np.zeros(len(items))).view(Budget())
        self.arm = self.policy.select([self.view], [Budget()])[0]  # a group of one member
        return self.arm

    def store_info(self, i, x, y, t):
        self.reward = y

    def update(self, i, t):
        self.policy.update([self.view], [self.arm], [self.reward])
        self.cluster_inds = self.policy.label[0]
        self.G = nx.from_numpy_array(self.policy.graph[0].astype(int))
"""
CODE_SWITCHES = {"reference_ucb": True, "served_pairs_only": True}
GROUPS, ROUNDS, RUNS = 6, 300, 4


def stand_in(folder: Path, switches: dict, monkeypatch) -> Path:
    """Write the stand-in repository and undo, after the test, what running it in this process changes."""
    folder.mkdir()
    (folder / "load_data.py").write_text(STAND_IN_LOADER)
    (folder / "club.py").write_text(STAND_IN_CLUB.format(switches=repr(switches)))
    import sklearn.cluster

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sklearn.cluster, "KMeans", sklearn.cluster.KMeans)
    monkeypatch.setitem(sys.modules, "torchvision", types.ModuleType("torchvision"))
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(variable, "1")
    for module in ("load_data", "club"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return folder


def harness_entry(harness, reference: Path, pools: Path, monkeypatch) -> dict:
    """The harness's regret comparison of CLUB, every side run in this process instead of a fresh one."""

    def in_process(side, job):
        for module in ("load_data", "club"):
            sys.modules.pop(module, None)  # a fresh import of theirs for every run, as a fresh process has
        return harness.their_worker(job) if side == "theirs" else harness.our_worker(job)

    monkeypatch.setattr(harness, "spawn", in_process)
    args = Namespace(
        variant="code", rounds=ROUNDS, runs=RUNS, jobs=1, margin=0.05, pools=pools, groups=GROUPS, measure="regret"
    )
    args.reference_dir, args.reference_deps = reference, None
    job, instance = harness.prepare_instance("club", args, pools)
    job.update(settings={}, ours={})
    return harness.regret_entry("club", args, job, instance, {}, {})


def test_a_correct_implementation_is_parity_on_a_discriminating_instance(small_pools, tmp_path, monkeypatch):
    harness = load_harness()
    entry = harness_entry(harness, stand_in(tmp_path / "ref", CODE_SWITCHES, monkeypatch), small_pools, monkeypatch)
    code = entry["variants"]["code"]
    assert code["final"] == entry["theirs"]["final"] and np.mean(code["agreement"]) == 1.0  # the same draws
    assert code["verdict"] == "parity", code["reason"]
    assert entry["theirs"]["clusters"] == code["clusters"] and entry["theirs"]["f1"] == code["f1"]


def test_a_wrong_implementation_is_not_parity(small_pools, tmp_path, monkeypatch):
    """Their side never cuts an edge (α₂ = ∞): it is pooled LinUCB, which ours with the code switches is not."""
    harness = load_harness()
    wrong = stand_in(tmp_path / "ref", {**CODE_SWITCHES, "alpha2": 1e9}, monkeypatch)
    entry = harness_entry(harness, wrong, small_pools, monkeypatch)
    assert entry["variants"]["code"]["verdict"] == "differs"
    assert entry["controls"]["pooled LinUCB"]["compare"]["difference"] == 0.0  # theirs is the pooled control


def test_a_commit_is_written_without_the_blobs_the_clone_lacks(tmp_path):
    import subprocess

    import parity_checkout

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "kept.py").write_text("x = 1\n")
    (repo / "data").mkdir()
    (repo / "data" / "lost.npy").write_bytes(b"\x93NUMPY lost")

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two files")
    blob = git("rev-parse", "HEAD:data/lost.npy").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a clone without that blob
    missing = parity_checkout.checkout(repo / ".git", "HEAD", tmp_path / "out")
    assert missing == ["data/lost.npy"]
    assert (tmp_path / "out" / "kept.py").read_text() == "x = 1\n" and not (tmp_path / "out" / "data").exists()
