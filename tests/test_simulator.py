"""The IPS-trained user-choice simulator of seed 004: propensities, the weighted loss, the click rule with
flips, `banditbench simulator train` end to end, and loading it for an environment."""

import json
import re

import numpy as np
import pytest
import torch
from conftest import banditbench
from fixtures_logged import prepare_both
from sklearn.metrics import roc_auc_score
from test_simulator_data import mind  # noqa: F401  (the hand-made MIND log fixture)

from banditbench.data import load_dataset
from banditbench.errors import UserError
from banditbench.simulator import ips
from banditbench.simulator.encoders import TwoTower
from banditbench.simulator.logged import load_logged
from banditbench.simulator.metrics import per_group_auc
from banditbench.simulator.model import Simulator
from banditbench.simulator.train import TrainSettings, train_simulator

SMALL = ("--epochs", "3", "--patience", "3", "--dim", "16", "--batch", "16")  # 3 epochs of many steps


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Tiny MIND and MovieLens-logged datasets with a planted taste (user u likes topic u mod q)."""
    return prepare_both(tmp_path_factory.mktemp("logged"))


@pytest.fixture(scope="module")
def trained(prepared):
    """Both datasets with a simulator trained by the real command line (3 epochs)."""
    for name in ("mind", "movielens-logged"):
        done = banditbench("simulator", "train", name, "--data-dir", prepared, *SMALL)
        assert done.returncode == 0, done.stderr
    return prepared


# -- the encoders ------------------------------------------------------------------------------------------------


def test_dropout_drops_at_rate_p_keeps_the_mean_and_repeats_from_the_generator():
    from banditbench.simulator.encoders import dropout

    x = torch.ones(400_000)
    first = dropout(x, 0.2, torch.Generator().manual_seed(3))
    assert abs(float((first == 0).float().mean()) - 0.2) < 0.003  # ±5 standard deviations
    assert abs(float(first.mean()) - 1.0) < 0.005
    assert torch.allclose(first[first != 0], torch.tensor(1 / 0.8))  # inverted dropout: kept values scaled
    assert torch.equal(first, dropout(x, 0.2, torch.Generator().manual_seed(3)))
    assert dropout(x, 0.0, None) is x


@pytest.mark.parametrize("mask_padding", [True, False])
def test_bag_of_words_is_the_mean_of_the_padded_word_vectors(mask_padding):
    model = TwoTower(50, 3, dim=8, word_dim=6, word_pooling="mean", mask_padding=mask_padding).eval()
    titles, topics = torch.tensor([[3, 4, 0, 0], [5, 0, 0, 0], [0, 0, 0, 0], [1, 2, 3, 4]]), torch.tensor([0, 1, -1, 2])
    words = model.items.words(titles)  # row 0 (padding) is 0
    counted = titles > 0 if mask_padding else torch.ones_like(titles, dtype=torch.bool)  # the code counts padding
    mean = words.sum(1) / counted.sum(1, keepdim=True).clamp_min(1)
    expected = model.items.out(torch.cat([mean, model.items.topics(topics + 1)], dim=-1))
    assert torch.allclose(model.items(titles, topics, drop=False), expected, atol=1e-6)


# -- propensities and the weighted loss ------------------------------------------------------------------------


def test_empirical_propensity_counts_impressions_showing_the_item(mind):  # noqa: F811
    # training impressions: U1 has 2 (showing N4 N1 N3 / N2 N3 N9), U2 has 2 (N3 N2 N4 / N1 N2)
    p = ips.EmpiricalPropensity(mind, mind.impressions.train)
    n1, n2, n3, _n4 = 1, 2, 3, 4
    u1, u2, u3 = 0, 1, 2
    got = p(np.array([[u1], [u2], [u3]]), np.array([[n3, n1, n2], [n2, n3, n1], [n2, n2, 0]]))
    assert got.tolist() == [[1.0, 0.5, 0.5], [1.0, 0.5, 0.5], [1.0, 1.0, 1.0]]  # U3: only a dev impression
    assert p(np.array([u1]), np.array([n2])).tolist() == [0.5] and p(np.array([u2]), np.array([0])).tolist() == [1]


def test_self_normalised_weights_sum_to_one_per_row():
    weights = ips.ips_weights(np.array([[1.0, 0.5, 0.25], [0.2, 0.2, 0.2]]))
    assert np.allclose(weights, [[1 / 7, 2 / 7, 4 / 7], [1 / 3, 1 / 3, 1 / 3]])
    assert np.allclose(ips.ips_weights(np.array([[1.0, 0.5]]), normalise=False), [[1, 2]])


def test_weighted_loss_differs_from_plain_where_exposure_is_skewed_and_not_where_uniform():
    logits = torch.tensor([[2.0, -1.0, 0.5], [0.3, 0.1, -2.0]])
    labels = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    plain = torch.full((2, 3), 1 / 3)
    uniform = torch.as_tensor(ips.ips_weights(np.full((2, 3), 0.4)), dtype=torch.float32)
    skewed = torch.as_tensor(ips.ips_weights(np.array([[1.0, 0.1, 1.0], [0.5, 1.0, 0.05]])), dtype=torch.float32)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    assert ips.weighted_logistic_loss(logits, labels, plain).item() == pytest.approx(bce.mean().item() / 3)
    assert ips.weighted_logistic_loss(logits, labels, uniform).item() == pytest.approx(
        ips.weighted_logistic_loss(logits, labels, plain).item()
    )
    expected = (bce * skewed).mean().item()  # rare items (p = 0.1, 0.05) dominate their rows
    assert ips.weighted_logistic_loss(logits, labels, skewed).item() == pytest.approx(expected)
    assert abs(expected - bce.mean().item() / 3) > 0.05


def test_row_weights_of_the_variants(mind):  # noqa: F811
    p = ips.EmpiricalPropensity(mind, mind.impressions.train)
    users, candidates = np.array([0]), np.array([[3, 1, 2]])  # U1: p = 1, 0.5, 0.5
    assert np.allclose(ips.row_weights("empirical", p, users, candidates), [[0.2, 0.4, 0.4]])
    assert np.allclose(ips.row_weights("empirical-unnormalised", p, users, candidates), [[1, 2, 2]])
    assert np.allclose(ips.row_weights("none", p, users, candidates), [[1 / 3] * 3])


def test_per_impression_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 30, 600)
    scores = rng.integers(0, 5, 600) / 4  # many ties
    labels = (rng.random(600) < 0.3).astype(int)
    expected = [
        roc_auc_score(labels[groups == g], scores[groups == g])
        for g in np.unique(groups)
        if 0 < labels[groups == g].sum() < (groups == g).sum()
    ]
    assert np.allclose(per_group_auc(groups, scores, labels), expected)


# -- the click rule --------------------------------------------------------------------------------------------


def fixed_table(mind, probabilities, **kw):  # noqa: F811
    """A simulator whose user 0 has exactly these click probabilities on items 1..len(probabilities)."""
    sim = Simulator(TwoTower(len(mind.vocabulary), mind.n_topics, dim=2), mind, **kw)
    p = np.asarray(probabilities)
    sim.item_vectors = np.zeros((len(p) + 1, 2), np.float32)
    sim.item_vectors[1:, 0] = np.log(p / (1 - p))
    sim.user_cache[0], sim.cached[0] = [1, 0], True
    return sim


def test_threshold_and_flip_give_the_expected_click_rates(mind):  # noqa: F811
    table = [0.2, 0.5, 0.7, 0.9]  # p = 0.5 exactly (logit 0) sits on the threshold
    sim = fixed_table(mind, table, threshold=0.5, flip=0.1)
    assert sim.deterministic_clicks([0], np.arange(1, 5)).tolist() == [[False, True, True, True]]
    draws = 10_000
    rng = np.random.default_rng(7)
    rates = np.mean([sim.clicks(0, np.arange(1, 5), rng) for _ in range(draws)], axis=0)
    bound = 4 * np.sqrt(0.1 * 0.9 / draws)  # 4 binomial standard deviations
    assert np.abs(rates - [0.1, 0.9, 0.9, 0.9]).max() < bound
    assert np.allclose(sim.expected_clicks([0], np.arange(1, 5)), [[0.1, 0.9, 0.9, 0.9]])
    strict = fixed_table(mind, table, threshold=0.5, flip=0.1, strict=True)
    assert strict.deterministic_clicks([0], np.arange(1, 5)).tolist() == [[False, False, True, True]]
    assert fixed_table(mind, table, threshold=0.5, flip=0.0).clicks(0, np.arange(1, 5), rng).tolist() == [0, 1, 1, 1]


def test_the_same_rng_gives_the_same_flips(mind):  # noqa: F811
    sim = fixed_table(mind, [0.2, 0.9], threshold=0.5, flip=0.3)
    a = [sim.clicks(0, np.array([1, 2]), np.random.default_rng(3)).tolist() for _ in range(2)]
    assert a[0] == a[1]


# -- simulator train, end to end -------------------------------------------------------------------------------


@pytest.mark.parametrize("name,threshold", [("mind", 0.384), ("movielens-logged", 0.855)])
def test_simulator_train_saves_weights_and_metadata(trained, name, threshold):
    folder = trained / name / "simulator"
    metadata = json.loads((folder / "simulator.json").read_text())
    dataset = load_dataset(trained, name)
    assert metadata["dataset_manifest_sha256"] == dataset.manifest_sha256
    assert metadata["threshold"] == threshold and metadata["threshold_source"] == "paper"
    assert metadata["flip"] == 0.1 and metadata["strict"] is False and metadata["user_history"] == "true"
    assert metadata["settings"]["variant"] == "empirical" and metadata["model"]["dim"] == 16
    assert len(metadata["epochs"]) == 3 and 1 <= metadata["best_epoch"] <= 3
    metrics = metadata["metrics"]
    assert metrics["candidates"] > 0 and 0 < metrics["positive_rate"] < 1
    assert 0 <= metrics["f1_best"]["threshold"] <= 1 and len(metrics["positive_quantiles"]) == 5
    imp = load_logged(dataset).impressions
    assert metadata["training_rows"] == imp.clicked[imp.train[imp.shown_impression]].sum()  # one row per click


def test_the_simulator_learns_the_planted_taste(trained):
    metrics = json.loads((trained / "mind" / "simulator" / "simulator.json").read_text())["metrics"]
    assert metrics["auc_mean_per_impression"] > 0.8 and metrics["auc_global"] > 0.8  # chance is 0.5


def test_a_repeated_run_is_bit_identical(trained, tmp_path):
    before = (trained / "mind" / "simulator" / "model.pt").read_bytes()
    again = banditbench("simulator", "train", "mind", "--data-dir", trained, *SMALL, "--force")
    assert again.returncode == 0, again.stderr
    assert (trained / "mind" / "simulator" / "model.pt").read_bytes() == before
    assert "AUC per impression" in again.stdout and "F1-maximising threshold" in again.stdout


def test_bad_input_is_one_line_and_writes_nothing(trained, data_dir, tmp_path):
    before = (trained / "mind" / "simulator" / "model.pt").read_bytes()
    for args, message in ((("nosuch",), "unknown dataset 'nosuch'"), (("mind",), "already exists; pass --force")):
        done = banditbench("simulator", "train", *args, "--data-dir", trained)
        assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    cases = [
        (trained, "synthetic", {}, "is for the 'linear' protocol"),
        (tmp_path, "mind", {}, "not prepared"),
        (trained, "mind", {"variant": "bogus"}, "unknown --variant 'bogus'"),
        (trained, "mind", {"threshold": "high"}, "--threshold must be paper, f1 or a number"),
        (trained, "mind", {"flip": 2.0}, "0 ≤ --flip ≤ 1"),
        (trained, "mind", {"epochs": 0}, "--epochs must be at least 1"),
    ]
    for folder, name, settings, message in cases:
        with pytest.raises(UserError, match=re.escape(message)):
            train_simulator(folder, name, TrainSettings(**settings), force=True)
    assert (trained / "mind" / "simulator" / "model.pt").read_bytes() == before
    assert sorted(p.name for p in (trained / "mind").iterdir()) == [
        "behaviors.parquet",
        "manifest.json",
        "news.parquet",
        "simulator",
    ]
    (data_dir / "synthetic").rename(data_dir / "mind")  # a dataset prepared for another protocol
    with pytest.raises(UserError, match="the simulator needs logged impressions"):
        train_simulator(data_dir, "mind", TrainSettings())


# -- loading it for an environment -----------------------------------------------------------------------------


def test_loaded_simulator_is_personalised_unless_empty_history(trained):
    sim = Simulator.load("mind", data_dir=trained)
    data = load_logged(load_dataset(trained, "mind"))
    items = np.arange(1, data.n_items + 1)
    p = sim.click_probabilities(np.arange(data.n_users), items)
    assert p.shape == (data.n_users, data.n_items) and np.ptp(p, axis=0).max() > 0.1  # users differ
    assert np.allclose(sim.click_probabilities(np.array([3]), items[None, :5]), p[3:4, :5])
    empty = Simulator.load("mind", data_dir=trained, user_history="empty", threshold=0.5, flip=0.2)
    q = empty.click_probabilities(np.arange(data.n_users), items)
    assert np.allclose(q, q[0], rtol=0, atol=1e-6)  # one constant user: rewards depend on the item only
    assert empty.threshold == 0.5 and empty.flip == 0.2 and sim.threshold == 0.384


def test_true_plus_clicks_appends_simulated_clicks(trained):
    sim = Simulator.load("mind", data_dir=trained, user_history="true+clicks")
    before = sim.click_probabilities(np.array([0]), np.arange(1, 41)).copy()
    sim.record(0, np.array([5, 6, 7]), np.array([1, 0, 1]))
    assert list(sim.histories[0][sim.histories[0] > 0][-2:]) == [5, 7]
    assert not np.allclose(sim.click_probabilities(np.array([0]), np.arange(1, 41)), before)
    fixed = Simulator.load("mind", data_dir=trained)
    fixed.record(0, np.array([5]), np.array([1]))
    assert np.allclose(fixed.click_probabilities(np.array([0]), np.arange(1, 41)), before)


def test_load_refuses_a_missing_or_stale_simulator(trained, tmp_path):
    folder = trained / "movielens-logged" / "simulator"
    folder.rename(tmp_path / "away")
    try:
        with pytest.raises(UserError, match="has no simulator; run `banditbench simulator train movielens-logged`"):
            Simulator.load("movielens-logged", data_dir=trained)
    finally:
        (tmp_path / "away").rename(folder)
    metadata_path = trained / "movielens-logged" / "simulator" / "simulator.json"
    metadata = json.loads(metadata_path.read_text())
    metadata_path.write_text(json.dumps({**metadata, "dataset_manifest_sha256": "0" * 64}))
    try:
        with pytest.raises(UserError, match="trained on another preparation"):
            Simulator.load("movielens-logged", data_dir=trained)
    finally:
        metadata_path.write_text(json.dumps(metadata))
