"""`prepare obd`: the Open Bandit Dataset's files read into the logged form, every bad value refused by file and line
before anything is written, and the reward model's cross-fitting."""

import json

import numpy as np
import pytest
from fixtures_logs import OBD_ITEMS, obd_rows, write_obd
from fixtures_raw import SHARED

from banditbench import presets
from banditbench.data import load_dataset, logs, obd
from banditbench.errors import UserError
from banditbench.runner import declared_data

OBD_SMALL = SHARED / "obd-small"


def prepare(tmp_path, raw, **options):
    return obd.prepare_obd(tmp_path / "ds", source=str(raw), offline=True, **options)


def test_an_obd_log_becomes_events_arms_and_a_reward_model(tmp_path):
    raw = write_obd(tmp_path / "raw", n_rows=60)
    with pytest.raises(UserError, match="all.csv: row count mismatch, expected 1,374,327 rows"):
        prepare(tmp_path, raw)  # neither the obp sample nor the full release
    prepare(tmp_path, raw, verify=False)
    dataset = load_dataset(tmp_path / "ds", "obd")
    counts, events = dataset.manifest["counts"], dataset.table("events")
    assert dataset.manifest["verification"] == "unverified" and dataset.manifest["protocol"] == "logged"
    rows = obd_rows(60)
    assert events["action"].tolist() == [r[2] for r in rows] and events["reward"].tolist() == [r[4] for r in rows]
    assert events["position"].tolist() == [r[3] for r in rows] and np.allclose(events["propensity"], 1 / 80)
    assert events["fold"].tolist() == [t % 2 for t in range(60)]
    # user = the combination of the four hashed features, the most frequent first; one-hot features 2 per feature
    combos = ["|".join(r[6:10]) for r in rows]
    assert combos.count(combos[events["user"].tolist().index(0)]) == max(map(combos.count, combos))
    assert counts["users"] == len(set(combos)) and counts["user_feature_dim"] == 8
    assert counts["uniform_log"] and counts["context_dim"] == 1 + 3 + 5 + 2 + 1  # f0, 3 one-hots, affinity
    assert counts["expected_replay_matches"] == round(60 / 80)
    affinity = np.stack(events["extras"].to_numpy())
    assert np.array_equal(affinity, np.array([r[10:] for r in rows], np.float32))
    assert len(dataset.table("reward_model")) == 2 * (counts["users"] + 1)


def test_without_affinity_every_event_shares_the_catalogue(tmp_path):
    prepare(tmp_path, write_obd(tmp_path / "raw"), verify=False, affinity=False)
    dataset = load_dataset(tmp_path / "ds", "obd")
    assert "extras" not in dataset.table("events") and dataset.manifest["counts"]["context_dim"] == 11


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        (5, "", "no propensity_score"),
        (5, 0.0, "propensity_score 0 is not a probability of a logged action"),
        (5, 1.5, "propensity_score 1.5 is above 1"),
        (2, 80, "item_id 80 is above 79"),
        (4, "", "no click"),
        (4, 2, "click 2 is above 1"),
    ],
)
def test_a_bad_value_is_refused_by_file_and_line_and_nothing_is_written(tmp_path, column, value, problem):
    rows = obd_rows(30)
    rows[7][column] = value
    raw = write_obd(tmp_path / "raw", rows=rows)
    with pytest.raises(UserError, match=rf"all.csv, line 9: {problem}"):
        prepare(tmp_path, raw, verify=False)
    assert not (tmp_path / "ds").exists()


def test_a_log_without_its_click_column_is_refused(tmp_path):
    raw = write_obd(tmp_path / "raw", n_rows=10)
    path = raw / "random" / "all.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(",".join(line.split(",")[:4] + line.split(",")[5:]) for line in lines) + "\n")
    with pytest.raises(UserError, match="all.csv: .*(header|fields)"):
        prepare(tmp_path, raw, verify=False)
    assert not (tmp_path / "ds").exists()


def test_an_item_file_missing_an_item_is_refused(tmp_path):
    raw = write_obd(tmp_path / "raw", n_rows=10)
    path = raw / "random" / "item_context.csv"
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(UserError, match=f"item_context.csv: 79 items, the campaign has {OBD_ITEMS}"):
        prepare(tmp_path, raw, verify=False)


def test_the_reward_model_is_cross_fitted_and_shrunk_towards_the_pooled_fit():
    """Fold f's coefficients come from the other fold only; a user without events there gets the pooled fit; with
    one user the fit is the ridge solution (XᵀX + λI)⁻¹Xᵀr of the other fold."""
    rng = np.random.default_rng(0)
    n, K = 200, 4
    features = rng.normal(size=(K, 3)).astype(np.float32)
    log = logs.Log(
        user=np.zeros(n, np.int64),
        action=rng.integers(K, size=n),
        reward=rng.normal(size=n),
        propensity=np.full(n, 1 / K),
        arm_features=features,
        items=np.arange(K).astype(str),
    )
    fold, theta = logs.fit_reward_model(log, folds=2, ridge=0.5)
    for f in (0, 1):
        other = fold != f
        x = features[log.action[other]].astype(np.float64)
        expected = np.linalg.solve(x.T @ x + 0.5 * np.eye(3), x.T @ log.reward[other])
        assert np.allclose(theta[f, 1], expected)  # the pooled fit θ₀
        shrunk = np.linalg.solve(x.T @ x + 0.5 * np.eye(3), x.T @ log.reward[other] + 0.5 * expected)
        assert np.allclose(theta[f, 0], shrunk)  # the only user's fit: ridge towards θ₀
    log.user = np.where(np.arange(n) % 2 == 0, 0, 1)  # user 1's events all fall in fold 1
    fold, theta = logs.fit_reward_model(log, folds=2, ridge=0.5)
    assert np.allclose(theta[1, 1], theta[1, 2])  # fold 1's model never saw user 1: the pooled fit


def test_check_log_names_the_first_bad_event():
    log = logs.Log(
        user=np.zeros(3, np.int64),
        action=np.array([0, 5, 1]),
        reward=np.zeros(3),
        propensity=np.full(3, 0.5),
        arm_features=np.zeros((2, 1), np.float32),
        items=np.array(["a", "b"]),
    )
    with pytest.raises(UserError, match="mine, event 2: the logged action 5 is not among the arms offered"):
        logs.check_log(log, "mine")
    log.action[1], log.propensity[2] = 1, 0.0
    with pytest.raises(UserError, match=r"mine, event 3: propensity 0 is outside \(0, 1\]"):
        logs.check_log(log, "mine")
    log.propensity[2], log.reward[0] = 0.5, np.nan
    with pytest.raises(UserError, match="mine, event 1: reward nan is missing"):
        logs.check_log(log, "mine")


@pytest.mark.skipif(not OBD_SMALL.is_dir(), reason="needs ../shared/datasets/obd-small")
@pytest.mark.parametrize("policy", ["random", "bts"])
def test_the_obp_sample_is_verified_by_its_checksums(tmp_path, policy):
    prepare(tmp_path, OBD_SMALL, policy=policy)
    manifest = json.loads((tmp_path / "ds" / "obd" / "manifest.json").read_text())
    counts = manifest["counts"]
    assert manifest["verification"] == "verified" and all(r["verified"] for r in manifest["raw_files"])
    assert counts["events"] == 10_000 and counts["arms"] == 80 and counts["uniform_log"] == (policy == "random")
    assert counts["clicks"] == {"random": 38, "bts": 42}[policy]


def test_the_replay_preset_refuses_the_bts_log_with_the_command_that_prepares_the_uniform_one(tmp_path):
    """Replay is unbiased only on the uniform log (Li et al. 2011), so obd-replay declares it."""
    prepare(tmp_path, write_obd(tmp_path / "raw", policy="bts", n_rows=60), policy="bts", verify=False)
    declared = presets.preset_settings("obd-replay")["prepared-with"]
    with pytest.raises(UserError, match="with policy = random, but .* with policy = bts; prepare it with: .* --force"):
        declared_data.check(tmp_path / "ds", "obd", declared, allow_stand_in=False, who="preset obd-replay")
    stand_in = declared_data.check(tmp_path / "ds", "obd", declared, allow_stand_in=True, who="preset obd-replay")
    assert stand_in == {"policy": {"needed": "random", "prepared": "bts"}}
