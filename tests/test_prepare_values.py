"""prepare validates the values it reads, not only the files: a cut, short or junk line, a NaN or infinite value,
a rating off the format's scale is one line naming the file and the line (counted from 1, as an editor counts),
with or without --no-verify, and nothing is written. A dataset no round can serve is refused with the fix."""

import json
import sys

import numpy as np
import pytest
from fixtures_logged import write_mind_fixture
from fixtures_raw import ratings_table, write_idx
from test_raw_files import ml100k_folder

from banditbench import cli
from banditbench.data import amazon, classification, load_dataset, logged, movielens, synthetic, yelp
from banditbench.data.fetch import cause
from banditbench.data.ratings import RatingOptions
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=40, top_items=60, groups=4)
UCI_LINES = {  # a line of each UCI file in its published layout
    "magic04.data": "28.7967,16.0021,2.6449,0.3918,0.1982,27.7004,22.011,-8.2027,40.092,81.8828,g",
    "pendigits.tra": " 47,100, 27, 81, 57, 37, 26,  0,  0, 23, 56, 53,100, 90, 40, 98,  8",
    "letter-recognition.data": "T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8",
    "agaricus-lepiota.data": "p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u",
    "shuttle.trn": "50 21 77 0 28 0 27 48 22 2",
    "covtype.data": "2596,51,3,258,0,510,221,232,148,6279," + "1,0,0,0," + "0," * 28 + "1," + "0," * 11 + "5",
}
FAMILY = {
    "magic04.data": "magic",
    "pendigits.tra": "pendigits",
    "letter-recognition.data": "letter",
    "agaricus-lepiota.data": "mushroom",
    "shuttle.trn": "shuttle",
    "covtype.data": "covertype",
}


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """The command line in this process (its exit code, stdout, stderr): what a user sees, without a new
    interpreter."""
    monkeypatch.setattr(sys, "argv", ["banditbench", *map(str, args)])
    try:
        cli.main()
        code = 0
    except SystemExit as e:
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def uci_folder(tmp_path, name: str, last: str, lines: int = 30):
    """``lines`` good lines of ``name`` (and pendigits' test file), then ``last`` as it was cut or garbled."""
    folder = tmp_path / "raw"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text((UCI_LINES[name] + "\n") * lines + last)
    (folder / "pendigits.tes").write_text(UCI_LINES["pendigits.tra"] + "\n")
    (folder / "shuttle.tst").write_text(UCI_LINES["shuttle.trn"] + "\n")
    return folder


@pytest.mark.parametrize(
    "name, last, message",
    [
        (
            "magic04.data",
            UCI_LINES["magic04.data"][:40],
            r"line 31: 6 fields, expected 11: a short or cut line; the format is comma-separated MAGIC",
        ),
        ("pendigits.tra", UCI_LINES["pendigits.tra"][:30], r"line 31: 8 fields, expected 17: a short or cut line"),
        ("letter-recognition.data", "D,\n", r"line 31: 2 fields, expected 17: a short or cut line"),
        ("agaricus-lepiota.data", "e,x,s,y,t,a,\n", r"line 31: 7 fields, expected 23: a short or cut line"),
        ("letter-recognition.data", "D,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,x\n", r"line 31: field 17 'x' is not a number"),
        ("letter-recognition.data", "D,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,16\n", r"line 31: field 17 16 is above 15"),
        ("letter-recognition.data", "d,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8\n", r"line 31: class 'd' is not one of A … Z"),
        (
            "magic04.data",
            "28.8,16.0,2.6,0.4,0.2,27.7,22.0,-8.2,nan,81.9,g\n",
            r"line 31: field 9 'nan' is not a number",
        ),
        ("magic04.data", "28.8,16.0,2.6,0.4,0.2,27.7,22.0,-8.2,inf,81.9,g\n", r"line 31: field 9 inf is not a finite"),
        ("agaricus-lepiota.data", "p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,UU\n", r"line 31: field 23 'UU' is not"),
        ("shuttle.trn", "50 21 77 0 28 0 27 48 22 2 1\n", r"line 31: 11 fields, expected 10"),
        ("covtype.data", UCI_LINES["covtype.data"][:60] + "\n", r"line 31: 22 fields, expected 55: a short or cut"),
        ("covtype.data", UCI_LINES["covtype.data"][:-1] + "8\n", r"line 31: class '8' is not one of 1, 2, 3"),
        (
            "pendigits.tra",
            " 47,100, 27, 81, 57, 37, 26,  0,  0, 23, 56, 53,100, 90, 40, 98, 12\n",
            r"line 31: class '12' is not one of 0, 1, 2",
        ),
    ],
)
def test_a_cut_or_junk_uci_line_is_refused_by_its_line_under_no_verify(tmp_path, name, last, message):
    folder = uci_folder(tmp_path, name, last)
    with pytest.raises(UserError, match=rf"{name}, {message}") as caught:
        classification.prepare(tmp_path / "ds", FAMILY[name], source=str(folder), offline=True, verify=False)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "ds").exists()
    (folder / name).write_text((UCI_LINES[name] + "\n") * 30)  # the same file, whole, prepares
    classification.prepare(tmp_path / "ds", FAMILY[name], source=str(folder), offline=True, verify=False)


def test_blank_lines_count_in_the_line_number(tmp_path):
    folder = uci_folder(tmp_path, "magic04.data", "")
    text = (folder / "magic04.data").read_text().splitlines()
    text[10:10] = ["", ""]  # two blank lines: pandas skips them, an editor counts them
    text[20] = text[20].replace(",g", ",x")
    (folder / "magic04.data").write_text("\n".join(text) + "\n")
    with pytest.raises(UserError, match=r"magic04.data, line 21: class 'x' is not one of g, h"):
        classification.prepare(tmp_path / "ds", "magic", source=str(folder), offline=True, verify=False)


@pytest.mark.parametrize(("name", "rows"), [("magic04.data", "19,020"), ("covtype.data", "581,012")])
def test_the_uci_row_count_check_is_not_called_a_checksum(tmp_path, name, rows):
    folder = uci_folder(tmp_path, name, "")
    with pytest.raises(UserError, match=rf"{name}: row count mismatch, expected {rows} lines .* found 30 lines"):
        classification.prepare(tmp_path / "ds", FAMILY[name], source=str(folder), offline=True)
    assert not (tmp_path / "ds").exists()


def write_u_data(folder, ratings):
    rows = ratings_table()
    rows = rows[: len(ratings)] if len(ratings) < len(rows) else rows
    (folder / "u.data").write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for (u, i, _, t), r in zip(rows, ratings)))


@pytest.mark.parametrize(
    "planted, message",
    [
        ("", r"u.data, line 7: no rating \(an empty value\)"),
        ("nan", r"u.data, line 7: rating 'nan' is not a number"),
        ("99", r"u.data, line 7: rating 99 is above 5 \(the format allows whole numbers 1 to 5\)"),
        ("-3", r"u.data, line 7: rating -3 is below 1"),
        ("4.5", r"u.data, line 7: rating 4.5 is not a whole number"),
        ("inf", r"u.data, line 7: rating inf is not a finite number"),
        ("five", r"u.data, line 7: rating 'five' is not a number"),
    ],
)
def test_movielens_ratings_off_the_scale_or_missing_are_refused_under_no_verify(tmp_path, planted, message):
    folder = ml100k_folder(tmp_path)
    ratings = [str(r) for r in ratings_table()[:, 2]]
    ratings[6::10] = [planted] * len(ratings[6::10])  # one rating in ten
    write_u_data(folder, ratings)
    with pytest.raises(UserError, match=message):
        movielens.prepare(
            tmp_path / "ds", variant="100k", options=SMALL, source=str(folder), offline=True, verify=False
        )
    assert not (tmp_path / "ds").exists()


def test_half_stars_are_the_scale_of_the_csv_releases(tmp_path):
    path = tmp_path / "ratings.csv"
    lines = [f"{u},{i},{r - 0.5 * (u % 2)},{t}" for u, i, r, t in ratings_table()]
    path.write_text("userId,movieId,rating,timestamp\n" + "\n".join(lines) + "\n")
    assert set(movielens.read_ratings(path, "20m")["rating"]) == {0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5}
    lines[99] = lines[99].rsplit(",", 2)[0] + ",4.3," + lines[99].rsplit(",", 1)[1]
    path.write_text("userId,movieId,rating,timestamp\n" + "\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"ratings.csv, line 101: rating 4.3 is not a multiple of 0.5"):
        movielens.read_ratings(path, "25m")
    path.write_text("userId,movieId,rating,timestamp\n" + "\n".join(lines[:50]) + "\n51,7")
    with pytest.raises(UserError, match=r"ratings.csv, line 52: 2 fields, expected 4: a short or cut line"):
        movielens.read_ratings(path, "20m")


def test_the_cli_gives_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    folder = uci_folder(tmp_path, "pendigits.tra", UCI_LINES["pendigits.tra"][:30])
    code, out, err = run_cli(
        monkeypatch, capsys, "prepare", "pendigits", "--source", folder, "--no-verify", "--data-dir", tmp_path / "ds"
    )
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "pendigits.tra, line 31: 8 fields" in err
    assert not (tmp_path / "ds").exists()


def test_a_cut_mind_behaviors_file_loses_no_partial_row_silently(tmp_path):
    behaviors = tmp_path / "behaviors.tsv"
    good = "1\tU1\t11/12/2019 2:14:46 PM\tN1 N2\tN3-1 N4-0 N5-0\n"
    for cut, message in (
        (good[:-8], r"line 3: impressions ending 'N3-1 N4' are not news-id-0/1 pairs"),
        (good[:25], r"line 3: 3 fields, expected 5: a short or cut line"),
        ("3\tU1\t13/12/2019 2:14:46 PM\t\tN3-1\n", r"line 3: time '13/12/2019 2:14:46 PM' is not like"),
        ("x\tU1\t11/12/2019 2:14:46 PM\t\tN3-1\n", r"line 3: impression id 'x' is not a number"),
    ):
        behaviors.write_text(good + good + cut)
        with pytest.raises(UserError, match=rf"behaviors.tsv, {message}"):
            logged.read_mind_behaviors(behaviors, "train")
    behaviors.write_text(good + "2\tU2\t11/12/2019 2:15:00 PM\t\tN3-0 N4-1\n")  # an empty history is fine
    assert logged.read_mind_behaviors(behaviors, "train")["history"].map(len).tolist() == [2, 0]


def test_prepare_mind_with_a_cut_behaviors_file_writes_nothing(tmp_path):
    import zipfile

    raw = write_mind_fixture(tmp_path / "raw")
    path = raw / "MINDsmall_dev.zip"
    with zipfile.ZipFile(path) as z:
        news, behaviors = z.read("news.tsv"), z.read("behaviors.tsv")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("news.tsv", news)
        z.writestr("behaviors.tsv", behaviors[: behaviors.rindex(b"-")])  # cut inside the last impressions
    with pytest.raises(UserError, match=r"behaviors.tsv, line 60: impressions ending"):
        logged.prepare_mind(tmp_path / "ds", source=str(raw), offline=True, verify=False)
    assert not (tmp_path / "ds").exists()


def yelp_lines(n=600):
    return [
        json.dumps({"user_id": f"u{i % 40}", "business_id": f"b{i % 60}", "stars": float(1 + i % 5), "date": "2019"})
        for i in range(n)
    ]


def test_yelp_names_the_line_an_editor_shows_not_pyarrows_block_row(tmp_path):
    path = tmp_path / "yelp_academic_dataset_review.json"
    lines = yelp_lines()
    path.write_text("\n".join(lines[:509] + [lines[509][:30]]) + "\n")
    with pytest.raises(UserError, match=r"review.json, line 510: not a JSON object"):
        yelp.read_reviews(path)
    lines[300] = lines[300].replace('"stars": 1.0', '"stars": 99')
    path.write_text("\n".join(lines[:100] + [""] + lines[100:]) + "\n")  # a blank line before it
    with pytest.raises(UserError, match=r"review.json, line 302: stars 99 is above 5"):
        yelp.read_reviews(path)
    lines[300] = lines[300].replace('"stars": 99', '"stars": null')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"review.json, line 301: the review has no stars"):
        yelp.read_reviews(path)


def test_amazon_ratings_off_the_five_star_scale_are_refused(tmp_path):
    path = tmp_path / "ratings_Musical_Instruments.csv"
    lines = [f"A{u},B{i},{r}.0,{t}" for u, i, r, t in ratings_table()]
    lines[4] = "A1,B2,6.0,1400000000"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"ratings_Musical_Instruments.csv, line 5: rating 6 is above 5"):
        amazon.read_ratings(path, "2014")


def test_a_dataset_whose_items_cannot_fill_a_round_is_refused_with_the_fix(tmp_path):
    """An Amazon sample with 7 items: a round shows 10 arms (1 liked + 9 others)."""
    rng = np.random.default_rng(0)
    path = tmp_path / "ratings_Musical_Instruments.csv"
    path.write_text(
        "".join(
            f"A{u},B{rng.integers(7)},{rng.integers(1, 6)}.0,{1400000000 + 5 * u + k}\n"
            for u in range(60)
            for k in range(5)
        )
    )
    with pytest.raises(UserError, match=r"amazon: only 7 items are left, and a round shows 10 .*prepare it from more"):
        amazon.prepare(
            tmp_path / "ds",
            version="2014",
            category="Musical_Instruments",
            options=RatingOptions(groups=5),
            source=str(path),
            offline=True,
        )
    assert not (tmp_path / "ds").exists()


def test_groups_that_cannot_serve_are_counted_and_none_is_refused(tmp_path, monkeypatch, capsys):
    folder = ml100k_folder(tmp_path)
    options = RatingOptions(top_users=40, top_items=20, groups=20)
    movielens.prepare(tmp_path / "ds", variant="100k", options=options, source=str(folder), offline=True, verify=False)
    manifest = load_dataset(tmp_path / "ds", "movielens").manifest
    servable = manifest["sanity"]["servable_groups"]
    assert 0 < servable < 20
    assert f"{20 - servable} of the 20 groups cannot serve a round (each needs 1 liked and 9 other items)" in " ".join(
        manifest["warnings"]
    )
    cli.report_prepared(tmp_path / "ds" / "movielens")
    assert f"{servable} of the 20 groups can serve a round" in capsys.readouterr().out
    code, out, _ = run_cli(monkeypatch, capsys, "info", "movielens", "--data-dir", tmp_path / "ds")
    assert code == 0 and "servable groups" in out
    few_negatives = RatingOptions(top_users=40, top_items=20, groups=20, negative_below=1.5)  # only 1s are others
    with pytest.raises(UserError, match=r"movielens: no group has the 1 liked and 9 other items .*; choose fewer"):
        movielens.prepare(
            tmp_path / "ds",
            variant="100k",
            options=few_negatives,
            source=str(folder),
            offline=True,
            verify=False,
            force=True,
        )
    assert load_dataset(tmp_path / "ds", "movielens").manifest == manifest  # the servable version stays


def test_notmnist_without_its_training_images_warns_and_records_only_what_it_read(tmp_path):
    rng = np.random.default_rng(0)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (20, 28, 28)))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.arange(20) % 10)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.arange(20) % 10)  # no train images beside them
    classification.prepare(tmp_path / "ds", "notmnist", source=str(tmp_path), offline=True)
    manifest = load_dataset(tmp_path / "ds", "notmnist").manifest
    assert manifest["counts"]["samples"] == 20
    assert manifest["warnings"][0] == "--split all reads the test images only: train-images-idx3-ubyte(.gz) not found"
    assert [r["file"] for r in manifest["raw_files"]] == ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]


def test_an_uncompressed_idx_file_cut_short_is_not_called_gzipped(tmp_path):
    import gzip

    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros((5, 28, 28)))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(5))
    data = gzip.decompress((tmp_path / "t10k-images-idx3-ubyte.gz").read_bytes())
    (tmp_path / "t10k-images-idx3-ubyte.gz").unlink()
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(data[:3000])
    with pytest.raises(UserError, match=r"t10k-images-idx3-ubyte: cannot read it as an IDX file \(MNIST format\)"):
        classification.prepare(tmp_path / "ds", "mnist", split="test", source=str(tmp_path), offline=True, verify=False)


@pytest.mark.parametrize(
    "sizes, message",
    [
        ({"users": 100_000_000, "dim": 1000}, r"--users 100,000,000 with --dim 1,000 need about 1,49\d GiB of memory"),
        ({"users": 1e11}, r"--users 100,000,000,000 with --dim 15 need about 25,332 GiB"),
        ({"users": 1.5}, r"--users must be a whole number, got 1.5"),
    ],
)
def test_synthetic_sizes_beyond_memory_are_refused_before_anything_is_drawn(tmp_path, monkeypatch, sizes, message):
    import banditbench

    monkeypatch.setattr(synthetic, "physical_memory", lambda: 64 * 2**30)  # the same verdict on any machine
    with pytest.raises(UserError, match=message):
        banditbench.prepare("synthetic", data_dir=tmp_path / "ds", **sizes)
    assert not (tmp_path / "ds").exists()


def test_a_long_cause_is_shortened_at_a_word_boundary():
    error = OSError("HTTPSConnectionPool(host='files.grouplens.org', port=443): Max retries exceeded " * 5)
    short = cause(error, 120)
    assert len(short) <= 122 and short.endswith(" …")
    assert str(error).startswith(short[:-2]) and str(error)[len(short) - 2] == " "  # cut before a space
    assert cause(ValueError("")) == "ValueError"


def test_a_missing_dataset_names_a_command_that_exists(tmp_path):
    with pytest.raises(UserError, match=r"run `banditbench prepare movielens --variant 1m --data-dir .*` first "):
        load_dataset(tmp_path, "movielens-1m")
    with pytest.raises(UserError, match=r"\(under the name 'movielens'\)"):
        load_dataset(tmp_path, "movielens-1m")
    with pytest.raises(UserError, match=r"run `banditbench prepare synthetic --protocol cosine"):
        load_dataset(tmp_path, "synthetic-cosine")
    with pytest.raises(UserError, match=r"no dataset 'movielen' in .* \(did you mean movielens"):
        load_dataset(tmp_path, "movielen")
