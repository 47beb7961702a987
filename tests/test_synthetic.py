import json

import numpy as np
import pytest
from conftest import banditbench

from banditbench.data import load_dataset, synthetic
from banditbench.envs.linear import LinearEnvironment
from banditbench.errors import UserError
from banditbench.runner import Unit, run_unit


def test_balanced_cluster_sizes():
    assert synthetic.cluster_sizes(10, 3, z=0.0).tolist() == [4, 3, 3]


def test_cluster_sizes_follow_the_power_law():
    sizes = synthetic.cluster_sizes(1000, 4, z=1.0)  # ∝ 1, 1/2, 1/3, 1/4 → 480, 240, 160, 120
    assert sizes.tolist() == [480, 240, 160, 120]
    assert synthetic.cluster_sizes(7, 3, z=2.0).sum() == 7
    # 10 users ∝ 1, 1/2, 1/3: 5.45, 2.73, 1.82; the 2 left after flooring go to the largest remainders
    assert synthetic.cluster_sizes(10, 3, z=1.0).tolist() == [5, 3, 2]


def test_users_share_their_cluster_parameter_on_the_unit_sphere():
    table, _ = synthetic.generate(users=50, clusters=4, dim=6, z=0.5, seed=3)
    theta = table.filter(like="theta_").to_numpy()
    np.testing.assert_allclose(np.linalg.norm(theta, axis=1), 1.0)
    for _, members in table.groupby("cluster"):
        assert len(np.unique(members.filter(like="theta_").to_numpy(), axis=0)) == 1
    assert table["cluster"].nunique() == 4


def test_prepare_writes_parquet_and_manifest(data_dir):
    manifest = json.loads((data_dir / "synthetic" / "manifest.json").read_text())
    assert manifest["protocol"] == "linear"
    assert manifest["parameters"] == {
        "users": 20,
        "clusters": 2,
        "dim": 5,
        "arms": 10,
        "noise": 0.1,
        "z": 0.0,
        "seed": 0,
    }
    assert manifest["tables"]["users"]["rows"] == 20
    assert len(manifest["tables"]["users"]["sha256"]) == 64
    assert not [p for p in data_dir.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_prepare_is_deterministic(tmp_path):
    for folder in ("a", "b"):
        synthetic.prepare(tmp_path / folder, users=30, clusters=3, dim=4, arms=5, noise=0.2, z=1.0, seed=7)
    assert (tmp_path / "a/synthetic/users.parquet").read_bytes() == (
        tmp_path / "b/synthetic/users.parquet"
    ).read_bytes()
    assert (tmp_path / "a/synthetic/manifest.json").read_bytes() == (
        tmp_path / "b/synthetic/manifest.json"
    ).read_bytes()


def test_preparing_again_with_the_same_parameters_changes_nothing(data_dir):
    manifest = data_dir / "synthetic" / "manifest.json"
    before = manifest.stat().st_mtime_ns
    synthetic.prepare(data_dir, users=20, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=0)
    assert manifest.stat().st_mtime_ns == before


def test_prepare_refuses_to_replace_without_force(data_dir):
    before = (data_dir / "synthetic" / "users.parquet").read_bytes()
    with pytest.raises(UserError, match="--force"):
        synthetic.prepare(data_dir, users=30, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=1)
    assert (data_dir / "synthetic" / "users.parquet").read_bytes() == before
    synthetic.prepare(data_dir, users=30, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=1, force=True)
    assert load_dataset(data_dir, "synthetic").parameters["users"] == 30


def test_environment_draws_contexts_with_covariance_identity_over_d(dataset):
    env = LinearEnvironment(dataset, np.random.SeedSequence(0))
    arms = np.concatenate([r.arms for r in env.rounds(2000)])
    np.testing.assert_allclose(arms.var(axis=0), 1 / 5, rtol=0.05)
    rounds = list(LinearEnvironment(dataset, np.random.SeedSequence(0)).rounds(2000))
    noise = np.concatenate([r.rewards - r.expected for r in rounds])
    assert noise.std() == pytest.approx(0.1, rel=0.03)
    users = np.array([r.user for r in rounds])
    assert set(users) == set(range(20))
    assert all(r.group == env.group_of[r.user] for r in rounds)


# --- BASS's fixed arm set (bass.md §4.2): K/M arms x = θ_m + 0.5 ‖θ_m‖ ξ around each centre, served every round ---

BASS_SETUP = dict(users=18, clusters=2, dim=5, arms=10, noise=1.0, z=0.0, seed=0, centres="bass")


@pytest.fixture(scope="module")
def fixed_arms(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fixed")
    synthetic.prepare(folder, **BASS_SETUP, arm_set="fixed")
    return load_dataset(folder, "synthetic")


def test_fixed_arm_set_has_k_over_m_arms_around_each_centre_at_half_the_centre_norm():
    users, arms = synthetic.generate(users=18, clusters=2, dim=5, z=0.0, seed=0, centres="bass", arms=4000)
    x = arms.filter(like="x_").to_numpy()
    theta = synthetic.bass_centres(2, 5, np.pi / 4)
    assert arms["cluster"].tolist() == [0] * 2000 + [1] * 2000
    for m in (0, 1):
        offsets = x[arms["cluster"] == m] - theta[m]  # 0.5 ξ, ξ ~ N(0, I_5), ‖θ_m‖ = 1
        np.testing.assert_allclose(offsets.mean(axis=0), 0.0, atol=0.05)
        np.testing.assert_allclose(np.cov(offsets.T), 0.25 * np.eye(5), atol=0.03)
    # the arms are drawn after the users, so the users are those of the default arm set
    assert users.equals(synthetic.generate(users=18, clusters=2, dim=5, z=0.0, seed=0, centres="bass")[0])
    uneven = synthetic.generate(users=18, clusters=3, dim=5, z=0.0, seed=0, centres="bass", arms=10)[1]
    assert uneven["cluster"].value_counts().sort_index().tolist() == [4, 3, 3]


def test_fixed_arm_set_is_recorded_in_the_manifest(fixed_arms):
    assert fixed_arms.parameters == {**BASS_SETUP, "arm_set": "fixed"}
    assert fixed_arms.manifest["tables"]["arms"]["rows"] == 10
    assert fixed_arms.table("arms").filter(like="x_").shape == (10, 5)


def test_every_round_serves_exactly_the_fixed_arms_with_linear_rewards(fixed_arms):
    env = LinearEnvironment(fixed_arms, np.random.SeedSequence(0))
    arm_set = fixed_arms.table("arms").filter(like="x_").to_numpy()
    rounds = list(env.rounds(3000))
    assert all(np.array_equal(r.arms, arm_set) for r in rounds)
    theta = fixed_arms.table("users").filter(like="theta_").to_numpy()
    expected = np.array([r.expected for r in rounds])
    np.testing.assert_allclose(expected, theta[[r.user for r in rounds]] @ arm_set.T)
    noise = np.concatenate([r.rewards - r.expected for r in rounds])
    assert noise.std() == pytest.approx(1.0, rel=0.03)
    assert noise.mean() == pytest.approx(0.0, abs=0.01)


def test_default_arm_set_keeps_its_dataset_stream_and_shards(tmp_path, dataset):
    # figures of the data_dir fixture pinned before the fixed arm set existed (two blocks of the stream)
    last = list(LinearEnvironment(dataset, np.random.SeedSequence(0)).rounds(2000))[-1]
    assert last.user == 11
    np.testing.assert_allclose(last.arms[0, :2], [-0.08890934716230604, -0.11133146779368237], rtol=1e-12)
    np.testing.assert_allclose(last.rewards[:2], [-0.44147886258348346, -0.31149046900418415], rtol=1e-12)
    shard = run_unit(Unit("synthetic", "linear", "linucb-ind", {}, 0, 0, 2000, None), dataset).outcome.to_pandas()
    assert shard["regret"].sum() == pytest.approx(76.12901633573318, rel=1e-12)
    assert shard["reward"].sum() == pytest.approx(1299.8958627607176, rel=1e-12)
    assert "arms" not in dataset.manifest["tables"] and "arm_set" not in dataset.parameters
    synthetic.prepare(
        tmp_path / "explicit", users=20, clusters=2, dim=5, arms=10, noise=0.1, z=0.0, seed=0, arm_set="fresh"
    )
    for name in ("users.parquet", "manifest.json"):
        assert (tmp_path / "explicit/synthetic" / name).read_bytes() == (dataset.path / name).read_bytes()


# --- BASS's instance as the preset declares it (Cherkaoui et al. 2025, §7, App. R): unit-norm arms ---


def best_arm_is_shared(arm_set: str, omega: float, seed: int) -> bool:
    """Whether one arm is the best arm of both clusters of BASS's two-cluster instance (N = 18, K = 10, d = 5)."""
    _, arms = synthetic.generate(18, 2, 5, 0.0, seed, "bass", omega, 10, unit=arm_set == "unit")
    best = (synthetic.bass_centres(2, 5, omega) @ arms.filter(like="x_").to_numpy().T).argmax(axis=1)
    return best[0] == best[1]


def test_unit_arm_set_is_bandpys_arms_scaled_to_unit_norm_around_the_papers_centres():
    users, unit = synthetic.generate(18, 2, 5, 0.0, 0, "bass", np.pi / 4, 10, unit=True)
    _, raw = synthetic.generate(18, 2, 5, 0.0, 0, "bass", np.pi / 4, 10)
    x, bandpy = unit.filter(like="x_").to_numpy(), raw.filter(like="x_").to_numpy()
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0)  # ‖x‖ ≤ L = S = 1 (Assumption 4.1)
    np.testing.assert_allclose(x, bandpy / np.linalg.norm(bandpy, axis=1, keepdims=True))  # the same directions
    assert unit["cluster"].tolist() == [0] * 5 + [1] * 5  # K/M arms around each centre
    # θ_1 = e_1, θ_2 = cos ω e_1 + sin ω e_2 (§7): unit norm, Δ = 2 sin(ω/2) apart, 9 agents each
    theta = users.filter(like="theta_").to_numpy()
    np.testing.assert_allclose(
        np.unique(theta, axis=0), [[np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0, 0], np.eye(5)[0]]
    )
    assert np.bincount(users["cluster"]).tolist() == [9, 9]


def test_the_preset_instance_has_a_best_arm_of_its_own_in_each_cluster(tmp_path):
    # bandpy's unnormalised arms make a long arm between the close centres best for both clusters in about a third
    # of the draws at ω = π/4, among them the preset's seed 0, where no clustering can matter; scaled, rarely
    assert best_arm_is_shared("fixed", np.pi / 4, seed=0) and not best_arm_is_shared("unit", np.pi / 4, seed=0)
    shared = {a: np.mean([best_arm_is_shared(a, np.pi / 4, seed) for seed in range(200)]) for a in ("fixed", "unit")}
    assert shared["fixed"] > 0.25 and shared["unit"] < 0.1
    from banditbench import presets

    synthetic.prepare(tmp_path, **presets.PRESETS["bass-synthetic"]["data"], seed=0)
    env = LinearEnvironment(load_dataset(tmp_path, "synthetic"), np.random.SeedSequence(0))
    rounds = list(env.rounds(500))
    played = {int(np.argmax(r.expected)) for r in rounds}  # what the oracle plays
    assert len(played) == 2 and {r.group for r in rounds if np.argmax(r.expected) == min(played)} == {0}
    noise = np.concatenate([r.rewards - r.expected for r in rounds])
    assert noise.std() == pytest.approx(1.0, rel=0.05)  # "a centered and normalized Gaussian noise"


def test_fixed_arm_set_rejects_what_it_cannot_serve(tmp_path):
    for options, message in (
        ({"arm_set": "grid"}, "--arm-set must be one of fresh, unit, fixed"),
        ({"arm_set": "fixed", "protocol": "synchronous"}, "needs --protocol linear"),
        ({"arm_set": "fixed", "arms": 1}, r"needs --arms \(1\) at least --clusters \(2\)"),
    ):
        with pytest.raises(UserError, match=message):
            synthetic.prepare(tmp_path, **(BASS_SETUP | options))
    assert not list(tmp_path.iterdir())


def test_bass_beats_independent_linucb_on_the_fixed_arm_bass_setup(fixed_arms):
    # ω = π/4 (the "similar" scenario): pooling the 18 agents pays long before any pair is told apart
    for seed_index in (0, 1):
        regret = {
            algorithm: run_unit(Unit("synthetic", "linear", algorithm, params, 0, seed_index, 3000, None), fixed_arms)
            .outcome.to_pandas()["regret"]
            .sum()
            for algorithm, params in (("bass", {"sigma": 1.0}), ("linucb-ind", {}), ("random", {}))
        }
        assert regret["bass"] < 0.5 * regret["linucb-ind"] < 0.5 * regret["random"]


def test_prepare_synthetic_command_takes_the_arm_set(tmp_path):
    ok = banditbench(
        "prepare",
        "synthetic",
        "--users",
        18,
        "--clusters",
        2,
        "--dim",
        5,
        "--arms",
        10,
        "--noise",
        1,
        "--centres",
        "bass",
        "--arm-set",
        "fixed",
        "--data-dir",
        tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "synthetic/manifest.json").read_text())["parameters"]["arm_set"] == "fixed"
    bad = banditbench(
        "prepare", "synthetic", "--arm-set", "fixed", "--protocol", "synchronous", "--data-dir", tmp_path / "other"
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --arm-set fixed needs --protocol linear, got 'synchronous'"
    assert not (tmp_path / "other").exists()
