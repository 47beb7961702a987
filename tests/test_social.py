import gzip
import zipfile

import numpy as np
import pytest

from banditbench.data import facebook, lastfm, load_dataset
from banditbench.data.ratings import RatingOptions
from banditbench.envs.recommendation import RecommendationEnvironment
from banditbench.errors import UserError
from fixtures_raw import SHARED


def ring_edges(n=60):
    """Each node linked to its 3 next neighbours on a ring: 3n undirected links, degree 6."""
    return [(i, (i + k) % n) for i in range(n) for k in (1, 2, 3)]


def test_facebook_fixture_links_are_positives_and_non_links_negatives(tmp_path):
    path = tmp_path / "facebook_combined.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{u} {v}\n" for u, v in ring_edges()))
    with pytest.raises(UserError, match="checksum mismatch"):
        facebook.prepare(tmp_path / "ds", source=str(path), offline=True)
    facebook.prepare(tmp_path / "ds", source=str(path), offline=True, verify=False,
                     options=RatingOptions(groups=4))
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
    listens = ["userID\tartistID\tweight"] + [f"{u}\t{a}\t{rng.integers(1, 900)}" for u in range(2, 32)
                                               for a in rng.choice(np.arange(1, 61), 15, replace=False)]
    tags = ["tagID\ttagValue", "1\tchillout", "2\thip hop", "3\tmetal", "4\tcafé del mar", "5\tthe best of"]
    tagged = ["userID\tartistID\ttagID\tday\tmonth\tyear"] + [
        f"{u}\t{a}\t{1 + (a + u) % 5}\t1\t8\t2009" for u in range(2, 12) for a in range(1, 51)]
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
    lastfm.prepare(tmp_path / "ds", source=str(path), offline=True, pipeline_name="ghosh",
                   options=RatingOptions(groups=5), force=True)
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
