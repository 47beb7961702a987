"""The learned logistic propensity of the IPS simulator (`simulator train --propensity learned`): the display
samples, the model, its clipping, its figures beside the empirical propensity's, and the command end to end."""

import json
import re

import numpy as np
import pytest
import torch
from conftest import banditbench
from fixtures_logged import prepare_both

from banditbench.errors import UserError
from banditbench.simulator import ips
from banditbench.simulator import propensity as prop
from banditbench.simulator.logged import Impressions, LoggedData
from banditbench.simulator.model import Simulator
from banditbench.simulator.train import TrainSettings, train_simulator

SMALL = ("--epochs", "2", "--patience", "2", "--dim", "16", "--batch", "16")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare_both(tmp_path_factory.mktemp("logged"))


def train(prepared, **settings):
    """Train in this process (the command line's own run is the ``learned`` fixture): metadata, model bytes."""
    small = dict(epochs=2, patience=2, dim=16, batch=16)
    metadata = train_simulator(prepared, "mind", TrainSettings(**{**small, **settings}), force=True)
    return metadata, (prepared / "mind" / "simulator" / "model.pt").read_bytes()


@pytest.fixture(scope="module")
def learned(prepared):
    """stdout, saved metadata and model bytes of `simulator train mind --propensity learned`."""
    done = banditbench(
        "simulator", "train", "mind", "--data-dir", prepared, *SMALL, "--force", "--propensity", "learned"
    )
    assert done.returncode == 0, done.stderr
    folder = prepared / "mind" / "simulator"
    return done.stdout, json.loads((folder / "simulator.json").read_text()), (folder / "model.pt").read_bytes()


def logged(shown_per_impression: list[list[int]], users: list[int], valid: list[bool], n_items: int) -> LoggedData:
    """A LoggedData holding only what the propensity model reads: who was shown what, train or validation."""
    lengths = [len(s) for s in shown_per_impression]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    impressions = Impressions(
        user=np.asarray(users, np.int64),
        time=np.arange(len(users), dtype=np.float64),
        split=np.where(valid, "dev", "train"),
        valid=np.asarray(valid),
        history_offsets=np.zeros(len(users) + 1, np.int64),
        history=np.zeros(0, np.int32),
        shown_offsets=offsets,
        shown=np.concatenate(shown_per_impression).astype(np.int32),
        clicked=np.zeros(offsets[-1], np.int8),
    )
    return LoggedData(
        news_ids=np.array([""] + [f"N{i}" for i in range(1, n_items + 1)], dtype=object),
        titles=np.zeros((n_items + 1, 1), np.int32),
        vocabulary=["<pad>"],
        topic=np.zeros(n_items + 1, np.int64),
        topic_names=["t"],
        user_ids=np.array([f"U{u}" for u in range(max(users) + 1)], dtype=object),
        impressions=impressions,
        manifest_sha256="",
    )


def untimed(figures):
    """``figures`` without the wall-clock seconds of the epoch logs."""
    if isinstance(figures, dict):
        return {k: untimed(v) for k, v in figures.items() if k != "seconds"}
    return [untimed(v) for v in figures] if isinstance(figures, list) else figures


# -- the display samples ---------------------------------------------------------------------------------------


def test_samples_draw_displayed_items_then_items_never_displayed_to_the_user():
    # user 0 saw items 2, 5, 6 (5 twice); user 1 saw 1..11 but 4; user 2 saw only item 3
    data = logged([[5, 2], [6, 5], [i for i in range(1, 12) if i != 4], [3]], [0, 0, 1, 2], [False] * 4, 12)
    displayed = prop.displayed_items(data, data.impressions.train)
    assert displayed.counts.tolist() == [3, 10, 1]
    for seed in range(20):
        items, labels, mask = prop.draw_samples(displayed, np.array([0, 1, 2]), 12, np.random.default_rng(seed))
        assert labels[:, :2].all() and not labels[:, 2:].any() and items.shape == (3, 12)
        seen = [{2, 5, 6}, set(range(1, 12)) - {4}, {3}]
        for row, shown in enumerate(seen):
            positive, negative = items[row, :2][mask[row, :2]], items[row, 2:][mask[row, 2:]]
            assert set(positive) <= shown and len(set(positive)) == len(positive) == min(2, len(shown))
            assert not set(negative) & shown and len(set(negative)) == len(negative) == min(10, 12 - len(shown))
            assert set(negative) <= set(range(1, 13)) and (items[row][~mask[row]] == 0).all()
        assert set(items[1, 2:][mask[1, 2:]]) == {4, 12}  # only two items were never shown to user 1


def test_every_item_not_displayed_is_drawn_equally_often():
    data = logged([[2, 3, 7]], [0], [False], 9)
    displayed = prop.displayed_items(data, data.impressions.train)
    rng = np.random.default_rng(0)
    counts = np.zeros(10)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prop, "NEGATIVES", 2)  # 10 would take all 6 items left every time
        for _ in range(3000):
            items, _, mask = prop.draw_samples(displayed, np.array([0]), 9, rng)
            np.add.at(counts, items[0, 2:][mask[0, 2:]], 1)
    share = counts[[1, 4, 5, 6, 8, 9]] / counts.sum()
    assert counts[[0, 2, 3, 7]].sum() == 0 and np.abs(share - 1 / 6).max() < 0.02  # 6000 draws: sd 0.005


# -- the model and its clipping --------------------------------------------------------------------------------


def test_the_logit_is_linear_plus_bilinear_in_the_frozen_vectors():
    model = prop.LogisticPropensity(3, 4, seed=1)
    z, x = torch.randn(2, 3), torch.randn(2, 5, 4)
    W = model.bilinear.weight  # [3, 4]
    expected = (
        (z @ model.user_linear.weight.T + model.user_linear.bias)
        + (x @ model.item_linear.weight.T).squeeze(-1)
        + torch.einsum("bd,de,bce->bc", z, W, x)
    )
    assert torch.allclose(model(z, x), expected, atol=1e-5)


def test_learned_propensities_are_clipped_at_the_floor_and_one_for_padding():
    model = prop.LogisticPropensity(2, 2)
    with torch.no_grad():
        model.user_linear.bias.fill_(-30.0)  # σ ≈ 1e-13 everywhere
    learned = prop.LearnedPropensity(model, np.ones((3, 2), np.float32), np.ones((4, 2), np.float32), floor=0.01)
    p = learned(np.array([[0], [2]]), np.array([[1, 3, 0], [2, 2, 1]]))
    assert p.tolist() == [[0.01, 0.01, 1.0], [0.01, 0.01, 0.01]]
    weights = ips.row_weights("empirical-unnormalised", learned, np.array([0]), np.array([[1, 0]]))
    assert np.allclose(weights, [[100.0, 1.0]])  # 1/floor: finite


def test_effective_sample_size_of_equal_and_of_skewed_weights():
    assert ips.effective_sample_size(np.full(50, 0.3)) == pytest.approx(50)
    assert ips.effective_sample_size([1.0, 1.0, 0.0, 0.0]) == pytest.approx(2)
    assert ips.effective_sample_size([1000.0] + [1.0] * 99) == pytest.approx(1099**2 / (1000**2 + 99))


def test_the_learned_model_ranks_displayed_items_first_when_display_follows_an_item_feature():
    # 60 items with random 8-d vectors; the logging policy shows items whose first coordinate is high
    rng = np.random.default_rng(5)
    n_items, n_users = 60, 80
    items = rng.normal(size=(n_items + 1, 8)).astype(np.float32)
    favoured = np.flatnonzero(items[1:, 0] > 0.3) + 1
    shown, owners, valid = [], [], []
    for user in range(n_users):
        for split in (False, True):
            shown.append(rng.choice(favoured, size=6, replace=False))
            owners.append(user)
            valid.append(split)
    data = logged(shown, owners, valid, n_items)
    users = rng.normal(size=(n_users, 8)).astype(np.float32)
    learned, figures = prop.fit_propensity(data, users, items, np.random.default_rng(0), 0, lr=0.1, epochs=20)
    assert figures["heldout_auc"] > 0.8 and figures["heldout_users"] == n_users  # chance is 0.5
    assert figures["epochs"][-1]["train_loss"] < figures["epochs"][0]["train_loss"]
    p = learned(np.arange(n_users)[:, None], np.tile(np.arange(1, n_items + 1), (n_users, 1)))
    assert p[:, favoured - 1].mean() > 3 * np.delete(p, favoured - 1, axis=1).mean()


def test_the_training_loss_is_the_mean_over_users_of_each_ones_mean_bce_over_its_slots():
    """Among 8 items, user 0 was shown item 1 in training: one displayed item (one positive slot masked) and the 7
    never displayed (3 of the 10 negative slots masked). User 1 was shown items 1–3, alike: two of them drawn and the
    5 never displayed, 7 slots. Without a step (lr = 0) the epoch's loss is the mean of the two users' mean BCE under
    the initial model, not the mean over their 15 slots."""
    data = logged([[1], [1, 2, 3], [4]], [0, 1, 0], [False, False, True], 8)
    rng = np.random.default_rng(0)
    users, items = rng.normal(size=(2, 4)).astype(np.float32), rng.normal(size=(9, 4)).astype(np.float32)
    items[2] = items[3] = items[1]
    model, figures = prop.fit_propensity(data, users, items, np.random.default_rng(0), 0, lr=0.0, epochs=1)
    p = model.raw(np.array([0, 1]), np.tile(np.arange(1, 9), (2, 1)))
    first = (-np.log(p[0, 0]) - np.log1p(-p[0, 1:]).sum()) / 8
    second = (-2 * np.log(p[1, 0]) - np.log1p(-p[1, 3:]).sum()) / 7
    assert figures["epochs"][0]["train_loss"] == pytest.approx((first + second) / 2, rel=1e-5)


def test_the_heldout_auc_scores_the_items_displayed_in_validation_impressions():
    """Training impressions show items 1–15 and validation ones items 16–30: a model that learnt the training
    displays ranks the validation displays below chance, where a held-out check on training displays would not."""
    rng = np.random.default_rng(5)
    n_items, n_users = 30, 20
    shown, owners, valid = [], [], []
    for user in range(n_users):
        for split, pool in ((False, np.arange(1, 16)), (True, np.arange(16, 31))):
            shown.append(rng.choice(pool, size=5, replace=False))
            owners.append(user)
            valid.append(split)
    items = rng.normal(size=(n_items + 1, 8)).astype(np.float32)
    users = rng.normal(size=(n_users, 8)).astype(np.float32)
    data = logged(shown, owners, valid, n_items)
    _, figures = prop.fit_propensity(data, users, items, np.random.default_rng(0), 0, lr=0.1, epochs=10)
    assert figures["heldout_auc"] < 0.5 and figures["heldout_users"] == n_users  # about 0.4; 0.7 on training displays


def test_the_empirical_propensity_counts_training_impressions_and_an_item_once_in_each():
    """User 0's two training impressions show item 5 (twice in the first), 2 and 3; a validation impression shows 5
    again and item 4, which no training impression shows: p = ½ for 5, 2 and 3, and 1 for 4 and the never-shown 1."""
    data = logged([[5, 5, 2], [3], [5, 4]], [0, 0, 0], [False, False, True], 6)
    p = ips.EmpiricalPropensity(data, data.impressions.train)
    np.testing.assert_array_equal(p(np.array([[0]]), np.array([[5, 2, 3, 4, 1]])), [[0.5, 0.5, 0.5, 1.0, 1.0]])


def test_the_propensity_summary_reads_real_candidates_and_each_rows_weights():
    """p(1) = 1 and p(2) = p(3) = p(4) = ¼ (item 1 in all four impressions, the others in one each): rows [1, 2] and
    [1, 3] weigh [1, 4] before normalisation, a Kish size of 25/17 in each row and 50/17 in all, under every
    variant (``none`` as the self-normalised rule would weigh them); the padding item 0 is no candidate."""
    data = logged([[1, 2], [1, 3], [1, 4], [1]], [0, 0, 0, 0], [False] * 4, 4)
    p = ips.EmpiricalPropensity(data, data.impressions.train)
    for variant in ips.VARIANTS:
        summary = ips.propensity_summary(variant, p, np.array([0, 0]), np.array([[1, 2], [1, 3]]))
        assert (summary["ess"], summary["ess_per_row_mean"]) == pytest.approx((50 / 17, 25 / 17)), variant
        assert summary["weights"] == 4 and summary["ess_share"] == pytest.approx(50 / 17 / 4), variant
    padded = ips.propensity_summary("empirical", p, np.array([0]), np.array([[2, 3, 0]]))
    assert padded["mean"] == padded["min"] == 0.25 and padded["quantiles"] == [0.25] * len(padded["quantiles"])


# -- simulator train --propensity learned, end to end ------------------------------------------------------------


def test_learned_propensity_trains_a_loadable_simulator_and_reports_both_propensities(prepared, learned):
    stdout, metadata, _ = learned
    assert metadata["settings"]["propensity"] == "learned"
    figures = metadata["metrics"]["propensity"]
    assert figures["used"] == "learned" and set(figures["summaries"]) == {"empirical", "learned"}
    for summary in figures["summaries"].values():
        assert len(summary["quantiles"]) == 5 and 0 < summary["ess"] <= summary["weights"]
        assert 1 <= summary["ess_per_row_mean"] <= 5
    learned_summary = figures["summaries"]["learned"]
    assert 0.01 <= learned_summary["min"] and learned_summary["quantiles"][-1] <= 1  # in [floor, 1]
    model = figures["learned_model"]
    assert 0 <= model["heldout_auc"] <= 1 and model["heldout_users"] > 0 and len(model["epochs"]) == 10
    assert len(model["encoder_epochs"]) == 2 and model["floor"] == 0.01
    assert "learned propensity model: held-out AUC" in stdout and "learned propensity (used)" in stdout
    assert "towers without IPS, for the propensity model: epoch 1" in stdout
    sim = Simulator.load("mind", data_dir=prepared)
    assert sim.click_probabilities(np.array([0, 1]), np.arange(1, 6)).shape == (2, 5)


def test_learned_propensity_is_deterministic_given_the_seed(prepared, learned):
    _, metadata, weights = learned
    again, same = train(prepared, propensity="learned")
    assert same == weights and untimed(again["metrics"]) == untimed(metadata["metrics"])
    other, different = train(prepared, propensity="learned", seed=1)
    assert different != weights
    assert other["metrics"]["propensity"]["summaries"] != metadata["metrics"]["propensity"]["summaries"]


def test_empirical_is_the_default_and_reports_only_the_empirical_propensity(prepared, learned):
    metadata, weights = train(prepared)
    explicit, same = train(prepared, propensity="empirical")
    assert same == weights and explicit["metrics"]["propensity"] == metadata["metrics"]["propensity"]
    figures = metadata["metrics"]["propensity"]
    assert figures["used"] == "empirical" and list(figures["summaries"]) == ["empirical"]
    assert "learned_model" not in figures
    # the same rows summarise the empirical propensity whichever propensity trains the simulator
    assert figures["summaries"]["empirical"] == learned[1]["metrics"]["propensity"]["summaries"]["empirical"]
    assert weights != learned[2]


def test_bad_propensity_options_are_one_line_and_write_nothing(prepared, learned):
    before = (prepared / "mind" / "simulator" / "model.pt").read_bytes()
    done = banditbench("simulator", "train", "mind", "--data-dir", prepared, "--force", "--propensity", "bogus")
    message = "unknown --propensity 'bogus'; choose from: empirical, learned"
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    cases = [
        ({"propensity": "learned", "variant": "none"}, "--propensity learned needs IPS weights: --variant empirical"),
        ({"propensity": "learned", "propensity_epochs": 0}, "--propensity-epochs must be at least 1"),
        ({"propensity": "learned", "propensity_floor": 0.0}, "the propensity floor must be in (0, 1]"),
    ]
    for settings, message in cases:
        with pytest.raises(UserError, match=re.escape(message)):
            train_simulator(prepared, "mind", TrainSettings(**settings), force=True)
    assert (prepared / "mind" / "simulator" / "model.pt").read_bytes() == before
    assert not [p for p in (prepared / "mind").iterdir() if p.name.startswith(".")]
