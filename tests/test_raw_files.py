"""Raw files: unsafe archives are refused before anything is written, folders are verified file by file,
every missing file is named at once, and a checksum failure says what to do."""

import hashlib
import io
import json
import re
import shutil
import tarfile
import zipfile

import pytest
from fixtures_raw import SHARED, ratings_table

from banditbench.data import fetch, lastfm, load_dataset, movielens
from banditbench.data.fetch import RawSpec, raw_files
from banditbench.data.ratings import RatingOptions
from banditbench.errors import UserError

SMALL = RatingOptions(top_users=40, top_items=60, groups=4)
SPEC = RawSpec("fixture", (), {"data": ("u.data",)})


def ml100k_folder(tmp_path):
    """A self-made ml-100k folder: the published names, not the published bytes."""
    folder = tmp_path / "ml-100k"
    folder.mkdir()
    rows = ratings_table()
    (folder / "u.data").write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    genres = "|".join(["0"] * 18 + ["1"])
    (folder / "u.item").write_bytes(
        "".join(f"{i}|Film {i} (1995)|01-Jan-1995||http://x|{genres}\n" for i in range(1, 61)).encode("latin-1")
    )
    return folder


@pytest.mark.parametrize("name", ["../escaped.txt", "/tmp/banditbench-escaped.txt", "a/../../escaped.txt"])
def test_zip_slip_is_refused_before_anything_is_written(tmp_path, name):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("u.data", "1\t1\t5\t1\n")
        z.writestr(name, "owned")
    with pytest.raises(UserError, match="evil.zip: refused.*outside"):
        with raw_files(SPEC, str(archive), offline=True):
            pass
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path.parent / "escaped.txt").exists()


def tar_with(path, members):
    with tarfile.open(path, "w:gz") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)


def test_tar_slip_and_links_pointing_outside_are_refused(tmp_path):
    payload = b"1\t1\t5\t1\n"
    good = tarfile.TarInfo("u.data")
    good.size = len(payload)
    escape = tarfile.TarInfo("../../escaped.txt")
    escape.size = 5
    tar_with(tmp_path / "slip.tar.gz", [(good, payload), (escape, b"owned")])
    with pytest.raises(UserError, match="slip.tar.gz: refused"):
        with raw_files(SPEC, str(tmp_path / "slip.tar.gz"), offline=True):
            pass
    link = tarfile.TarInfo("data/link")
    link.type, link.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
    tar_with(tmp_path / "link.tar.gz", [(good, payload), (link, None)])
    with pytest.raises(UserError, match=r"link.tar.gz: refused.*data/link -> ../../../etc/passwd"):
        with raw_files(SPEC, str(tmp_path / "link.tar.gz"), offline=True):
            pass
    assert not (tmp_path.parent / "escaped.txt").exists()
    inside = tarfile.TarInfo("data/ok")  # a link that stays inside is fine
    inside.type, inside.linkname = tarfile.SYMTYPE, "../u.data"
    tar_with(tmp_path / "fine.tar.gz", [(good, payload), (inside, None)])
    with raw_files(SPEC, str(tmp_path / "fine.tar.gz"), offline=True) as raw:
        assert raw["data"].read_bytes() == payload


def test_truncated_zip_is_a_corrupt_archive_not_a_missing_file(tmp_path):
    archive = tmp_path / "ml-100k-copy.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("ml-100k/u.data", "1\t1\t5\t1\n" * 5000)
    archive.write_bytes(archive.read_bytes()[:400])
    with pytest.raises(UserError, match=r"ml-100k-copy.zip: corrupt archive") as caught:
        with raw_files(SPEC, str(archive), offline=True):
            pass
    assert "has no" not in str(caught.value) and "lacks" not in str(caught.value)


def test_folder_source_is_verified_file_by_file_and_no_verify_marks_it(tmp_path):
    folder = ml100k_folder(tmp_path)
    with pytest.raises(UserError) as caught:
        movielens.prepare(tmp_path / "ds", variant="100k", options=SMALL, source=str(folder), offline=True)
    message = str(caught.value)
    assert "u.data: checksum mismatch, expected sha256 06416e59" in message  # names the file and the expected
    assert "found sha256 " in message and "--no-verify accepts a different release at your own risk" in message
    assert "delete it" not in message and "\n" not in message
    assert not (tmp_path / "ds" / "movielens").exists()
    movielens.prepare(tmp_path / "ds", variant="100k", options=SMALL, source=str(folder), offline=True, verify=False)
    manifest = load_dataset(tmp_path / "ds", "movielens").manifest
    assert manifest["verification"] == "unverified"
    assert manifest["warnings"][0].startswith("unverified")
    assert all(record["verified"] is False for record in manifest["raw_files"])


@pytest.mark.skipif(not (SHARED / "movielens-100k" / "u.data").is_file(), reason="genuine ml-100k not available")
def test_genuine_ml100k_half_truncated_is_refused_and_whole_is_verified(tmp_path):
    folder = tmp_path / "ml-100k"
    shutil.copytree(SHARED / "movielens-100k", folder)
    data = (folder / "u.data").read_bytes()
    (folder / "u.data").write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="u.data: checksum mismatch"):
        movielens.prepare(tmp_path / "ds", variant="100k", source=str(folder), offline=True)
    (folder / "u.data").write_bytes(data)
    movielens.prepare(tmp_path / "ds", variant="100k", source=str(folder), offline=True)
    manifest = json.loads((tmp_path / "ds" / "movielens" / "manifest.json").read_text())
    assert manifest["verification"] == "verified"


def write_lastfm_listens_only(tmp_path):
    path = tmp_path / "lastfm-listens.zip"
    rows = ["userID\tartistID\tweight"] + [f"{u}\t{a}\t{u * a}" for u in range(2, 32) for a in range(1, 30, 1 + u % 3)]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("user_artists.dat", "\r\n".join(rows) + "\r\n")
    return path


def test_each_lastfm_pipeline_needs_only_the_files_it_reads(tmp_path):
    path = write_lastfm_listens_only(tmp_path)
    lastfm.prepare(tmp_path / "ds", source=str(path), offline=True, options=RatingOptions(groups=3))
    assert load_dataset(tmp_path / "ds", "lastfm").manifest["counts"]["users"] == 30
    with pytest.raises(UserError) as caught:
        lastfm.prepare(tmp_path / "ds", source=str(path), offline=True, pipeline_name="ghosh", force=True)
    message = str(caught.value)
    assert "lacks 2 files lastfm --pipeline ghosh needs: user_taggedartists.dat; tags.dat" in message


def test_mind_names_every_missing_part_at_once(tmp_path):
    from banditbench.data import logged

    (tmp_path / "mind").mkdir()
    with pytest.raises(
        UserError,
        match=r"lacks MINDsmall_train.zip \(or the folder MINDsmall_train/\) and "
        r"MINDsmall_dev.zip \(or the folder MINDsmall_dev/\)",
    ):
        logged.prepare_mind(tmp_path / "ds", source=str(tmp_path / "mind"), offline=True)
    (tmp_path / "mind" / "MINDsmall_train").mkdir()
    (tmp_path / "mind" / "MINDsmall_dev").mkdir()
    (tmp_path / "mind" / "MINDsmall_dev" / "news.tsv").write_text("N1\ta\tb\tc\td\te\t[]\t[]\n")
    with pytest.raises(UserError, match=r"lacks 2 files MINDsmall_train needs: behaviors.tsv; news.tsv"):
        logged.prepare_mind(tmp_path / "ds", source=str(tmp_path / "mind"), offline=True)


def zip_declaring(path, name: str, data: bytes, declared: int):
    """A zip whose member ``name`` holds ``data`` but whose directory declares ``declared`` bytes unpacked, as a
    decompression bomb's does (its real size would take seconds to write here)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, data)
    blob = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):  # central and local header
        at = blob.index(signature) + offset
        blob[at : at + 4] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(blob))
    return path


def test_a_member_declaring_far_more_than_its_compressed_size_is_refused_before_unpacking(tmp_path, monkeypatch):
    bomb = zip_declaring(tmp_path / "ml-100k.zip", "ml-100k/u.data", b"1\t1\t5\t1\n" * 100, 10**9)
    written = []
    monkeypatch.setattr(fetch.shutil, "copyfileobj", lambda *a, **k: written.append(a))
    with pytest.raises(UserError) as caught:
        with raw_files(SPEC, str(bomb), offline=True, verify=False):
            pass
    assert re.search(
        r"ml-100k.zip: refused, member ml-100k/u.data would unpack to 1.0 GB, over the limit of 64.0 MB "
        r"\(100 times its \d+ B compressed\); a genuine archive that needs more: pass --max-extract-gb 1.1",
        str(caught.value),
    )
    assert written == []  # nothing was unpacked
    with fetch.extract_limit(1.1), raw_files(SPEC, str(bomb), offline=True, verify=False):  # the flag lifts it
        assert len(written) == 1


def test_the_limit_flag_reaches_every_archive_and_free_space_is_checked(tmp_path, monkeypatch, capsys):
    from test_prepare_values import run_cli

    folder, archive = ml100k_folder(tmp_path), tmp_path / "ml-100k.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in ("u.data", "u.item"):
            z.write(folder / name, f"ml-100k/{name}")
    code, _, err = run_cli(
        monkeypatch, capsys, "prepare", "movielens", "--variant", "100k", "--source", archive, "--no-verify",
        "--max-extract-gb", "0.00001", "--data-dir", tmp_path / "ds",
    )  # fmt: skip
    assert code == 2 and "over the limit of 10.0 kB (--max-extract-gb)" in err and not (tmp_path / "ds").exists()
    images = tmp_path / "notMNIST_small.tar.gz"
    with tarfile.open(images, "w:gz") as t:
        t.add(folder / "u.data", "notMNIST_small/u.data")
    spec = RawSpec("fixture", (), {"data": ("u.data",)})
    with (
        fetch.extract_limit(0.00001),
        pytest.raises(UserError, match=r"u.data would unpack to .* \(--max-extract-gb\)"),
    ):
        with raw_files(spec, str(images), offline=True):
            pass
    monkeypatch.setattr(fetch.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 100, 100))
    with pytest.raises(
        UserError, match=r"no space to unpack notMNIST_small/u.data from .*tar.gz \(18.8 kB, 100 B free\); point TMPDIR"
    ):
        with raw_files(spec, str(images), offline=True):
            pass


def test_a_published_checksum_in_upper_case_hex_still_matches(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"hello\n")
    digest = "sha256:" + hashlib.sha256(b"hello\n").hexdigest().upper()
    assert fetch.hash_matches(path, digest)
    fetch.check_hash(path, digest)


def test_a_source_is_verified_only_when_every_file_read_matches_a_published_checksum(tmp_path):
    (tmp_path / "u.data").write_bytes(b"1\t1\t5\t1\n")
    (tmp_path / "u.item").write_bytes(b"1|Film|||x|0\n")
    published = {"u.data": hashlib.sha256(b"1\t1\t5\t1\n").hexdigest()}
    for members, verification in (
        ({"data": ("u.data",)}, "verified"),
        ({"data": ("u.data",), "items": ("u.item",)}, "no published checksum"),
    ):
        with raw_files(RawSpec("fixture", (), members, member_sha256=published), str(tmp_path), offline=True) as found:
            assert found.verification == verification


def test_a_last_line_without_its_newline_is_counted(tmp_path):
    (tmp_path / "cut.txt").write_bytes(b"1,2\n3,4\n5,6")
    (tmp_path / "whole.txt").write_bytes(b"1,2\n3,4\n5,6\n")
    assert fetch.count_lines(tmp_path / "cut.txt") == fetch.count_lines(tmp_path / "whole.txt") == 3


def test_a_file_longer_than_its_published_row_count_is_refused_too(tmp_path):
    path = tmp_path / "x.data"
    path.write_bytes(b"1\n2\n3\n")
    digest = fetch.sha256_of(path)

    def published(rows):
        return RawSpec("x", (), {"data": ("x.data",)}, member_rows={"x.data": rows})

    with pytest.raises(UserError, match="row count mismatch.*3 lines"):
        fetch.check_member(path, "x.data", published(2), digest)
    assert fetch.check_member(path, "x.data", published(3), digest)


def test_a_cached_archive_that_fails_its_checksum_is_not_used(tmp_path):
    (tmp_path / "a.zip").write_bytes(b"not the published file")
    item = fetch.Download("https://example.invalid/a.zip", "a.zip", "sha256:" + "0" * 64)
    with pytest.raises(UserError, match="fails its checksum"):
        fetch.download(item, tmp_path, offline=True)


def test_a_published_file_found_in_a_sub_folder_of_the_source_is_checked(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.csv").write_bytes(b"a,b\n1,2\n")
    published = fetch.Download("https://example.invalid/data.csv", "data.csv", "sha256:" + "0" * 64)
    spec = RawSpec("x", (published,), {"data": ("data.csv",)})
    with pytest.raises(UserError, match="checksum mismatch"):
        with raw_files(spec, str(tmp_path), offline=True, cache=tmp_path / "cache"):
            pass
    with raw_files(spec, str(tmp_path), offline=True, cache=tmp_path / "cache", verify=False) as raw:
        assert raw.verification == "unverified"
