"""The shared foundation of seed 004's simulator and learners: logged arrays (banditbench/simulator/logged.py)
and the two-tower encoders (banditbench/simulator/encoders.py)."""

import zipfile

import numpy as np
import pytest
import torch

from banditbench.data import load_dataset
from banditbench.data import logged as prepare_logged
from banditbench.errors import UserError
from banditbench.simulator.encoders import TwoTower
from banditbench.simulator.logged import (
    click_rows,
    initial_histories,
    known_split,
    last_items,
    load_logged,
    sample_without_replacement,
    tokenize,
)

NEWS = [
    "N1\tsports\tfootball_nfl\tBig game, tonight!\t\thttps://x\t[]\t[]",
    "N2\tnews\tnewsus\tBig vote\t\thttps://y\t[]\t[]",
    "N3\tsports\tbaseball_mlb\tHome run\t\thttps://z\t[]\t[]",
    "N4\tnews\tnewsus\tVote count\t\thttps://w\t[]\t[]",
]
TRAIN = [
    "1\tU2\t11/12/2019 9:00:00 AM\tN1\tN3-1 N2-0 N4-0",
    "2\tU1\t11/12/2019 8:00:00 AM\tN1 N2 N3\tN4-1 N1-0 N3-1",  # earliest: U1's clicks come first
    "3\tU2\t11/12/2019 8:30:00 AM\t\tN1-1 N2-0",  # U2's earliest training impression: empty history
    "4\tU1\t11/12/2019 10:00:00 AM\tN2\tN2-0 N3-0 N9-1",
]  # N9 is not in news.tsv: index 0
DEV = ["5\tU3\t11/13/2019 8:00:00 AM\tN4\tN1-0 N2-1"]


@pytest.fixture
def mind(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for part, lines in (("train", TRAIN), ("dev", DEV)):
        with zipfile.ZipFile(raw / f"MINDsmall_{part}.zip", "w") as z:
            z.writestr("news.tsv", "\n".join(NEWS) + "\n")
            z.writestr("behaviors.tsv", "\n".join(lines) + "\n")
    prepare_logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True, verify=False)
    return load_logged(load_dataset(tmp_path / "ds", "mind"))


def items(data, *ids):
    return [list(data.news_ids).index(i) for i in ids]


def test_items_titles_and_topics(mind):
    assert list(mind.news_ids) == ["", "N1", "N2", "N3", "N4"] and mind.n_items == 4
    assert mind.vocabulary[:3] == ["<pad>", "big", "vote"]  # most frequent first (2 each), then alphabetical
    words = [mind.vocabulary[w] for w in mind.titles[1] if w]
    assert words == ["big", "game", ",", "tonight", "!"]  # lower-cased, punctuation kept as tokens
    assert (mind.titles[0] == 0).all() and mind.titles.shape[1] == 30
    assert mind.topic_names == ["baseball_mlb", "football_nfl", "newsus"]
    assert list(mind.topic) == [-1, 1, 2, 0, 2]


def test_impressions_are_flat_arrays_with_offsets(mind):
    imp = mind.impressions
    assert list(mind.user_ids) == ["U1", "U2", "U3"] and list(imp.user) == [1, 0, 1, 0, 2]
    second = slice(imp.shown_offsets[1], imp.shown_offsets[2])
    assert list(imp.shown[second]) == items(mind, "N4", "N1", "N3") and list(imp.clicked[second]) == [1, 0, 1]
    assert list(imp.history[imp.history_offsets[1] : imp.history_offsets[2]]) == [1, 2, 3]
    assert imp.history_offsets[3] == imp.history_offsets[2]  # empty history
    assert imp.shown[imp.shown_offsets[4] - 1] == 0  # unknown news id N9
    assert list(imp.train) == [True] * 4 + [False] and list(imp.valid) == [False] * 4 + [True]
    assert list(imp.shown_impression[:5]) == [0, 0, 0, 1, 1]


def test_initial_history_is_the_earliest_training_impressions(mind):
    histories = initial_histories(mind, length=2)
    assert histories.tolist() == [[2, 3], [0, 0], [4, 0]]  # U1: last 2 of N1 N2 N3; U2: empty; U3: dev only


def test_last_items_pads_at_the_end():
    offsets, flat = np.array([0, 3, 3, 4]), np.array([7, 8, 9, 5])
    assert last_items(offsets, flat, np.array([0, 1, 2]), 2).tolist() == [[8, 9], [0, 0], [5, 0]]


def test_known_split_takes_the_first_clicks_by_time_and_drops_trial_users(mind):
    # training clicks in time order: (imp 2: N4, N3) 8:00, (imp 3: N1) 8:30, (imp 1: N3) 9:00, (imp 4: N9) 10:00
    everything = known_split(mind, fraction=1.0)
    assert everything.impression.tolist() == [1, 1, 2, 0, 3]
    assert everything.item.tolist() == items(mind, "N4", "N3", "N1", "N3") + [0]
    known = known_split(mind, fraction=0.5)  # first int(0.5 · 5) = 2 clicks
    assert known.impression.tolist() == [1, 1] and known.candidate_users.tolist() == [0, 1]
    assert len(known_split(mind, 0.5, exclude_users=np.array([0])).impression) == 0
    with pytest.raises(UserError, match="known fraction"):
        known_split(mind, 1.5)


def test_click_rows_draw_distinct_negatives_of_the_same_impression(mind):
    known = known_split(mind, fraction=1.0)
    rows = click_rows(mind, known.impression, known.item, np.random.default_rng(0), npratio=2)
    n1, n2, n3, n4 = items(mind, "N1", "N2", "N3", "N4")
    assert rows.candidates[0].tolist() == [n4, n1, 0]  # one negative in impression 2, then padding
    assert rows.candidates[3, 0] == n3 and sorted(rows.candidates[3, 1:]) == sorted([n2, n4])
    assert rows.labels.tolist()[0] == [1, 0, 0] and rows.impression.tolist() == [1, 1, 2, 0, 3]


def test_sampling_without_replacement_is_uniform_over_subsets():
    rng = np.random.default_rng(1)
    draws = sample_without_replacement(np.full(30_000, 5), 2, rng)
    assert (draws[:, 0] != draws[:, 1]).all() and draws.min() == 0 and draws.max() == 4
    subsets = np.bincount(np.sort(draws, axis=1) @ np.array([5, 1]), minlength=25)
    counts = subsets[subsets > 0]
    assert len(counts) == 10 and np.abs(counts - 3000).max() < 5 * np.sqrt(3000)  # 10 subsets, 3000 each
    short = sample_without_replacement(np.array([1, 0]), 3, rng)
    assert short.tolist() == [[0, -1, -1], [-1, -1, -1]]


def test_tokenizer_vocabulary_is_deterministic():
    import pandas as pd

    matrix, vocabulary = tokenize(pd.Series(["B a", "a C."]), max_len=2)
    assert vocabulary == ["<pad>", "a", "b", "c"] and matrix.tolist() == [[2, 1], [1, 3]]  # "." cut at max_len


def test_load_refuses_a_dataset_of_another_protocol(dataset):
    with pytest.raises(UserError, match="simulator needs logged impressions"):
        load_logged(dataset)


# -- encoders --------------------------------------------------------------------------------------------------


def model_for(data, **kw):
    return TwoTower(len(data.vocabulary), data.n_topics, dim=8, word_dim=8, attention_dim=8, **kw).eval()


def test_user_vector_ignores_masked_padding_and_empty_history_is_the_learned_vector(mind):
    model = model_for(mind)
    vectors = model.item_vectors(mind.titles, mind.topic)
    users = model.user_vectors(vectors, np.array([[1, 2, 0, 0], [1, 2, 0, 0, 0, 0][-4:], [0, 0, 0, 0]]))
    alone = model.user_vectors(vectors, np.array([[1, 2]]))
    assert torch.allclose(users[0], alone[0], atol=1e-6) and torch.equal(users[2], model.users.empty_user)
    unmasked = model_for(mind, mask_padding=False)
    unmasked.load_state_dict(model.state_dict())
    other = unmasked.user_vectors(
        unmasked.item_vectors(mind.titles, mind.topic), np.array([[1, 2, 0, 0], [1, 2, 2, 2]])
    )
    assert not torch.allclose(other[0], alone[0], atol=1e-3)  # the code's padding counts as a history item


def test_history_is_cut_to_the_last_items(mind):
    model = TwoTower(len(mind.vocabulary), mind.n_topics, dim=8, history=2).eval()
    vectors = model.item_vectors(mind.titles, mind.topic)
    assert torch.equal(
        model.user_vectors(vectors, np.array([[4, 1, 2]])), model.user_vectors(vectors, np.array([[1, 2]]))
    )


def test_training_logits_are_the_dot_products_of_the_towers(mind):
    model = model_for(mind, seed=3)
    vectors = model.item_vectors(mind.titles, mind.topic)
    histories = np.array([[1, 2], [3, 0]])
    candidates = np.array([[4, 1, 0], [2, 3, 1]])
    users = model.user_vectors(vectors, histories)
    logits = model.logits(
        torch.as_tensor(mind.titles, dtype=torch.long),
        torch.as_tensor(mind.topic),
        torch.as_tensor(histories),
        torch.as_tensor(candidates),
    )
    assert torch.allclose(logits, (users[:, None, :] * vectors[candidates]).sum(-1), atol=1e-6)


def test_mc_dropout_banks_differ_per_pass_and_repeat_for_a_seed(mind):
    model = model_for(mind, dropout=0.5)
    banks = model.item_vectors(mind.titles, mind.topic, passes=3, generator=torch.Generator().manual_seed(4))
    again = model.item_vectors(mind.titles, mind.topic, passes=3, generator=torch.Generator().manual_seed(4))
    assert banks.shape == (3, 5, 8) and torch.equal(banks, again)
    assert not torch.allclose(banks[0], banks[1]) and not torch.allclose(
        banks[0], model.item_vectors(mind.titles, mind.topic)
    )
    assert model.user_vectors(banks, np.array([[1, 2]])).shape == (3, 1, 8)


def test_same_seed_same_weights_and_a_saved_model_reloads(mind):
    a, b, c = model_for(mind, seed=5), model_for(mind, seed=5), model_for(mind, seed=6)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.items.words.weight, c.items.words.weight)
    loaded = TwoTower.from_state(a.config, a.state_dict())
    assert torch.equal(loaded.item_vectors(mind.titles, mind.topic), a.item_vectors(mind.titles, mind.topic))


def test_mean_word_pooling_is_the_bag_of_words_of_the_title(mind):
    model = model_for(mind, word_pooling="mean")
    vectors = model.item_vectors(mind.titles, mind.topic)
    words = model.items.words.weight[mind.titles[1][mind.titles[1] > 0]].mean(0)  # "big game , tonight !"
    topic = model.items.topics.weight[mind.topic[1] + 1]
    assert torch.allclose(vectors[1], model.items.out(torch.cat([words, topic])), atol=1e-6)
    with pytest.raises(UserError, match="word pooling must be one of attention, mean"):
        model_for(mind, word_pooling="max")
