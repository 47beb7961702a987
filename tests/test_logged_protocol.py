"""The `logged` protocol through the runner: a policy learns only from the events the evaluator keeps (replay, Li et
al. 2011; rejection sampling, Dudík et al. 2012), the shard records every event, and the report's logged tables
read it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

import banditbench as bb
from banditbench.algos.base import Policy
from banditbench.data import load_dataset, logs
from banditbench.envs.linear import LinearEnvironment
from banditbench.envs.logged import LoggedEnvironment, simulate_log
from banditbench.errors import SettingError, UserError
from banditbench.results.shards import BrokenShard, non_finite
from banditbench.results.units import Unit
from banditbench.runner.engines import group_units

K = 4


class CountingPolicy(Policy):
    """Picks arm (its updates so far) mod K: its choices show exactly which events it learnt from."""

    name = "counting"

    def __init__(self, *, n_users, n_arms, dim, seed):
        super().__init__(n_users=n_users, n_arms=n_arms, dim=dim, seed=seed)
        self.updates = 0

    def select(self, view, budget):
        return self.updates % len(view.arms)

    def update(self, view, chosen, reward):
        self.updates += 1


pytestmark = pytest.mark.usefixtures("restored_registry")  # plugins registered by a test are forgotten after it


def write_log(folder, n: int = 400, propensity=None, seed: int = 0) -> str:
    """A log of ``n`` events over K arms with one-hot arm features; the reward is 1 on arm 0 with probability 0.5."""
    rng = np.random.default_rng(seed)
    action = rng.integers(K, size=n)
    log = logs.Log(
        user=rng.integers(3, size=n),
        action=action,
        reward=((action == 0) & (rng.random(n) < 0.5)).astype(float),
        propensity=np.full(n, 1 / K) if propensity is None else propensity(action),
        arm_features=np.eye(K, dtype=np.float32),
        items=np.array(list("abcd")),
    )
    logs.write_log(folder / "mylog", "mylog", log, logs.log_parameters({"source": "test"}))
    return "mylog"


def run(tmp_path, algos, rounds=400, **options):
    return bb.run(
        algos, dataset="mylog", rounds=rounds, seeds=1, data_dir=tmp_path / "data", out=tmp_path / "out", **options
    )


def shard(results, algorithm: str):
    return pq.read_table(next((results.folder / "shards").glob(f"{algorithm}-seed0.parquet"))).to_pandas()


def test_replay_learns_only_from_the_events_it_matches(tmp_path):
    write_log(tmp_path / "data")
    results = run(tmp_path, [CountingPolicy])
    frame = shard(results, "counting")
    kept_before = np.concatenate([[0], np.cumsum(frame["kept"].to_numpy())[:-1]])
    assert len(frame) == 400 and np.array_equal(frame["chosen"], kept_before % K)  # no update on a skipped event
    assert np.array_equal(frame["kept"], frame["chosen"] == frame["logged"]) and frame["kept"].sum() > 50
    kept = frame["kept"].to_numpy()
    assert np.array_equal(frame["reward"][kept], frame["logged_reward"][kept]) and frame["reward"][~kept].isna().all()
    assert frame["regret"].isna().all() and (frame["acceptance"] == 1.0).all()


def test_a_logged_shard_may_lack_regret_and_skipped_rewards_but_not_a_kept_reward():
    columns = {"t": [0, 1], "regret": [np.nan, np.nan], "kept": [True, False], "reward": [1.0, np.nan]}
    non_finite(pa.table(columns), logged=True)
    with pytest.raises(BrokenShard, match="'regret' holds nan at round 0"):
        non_finite(pa.table(columns))  # a simulated run's shard: regret must be finite
    with pytest.raises(BrokenShard, match="'reward' holds nan at round 0"):
        non_finite(pa.table({**columns, "reward": [np.nan, np.nan]}), logged=True)
    with pytest.raises(BrokenShard, match="lack the column 'kept'"):
        non_finite(pa.table({"t": [0], "reward": [1.0]}), logged=True)


def test_rejection_sampling_keeps_a_matched_event_with_probability_c_over_p(tmp_path):
    write_log(tmp_path / "data", n=2000, propensity=lambda a: np.where(a == 0, 0.7, 0.1))
    with pytest.raises(UserError, match="not logged uniformly at random, so replay would be biased"):
        run(tmp_path, ["random"], env={"evaluator": "replay"})
    results = run(tmp_path, ["random"], rounds=2000)  # auto: rejection, c = the smallest propensity, 0.1
    frame = shard(results, "random")
    assert results.tables.logged.query("estimator == 'replay'").size and set(frame["acceptance"]) == {1.0, 0.1 / 0.7}
    matched_zero = frame[frame["matched"] & (frame["logged"] == 0)]
    assert frame["kept"].le(frame["matched"]).all() and (frame["kept"] == frame["matched"])[frame["logged"] != 0].all()
    assert abs(matched_zero["kept"].mean() - 1 / 7) < 4 * np.sqrt(1 / 7 * 6 / 7 / len(matched_zero))


def test_a_log_refuses_more_rounds_than_events_the_oracle_and_tuning(tmp_path):
    write_log(tmp_path / "data", n=50)
    with pytest.raises(UserError, match="^rounds 51 is more than the 50 events of 'mylog'"):
        run(tmp_path, ["random"], rounds=51)
    with pytest.raises(UserError, match="oracle reads expected rewards, which the log 'mylog' does not have"):
        run(tmp_path, ["oracle"], rounds=50)
    with pytest.raises(UserError, match="^tune_seeds picks the cell of lowest regret, which a log does not have"):
        run(tmp_path, ["linucb-one"], rounds=50, tune_seeds=1, params=["linucb-one.alpha=0.1,1"])
    assert not (tmp_path / "out").exists()


def test_logged_units_run_alone_under_the_lockstep_engine():
    units = [Unit("mylog", "logged", "linucb-ind", {"alpha": 1.0, "ridge": 1.0}, 0, s, 10, None) for s in range(3)]
    assert group_units(units, "lockstep") == [[u] for u in units]
    linear = [Unit("synthetic", "linear", "linucb-ind", {"alpha": 1.0, "ridge": 1.0}, 0, s, 10, None) for s in range(3)]
    assert group_units(linear, "lockstep") == [linear]


def test_the_report_reads_every_estimate_from_the_shards(tmp_path):
    write_log(tmp_path / "data")
    results = run(tmp_path, ["random", "linucb-one"])
    table = results.logged().set_index(["algorithm", "estimator"])
    for algorithm in ("random", "linucb-one"):
        frame = shard(results, algorithm)
        kept, reward = frame["kept"].to_numpy(), frame["logged_reward"].to_numpy()
        assert table.loc[(algorithm, "replay"), "estimate"] == pytest.approx(reward[kept].mean())
        assert table.loc[(algorithm, "replay"), "size"] == kept.sum()
        assert table.loc[(algorithm, "IPS"), "estimate"] == pytest.approx((kept * reward * K).mean())
        assert table.loc[(algorithm, "DM"), "estimate"] == pytest.approx(frame["estimate_chosen"].mean())
    assert table.loc[("random", "replay"), "lift"] == 1.0
    summary = results.summary().set_index("algorithm")
    assert summary.loc["random", "ctr_mean"] == pytest.approx(table.loc[("random", "replay"), "estimate"])
    assert "regret_mean" not in summary  # undefined on a log
    text = results.report("md")
    assert "## mylog: replay CTR after 400 logged events" in text and "### mylog: off-policy estimates" in text
    assert "prepare the full log" in text  # about 100 events kept: the note says so


def test_replay_of_linucb_on_a_uniform_log_agrees_with_its_online_run(tmp_path):
    """Li et al. 2011, Theorem 1: on a uniform log, the kept events are distributed as the policy's online rounds,
    so its replay CTR over m kept events agrees with its online mean reward over m rounds."""
    bb.prepare("synthetic", users=5, clusters=1, dim=5, arms=5, noise=0.1, data_dir=tmp_path)
    env = LinearEnvironment(load_dataset(tmp_path, "synthetic"), np.random.SeedSequence(7))
    log, _ = simulate_log(env, 5000, seed=7)
    logs.write_log(tmp_path / "simlog", "simlog", log, logs.log_parameters({"source": "simulated"}))
    replayed = bb.run(["linucb-ind"], dataset="simlog", rounds=5000, seeds=1, data_dir=tmp_path)
    replay = replayed.logged().query("estimator == 'replay'").iloc[0]
    online = bb.run(["linucb-ind"], dataset="synthetic", rounds=int(replay["size"]), seeds=8, data_dir=tmp_path)
    rewards = online.frame().groupby("seed")["reward"].mean()
    half = 2 * np.hypot(rewards.std(ddof=1) / np.sqrt(len(rewards)), (replay["ci_high"] - replay["ci_low"]) / 4)
    assert abs(replay["estimate"] - rewards.mean()) < half


def test_the_rejection_scale_is_a_propensity_of_the_log_at_the_quantile_asked(tmp_path):
    """c defaults to the smallest propensity (quantile 0), even where most events have a larger one; any quantile
    picks a propensity the log holds (the inverted CDF), never a value between two; a quantile outside [0, 1] is
    refused."""
    rare = write_log(tmp_path / "rare", n=400, propensity=lambda a: np.where(a == 0, 0.1, 0.7))  # ~¼ of events
    dataset = load_dataset(tmp_path / "rare", rare)
    assert LoggedEnvironment(dataset, 0).scale == 0.1
    assert LoggedEnvironment(dataset, 0, {"rejection_quantile": 0.5}).scale == 0.7
    halves = load_dataset(tmp_path / "halves", write_log(tmp_path / "halves", propensity=lambda a: 0.1 + 0.1 * (a > 1)))
    small = int((pq.read_table(LoggedEnvironment(halves, 0).path)["propensity"].to_numpy() == 0.1).sum())
    between = (small - 0.5) / 399  # linear interpolation would give 0.15 here
    assert LoggedEnvironment(halves, 0, {"rejection_quantile": between}).scale in {0.1, 0.2}
    for quantile in (-0.1, 1.5):
        with pytest.raises(SettingError, match="rejection_quantile must be in"):
            LoggedEnvironment.check(dataset, {"evaluator": "auto", "rejection_quantile": quantile}, None)


def test_the_reward_model_estimates_each_arm_at_the_logged_slot_clipped_to_the_rewards_range(tmp_path):
    """A click when arm 0 is logged or the slot is the first: a linear model of it overshoots 1 on arm 0 in slot 1.
    Every event's estimates are its fold's and user's coefficients on the arms' contexts and the event's one-hot
    slot, the features the model was fitted on, clipped to [0, 1]."""
    rng = np.random.default_rng(0)
    n = 600
    action, position = rng.integers(K, size=n), rng.integers(1, 4, size=n)
    log = logs.Log(
        user=rng.integers(3, size=n),
        action=action,
        reward=((action == 0) | (position == 1)).astype(float),
        propensity=np.full(n, 1 / K),
        arm_features=np.eye(K, dtype=np.float32),
        items=np.array(list("abcd")),
        position=position,
    )
    logs.write_log(tmp_path / "slots", "slots", log, logs.log_parameters({"source": "test"}))
    environment = LoggedEnvironment(load_dataset(tmp_path, "slots"), 0)
    fold = np.arange(n) % logs.DEFAULT_FOLDS
    features = logs.model_features(np.broadcast_to(np.eye(K), (n, K, K)), position, 3)
    fitted = np.einsum("nkd,nd->nk", features, environment.theta[fold, log.user])
    estimates = np.array([event.estimates for event in environment.rounds(n)])
    assert fitted.max() > 1.5  # the clip matters
    np.testing.assert_allclose(estimates, np.clip(fitted, 0.0, 1.0), rtol=1e-12, atol=1e-12)


def test_a_simulated_log_draws_the_behaviours_arms_and_records_the_probability_of_the_logged_one(tmp_path):
    bb.prepare("synthetic", users=5, clusters=1, dim=5, arms=3, noise=0.1, data_dir=tmp_path)
    env = LinearEnvironment(load_dataset(tmp_path, "synthetic"), np.random.SeedSequence(0))
    behaviour = np.array([0.6, 0.3, 0.1])
    log, expected = simulate_log(env, 3000, behaviour=lambda _: behaviour, seed=1)
    np.testing.assert_array_equal(log.propensity, behaviour[log.action])
    counts = np.bincount(log.action, minlength=3)
    assert stats.chisquare(counts, 3000 * behaviour).pvalue > 1e-3
    assert expected.shape == (3000, 3) and log.extras.shape == (3000, 3, 5)
