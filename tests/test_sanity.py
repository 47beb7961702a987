"""Bad data is caught at prepare time: the sanity report's thresholds, and one fault fixture per family that
gets one line (or a warning) and leaves the previously prepared version intact."""

import errno
import gzip
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import banditbench
from fixtures_logged import write_mind_fixture
from fixtures_raw import ratings_table, write_idx
from test_raw_files import ml100k_folder

from banditbench.data import amazon, classification, facebook, lastfm, load_dataset, logged, movielens, sanity, yelp
from banditbench.data.ratings import RatingOptions
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=40, top_items=60, groups=4)


def drop_most_news(folder, keep=3):
    """MIND zips whose news.tsv lost all but ``keep`` items: most impressions name news that is not there."""
    for part in ("train", "dev"):
        path = folder / f"MINDsmall_{part}.zip"
        with zipfile.ZipFile(path) as z:
            news, behaviors = z.read("news.tsv").decode(), z.read("behaviors.tsv")
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("news.tsv", "\n".join(news.splitlines()[:keep]) + "\n")
            z.writestr("behaviors.tsv", behaviors)


def test_mind_with_most_news_missing_is_an_error_naming_the_override(tmp_path):
    raw = write_mind_fixture(tmp_path / "raw")
    logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True, verify=False)
    manifest = load_dataset(tmp_path / "ds", "mind").manifest
    assert manifest["sanity"]["resolved_shown"] == 1.0 and manifest["sanity"]["resolved_history"] == 1.0
    before = (tmp_path / "ds" / "mind" / "manifest.json").read_bytes()
    drop_most_news(raw)
    done = banditbench(
        "prepare", "mind", "--source", raw, "--offline", "--no-verify", "--force", "--data-dir", tmp_path / "ds"
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "impressions → news references" in done.stderr and "--allow-unresolved" in done.stderr
    assert (tmp_path / "ds" / "mind" / "manifest.json").read_bytes() == before  # the good version stays
    logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True, verify=False, force=True, allow_unresolved=True)
    manifest = load_dataset(tmp_path / "ds", "mind").manifest
    assert manifest["sanity"]["resolved_shown"] < 0.5
    assert manifest["verification"] == "unverified"
    assert any("impressions → news" in w for w in manifest["warnings"])


@pytest.mark.parametrize("keep, refused", [(20, True), (22, False)])
def test_mind_is_refused_below_half_its_impressions_resolving_and_prepared_above(tmp_path, keep, refused):
    raw = write_mind_fixture(tmp_path / "raw")
    drop_most_news(raw, keep)  # 20 of the 40 news items: 49.2 % of the impressions' references resolve
    settings = {"source": str(raw), "offline": True, "verify": False}
    if refused:
        with pytest.raises(UserError, match=r"only 49.2% of the impressions → news references"):
            logged.prepare_mind(tmp_path / "ds", **settings)
    else:
        logged.prepare_mind(tmp_path / "ds", **settings)
        assert 0.5 <= load_dataset(tmp_path / "ds", "mind").manifest["sanity"]["resolved_shown"] < 0.6


def test_a_pool_members_liked_item_is_never_another_item_of_its_pool():
    """Paper mode: the other items a pool's round can show are those its members rated and none of them liked."""
    import pandas as pd

    from banditbench.data.sanity import pool_arms

    inter = pd.DataFrame({"user": [0, 1, 1, 2], "item": [1, 1, 2, 3], "label": [1, -1, -1, -1]})
    liked, others = pool_arms(inter, np.array([0, 0, 1]), n_items=5, parameters={})
    assert liked.tolist() == [1, 0] and others.tolist() == [1, 1]  # pool 0: item 2, not item 1 that user 0 liked


def degenerate_yelp(tmp_path, users=993):
    """About one review per user, as in a careless Yelp sample."""
    rng = np.random.default_rng(0)
    lines = [
        json.dumps(
            {
                "user_id": f"u{u}",
                "business_id": f"b{rng.integers(0, 300)}",
                "stars": 5.0 if u % 3 else 2.0,
                "date": "2019-01-01 10:00:00",
            }
        )
        for u in range(users)
    ]
    lines += [
        json.dumps({"user_id": f"u{u}", "business_id": f"b{u}", "stars": 4.0, "date": "2019-01-02 10:00:00"})
        for u in range(0, users, 7)
    ]
    path = tmp_path / "yelp_academic_dataset_review.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_degenerate_data_is_flagged(tmp_path):
    path = degenerate_yelp(tmp_path)
    yelp.prepare(tmp_path / "ds", source=str(path), offline=True)
    manifest = load_dataset(tmp_path / "ds", "yelp").manifest
    assert manifest["sanity"]["users"] == 993 and manifest["sanity"]["positives_per_user"]["median"] == 1
    warnings = " | ".join(manifest["warnings"])
    assert "median positives per user is 1 (< 2)" in warnings
    assert "50 groups for 993 users" not in warnings  # 50 ≤ 993 / 5
    servable = manifest["sanity"]["servable_groups"]  # a group needs 9 items its members rated and none liked
    assert 0 < servable < 50 and f"{50 - servable} of the 50 groups cannot serve a round" in warnings


def test_more_groups_than_a_fifth_of_the_users_are_flagged(tmp_path):
    # every user likes one business and rates eleven others low, so every group serves rounds however K-means
    # (whose clusters differ between machines) splits the users
    rng = np.random.default_rng(0)
    lines = [
        json.dumps({"user_id": f"u{u}", "business_id": f"b{b}", "stars": 2.0 if i else 5.0, "date": "2019-01-01"})
        for u in range(993)
        for i, b in enumerate(rng.choice(300, 12, replace=False))
    ]
    path = tmp_path / "yelp_academic_dataset_review.json"
    path.write_text("\n".join(lines) + "\n")
    for groups, flagged in ((198, False), (250, True)):  # 993 / 5 = 198.6
        yelp.prepare(tmp_path / "ds", source=str(path), offline=True, force=True, options=RatingOptions(groups=groups))
        warnings = " | ".join(load_dataset(tmp_path / "ds", "yelp").manifest["warnings"])
        assert (f"{groups} groups for 993 users" in warnings) == flagged, warnings


def test_rows_read_kept_and_dropped_say_why(tmp_path):
    movielens.prepare(
        tmp_path / "ds",
        variant="100k",
        options=RatingOptions(top_users=30, top_items=50, groups=3, negative_below=2.0),
        mode="metaban-code",  # the paper's rounds need 9 items rated below 2 in a group: these ratings lack them
        source=str(ml100k_folder(tmp_path)),
        offline=True,
        verify=False,
    )
    rows = load_dataset(tmp_path / "ds", "movielens").manifest["sanity"]["rows"]
    table = ratings_table()
    middle = int(((table[:, 2] >= 2) & (table[:, 2] <= 4)).sum())
    assert rows["read"] == len(table)
    assert rows["dropped"]["rating between 2.0 and 4.0"] == middle
    assert rows["kept"] == rows["read"] - sum(rows["dropped"].values())


# ---------------------------------------------------------------- one fault per family


def good_movielens(tmp_path):
    return ml100k_folder(tmp_path)


def movielens_comma_delimited(tmp_path):
    folder = ml100k_folder(tmp_path)
    (folder / "u.data").write_text((folder / "u.data").read_text().replace("\t", ","))
    return folder


def movielens_missing_file(tmp_path):
    folder = ml100k_folder(tmp_path)
    (folder / "u.item").unlink()
    return folder


def facebook_edges(tmp_path, sep=" "):
    path = tmp_path / "facebook_combined.txt"
    path.write_text("".join(f"{u}{sep}{v}\n" for u in range(60) for v in (u + 1, u + 2, u + 3) if v < 60))
    return path


def lastfm_zip(tmp_path, header="userID\tartistID\tweight"):
    path = tmp_path / "hetrec.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "user_artists.dat",
            "\r\n".join([header] + [f"{u}\t{a}\t{u + a}" for u in range(2, 32) for a in range(1, 25, 1 + u % 3)])
            + "\r\n",
        )
    return path


def shuttle_folder(tmp_path, sep=" "):
    folder = tmp_path / "shuttle"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name, n in (("shuttle.trn", 40), ("shuttle.tst", 12)):
        rows = [sep.join(map(str, [*rng.integers(-20, 100, 9), 1 + k % 3])) for k in range(n)]
        (folder / name).write_text("\n".join(rows) + "\n")
    return folder


def yelp_reviews(tmp_path, stars="stars"):
    path = tmp_path / "yelp_academic_dataset_review.json"
    path.write_text(
        "".join(
            json.dumps({"user_id": f"u{u}", "business_id": f"b{i}", stars: float(r), "date": "2019-01-01 10:00:00"})
            + "\n"
            for u, i, r, _ in ratings_table()
        )
    )
    return path


def amazon_csv(tmp_path, sep=","):
    path = tmp_path / "ratings_Musical_Instruments.csv"
    path.write_text("".join(f"A{u}{sep}B{i}{sep}{r}.0{sep}{t}\n" for u, i, r, t in ratings_table()))
    return path


def mnist_folder(tmp_path, truncate=False):
    rng = np.random.default_rng(0)
    for stem in ("train", "t10k"):
        write_idx(tmp_path / f"{stem}-images-idx3-ubyte.gz", rng.integers(0, 256, (20, 28, 28)))
        write_idx(tmp_path / f"{stem}-labels-idx1-ubyte.gz", np.arange(20) % 10)
    if truncate:
        path = tmp_path / "t10k-images-idx3-ubyte.gz"
        path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:5000]))
    return tmp_path


FAULTS = {  # family: (prepare(data_dir, source, bad), good fixture, bad fixture, the one line expected)
    "movielens wrong delimiter": (
        lambda d, s, f: movielens.prepare(
            d, variant="100k", options=SMALL, source=str(s), offline=True, force=f, verify=False
        ),
        good_movielens,
        movielens_comma_delimited,
        r"u.data, line 1: 1 field, expected 4: a short or cut line; the format is TAB-separated user item rating",
    ),
    "movielens missing file": (
        lambda d, s, f: movielens.prepare(
            d, variant="100k", options=SMALL, source=str(s), offline=True, force=f, verify=False
        ),
        good_movielens,
        movielens_missing_file,
        r"lacks 1 file movielens --variant 100k needs: u.item",
    ),
    "facebook wrong delimiter": (
        lambda d, s, f: facebook.prepare(
            d, options=RatingOptions(groups=3), source=str(s), offline=True, force=f, verify=False
        ),
        facebook_edges,
        lambda t: facebook_edges(t, sep="\t"),
        r"facebook_combined.txt, line 1: 1 field, expected 2: a short or cut line; the format is the SNAP edge list",
    ),
    "facebook wrong checksum": (
        lambda d, s, f: facebook.prepare(
            d, options=RatingOptions(groups=3), source=str(s), offline=True, force=f, verify=f
        ),
        facebook_edges,
        facebook_edges,
        r"facebook_combined.txt: checksum mismatch, expected sha256 f41c026e",
    ),
    "lastfm missing column": (
        lambda d, s, f: lastfm.prepare(d, options=RatingOptions(groups=3), source=str(s), offline=True, force=f),
        lastfm_zip,
        lambda t: lastfm_zip(t, header="userID\tartist\tweight"),
        r"no column 'artistID' in the header",
    ),
    "shuttle wrong delimiter": (
        lambda d, s, f: classification.prepare(d, "shuttle", source=str(s), offline=True, force=f, verify=False),
        shuttle_folder,
        lambda t: shuttle_folder(t, sep=","),
        r"shuttle.trn, line 1: 1 field, expected 10: a short or cut line; the format is space-separated",
    ),
    "shuttle truncated": (
        lambda d, s, f: classification.prepare(d, "shuttle", source=str(s), offline=True, force=f, verify=f),
        shuttle_folder,
        shuttle_folder,
        r"shuttle.trn: row count mismatch, expected 43,500 lines .* found 40 lines",
    ),
    "yelp missing column": (
        lambda d, s, f: yelp.prepare(d, options=SMALL, source=str(s), offline=True, force=f),
        yelp_reviews,
        lambda t: yelp_reviews(t, stars="rating"),
        r"yelp_academic_dataset_review.json, line 1: the review has no stars",
    ),
    "amazon wrong delimiter": (
        lambda d, s, f: amazon.prepare(
            d, version="2014", category="Musical_Instruments", options=SMALL, source=str(s), offline=True, force=f
        ),
        amazon_csv,
        lambda t: amazon_csv(t, sep="\t"),
        r"Instruments.csv, line 1: 1 field, expected 4: a short or cut line; the format is the Amazon 2014",
    ),
    "mnist truncated": (
        lambda d, s, f: classification.prepare(d, "mnist", source=str(s), offline=True, force=f, verify=False),
        mnist_folder,
        lambda t: mnist_folder(t, truncate=True),
        r"t10k-images-idx3-ubyte.gz: .*the file is truncated",
    ),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_is_one_line_and_keeps_the_previous_version(tmp_path, fault):
    prepare, good, bad, message = FAULTS[fault]
    data = tmp_path / "ds"
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    folder = prepare(data, good(tmp_path / "good"), False)  # self-made files: prepared with verify=False
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(UserError, match=message) as caught:
        prepare(data, bad(tmp_path / "bad"), True)  # --force, and for the checksum faults verification on
    assert "\n" not in str(caught.value)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in data.iterdir()) == [folder.name]  # no staging folder left behind


def test_prepared_folder_is_readable_like_any_other(tmp_path):
    folder = facebook.prepare(
        tmp_path / "ds",
        options=RatingOptions(groups=3),
        source=str(facebook_edges(tmp_path)),
        offline=True,
        verify=False,
    )
    mask = os.umask(0)
    os.umask(mask)
    assert folder.stat().st_mode & 0o777 == 0o777 & ~mask


def test_disk_full_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    source = str(facebook_edges(tmp_path))
    folder = facebook.prepare(
        tmp_path / "ds", options=RatingOptions(groups=3), source=source, offline=True, verify=False
    )
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def full(table, path):
        Path(path).write_bytes(b"PAR1")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("banditbench.data.prepared.write_parquet", full)
    with pytest.raises(UserError, match=r"ds: no space left on the device; the dataset needs about \d+ MB"):
        facebook.prepare(
            tmp_path / "ds", options=RatingOptions(groups=4), source=source, offline=True, verify=False, force=True
        )
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert [p.name for p in (tmp_path / "ds").iterdir()] == ["facebook"]


@pytest.mark.parametrize(
    "labels, says",
    [([0, 0, 0], "only 1 class: every arm but one is always wrong"), ([0, 2, 2], "1 classes have no sample")],
)
def test_a_classification_with_one_class_or_an_empty_class_is_flagged(labels, says):
    samples = pd.DataFrame({"x_0": [0.1, 0.2, 0.3], "label": labels})
    _, warnings = sanity.analyse("classification", {"samples": samples})
    assert warnings == [says]


def test_a_log_whose_references_mostly_resolve_is_prepared_with_the_share_that_does_not():
    news = pd.DataFrame({"news_id": [f"N{i}" for i in range(9)]})
    behaviors = pd.DataFrame(
        {"user_id": ["U1"], "shown": [[f"N{i}" for i in range(10)]], "history": [["N0"]], "clicked": [[1] + [0] * 9]}
    )
    report, warnings = sanity.analyse("logged", {"news": news, "behaviors": behaviors})
    assert report["resolved_shown"] == 0.9
    assert warnings == ["10.0% of the impressions → news references name no news item in the news file"]


def test_with_unrated_negatives_every_item_a_pool_has_not_liked_is_another_arm():
    """Links or listens only (Facebook, LastFM): a group that liked 2 of 12 items offers the other 10."""
    users = pd.DataFrame({"user": [0, 1], "group": [0, 0]})
    inter = pd.DataFrame({"user": [0, 1, 1], "item": [3, 3, 7], "label": [1, 1, 1]})
    tables = {"users": users, "items": pd.DataFrame({"item": range(12)}), "interactions": inter}
    parameters = {"negatives": "unrated", "arms": 10}
    report, _ = sanity.analyse("recommendation", tables, parameters=parameters, name="links")
    assert report["positive_arms_per_group"]["max"] == 2 and report["other_arms_per_group"]["max"] == 10
    assert report["servable_groups"] == 1


def test_an_arm_feature_that_is_zero_for_every_arm_is_flagged():
    arms = pd.DataFrame({"arm": [0, 1], "x_0": [0.5, 1.0], "x_1": [0.0, 0.0]})
    _, warnings = sanity.analyse("matrix", {"rewards": pd.DataFrame({"r_0": [1.0]}), "arms": arms})
    assert warnings == ["1 of the 2 arm features (x_1) are 0 for every arm: they carry no information"]
