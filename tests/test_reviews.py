import gzip
import io
import json
import tarfile

import pytest
from fixtures_raw import ratings_table

from banditbench.data import amazon, load_dataset, yelp
from banditbench.data.ratings import RatingOptions
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=30, top_items=50, groups=5)


def test_yelp_tar_of_json_lines(tmp_path):
    rows = ratings_table()
    lines = "".join(
        json.dumps(
            {
                "review_id": f"r{k}",
                "user_id": f"u{u:03d}",
                "business_id": f"b{i:03d}",
                "stars": float(s),
                "useful": 0,
                "text": 'Great \u00e9clair, "really"\nnice',
                "date": "2019-01-01 10:00:00",
            }
        )
        + "\n"
        for k, (u, i, s, _) in enumerate(rows)
    )
    path = tmp_path / "yelp_dataset.tar"
    with tarfile.open(path, "w") as tar:
        blob = lines.encode()
        info = tarfile.TarInfo("yelp_academic_dataset_review.json")
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
    with pytest.raises(UserError, match="yelp cannot be downloaded automatically.*--source"):
        yelp.prepare(tmp_path / "ds", options=SMALL)
    yelp.prepare(tmp_path / "ds", options=SMALL, source=str(path), offline=True)
    dataset = load_dataset(tmp_path / "ds", "yelp")
    counts = dataset.manifest["counts"]
    assert counts["raw_ratings"] == len(rows) and counts["users"] == 30
    inter = dataset.table("interactions")
    assert set(inter.rating) <= {1, 2, 3, 4, 5} and (inter.label == 1).sum() == (inter.rating == 5).sum()
    assert dataset.table("users").raw_user.str.startswith("u").all()


@pytest.mark.parametrize("version", ["2014", "2018", "2023"])
def test_amazon_column_order_per_release(tmp_path, version):
    rows = ratings_table()
    user, item = [f"A{u:04d}" for u in rows[:, 0]], [f"B{i:05d}" for i in rows[:, 1]]
    if version == "2014":
        text, name = (
            "".join(f"{u},{i},{s}.0,{t}\n" for u, i, (_, _, s, t) in zip(user, item, rows)),
            "ratings_Video_Games.csv",
        )
    elif version == "2018":
        text, name = "".join(f"{i},{u},{s}.0,{t}\n" for u, i, (_, _, s, t) in zip(user, item, rows)), "Video_Games.csv"
    else:
        text, name = (
            "user_id,parent_asin,rating,timestamp\n"
            + "".join(f"{u},{i},{s}.0,{t}000\n" for u, i, (_, _, s, t) in zip(user, item, rows)),
            "Video_Games.csv.gz",
        )
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    if version == "2018":  # the file name matches a pinned download, so its checksum is checked
        with pytest.raises(UserError, match="checksum mismatch"):
            amazon.prepare(
                tmp_path / "ds", version=version, category="Video_Games", options=SMALL, source=str(path), offline=True
            )
    amazon.prepare(
        tmp_path / "ds",
        version=version,
        category="Video_Games",
        options=SMALL,
        source=str(path),
        offline=True,
        verify=False,
    )
    dataset = load_dataset(tmp_path / "ds", "amazon")
    assert dataset.parameters["version"] == version and dataset.parameters["category"] == "Video_Games"
    users = dataset.table("users")
    assert users.raw_user.str.startswith("A").all() and dataset.table("items").raw_item.str.startswith("B").all()
    assert dataset.manifest["counts"]["raw_ratings"] == len(rows)
