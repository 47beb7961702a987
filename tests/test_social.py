import gzip
import zipfile
from collections import Counter

import numpy as np
import pytest
from fixtures_raw import SHARED

from banditbench.data import facebook, lastfm, load_dataset
from banditbench.data.ratings import RatingOptions
from banditbench.envs.recommendation import RecommendationEnvironment
from banditbench.errors import UserError


def ring_edges(n=60):
    """Each node linked to its 3 next neighbours on a ring: 3n undirected links, degree 6."""
    return [(i, (i + k) % n) for i in range(n) for k in (1, 2, 3)]


def test_facebook_fixture_links_are_positives_and_non_links_negatives(tmp_path):
    path = tmp_path / "facebook_combined.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{u} {v}\n" for u, v in ring_edges()))
    with pytest.raises(UserError, match="checksum mismatch"):
        facebook.prepare(tmp_path / "ds", source=str(path), offline=True)
    facebook.prepare(tmp_path / "ds", source=str(path), offline=True, verify=False, options=RatingOptions(groups=4))
    dataset = load_dataset(tmp_path / "ds", "facebook")
    assert dataset.manifest["counts"]["edges"] == 180 and dataset.manifest["counts"]["positives"] == 360
    users, items, inter = dataset.table("users"), dataset.table("items"), dataset.table("interactions")
    linked = {(int(users.raw_user[u]), int(items.raw_item[i])) for u, i in zip(inter.user, inter.item)}
    assert (0, 1) in linked and (1, 0) in linked and (0, 4) not in linked
    env = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    group = users.group.to_numpy()
    for rnd in env.rounds(100):
        members = set(users.raw_user[group == rnd.user])
        best = int(np.argmax(rnd.rewards))
        rows = [int(np.flatnonzero((env.item_features == a).all(axis=1))[0]) for a in rnd.arms]
        raw = items.raw_item.to_numpy()[rows]
        assert any((m, raw[best]) in linked for m in members)
        assert not any((m, r) in linked for m in members for k, r in enumerate(raw) if k != best)


@pytest.mark.skipif(not (SHARED / "facebook-snap-ego" / "facebook_combined.txt").is_file(), reason="no SNAP file")
def test_genuine_facebook(tmp_path):
    facebook.prepare(tmp_path, source=str(SHARED / "facebook-snap-ego"), offline=True)
    counts = load_dataset(tmp_path, "facebook").manifest["counts"]
    assert counts["edges"] == 88234 and counts["users"] == 4039 and counts["positives"] == 2 * 88234


def write_lastfm_zip(tmp_path):
    rng = np.random.default_rng(0)
    listens = ["userID\tartistID\tweight"] + [
        f"{u}\t{a}\t{rng.integers(1, 900)}"
        for u in range(2, 32)
        for a in rng.choice(np.arange(1, 61), 15, replace=False)
    ]
    tags = ["tagID\ttagValue", "1\tchillout", "2\thip hop", "3\tmetal", "4\tcafé del mar", "5\tthe best of"]
    tagged = ["userID\tartistID\ttagID\tday\tmonth\tyear"] + [
        f"{u}\t{a}\t{1 + (a + u) % 5}\t1\t8\t2009" for u in range(2, 12) for a in range(1, 51)
    ]
    path = tmp_path / "hetrec-fixture.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("user_artists.dat", "\r\n".join(listens) + "\r\n")
        z.writestr("tags.dat", ("\r\n".join(tags) + "\r\n").encode("latin-1"))
        z.writestr("user_taggedartists.dat", "\r\n".join(tagged) + "\r\n")
    return path, len(listens) - 1


def test_lastfm_svd_and_ghosh_pipelines(tmp_path):
    path, n_listens = write_lastfm_zip(tmp_path)
    lastfm.prepare(tmp_path / "ds", source=str(path), offline=True, options=RatingOptions(groups=5))
    dataset = load_dataset(tmp_path / "ds", "lastfm")
    assert dataset.manifest["counts"]["positives"] == n_listens and dataset.parameters["arms"] == 10
    lastfm.prepare(
        tmp_path / "ds",
        source=str(path),
        offline=True,
        pipeline_name="ghosh",
        options=RatingOptions(groups=5),
        force=True,
    )
    dataset = load_dataset(tmp_path / "ds", "lastfm")
    items = dataset.table("items")
    assert set(items.raw_item) <= set(range(1, 51))  # only tagged artists (1..50) are items
    assert items.filter(regex=r"^f_\d+$").shape[1] == 25
    env = RecommendationEnvironment(dataset, np.random.SeedSequence(0))
    assert env.n_arms == 25 and env.dim == 25 and env.n_users == dataset.manifest["counts"]["users"]
    rnd = next(env.rounds(1))
    assert rnd.arms.shape == (25, 25) and rnd.rewards.sum() == 1


def test_lastfm_words_split_tags_and_drop_stop_words(tmp_path):
    path, _ = write_lastfm_zip(tmp_path)
    with zipfile.ZipFile(path) as z:
        z.extractall(tmp_path / "x")
    words = lastfm.artist_words(tmp_path / "x" / "user_taggedartists.dat", tmp_path / "x" / "tags.dat")
    vocabulary = set(w for ws in words for w in ws)
    assert vocabulary == {"chillout", "hip", "hop", "metal", "café", "del", "mar", "best"}


def ghosh_lastfm(tmp_path, **options):
    path, _ = write_lastfm_zip(tmp_path)
    lastfm.prepare(
        tmp_path / "ds",
        source=str(path),
        offline=True,
        pipeline_name="ghosh",
        options=RatingOptions(groups=5),
        force=True,
        **options,
    )
    return load_dataset(tmp_path / "ds", "lastfm")


def listened_pairs(dataset):
    inter = dataset.table("interactions")
    return set(zip(inter.user[inter.label > 0], inter.item[inter.label > 0]))


def test_round_robin_protocol_shows_every_user_the_same_25_random_artists_each_step(tmp_path):
    """Ghosh et al. §6.2: users in turn, one shared set of 25 random artists per step, reward 1 iff listened."""
    from banditbench.envs import PROTOCOLS

    dataset = ghosh_lastfm(tmp_path)
    assert dataset.manifest["protocol"] == "round-robin"
    env = PROTOCOLS["round-robin"].environment(dataset, np.random.SeedSequence(0))
    N, listened = env.n_users, listened_pairs(dataset)
    rounds = list(env.rounds(3 * N + 5))
    assert [r.user for r in rounds] == [t % N for t in range(3 * N + 5)] and rounds[-1].step == 3
    assert all(r.arms is rounds[0].arms for r in rounds[:N]) and rounds[N].arms is not rounds[0].arms
    draws = np.random.default_rng(np.random.SeedSequence(0))  # the protocol's stream: one draw per step
    shown = {step: draws.choice(env.n_items, 25, replace=False) for step in range(4)}
    for r in rounds:
        np.testing.assert_array_equal(r.arms, env.arms_table[shown[r.step]])
        np.testing.assert_array_equal(r.rewards, [float((r.user, i) in listened) for i in shown[r.step]])
    assert sorted(set(len(set(s)) for s in shown.values())) == [25]


def test_round_robin_with_a_guaranteed_positive_gives_each_user_one_listened_artist(tmp_path):
    from banditbench.envs import PROTOCOLS

    dataset = ghosh_lastfm(tmp_path, guaranteed_positive=True)
    env = PROTOCOLS["round-robin"].environment(dataset, np.random.SeedSequence(1))
    listened, items = listened_pairs(dataset), env.arms_table
    rounds = list(env.rounds(2 * env.n_users))
    for r in rounds:
        assert r.rewards.max() == 1.0
        for arm, reward in zip(r.arms, r.rewards):  # some artist with this context gives the reward
            same = np.flatnonzero((items == arm).all(axis=1))
            assert reward in {float((r.user, i) in listened) for i in same}
    first, second = rounds[0].arms, rounds[1].arms  # 24 of the 25 artists are shared within a step
    assert sum((first[:, None] == second[None]).all(axis=2).any(axis=1)) >= 24


def artists_shown_by_id(dataset, seed: int):
    """The round-robin environment of ``dataset`` whose arms show their artist's id as their one context value."""
    from banditbench.envs import PROTOCOLS

    env = PROTOCOLS["round-robin"].environment(dataset, np.random.SeedSequence(seed))
    env.arms_table = np.arange(env.n_items, dtype=float)[:, None]
    return env


def test_the_guaranteed_artist_is_any_of_the_users_listened_artists_alike(tmp_path):
    """With K = 2 (one shared random artist, one guaranteed), each of a user's 10–15 listened artists is the
    guaranteed one in about 1/count of its rounds: over 1 000 steps every one shows up, rewarded, at least 40 times
    (about 80 expected; the last one, were it never drawn, only about 20, as a shared artist)."""
    dataset = ghosh_lastfm(tmp_path, guaranteed_positive=True)
    dataset.manifest["parameters"]["arms"] = 2
    env = artists_shown_by_id(dataset, 2)
    shown = {user: Counter() for user in range(env.n_users)}
    for r in env.rounds(1000 * env.n_users):
        shown[r.user].update(int(arm[0]) for arm, reward in zip(r.arms, r.rewards) if reward == 1)
    for user, item in listened_pairs(dataset):
        assert shown[user][item] >= 40, (user, item)


def test_the_guaranteed_artist_takes_any_slot_and_the_shared_artists_are_distinct(tmp_path):
    dataset = ghosh_lastfm(tmp_path, guaranteed_positive=True)
    env = artists_shown_by_id(dataset, 3)
    for r in env.rounds(20 * env.n_users):  # 24 shared artists drawn without replacement, and the guaranteed one
        assert len(set(r.arms[:, 0])) >= 24
    dataset.manifest["parameters"]["arms"] = 2  # one shared artist and the guaranteed one, in either slot
    env = artists_shown_by_id(dataset, 3)
    slots, N = [], env.n_users
    rounds = list(env.rounds(500 * N))
    for step in range(500):
        rows = np.array([r.arms[:, 0] for r in rounds[step * N : (step + 1) * N]])
        shared = [a for a in set(rows.ravel()) if (rows == a).any(axis=1).all()]
        if len(shared) == 1:  # else some user's guaranteed artist is the shared one
            slots += [int(row[1] != shared[0]) for row in rows if row[0] != row[1]]
    assert 0.45 < np.mean(slots) < 0.55, np.mean(slots)  # about 15 000 users' rounds: a standard error of 0.004


def test_guaranteed_positive_belongs_to_the_ghosh_pipeline(tmp_path):
    path, _ = write_lastfm_zip(tmp_path)
    with pytest.raises(UserError, match="--guaranteed-positive belongs to the round-robin protocol"):
        lastfm.prepare(tmp_path / "ds", source=str(path), offline=True, guaranteed_positive=True)


def test_the_ghosh_lastfm_preset_runs_and_reports_regret_relative_to_random(tmp_path):
    from conftest import banditbench

    path, _ = write_lastfm_zip(tmp_path)
    prepared = banditbench(
        "prepare",
        "lastfm",
        "--pipeline",
        "ghosh",
        "--source",
        path,
        "--offline",
        "--data-dir",
        tmp_path / "data",
        "--groups",
        5,
    )
    assert prepared.returncode == 0, prepared.stderr
    out = tmp_path / "out"
    ran = banditbench(
        "run",
        "--preset",
        "ghosh-lastfm",
        "--rounds",
        90,
        "--seeds",
        1,
        "--jobs",
        1,
        "--data-dir",
        tmp_path / "data",
        "--out",
        out,
    )
    assert ran.returncode == 0, ran.stderr
    assert banditbench("report", out).returncode == 0
    report = (out / "report.md").read_text()
    assert "÷ random" in report and "cmlb" in report and "club" in report
