"""Reliability of prepare: every bad raw input is one clear error and leaves no partial dataset."""

import zipfile

import pytest
from conftest import banditbench
from fixtures_raw import write_idx, write_ml1m_zip

from banditbench.data import classification, fetch, movielens
from banditbench.data.ratings import RatingOptions
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=30, top_items=50, groups=5)


def no_partial_output(data_dir):
    return not data_dir.exists() or not any(p.name.startswith(".") or p.name == "movielens" for p in data_dir.iterdir())


def test_checksum_mismatch_names_the_file(tmp_path):
    fake, _ = write_ml1m_zip(tmp_path, name="ml-1m.zip")  # a real file name whose published sha256 it cannot match
    with pytest.raises(UserError, match=r"ml-1m.zip: checksum mismatch, expected sha256 a6898adb"):
        movielens.prepare(tmp_path / "ds", variant="1m", options=SMALL, source=str(fake), offline=True)
    with pytest.raises(UserError, match=r"ml-1m.zip: checksum mismatch"):  # also inside a --source folder
        movielens.prepare(tmp_path / "ds", variant="1m", options=SMALL, source=str(tmp_path), offline=True)
    assert no_partial_output(tmp_path / "ds")


def test_cached_download_with_a_bad_checksum_is_not_used_offline(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "ml-100k.zip").write_bytes(b"not the archive")
    with pytest.raises(UserError, match="--offline: movielens --variant 100k needs ml-100k.zip"):
        movielens.prepare(tmp_path / "ds", variant="100k", offline=True, cache=cache)


def test_truncated_archive(tmp_path):
    good, _ = write_ml1m_zip(tmp_path)
    bad = tmp_path / "cut.zip"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(UserError, match="cut.zip: corrupt archive"):
        movielens.prepare(tmp_path / "ds", variant="1m", options=SMALL, source=str(bad), offline=True)
    assert no_partial_output(tmp_path / "ds")


def test_corrupt_member_fails_its_crc(tmp_path):
    good, _ = write_ml1m_zip(tmp_path)
    data = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as z:
        info = z.getinfo("ml-1m/ratings.dat")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 10
    data[start : start + 4] = b"9999"
    bad = tmp_path / "corrupt.zip"
    bad.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"corrupt.zip.*complete zip or tar archive"):
        movielens.prepare(tmp_path / "ds", variant="1m", options=SMALL, source=str(bad), offline=True)


def test_source_folder_missing_a_required_file(tmp_path):
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "ratings.dat").write_text("1::1::5::978300760\n")
    with pytest.raises(
        UserError,
        match=r"lacks 1 file movielens --variant 1m needs: movies.dat; download "
        r"https://files.grouplens.org/datasets/movielens/ml-1m.zip",
    ):
        movielens.prepare(tmp_path / "ds", variant="1m", source=str(tmp_path / "ml-1m"), offline=True)


def test_a_half_star_in_ml_1m_is_refused_as_off_its_whole_star_scale(tmp_path):
    folder = tmp_path / "ml-1m"
    folder.mkdir()
    (folder / "ratings.dat").write_text("1::1::5::978300760\n1::2::4.5::978300761\n")
    (folder / "movies.dat").write_text("1::Film (1990)::Comedy\n2::Film 2 (1991)::Drama\n")
    with pytest.raises(UserError, match=r"ratings.dat, line 2: rating 4.5 is not a whole number"):
        movielens.prepare(tmp_path / "ds", variant="1m", source=str(folder), offline=True, verify=False)
    assert no_partial_output(tmp_path / "ds")


def test_an_ml_100k_genre_flag_other_than_0_or_1_is_refused(tmp_path):
    from test_raw_files import ml100k_folder

    folder = ml100k_folder(tmp_path)
    lines = (folder / "u.item").read_text(encoding="latin-1").splitlines(keepends=True)
    lines[6] = lines[6][:-2] + "2\n"  # movie 7's last genre flag
    (folder / "u.item").write_text("".join(lines), encoding="latin-1")
    with pytest.raises(UserError, match=r"u.item: movie 7's genre flags hold '2', not 0 or 1"):
        movielens.prepare(tmp_path / "ds", variant="100k", source=str(folder), offline=True, verify=False)
    assert no_partial_output(tmp_path / "ds")


def test_file_in_the_wrong_format(tmp_path):
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "ratings.dat").write_text("1,1,5,978300760\n")  # commas where ml-1m has "::"
    (folder / "movies.dat").write_text("1::Toy Story (1995)::Animation\n")
    with pytest.raises(
        UserError, match=r"ratings.dat, line 1: 1 field, expected 4: a short or cut line; the format is UserID::"
    ):
        movielens.prepare(tmp_path / "ds", variant="1m", source=str(folder), offline=True)
    write_idx(folder / "t10k-images-idx3-ubyte.gz", __import__("numpy").zeros((3, 28, 28)))
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", __import__("numpy").zeros((3, 28, 28)))  # images, not labels
    with pytest.raises(UserError, match=r"t10k-labels-idx1-ubyte.gz: holds images, expected labels"):
        classification.prepare(tmp_path / "ds", "mnist", split="test", source=str(folder), offline=True, verify=False)


def test_empty_after_filtering(tmp_path):
    source, _ = write_ml1m_zip(tmp_path)
    with pytest.raises(
        UserError,
        match=r"no ratings left after keeping the top 30 users and 50 items with positive "
        r"= rating > 5",
    ):
        movielens.prepare(
            tmp_path / "ds",
            variant="1m",
            source=str(source),
            offline=True,
            options=RatingOptions(top_users=30, top_items=50, groups=5, positive_above=5.0),
        )
    assert no_partial_output(tmp_path / "ds")


def test_gated_and_missing_sources_say_what_to_do(tmp_path):
    spec = fetch.RawSpec(
        "yelp",
        (),
        {"reviews": ("yelp_academic_dataset_review.json",)},
        gated="accept the terms at https://www.yelp.com/dataset, download yelp_dataset.tar and pass it to --source",
    )
    with pytest.raises(UserError, match="yelp cannot be downloaded automatically: accept the terms"):
        with fetch.raw_files(spec):
            pass
    with pytest.raises(UserError, match="--source .*nowhere does not exist"):
        movielens.prepare(tmp_path, variant="1m", source=str(tmp_path / "nowhere"))


def test_cli_error_is_one_line_and_exit_2(tmp_path):
    done = banditbench(
        "prepare", "movielens", "--variant", "1m", "--source", tmp_path / "nowhere", "--data-dir", tmp_path / "ds"
    )
    assert done.returncode == 2 and done.stderr.startswith("error:") and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or "\n" not in done.stderr.strip().replace("\n", " ")
    assert not (tmp_path / "ds").exists()


def test_truncated_gzip_member(tmp_path):
    import numpy as np

    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros((5, 28, 28)))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(5))
    data = (tmp_path / "t10k-images-idx3-ubyte.gz").read_bytes()
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match=r"t10k-images-idx3-ubyte.gz: cannot read it as a gzip'ed IDX file"):
        classification.prepare(tmp_path / "ds", "mnist", split="test", source=str(tmp_path), offline=True, verify=False)


def test_download_verifies_caches_and_then_works_offline(tmp_path):
    """pooch downloads through our resuming hook from a local HTTP server, checks the sha256 and caches."""
    import functools
    import hashlib
    import http.server
    import threading

    served = tmp_path / "www"
    served.mkdir()
    payload = bytes(range(256)) * 4000
    (served / "blob.bin").write_bytes(payload)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/blob.bin"
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "blob.bin.part").write_bytes(payload[:1000])  # a partial earlier download (this server ignores Range)
    try:
        good = fetch.Download(url, "blob.bin", "sha256:" + hashlib.sha256(payload).hexdigest())
        assert fetch.download(good, cache, offline=False).read_bytes() == payload
        bad = fetch.Download(url, "other.bin", "sha256:" + "0" * 64)
        with pytest.raises(UserError, match="checksum mismatch"):
            fetch.download(bad, cache, offline=False)
        # a published md5 that matches does not excuse a pinned sha256 that does not
        pinned = fetch.Download(url, "pinned.bin", "md5:" + hashlib.md5(payload).hexdigest(), sha256="0" * 64)
        with pytest.raises(UserError, match="checksum mismatch, expected sha256 0{64}, found sha256"):
            fetch.download(pinned, cache, offline=False)
    finally:
        server.shutdown()
    assert fetch.download(good, cache, offline=True).read_bytes() == payload  # cached: no network needed
    assert not (cache / "other.bin").exists()


def test_partial_download_is_resumed_with_a_range_request(tmp_path):
    import hashlib
    import http.server
    import threading

    payload = bytes(range(256)) * 4000
    ranges = []

    class RangeHandler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  serves payload, honouring "Range: bytes=N-"
            start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
            ranges.append(start)
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(payload) - start))
            self.end_headers()
            self.wfile.write(payload[start:])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "blob.bin.part").write_bytes(payload[:300_000])
    try:
        item = fetch.Download(
            f"http://127.0.0.1:{server.server_address[1]}/blob.bin",
            "blob.bin",
            "sha256:" + hashlib.sha256(payload).hexdigest(),
        )
        assert fetch.download(item, cache, offline=False).read_bytes() == payload
    finally:
        server.shutdown()
    assert ranges == [300_000] and not (cache / "blob.bin.part").exists()
