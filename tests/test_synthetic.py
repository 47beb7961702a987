import json

import numpy as np
import pytest

from banditbench.data import load_dataset, synthetic
from banditbench.envs.linear import LinearEnvironment
from banditbench.errors import UserError


def test_balanced_cluster_sizes():
    assert synthetic.cluster_sizes(10, 3, z=0.0).tolist() == [4, 3, 3]


def test_cluster_sizes_follow_the_power_law():
    sizes = synthetic.cluster_sizes(1000, 4, z=1.0)  # ∝ 1, 1/2, 1/3, 1/4 → 480, 240, 160, 120
    assert sizes.tolist() == [480, 240, 160, 120]
    assert synthetic.cluster_sizes(7, 3, z=2.0).sum() == 7


def test_users_share_their_cluster_parameter_on_the_unit_sphere():
    table = synthetic.generate(users=50, clusters=4, dim=6, z=0.5, seed=3)
    theta = table.filter(like="theta_").to_numpy()
    np.testing.assert_allclose(np.linalg.norm(theta, axis=1), 1.0)
    for _, members in table.groupby("cluster"):
        assert len(np.unique(members.filter(like="theta_").to_numpy(), axis=0)) == 1
    assert table["cluster"].nunique() == 4


def test_prepare_writes_parquet_and_manifest(data_dir):
    manifest = json.loads((data_dir / "synthetic" / "manifest.json").read_text())
    assert manifest["protocol"] == "linear"
    assert manifest["parameters"] == {"users": 20, "clusters": 2, "dim": 5, "arms": 10, "noise": 0.1, "z": 0.0,
                                      "seed": 0}
    assert manifest["tables"]["users"]["rows"] == 20
    assert len(manifest["tables"]["users"]["sha256"]) == 64
    assert not [p for p in data_dir.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_prepare_is_deterministic(tmp_path):
    for folder in ("a", "b"):
        synthetic.prepare(tmp_path / folder, users=30, clusters=3, dim=4, arms=5, noise=0.2, z=1.0, seed=7)
    assert (tmp_path / "a/synthetic/users.parquet").read_bytes() == (tmp_path / "b/synthetic/users.parquet").read_bytes()
    assert (tmp_path / "a/synthetic/manifest.json").read_bytes() == (tmp_path / "b/synthetic/manifest.json").read_bytes()


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
