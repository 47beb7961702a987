import zipfile

import pytest
from conftest import banditbench

from banditbench.data import load_dataset, logged
from banditbench.errors import UserError


def write_mind(folder, part):
    news = [
        "N1\tsports\tfootball_nfl\tBig game tonight\tAn abstract\thttps://x\t[]\t[]",
        "N2\tnews\tnewsus\tÉlection news\t\thttps://y\t[]\t[]",
        "N3\tsports\tbaseball_mlb\tHome run\tText\thttps://z\t[]\t[]",
    ]
    behaviors = ["1\tU10\t11/12/2019 2:14:46 PM\tN1 N2\tN3-1 N2-0", "2\tU11\t11/13/2019 10:00:01 AM\t\tN1-0 N3-0 N2-1"]
    with zipfile.ZipFile(folder / f"MINDsmall_{part}.zip", "w") as z:
        z.writestr("news.tsv", "\n".join(news) + "\n")
        z.writestr("behaviors.tsv", "\n".join(behaviors) + "\n")


def test_mind_news_and_impressions(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    write_mind(raw, "train")
    with pytest.raises(UserError, match=r"lacks MINDsmall_dev.zip \(or the folder MINDsmall_dev/\)"):
        logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True)
    write_mind(raw, "dev")
    with pytest.raises(UserError, match="behaviors.tsv: checksum mismatch, expected sha256 a424547c"):
        logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True)
    logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True, verify=False)
    dataset = load_dataset(tmp_path / "ds", "mind")
    news, behaviors = dataset.table("news"), dataset.table("behaviors")
    assert list(news.news_id) == ["N1", "N2", "N3"] and news.title[1] == "Élection news"
    assert list(news.topic) == [1, 2, 0]  # sorted subcategories: baseball_mlb, football_nfl, newsus
    first = behaviors.iloc[0]
    assert list(first.shown) == ["N3", "N2"] and list(first.clicked) == [1, 0] and list(first.history) == ["N1", "N2"]
    assert len(behaviors.history[1]) == 0 and list(behaviors.clicked[1]) == [0, 0, 1]
    assert first.time == 1573568086  # 2019-11-12 14:14:46 UTC
    assert list(behaviors.split) == ["train", "train", "dev", "dev"]
    assert dataset.manifest["counts"]["clicks"] == 4 and dataset.manifest["protocol"] == "ips-simulator"
    done = banditbench("run", "--dataset", "mind", "--data-dir", tmp_path / "ds", "--out", tmp_path / "out")
    assert done.returncode == 2 and "run `banditbench simulator train mind` first" in done.stderr


def test_movielens_logged_split(tmp_path):
    day = 86400
    t0, t1, t2 = 1_200_000_000, 1_300_000_000, 1_420_000_000  # 2008, 2011, 2015
    rows = []
    for u in range(1, 6):
        rows += [(u, 1, 5.0, t0), (u, 2, 2.0, t0 + day)]  # history: item 1 liked
        rows += [(u, 3, 4.0, t1), (u, 4, 1.0, t1 + day), (u, 5, 4.5, t1 + 2 * day)]  # train: 2 positives
        rows += [(u, 6, 5.0, t2)] if u != 5 else [(u, 6, 3.0, t2)]  # test: user 5 has no positive → dropped
    rows += [(9, 1, 5.0, t1)]  # only train activity → dropped
    rows += [(7, 1, 5.0, t0), (7, 4, 1.0, t1), (7, 6, 5.0, t2)]  # no positive in train → dropped
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n" + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in rows)
    )
    (folder / "movies.csv").write_text(
        'movieId,title,genres\n1,"Toy Story (1995)",Adventure|Animation\n'
        + "".join(f"{i},Film {i},Drama\n" for i in range(2, 7))
    )
    logged.prepare_movielens_logged(tmp_path / "ds", variant="20m", source=str(folder), offline=True)
    dataset = load_dataset(tmp_path / "ds", "movielens-logged")
    behaviors, news = dataset.table("behaviors"), dataset.table("news")
    assert sorted(set(behaviors.user_id)) == ["U1", "U2", "U3", "U4"]
    train = behaviors[behaviors.split == "train"]
    assert len(train) == 8 and len(behaviors[behaviors.split == "test"]) == 4
    assert all(list(s[1:]) == ["M4"] * 20 and s[0] in ("M3", "M5") for s in train.shown)  # negatives of the split
    assert all(list(h) == ["M1"] for h in train.history)
    test = behaviors[behaviors.split == "test"]
    assert all(sorted(h) == ["M1", "M3", "M5"] for h in test.history)  # test history adds train positives
    assert all(set(s[1:]) <= {"M2", "M4"} for s in test.shown)  # no test negative: items never liked
    assert behaviors.valid.sum() == 1  # 20 % of 4 test impressions
    assert news.set_index("news_id").loc["M1", "subcategory"] == "Adventure"
