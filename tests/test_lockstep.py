"""The lockstep engine: which units run together, that a group chooses as its units run alone would, by how much
its batched arithmetic may differ, and that it records itself, checkpoints and resumes like the units engine."""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from banditbench.algos import ALGORITHMS, Policy, plugins, register
from banditbench.algos.neural import MLP, ArmGradients, History, TrainingJob, train_jobs
from banditbench.algos.ridge import RidgeStats
from banditbench.algos.sclub import SCLUB
from banditbench.data import load_dataset, synthetic
from banditbench.envs import PROTOCOLS
from banditbench.envs.round import Budget, Round, RoundView, each_round
from banditbench.runner import unit as runner_unit
from banditbench.runner.checkpoint import Checkpoints
from banditbench.runner.engines import group_units
from banditbench.runner.settings import RunSettings
from banditbench.runner.unit import Lane, Unit, UnitPolicies, build_group, run_group, run_unit

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
from conftest import banditbench  # noqa: E402
from my_policy import EpsilonGreedy  # noqa: E402
from test_checkpoints import table_bytes  # noqa: E402
from test_movielens import prepare_fixture  # noqa: E402
from ties import assert_first_difference_is_rounding, first_difference, lockstep_score_pairs  # noqa: E402

LOCKSTEP = {
    "neuucb-one": {"nu": 1.0, "lam": 0.5},
    "neuucb-ind": {"nu": 1.0, "lam": 0.5},
    "neuralts-ind": {"nu": 1.0, "lam": 0.5},
    "neurallinear": {"alpha": 1.0},
    "neurallinear-ts": {"prior_a": 3.0, "lam": 0.5},
    "eenet": {},  # no per-member hyper-parameters: a group of seeds
    "mcnb": {"gamma": 0.2},
    "metaban": {"alpha": 0.5},
    "club": {"alpha": 0.5, "alpha2": 0.2, "ridge": 0.5},
    "dynucb": {"alpha": 0.5, "ridge": 0.5},
    "bass": {"alpha": 0.5},
    "oful-ind": {"delta": 0.1},
    "cmlb": {},  # no per-member hyper-parameters: a group of seeds
    "sclb": {},
    "pmlb": {},
    "locb": {"alpha": 0.5, "ridge": 0.5, "gamma": 0.4},
    "sclub": {"alpha": 0.5, "alpha1": 0.5, "alpha_p": 1.0, "ridge": 0.5},
    "linucb-ind": {"alpha": 0.5, "ridge": 0.5},
    "linucb-one": {"alpha": 0.5, "ridge": 0.5},
    "cofiba": {"alpha": 0.5, "alpha2": 0.2, "ridge": 0.5},
}
# the groups whose batched products may round differently from the products alone
NEURAL = {"neuucb-one", "neuucb-ind", "neuralts-ind", "neurallinear", "neurallinear-ts", "eenet", "mcnb", "metaban"}
# configurations whose lockstep path differs from the default one: (algorithm, its settings, rounds); the authors'
# single-sample loops are slow, so Meta-Ban's (up to 1000 steps every round) runs fewer rounds
OTHER_PATHS = [
    ("neuucb-ind", {"code_training": True, "schedule": "code"}, 150),
    ("neuralts-ind", {"covariance": "full", "width": 16}, 60),  # the full U, member by member
    ("eenet", {"code_training": True, "code_decision": True}, 60),
    ("eenet", {"decision": "neural", "decision_warmup": 50, "explore_conv": True, "pool": 4}, 150),
    ("eenet", {"gradients": "batched"}, 60),  # members select alone
    ("mcnb", {"code_training": True, "meta_pooled_training": True, "share_with_cluster": False}, 60),
    ("metaban", {"code_training": True, "user_start": "meta", "share_data_with_group": True, "schedule": "code"}, 25),
    ("mcnb", {"group_cap": True, "code_exploration": True}, 60),  # each member caps its groups from its generator
    ("mcnb", {"meta_every_10th_in_place": True}, 60),  # the paper's UCB on Θ adapted every 10th round
    (  # all the authors' switches: members cap their groups alone, and adapt stacked every 10th round
        "mcnb",
        {
            "meta_every_10th_in_place": True,
            "group_cap": True,
            "code_exploration": True,
            "code_threshold": True,
            "code_training": True,
            "meta_pooled_training": True,
            "share_with_cluster": False,
            "schedule": "code",
        },
        60,
    ),
    ("club", {"alpha2": 0.1}, 150),  # many edges cut and components split within 150 rounds
    ("club", {"reference_ucb": True, "served_pairs_only": True, "random_init_graph": True, "alpha2": 0.1}, 150),
    ("dynucb", {"reference_ucb": True, "centroid": "mean", "refresh_on_move": True, "bandpy_clock": True}, 150),
    ("bass", {"gamma": 0.1}, 150),  # a separation test every round and edges cut within 150 rounds
    ("bass", {"gamma": 0.1, "radius_convention": "bandpy", "bandpy_clock": True}, 150),
    ("bass", {"epsilon": 0.1}, 150),  # members step alone
    ("cmlb", {"bandpy_schedule": True, "explore_rounds": 50}, 150),  # members step alone
    ("pmlb", {"literal": True}, 150),
    ("locb", {"reference_ucb": True, "num_seeds": 5}, 150),
    ("sclub", {"reference_ucb": True, "reset_checks": False, "alpha1": 0.3}, 150),
    ("cofiba", {"alpha2": 0.1}, 150),  # user and item edges cut, item clusters split, pooled statistics grown
    ("cofiba", {"alpha2": 0.1, "item_pool": 20, "new_user_graph": "fresh", "random_init_graph": True}, 150),
    ("cofiba", {"alpha2": 0.1, "item_nodes": "slots"}, 150),  # members step alone
    ("cofiba", {"reference_ucb": True, "reference_threshold": True, "frozen_counts": True}, 150),
]


def units(algorithm: str, seeds: int, rounds: int = 150, params=None) -> list[Unit]:
    return [Unit("synthetic", "linear", algorithm, params or {}, 0, i, rounds, None) for i in range(seeds)]


def test_units_engine_runs_every_unit_alone_and_lockstep_groups_the_seeds_of_a_configuration():
    mixed = units("neuucb-one", 4) + units("random", 2) + units("neuucb-one", 2, params={"lr": 0.1})
    assert group_units(mixed, "units", workers=2) == [[u] for u in mixed]
    groups = group_units(mixed, "lockstep", workers=1)
    assert groups == [mixed[:4], [mixed[4]], [mixed[5]], mixed[6:]]
    # cells that differ only in hyper-parameters the policy keeps per member run together with their seeds
    cells = units("neuucb-one", 2, params={"nu": 1.0, "lam": 0.1}) + units("neuucb-one", 2, params={"nu": 0.1})
    assert group_units(cells, "lockstep") == [cells]
    other = units("neuucb-one", 2, params={"lr": 0.1})
    assert group_units(cells + other, "lockstep") == [cells, other]
    # fewer configurations than workers: a configuration's seeds are split into near-equal groups
    assert [len(g) for g in group_units(units("neuucb-one", 5), "lockstep", workers=2)] == [2, 3]
    assert [len(g) for g in group_units(units("neuucb-one", 2), "lockstep", workers=8)] == [1, 1]


@pytest.mark.parametrize(
    "field,value",
    [
        ("dataset", "other"),
        ("protocol", "cosine"),
        ("master_seed", 1),
        ("rounds", 151),
        ("budget", 5),
        ("tuning", True),
        ("env", {"users": 4}),
    ],
)
def test_units_that_differ_in_more_than_seed_and_member_hyper_parameters_never_share_a_group(field, value):
    # a group plays every member on its first unit's problem, rounds and budget: another configuration's unit among
    # them would run wrongly
    first, second = units("linucb-ind", 2)
    other = replace(second, **{field: value})
    assert group_units([first, other], "lockstep") == [[first], [other]]


@pytest.mark.parametrize("algorithm,base,rounds", [(algorithm, {}, 150) for algorithm in LOCKSTEP] + OTHER_PATHS)
def test_a_lockstep_group_chooses_as_its_units_run_alone(dataset, algorithm, base, rounds):
    """On every round, or (the neural groups, whose batched products may round otherwise) up to a round at which a
    rounding difference has grown into another choice (tests/ties.py)."""
    cell = {**base, **LOCKSTEP[algorithm]}
    group = units(algorithm, 2, rounds, params=base) + units(algorithm, 2, rounds, params=cell)
    together = run_group(group, dataset)
    for member, (unit, result) in enumerate(zip(group, together)):
        alone = run_unit(unit, dataset).outcome
        parted = first_difference(result.outcome["chosen"].to_numpy(), alone["chosen"].to_numpy())
        if parted is not None:
            assert algorithm in NEURAL, f"{unit.id} parted at round {parted} where the arithmetic is exact"
            assert_first_difference_is_rounding(lockstep_score_pairs(group, member, dataset, parted))
        np.testing.assert_allclose(result.outcome["regret"].to_numpy()[:parted], alone["regret"].to_numpy()[:parted])


def test_metaban_members_with_different_meta_rates_run_their_code_loops_apart_and_choose_as_alone(dataset):
    # η₂ is the learning rate of the code's meta loop: members with the same η₂ share one stacked loop
    base = {"code_training": True, "user_start": "meta", "share_data_with_group": True, "schedule": "code"}
    group = [unit for eta2 in (1e-2, 1e-3) for unit in units("metaban", 2, 25, params={**base, "eta2": eta2})]
    assert group_units(group, "lockstep") == [group]
    for unit, result in zip(group, run_group(group, dataset)):
        alone = run_unit(unit, dataset).outcome
        assert result.outcome.column("chosen").equals(alone.column("chosen")), unit.id
        np.testing.assert_allclose(result.outcome["regret"].to_numpy(), alone["regret"].to_numpy())


@pytest.mark.parametrize(
    "algorithm,params", [("cmlb", {"horizon": 20}), ("sclb", {"C": 0.01}), ("pmlb", {"horizon": 400})]
)
def test_ghosh_groups_on_synchronous_steps_write_their_units_shards_bit_for_bit(tmp_path, algorithm, params):
    # all users of a step see the same arms: a cluster's OFUL (PMLB's common one) chooses once a step, its other users
    # replay that choice without reading the arms, and the step's mean reward updates it when the next step begins;
    # noisy rewards give every seed its own clusters, so one member replays where another chooses
    synthetic.prepare(tmp_path, users=20, clusters=4, dim=5, arms=10, noise=1.0, z=0.0, seed=0)
    dataset = load_dataset(tmp_path, "synthetic")
    group = [Unit("synthetic", "synchronous", algorithm, params, 0, i, 600, None) for i in range(3)]
    for unit, result in zip(group, run_group(group, dataset)):
        alone = run_unit(unit, dataset).outcome
        assert table_bytes(result.outcome) == table_bytes(alone), unit.id
        assert (alone["budget_spent"].to_numpy() == 0).any()  # clusters of several users replayed their choices


# two grid cells of lockstep_params per algorithm (default: α 0.3, then λ 2); BASS at γ = 0.1 tests pairs and cuts
# edges in every group
CELLS = {
    "bass": ({"gamma": 0.1, "alpha": 0.3}, {"gamma": 0.1, "alpha": 2.0}),
    "oful-ind": ({}, {"delta": 0.1}),
    "cmlb": ({}, {}),
    "sclb": ({}, {}),
    "pmlb": ({}, {}),
    "cofiba": ({"alpha2": 0.1, "alpha": 0.3}, {"alpha2": 0.1, "ridge": 2.0}),
}


@pytest.mark.parametrize(
    "algorithm",
    [
        "club",
        "dynucb",
        "locb",
        "sclub",
        "bass",
        "oful-ind",
        "cmlb",
        "sclb",
        "pmlb",
        "linucb-ind",
        "linucb-one",
        "cofiba",
    ],
)
def test_linear_lockstep_groups_write_their_units_shards_bit_for_bit(dataset, algorithm):
    # their batched products are stacked matmuls, which compute every member's slice exactly as a unit alone does
    first, second = CELLS.get(algorithm, ({"alpha": 0.3}, {"ridge": 2.0}))
    group = units(algorithm, 2, 150, params=first) + units(algorithm, 2, 150, params=second)
    for unit, result in zip(group, run_group(group, dataset)):
        assert table_bytes(result.outcome) == table_bytes(run_unit(unit, dataset).outcome), unit.id


@pytest.mark.parametrize(
    "settings", [{}, {"reference_threshold": True}, {"reference_threshold": True, "frozen_counts": True}]
)
def test_cofiba_group_edge_test_is_each_members_own_row_by_row(settings):
    # the reference threshold cuts no edge in a short run, so the group's test is compared with its members' directly
    rng = np.random.default_rng(3)
    spec, problem = ALGORITHMS["cofiba"], {"n_users": 6, "n_arms": 4, "dim": 3}
    cells = [{**settings, "alpha2": alpha2} for alpha2 in (0.5, 2.0)]
    seeds = [np.random.SeedSequence(s) for s in range(2)]
    group = spec.build_members(**problem, seeds=seeds, params=cells)
    alone = [spec.build(**problem, seed=seed, params=cell) for seed, cell in zip(seeds, cells)]
    for t in range(30):  # users pulled unequally often, so their thresholds differ
        views = [RoundView(t, int(rng.integers(3)), rng.normal(size=(4, 3))) for _ in alone]
        chosen, rewards = group.select(views, [None] * 2), rng.normal(size=2).tolist()
        group.update(views, chosen, rewards)
        for policy, view, arm, reward in zip(alone, views, chosen, rewards):
            assert policy.select([view], [None]) == [arm]
            policy.update([view], [arm], [reward])
    member, served = rng.integers(2, size=40), rng.integers(6, size=40)
    predicted = rng.normal(scale=8.0, size=(40, 6))  # gaps on both sides of every threshold
    spread = rng.uniform(0.1, 1.0, size=(40, 6))
    log_t = np.log(32)
    batched = group._far(predicted, spread, served, member, log_t)
    own = [alone[m]._far(p[None], q[None], [i], [0], log_t)[0] for m, p, q, i in zip(member, predicted, spread, served)]
    assert np.array_equal(batched, own) and 0 < batched.mean() < 1


def test_a_sclub_group_merges_exactly_where_its_units_alone_merge(dataset, monkeypatch):
    # the group tests every fully checked member's clusters at once and joins clusters member by member
    joined = []
    join = SCLUB._join

    def recording(policy, m, c, k):
        joined.append((c, k))
        join(policy, m, c, k)

    monkeypatch.setattr(SCLUB, "_join", recording)
    group = units("sclub", 2, 300, params={"alpha1": 0.5}) + units("sclub", 2, 300, params={"alpha1": 2.0})
    together = run_group(group, dataset)
    joined_together = sorted(joined)
    joined.clear()
    for unit, result in zip(group, together):
        assert table_bytes(result.outcome) == table_bytes(run_unit(unit, dataset).outcome), unit.id
    assert joined_together and joined_together == sorted(joined)


def test_batched_scores_and_training_differ_from_single_ones_by_rounding_only():
    generator = torch.Generator().manual_seed(0)
    mlp = MLP(10)
    theta = torch.stack([mlp.init(generator, torch.device("cpu")) for _ in range(4)])
    x = torch.randn(4, 20, 10, generator=generator)
    batched = ArmGradients(mlp, theta, x)
    for s in range(4):
        alone = ArmGradients(mlp, theta[s], x[s])
        torch.testing.assert_close(batched.f[s], alone.f, rtol=1e-5, atol=1e-6)
        D = torch.rand(mlp.p, generator=generator, dtype=torch.float64)
        torch.testing.assert_close(
            batched.weighted_squares(D.expand(4, -1))[s], alone.weighted_squares(D), rtol=1e-5, atol=1e-9
        )
        assert torch.equal(batched.picked(torch.tensor([3] * 4))[s], alone.row(3))
    jobs = []
    for s in range(3):
        history = History(2, 10, torch.device("cpu"))
        for _ in range(40):
            history.add(
                torch.tensor([s % 2]), torch.randn(10, generator=generator), float(torch.rand(1, generator=generator))
            )
        rows = history.minibatch_rows(torch.tensor([0, 1])[: 1 + s % 2], 8, generator, 5)
        jobs.append(TrainingJob(theta[: len(rows[0])].clone(), rows, history, anchor=None))
    for job, trained in zip(jobs, train_jobs(mlp, jobs, lr=0.01)):
        torch.testing.assert_close(trained, train_jobs(mlp, [job], lr=0.01)[0], rtol=1e-5, atol=1e-6)


def test_a_members_ridge_statistics_update_and_score_bit_for_bit_as_the_member_alone():
    # the batched Sherman–Morrison update and scores of three members against each member's statistics alone, whose
    # single (member, learner) pair takes in-place updates of its views
    rng = np.random.default_rng(0)
    ridges, members = [0.5, 1.0, 2.0], np.arange(3)
    together, alone = RidgeStats(3, 5, 3, ridges), [RidgeStats(1, 5, 3, ridge) for ridge in ridges]
    one = np.zeros(1, dtype=np.int64)
    for _ in range(30):
        learners, x, reward = rng.integers(5, size=3), rng.normal(size=(3, 3)), rng.normal(size=3)
        together.update(members, learners, x, reward)
        for m, stats in enumerate(alone):
            stats.update(one, learners[m : m + 1], x[m : m + 1], reward[m : m + 1])
    arms, alpha = rng.normal(size=(3, 4, 3)), np.array([0.1, 1.0, 2.0])
    for reference in (False, True):
        scores = together.cluster_ucb(members, members, arms, alpha, 7, reference)
        for m, stats in enumerate(alone):
            own = stats.cluster_ucb(one, np.array([m]), arms[m : m + 1], alpha[m : m + 1], 7, reference)
            assert np.array_equal(scores[m], own[0])
    for m, stats in enumerate(alone):
        for name in ("A_inv", "gram", "b", "theta", "logdet", "count"):
            assert np.array_equal(getattr(together, name)[m], getattr(stats, name)[0]), name


def test_a_locb_member_whose_user_no_cluster_holds_scores_with_the_users_own_statistics():
    rng = np.random.default_rng(1)
    spec, problem, params = ALGORITHMS["locb"], {"n_users": 6, "n_arms": 4, "dim": 3}, {"num_seeds": 3}
    group = spec.build_members(**problem, seeds=[np.random.SeedSequence(s) for s in range(3)], params=[params] * 3)
    alone = [spec.build(**problem, seed=np.random.SeedSequence(s), params=params) for s in range(3)]
    for t in range(40):  # each member learns from different rounds
        views = [RoundView(t, int(rng.integers(6)), rng.normal(size=(4, 3))) for _ in alone]
        chosen, rewards = rng.integers(4, size=3).tolist(), rng.normal(size=3).tolist()
        group.update(views, chosen, rewards)
        for policy, view, arm, reward in zip(alone, views, chosen, rewards):
            policy.update([view], [arm], [reward])
    for policy, m in ((group, 1), (group, 2), (alone[1], 0), (alone[2], 0)):
        policy.holds[m, 2] = False  # user 2 has left every cluster of members 1 and 2
    views = [RoundView(40, 2, rng.normal(size=(4, 3))) for _ in alone]
    assert group.select(views, [None] * 3) == [policy.select([view], [None])[0] for policy, view in zip(alone, views)]


def group_of(name: str, params: list[dict], **problem):
    """The policy of a group whose members have these hyper-parameters and seed 0."""
    return ALGORITHMS[name].build_members(**problem, seeds=[np.random.SeedSequence(0) for _ in params], params=params)


def ridge_statistics(state: dict) -> dict:
    """The ridge statistics' A⁻¹ and θ in a member's state, by name."""
    return {
        (name, key): value[key]
        for name, value in state.items()
        if isinstance(value, dict) and "A_inv" in value
        for key in ("A_inv", "theta")
    }


@pytest.mark.parametrize("name", ["linucb-one", "linucb-ind", "club", "sclub", "locb", "cofiba"])
def test_a_linear_group_on_block_encoded_rounds_learns_bit_for_bit_as_its_members_alone(name):
    K, d, n_users = 4, 5, 3
    rng = np.random.default_rng(2)
    theta = rng.standard_normal((K, d))
    params = [{"alpha": 0.2}, {"alpha": 1.0}, {"alpha": 1.0, "ridge": 3.0}]
    problem = {"n_users": n_users, "n_arms": K, "dim": K * d}
    group, alone = group_of(name, params, **problem), [group_of(name, [p], **problem) for p in params]
    for t in range(300):
        rounds = []
        for _ in params:
            contexts = rng.standard_normal((K, d))
            arms = np.zeros((K, K * d))
            for a in range(K):
                arms[a, a * d : (a + 1) * d] = contexts[a]
            rewards = (contexts * theta).sum(1) + 0.1 * rng.standard_normal(K)
            rounds.append(Round(t, int(rng.integers(n_users)), arms, rewards, rewards, block=d))
        views = [rnd.view(Budget()) for rnd in rounds]
        chosen = group.select(views, [Budget()] * 3)
        group.update(views, chosen, [float(rnd.rewards[arm]) for rnd, arm in zip(rounds, chosen)])
        for policy, view, rnd, arm in zip(alone, views, rounds, chosen):
            assert policy.select([view], [Budget()]) == [arm]
            policy.update([view], [arm], [float(rnd.rewards[arm])])
    for m, policy in enumerate(alone):
        assert policy.member_state_dict(0)["block"] == d
        mine, own = ridge_statistics(group.member_state_dict(m)), ridge_statistics(policy.member_state_dict(0))
        corner = {key: mine[key][tuple(map(slice, value.shape))] for key, value in own.items()}  # a group pads
        assert mine and all(np.array_equal(corner[key], own[key]) for key in own)


CODE_SWITCHES = {"meta_every_10th_in_place": True, "group_cap": True, "code_exploration": True, "schedule": "code"}


@pytest.mark.parametrize(
    "name,base,cell,rounds",
    [
        ("neuucb-one", {}, {"nu": 1.0, "lam": 0.5}, 200),
        ("mcnb", {}, {"gamma": 0.2}, 200),
        ("mcnb", CODE_SWITCHES, {"gamma": 0.2}, 100),  # its code exploration scores a member at a time here
        ("neurallinear", {}, {"alpha": 1.0}, 100),  # its choices part from a one-ulp copy of itself at 121 here
    ],
)
def test_a_neural_group_on_block_encoded_rounds_chooses_as_its_members_alone(name, base, cell, rounds):
    from test_speed_shortcuts import _classification

    spec, cells = ALGORITHMS[name], [base, {**base, **cell}, {**base, **cell}]
    seeds = [np.random.SeedSequence(i) for i in range(3)]
    group = spec.build_members(n_users=4, n_arms=4, dim=24, seeds=seeds, params=cells)
    alone = [spec.build(n_users=4, n_arms=4, dim=24, seed=seed, params=p) for seed, p in zip(seeds, cells)]
    scores = [[] for _ in cells]  # per member: (t, its scores in the group, its scores alone) while they agree
    parted = [False] * len(cells)
    for t, rnd in enumerate(_classification(n=600).rounds(rounds)):
        views = [rnd.view(Budget()) for _ in cells]
        together = group.scores(views)
        chosen = group.select(views, [Budget()] * 3)
        group.update(views, chosen, [float(rnd.rewards[arm]) for arm in chosen])
        for m, (policy, view, arm) in enumerate(zip(alone, views, chosen)):
            if parted[m]:
                continue
            scores[m].append((t, together[m], policy.scores([view])[0]))
            own = policy.select([view], [Budget()])[0]
            policy.update([view], [own], [float(rnd.rewards[own])])
            parted[m] = own != arm
    assert group.block == 6
    for m in range(len(cells)):  # equal choices, or a first difference of the scores within rounding (tests/ties.py)
        if parted[m]:
            assert_first_difference_is_rounding(scores[m])


class CrashingCheckpoints(Checkpoints):
    """Stops the run after its second round of saves of ``members`` units, as a kill would."""

    def __init__(self, folder, every: int, members: int = 3):
        super().__init__(folder, every)
        self.saves, self.stop = 0, 2 * members

    def save(self, unit, state):
        super().save(unit, state)
        self.saves += 1
        if self.saves == self.stop:
            raise KeyboardInterrupt


class LoadedCheckpoints(Checkpoints):
    """Records the round of every checkpoint it loads."""

    def __init__(self, folder, every: int):
        super().__init__(folder, every)
        self.loaded = []

    def load(self, unit):
        state = super().load(unit)
        self.loaded.append(None if state is None else state["t"])
        return state


@pytest.mark.parametrize(
    "algorithm,params,rounds,every",
    [
        ("neuucb-one", {}, 100, 30),
        ("club", {"alpha2": 0.1}, 100, 30),
        ("linucb-ind", {}, 100, 30),
        ("cofiba", {"alpha2": 0.1}, 100, 30),  # its pooled statistics grow, so the group stacks them again on resume
        ("cmlb", {"horizon": 5}, 100, 30),  # in the collaborative phase from round 5
        # the environment's blocks of 1 024 rounds: checkpoints at 700 and 1 400 write part of a block, and the
        # resumed group starts within the second block
        ("dynucb", {}, 2600, 700),
        ("linucb-ind", {}, 1100, 512),  # the resumed group starts on the boundary of the environment's second block
    ],
)
def test_a_lockstep_group_resumes_from_its_checkpoints_to_the_same_shards(
    dataset, tmp_path, capsys, algorithm, params, rounds, every
):
    group = units(algorithm, 3, rounds=rounds, params=params)
    uninterrupted = run_group(group, dataset)
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(tmp_path, every))
    capsys.readouterr()
    resumed = run_group(group, dataset, checkpoints=Checkpoints(tmp_path, every))
    assert "restarts from round 0" not in capsys.readouterr().err  # it continued from its checkpoints
    for unit, before, after in zip(group, uninterrupted, resumed):
        assert table_bytes(before.outcome) == table_bytes(after.outcome)
        if algorithm not in NEURAL:  # the ridge family's stacked products are exact; a network's, tests/ties.py
            assert table_bytes(after.outcome) == table_bytes(run_unit(unit, dataset).outcome)


def test_a_group_whose_members_lack_a_common_checkpoint_round_starts_again_from_round_0(dataset, tmp_path):
    group = units("linucb-ind", 3, rounds=100)
    uninterrupted = [table_bytes(r.outcome) for r in run_group(group, dataset)]
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(tmp_path, 30))
    (tmp_path / "checkpoints" / f"{group[0].id}.npz").unlink()  # the others hold round 60
    resumed = LoadedCheckpoints(tmp_path, 30)
    assert [table_bytes(r.outcome) for r in run_group(group, dataset, checkpoints=resumed)] == uninterrupted
    assert resumed.loaded == [None, 60, 60]


@pytest.mark.parametrize(
    "algorithm,params",
    [
        ("linucb-ind", {"alpha": [0.3, 1.0, 2.0]}),
        ("club", {"alpha2": [0.1, 0.2, 1.0]}),
        ("dynucb", {"alpha": [0.3, 1.0, 2.0]}),
        ("locb", {"gamma": [0.2, 0.4, 0.8]}),  # each member draws its own seed users: padded clusters
        ("sclub", {"alpha1": [0.3, 0.5, 2.0]}),  # clusters split and merge
        ("bass", {"alpha": [0.3, 1.0, 2.0], "gamma": [0.1] * 3}),  # edges cut
        ("cmlb", {"horizon": [5] * 3}),  # clustered from step 5: each member's clusters, padded
        ("pmlb", {"horizon": [3600] * 3}),  # common phase, then personal
        ("cofiba", {"alpha2": [0.1, 0.2, 1.0]}),  # each member's pooled slots, padded to the most of any member
        ("blr-ind", {"prior_a": [0.5, 2.0, 6.0]}),  # each member's unused variates and its place in them
    ],
)
def test_checkpoints_saved_in_one_grouping_resume_in_another_to_the_same_shards(dataset, tmp_path, algorithm, params):
    # a checkpoint holds one member's state: units saved alone resume as one group, and a group's members alone
    cells = [{name: values[i] for name, values in params.items()} for i in range(3)]
    group = [Unit("synthetic", "linear", algorithm, cell, 0, i, 100, None) for i, cell in enumerate(cells)]
    expected = [table_bytes(run_unit(unit, dataset).outcome) for unit in group]
    alone, together = tmp_path / "alone", tmp_path / "together"
    for unit in group:
        with pytest.raises(KeyboardInterrupt):
            run_unit(unit, dataset, checkpoints=CrashingCheckpoints(alone, 30, members=1))
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(together, 30))
    as_group = LoadedCheckpoints(alone, 30)
    assert [table_bytes(r.outcome) for r in run_group(group, dataset, checkpoints=as_group)] == expected
    as_units = LoadedCheckpoints(together, 30)
    assert [table_bytes(run_unit(unit, dataset, checkpoints=as_units).outcome) for unit in group] == expected
    assert as_group.loaded == as_units.loaded == [60] * 3


def test_a_groups_progress_adds_up_to_its_units_rounds(dataset):
    # the progress bar's total is units × rounds; 2 300 rounds end within a block of PROGRESS_EVERY
    reported = []
    run_group(units("linucb-ind", 3, rounds=2300), dataset, progress=reported.append)
    assert sum(reported) == 3 * 2300


def test_a_resumed_groups_progress_adds_up_to_its_units_rounds(dataset, tmp_path):
    # resumed at round 1 500, within a block of PROGRESS_EVERY: the rounds before it are reported once
    group = units("linucb-ind", 3, rounds=2300)
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(tmp_path, 750))
    reported, resumed = [], LoadedCheckpoints(tmp_path, 750)
    run_group(group, dataset, progress=reported.append, checkpoints=resumed)
    assert resumed.loaded == [1500] * 3 and sum(reported) == 3 * 2300


@pytest.fixture
def ticking_clock(monkeypatch):
    """The round loop's clock advances by one second each time it is read: the timings are exact counts."""
    ticks = itertools.count()
    monkeypatch.setattr(runner_unit, "time", SimpleNamespace(perf_counter=lambda: float(next(ticks))))


def test_each_unit_of_a_group_is_charged_an_equal_share_of_its_select_and_update_time(dataset, ticking_clock):
    # the group's select and its update each read the clock twice, one tick apart, every round
    for result in run_group(units("linucb-ind", 4, rounds=50), dataset):
        assert result.timing["select_seconds"].to_pylist() == [0.25] * 50
        assert result.timing["update_seconds"].to_pylist() == [0.25] * 50


def test_a_resumed_groups_timings_and_wall_time_are_those_of_an_uninterrupted_run(dataset, tmp_path, ticking_clock):
    # the rounds before the checkpoint keep the shares they were saved with, and the wall time before it is added
    group = units("linucb-ind", 3, rounds=100)
    uninterrupted = run_group(group, dataset, checkpoints=Checkpoints(tmp_path / "whole", 30))
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(tmp_path / "resumed", 30))
    loaded = LoadedCheckpoints(tmp_path / "resumed", 30)
    resumed = run_group(group, dataset, checkpoints=loaded)
    assert loaded.loaded == [60] * 3
    for before, after in zip(uninterrupted, resumed):
        assert table_bytes(after.timing) == table_bytes(before.timing)
        assert after.wall_seconds == before.wall_seconds


class ThinkingAloud(Policy):
    """Plays arm 0 and reports the round's user as the seconds it spent thinking: a time component of its own."""

    timing_columns = ("thinking",)

    def select(self, view, budget):
        self.last_timings = {"thinking": float(view.user)}
        return 0

    def update(self, view, chosen, reward):
        pass


def test_each_unit_of_a_group_records_its_own_members_time_components(dataset, restored_registry):
    # the members see different users, so each unit's component column is its own users
    register("thinking-aloud", ThinkingAloud, paper="test", description="test")
    group = [Unit("synthetic", "linear", "thinking-aloud", {}, 0, i, 50, None) for i in range(3)]
    for result in run_group(group, dataset):
        assert result.timing["thinking_seconds"].to_pylist() == list(map(float, result.outcome["user"].to_pylist()))


@pytest.fixture
def plugin():
    """The example plug-in ε-greedy, registered for one test."""
    name = plugins.resolve(EpsilonGreedy)
    yield name
    del ALGORITHMS[name], plugins.ORIGINS[name]


def test_a_policy_written_for_one_unit_runs_in_a_group_one_object_per_member(dataset, tmp_path, plugin):
    # the adapter steps a plug-in's policies one by one, each from its own stream, and checkpoints each as its unit
    name = plugin
    group = [Unit("synthetic", "linear", name, {"epsilon": 0.3}, 0, i, 90, None) for i in range(2)]
    policy = build_group([Lane(unit, dataset, m) for m, unit in enumerate(group)])
    assert isinstance(policy, UnitPolicies) and len(policy.policies) == 2
    assert policy.member_state_dict(1)["rng"] == policy.policies[1].rng.bit_generator.state
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(tmp_path, 40, members=2))
    resumed = LoadedCheckpoints(tmp_path, 40)
    for unit, result in zip(group, run_group(group, dataset, checkpoints=resumed)):
        assert table_bytes(result.outcome) == table_bytes(run_unit(unit, dataset).outcome), unit.id
    assert resumed.loaded == [80, 80]


def test_a_checkpoint_that_loads_but_breaks_its_policy_restarts_every_member_with_a_warning_each(
    dataset, tmp_path, capsys, plugin
):
    # member 1's regression vector planted with the wrong length: it loads, then fails the group's next round
    from test_reliability_integrity import forged

    group = [Unit("synthetic", "linear", plugin, {"epsilon": 0.1}, 0, i, 90, None) for i in range(2)]
    with pytest.raises(KeyboardInterrupt):
        run_group(group, dataset, checkpoints=CrashingCheckpoints(tmp_path, 40, members=2))
    checkpoints = Checkpoints(tmp_path, 40)
    forged(checkpoints.path(group[1]), lambda state: state["policy"].update(b=np.zeros(2)))
    capsys.readouterr()
    restarted = run_group(group, dataset, checkpoints=checkpoints)
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 2
    for unit, warning in zip(group, warnings):
        assert warning.startswith(f"warning: checkpoint {checkpoints.path(unit)} is unusable")
        assert "failed after resuming from it: ValueError" in warning and warning.endswith("restarts from round 0")
    for unit, result in zip(group, restarted):
        assert table_bytes(result.outcome) == table_bytes(run_unit(unit, dataset).outcome), unit.id


# the protocols whose environments hand out blocks of rounds (``env.blocks``), and the dataset each is tested on
BLOCKS = {"linear": "synthetic", "cosine": "synthetic", "recommendation": "movielens"}


def test_environments_hand_out_in_blocks_the_rounds_they_give_one_by_one(dataset, tmp_path):
    # the runner takes a lockstep group's one-arm rounds from ``blocks`` wherever the environment has it, and a unit
    # alone's from ``rounds``: an environment that gives other rounds one by one must not inherit ``blocks``
    offering = {
        name for name, info in PROTOCOLS.items() if not info.slate and getattr(info.environment, "blocks", None)
    }
    assert offering == set(BLOCKS)
    datasets = {"synthetic": dataset, "movielens": prepare_fixture(tmp_path)[0]}
    for protocol, name in BLOCKS.items():
        environment = PROTOCOLS[protocol].environment
        one_by_one = environment(datasets[name], np.random.SeedSequence(5)).rounds(2100)
        in_blocks = environment(datasets[name], np.random.SeedSequence(5)).blocks(2100)
        pairs = list(itertools.zip_longest(one_by_one, each_round(in_blocks)))
        assert len(pairs) == 2100
        for a, b in pairs:
            assert (a.t, a.user, a.group) == (b.t, b.user, b.group), protocol
            for field in ("arms", "rewards", "expected", "user_features"):
                assert np.array_equal(getattr(a, field), getattr(b, field)), (protocol, field)


def test_run_with_lockstep_records_the_engine_and_writes_every_shard(data_dir, tmp_path):
    out = tmp_path / "out"
    args = ["run", "--dataset", "synthetic", "--algos", "neuucb-one,linucb-ind", "--rounds", "60", "--seeds", "3"]
    done = banditbench(*args, "--engine", "lockstep", "--jobs", "2", "--data-dir", data_dir, "--out", out)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["execution"]["engine"] == "lockstep"
    assert len(list((out / "shards").glob("*-seed?.parquet"))) == 6
    wrong = banditbench(*args, "--engine", "batched", "--data-dir", data_dir, "--out", tmp_path / "other")
    assert wrong.returncode != 0
    assert "--engine must be one of units, lockstep" in wrong.stderr
    assert not (tmp_path / "other").exists()


def test_the_memory_check_counts_every_member_of_the_groups_running_at_once(data_dir, monkeypatch):
    from banditbench.errors import UserError
    from banditbench.runner import experiment

    planned = experiment.plan(
        RunSettings.with_defaults(
            dataset="synthetic", algos=["neuucb-one"], rounds=1000, seeds=10, seed=0, budget=None, params=[]
        ),
        data_dir=data_dir,
    )
    # room for the per-round columns of 3 units: two units at once fit, two groups of 5 seeds do not
    monkeypatch.setattr(experiment, "physical_memory", lambda: experiment.BYTES_PER_ROUND * 1000 * 3)
    experiment.check_sizes(planned, jobs=2, engine="units")
    with pytest.raises(UserError, match="needs about .* or use engine units"):
        experiment.check_sizes(planned, jobs=2, engine="lockstep")
    monkeypatch.setattr(experiment, "physical_memory", lambda: experiment.BYTES_PER_ROUND * 1000 * 10)
    experiment.check_sizes(planned, jobs=2, engine="lockstep")


@pytest.mark.parametrize("algorithm", ["linucb-ind", "neu-au"])
def test_a_group_on_recommendation_blocks_chooses_as_its_units_alone(tmp_path, algorithm):
    # the group's views of a block carry every member's pool features (NeuA+U reads them); its rounds come a block at
    # a time, its units' one by one
    dataset = prepare_fixture(tmp_path)[0]
    group = [Unit("movielens", "recommendation", algorithm, {}, 0, i, 60, None) for i in range(2)]
    for unit, result in zip(group, run_group(group, dataset)):
        alone = run_unit(unit, dataset).outcome
        assert result.outcome.column("chosen").equals(alone.column("chosen")), unit.id
        np.testing.assert_allclose(result.outcome["regret"].to_numpy(), alone["regret"].to_numpy())


def same_state(a, b) -> bool:
    """Two plain states (``state_dict``) equal value for value, arrays and tensors bit for bit."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize(
    "name,cell",
    [
        ("neuucb-ind", "nu"),
        ("neu-au", "nu"),
        ("neurallinear", "alpha2"),  # edges cut in member 1's graph
        ("eenet", None),  # a group of seeds
        ("metaban", "alpha"),  # a member's user-learners
        ("mcnb", "gamma"),
    ],
)
def test_a_neural_members_state_moves_between_groups_of_any_size_unchanged(name, cell):
    # a checkpoint holds one member's state: member 1 of a group saved, loaded into a unit, and back into place 2 of
    # a fresh group (NeuA+U's network is built on its first round, so a fresh policy builds it while loading)
    rng = np.random.default_rng(0)
    spec, problem = ALGORITHMS[name], {"n_users": 3, "n_arms": 4, "dim": 5}
    cells = [{} if cell is None else {cell: value} for value in (0.1, 1.0, 2.0)]
    group = spec.build_members(**problem, seeds=[np.random.SeedSequence(s) for s in range(3)], params=cells)
    for t in range(21):  # two trainings
        views = [RoundView(t, int(rng.integers(3)), rng.normal(size=(4, 5)), user_features=np.ones(2)) for _ in cells]
        chosen = group.select(views, [Budget()] * 3)
        group.update(views, chosen, rng.normal(size=3).tolist())
    saved = group.member_state_dict(1)
    unit = spec.build(**problem, seed=np.random.SeedSequence(9), params=cells[1])
    unit.load_member_state_dict(0, saved)
    assert same_state(unit.member_state_dict(0), saved)
    fresh = spec.build_members(**problem, seeds=[np.random.SeedSequence(s) for s in range(3)], params=cells)
    fresh.load_member_state_dict(2, unit.member_state_dict(0))
    assert same_state(fresh.member_state_dict(2), saved)
    assert not same_state(fresh.member_state_dict(0), saved)  # the other members keep their own state
