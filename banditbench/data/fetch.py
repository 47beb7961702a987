"""Raw files of a dataset: verified downloads into a cache (pooch), or the user's own ``--source``.

A dataset declares a :class:`RawSpec`: the archives or files to download (URL, file name, pinned
sha256/md5 where one is published) and the *members* it needs, each by the names it may have
(``u.data``; ``shuttle.trn`` or ``shuttle.trn.Z``). :func:`raw_files` finds every member in the
downloaded files or in ``--source`` (a file, a folder searched recursively, a zip/tar archive or a
URL), extracting archive members into a temporary folder, and records where each came from and its
sha256 for the manifest. Every failure is a one-line :class:`UserError` naming the file.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pooch

from banditbench.errors import UserError

CACHE_ENV = "BANDITBENCH_CACHE"
RETRIES = 3  # pooch re-downloads a file up to this many times after a failure or a bad hash


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_dir(option: Path | None = None) -> Path:
    """Where raw archives are kept between prepares: --cache-dir, $BANDITBENCH_CACHE, or ~/.cache/banditbench."""
    if option is not None:
        return Path(option)
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(pooch.os_cache("banditbench"))


@dataclass(frozen=True)
class Download:
    url: str
    fname: str
    known_hash: str | None = None  # "sha256:…" or "md5:…" when published; None: recorded, not checked
    # the file's sha256 pinned beside a published md5 (e.g. by another library): checked too, and recorded
    sha256: str | None = None

    def hashes(self) -> tuple[str, ...]:
        """Every checksum the file must match, the published one first."""
        return tuple(h for h in (self.known_hash, f"sha256:{self.sha256}" if self.sha256 else None) if h)


@dataclass(frozen=True)
class RawSpec:
    dataset: str
    downloads: tuple[Download, ...]
    members: dict[str, tuple[str, ...]]  # key → accepted file names (first is the canonical one)
    gated: str | None = None  # for data behind a terms form: what to download and where to point --source
    optional: tuple[str, ...] = ()  # member keys a dataset can do without
    # Published per-file sha256 and line counts of the members, by file name: a folder or a re-packed
    # archive is verified file by file, so a truncated or edited file is refused like a bad download.
    member_sha256: dict[str, str] = field(default_factory=dict)
    member_rows: dict[str, int] = field(default_factory=dict)

    def where(self) -> str:
        if self.gated:
            return self.gated
        return "download " + ", ".join(d.url for d in self.downloads) + " and pass the file or its folder to --source"


VERIFIED, UNVERIFIED, UNPUBLISHED = "verified", "unverified", "no published checksum"


@dataclass
class RawFiles:
    """The located members of one prepare: ``raw[key]`` is a local path; ``records`` go to the manifest.

    ``verification`` is ``verified`` when every file read was checked against a published checksum or
    row count, ``unverified`` when the user passed ``--no-verify``, and ``no published checksum`` when
    the publisher gives none (the sha256 of what was read is recorded either way)."""

    paths: dict[str, Path]
    records: list[dict[str, Any]] = field(default_factory=list)
    verification: str = UNPUBLISHED
    dropped: dict[str, int] = field(default_factory=dict)  # rows a reader skipped, by reason (sanity report)
    warnings: list[str] = field(default_factory=list)  # what a reader noticed, for the manifest's warnings

    def __getitem__(self, key: str) -> Path:
        return self.paths[key]

    def get(self, key: str) -> Path | None:
        return self.paths.get(key)

    def unused(self, key: str) -> None:
        """Forget a member the reader found but did not read, so the manifest lists only the files read."""
        if self.paths.pop(key, None) is not None:
            self.records = [r for r in self.records if r["member"] != key]


# ---------------------------------------------------------------- reading guard

READ_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    zipfile.BadZipFile,
    tarfile.TarError,
    zlib.error,
    UnicodeDecodeError,
)


def cause(error: BaseException, limit: int = 200) -> str:
    """An exception's first line for a one-line message, shortened at a word boundary, never mid-word."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",;:(") + " …"


@contextlib.contextmanager
def reading(path: Path, expected: str) -> Iterator[None]:
    """Turn a parse failure of ``path`` into a one-line error saying what the file should have been."""
    try:
        yield
    except UserError:
        raise
    except READ_ERRORS as e:
        raise UserError(f"{path}: cannot read it as {expected} ({cause(e)})") from None


def open_bytes(path: Path):
    """Open a raw file for binary reading, decompressing ``.gz`` and Unix-compress ``.Z`` transparently."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".Z":
        import io

        import unlzw3

        return io.BytesIO(unlzw3.unlzw(path.read_bytes()))
    return open(path, "rb")


# ---------------------------------------------------------------- downloading


class ResumingDownloader:
    """pooch downloader hook that keeps a ``.part`` file and continues it with an HTTP Range request."""

    def __init__(self, part: Path, label: str):
        self.part, self.label = part, label

    def __call__(self, url: str, output_file: str, pooch_instance: Any, check_only: bool = False) -> bool | None:
        import requests
        from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

        if check_only:
            return requests.head(url, allow_redirects=True, timeout=30).ok
        have = self.part.stat().st_size if self.part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with requests.get(url, headers=headers, stream=True, timeout=60, allow_redirects=True) as response:
            if response.status_code != 416:  # 416: the part file already holds the whole file
                response.raise_for_status()
                if have and response.status_code != 206:
                    have = 0  # the server ignored the range: start over
                total = int(response.headers.get("content-length", 0)) + have or None
                with (
                    open(self.part, "ab" if have else "wb") as f,
                    Progress(
                        *Progress.get_default_columns()[:2], DownloadColumn(), TransferSpeedColumn(), transient=True
                    ) as bar,
                ):
                    task = bar.add_task(f"downloading {self.label}", total=total, completed=have)
                    for chunk in response.iter_content(1 << 20):
                        f.write(chunk)
                        bar.advance(task, len(chunk))
        shutil.move(self.part, output_file)
        return None


def hash_matches(path: Path, known_hash: str | None) -> bool:
    if not known_hash:
        return True
    algorithm, _, value = known_hash.partition(":")
    return pooch.file_hash(str(path), alg=algorithm) == value.lower()


def mismatch(path: Path | str, expected: str, found: str, what: str = "checksum") -> UserError:
    """The one line for a file that is not the published one: which file, what differs (its checksum or its
    row count), expected, found, and the way out."""
    return UserError(
        f"{path}: {what} mismatch, expected {expected}, found {found}; the file is truncated, "
        "corrupt or a different release; --no-verify accepts a different release at your own risk "
        "(the dataset is then marked unverified in its manifest and in every report)"
    )


def check_hash(path: Path, known_hash: str | None) -> None:
    if not hash_matches(path, known_hash):
        algorithm, _, value = known_hash.partition(":")
        raise mismatch(path, f"{algorithm} {value}", f"{algorithm} {pooch.file_hash(str(path), alg=algorithm)}")


def check_hashes(path: Path, item: Download) -> None:
    for known_hash in item.hashes():
        check_hash(path, known_hash)


def count_lines(path: Path) -> int:
    """Lines of a (possibly compressed) text file; a last line without its newline counts too."""
    lines, last = 0, b"\n"
    with open_bytes(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            lines, last = lines + block.count(b"\n"), block[-1:]
    return lines + (last != b"\n")


def check_member(path: Path, name: str, spec: RawSpec, sha256: str) -> bool:
    """Verify a located member against its published sha256 or row count; False when none is published."""
    if name in spec.member_sha256:
        if sha256 != spec.member_sha256[name]:
            raise mismatch(path, f"sha256 {spec.member_sha256[name]} (the published {name})", f"sha256 {sha256}")
        return True
    if name in spec.member_rows:
        rows = count_lines(path)
        if rows != spec.member_rows[name]:
            raise mismatch(
                path, f"{spec.member_rows[name]:,} lines (the published {name})", f"{rows:,} lines", "row count"
            )
        return True
    return False


def download(item: Download, cache: Path, offline: bool) -> Path:
    """The cached copy of ``item``, downloaded (with retries and resume) and verified when needed."""
    target = cache / item.fname
    if target.is_file() and all(hash_matches(target, h) for h in item.hashes()):
        return target
    if offline:
        state = "fails its checksum" if target.is_file() else "is not in the cache"
        raise UserError(
            f"--offline: {item.fname} {state} ({cache}); download {item.url} and pass it to --source, "
            "or prepare once without --offline"
        )
    cache.mkdir(parents=True, exist_ok=True)
    fetcher = pooch.create(
        path=cache,
        base_url="",
        registry={item.fname: item.known_hash},
        urls={item.fname: item.url},
        retry_if_failed=RETRIES,
    )
    try:
        fetched = Path(
            fetcher.fetch(item.fname, downloader=ResumingDownloader(cache / f"{item.fname}.part", item.fname))
        )
    except ValueError as e:  # pooch's hash mismatch after the last retry
        raise UserError(
            f"{item.url}: checksum mismatch after {RETRIES + 1} attempts, expected {item.known_hash} ({cause(e, 160)})"
        ) from None
    except Exception as e:  # network errors come from requests, with many classes
        raise UserError(
            f"cannot download {item.url}: {cause(e)}; download it by hand and pass it to --source"
        ) from None
    check_hashes(fetched, item)  # the pinned sha256 beside a published md5
    return fetched


# ---------------------------------------------------------------- locating members

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")


def is_archive(path: Path) -> bool:
    """A zip or tar by content, or a file named like one (so that a truncated archive is called corrupt)."""
    return path.is_file() and (zipfile.is_zipfile(path) or path.name.lower().endswith(ARCHIVE_SUFFIXES))


def unsafe(name: str) -> bool:
    """A member name that would land outside the folder it is extracted into: absolute, or with '..'."""
    posix = name.replace("\\", "/")
    return posix.startswith("/") or (len(posix) > 1 and posix[1] == ":") or ".." in posix.split("/")


def archive_names(path: Path) -> list[str]:
    """The file members of an archive, after refusing the whole archive if any member is unsafe (an absolute
    or '..' name, or a link pointing outside the archive): checked before anything is extracted."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                bad = [n for n in names if unsafe(n)]
                files = [n for n in names if not n.endswith("/")]
        else:
            with tarfile.open(path) as t:
                members = t.getmembers()
            bad = [m.name for m in members if unsafe(m.name)]
            for m in members:
                if m.issym() or m.islnk():
                    # a hard link names a member; a symbolic link is relative to its own folder
                    target = m.linkname if m.islnk() else os.path.join(os.path.dirname(m.name), m.linkname)
                    if os.path.isabs(m.linkname) or unsafe(os.path.normpath(target)):
                        bad.append(f"{m.name} -> {m.linkname}")
            files = [m.name for m in members if m.isfile()]
    except READ_ERRORS as e:
        raise UserError(f"{path}: corrupt archive ({cause(e)}); download it again") from None
    if bad:
        raise UserError(
            f"{path}: refused, the archive has members that would be written outside its folder ({', '.join(bad[:3])})"
        )
    return files


# A published member unpacks to a few times its compressed size; one declaring a hundred times more is a
# decompression bomb, refused before a byte is written. A member of a compressed tar is measured against the
# whole archive, whose members share one compressed stream.
INFLATION = 100
SMALLEST_LIMIT, LARGEST_LIMIT = 64 * 10**6, 20 * 10**9  # bytes: the default limit never leaves this range
MAX_EXTRACT = "--max-extract-gb"
extract_gb: contextvars.ContextVar[float | None] = contextvars.ContextVar("extract_gb", default=None)


@contextlib.contextmanager
def extract_limit(gigabytes: float | None) -> Iterator[None]:
    """Within the block, refuse archive members that unpack to more than ``gigabytes`` (``--max-extract-gb``);
    None keeps the default: :data:`INFLATION` times the member's compressed size, within
    [:data:`SMALLEST_LIMIT`, :data:`LARGEST_LIMIT`]."""
    token = extract_gb.set(gigabytes)
    try:
        yield
    finally:
        extract_gb.reset(token)


def in_units(size: float) -> str:
    """Bytes in decimal units, as file managers and --max-extract-gb count them."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size:,.0f} B"


def check_unpacked_size(archive: Path, name: str, declared: int, compressed: int, into: Path) -> None:
    """Refuse, before extraction, a member whose declared size is over the limit or over the free space."""
    given = extract_gb.get()
    limit = int(given * 1e9) if given is not None else min(max(SMALLEST_LIMIT, INFLATION * compressed), LARGEST_LIMIT)
    if declared > limit:
        rule = MAX_EXTRACT if given is not None else f"{INFLATION} times its {in_units(compressed)} compressed"
        raise UserError(
            f"{archive}: refused, member {name} would unpack to {in_units(declared)}, over the limit of "
            f"{in_units(limit)} ({rule}); a genuine archive that needs more: pass {MAX_EXTRACT} "
            f"{declared / 1e9 * 1.1:.2g}"
        )
    free = shutil.disk_usage(into).free
    if declared > free:
        raise UserError(
            f"{into}: no space to unpack {name} from {archive} ({in_units(declared)}, {in_units(free)} free); "
            "point TMPDIR at a folder on a larger disk"
        )


def extract(path: Path, name: str, into: Path) -> Path:
    if unsafe(name):
        raise UserError(f"{path}: refused, member {name} would be written outside {into}")
    target = into / path.name / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with reading(path, "a complete zip or tar archive"):
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                info = z.getinfo(name)
                check_unpacked_size(path, name, info.file_size, info.compress_size, into)
                with z.open(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)  # a truncated member fails its CRC here
        else:
            with tarfile.open(path) as t:
                check_unpacked_size(path, name, t.getmember(name).size, path.stat().st_size, into)
                with t.extractfile(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    return target


def find_member(places: list[Path], names: tuple[str, ...], scratch: Path) -> tuple[Path, str] | None:
    """The first file called one of ``names`` in ``places`` (files, folders, archives), with its origin."""
    for place in places:
        if place.is_dir():
            for name in names:
                hits = sorted(place.rglob(name))
                if hits:
                    return hits[0], str(hits[0])
            inner = [p for p in sorted(place.iterdir()) if is_archive(p)]  # a folder of downloaded archives
            hit = find_member(inner, names, scratch) if inner else None
            if hit is not None:
                return hit
        elif is_archive(place):
            members = archive_names(place)
            for name in names:
                # a name with a folder part ("random/all/all.csv") tells apart files of one name in several folders
                hit = next((m for m in sorted(members) if Path(m).name == name or m.endswith("/" + name)), None)
                if hit is not None:
                    return extract(place, hit, scratch), f"{place}!{hit}"
            if place.name in names:  # the archive itself is the member (e.g. a tar of images)
                return place, str(place)
        elif place.name in names:
            return place, str(place)
    return None


def source_places(spec: RawSpec, source: str, cache: Path, offline: bool, verify: bool = True) -> list[Path]:
    if source.startswith(("http://", "https://", "ftp://")):
        if offline:
            raise UserError(f"--offline: --source {source} is a URL; pass a local file or folder instead")
        fname = Path(source.split("?")[0]).name
        known = next((replace(d, url=source) for d in spec.downloads if d.fname == fname), Download(source, fname))
        return [download(known, cache, offline=False)]
    path = Path(source).expanduser()
    if not path.exists():
        raise UserError(f"--source {source} does not exist; {spec.where()}")
    for item in spec.downloads if verify else ():  # a local copy of a published archive must match its checksum
        if path.is_file() and path.name == item.fname:
            check_hashes(path, item)
        elif path.is_dir() and (path / item.fname).is_file():
            check_hashes(path / item.fname, item)
    return [path]


@contextlib.contextmanager
def raw_files(
    spec: RawSpec, source: str | None = None, offline: bool = False, cache: Path | None = None, verify: bool = True
) -> Iterator[RawFiles]:
    """Locate every member of ``spec``; extracted members live in a temporary folder until the block ends.

    ``verify=False`` (``--no-verify``) skips the published checksums and row counts and marks the files
    unverified. Every missing member is named in one error, each by its exact file name."""
    if not verify:
        spec = replace(spec, downloads=tuple(replace(d, known_hash=None, sha256=None) for d in spec.downloads))
    places = raw_places(spec, source, cache_dir(cache), offline, verify)
    with tempfile.TemporaryDirectory(prefix=f"banditbench-{spec.dataset}-") as scratch:
        found = RawFiles({})
        missing = []
        for key, names in spec.members.items():
            hit = find_member(places, names, Path(scratch))
            if hit is None:
                if key not in spec.optional:
                    missing.append(" or ".join(names))
                continue
            found.paths[key] = hit[0]
            found.records.append(member_record(spec, key, *hit, verify))
        if missing:
            where = ", ".join(map(str, places))
            raise UserError(
                f"{where} lacks {len(missing)} file{'s' if len(missing) > 1 else ''} {spec.dataset} "
                f"needs: {'; '.join(missing)}; {spec.where()}"
            )
        if not verify:
            found.verification = UNVERIFIED
        elif found.records and all(record["verified"] for record in found.records):
            found.verification = VERIFIED
        yield found


def raw_places(spec: RawSpec, source: str | None, cache: Path, offline: bool, verify: bool) -> list[Path]:
    """The files and folders to look for ``spec``'s members in: ``source``, or its downloads in the cache (fetched
    unless ``offline``, where every file the cache lacks is named in one error, not just the first)."""
    if source is not None:
        return source_places(spec, source, cache, offline, verify)
    if spec.gated:
        raise UserError(f"{spec.dataset} cannot be downloaded automatically: {spec.gated}")
    if offline:
        missing = [
            item
            for item in spec.downloads
            if not ((cache / item.fname).is_file() and all(hash_matches(cache / item.fname, h) for h in item.hashes()))
        ]
        if missing:
            raise UserError(
                f"--offline: {spec.dataset} needs {', '.join(m.fname for m in missing)}, not in the "
                f"cache {cache}; download {', '.join(m.url for m in missing)} and pass the file or "
                "its folder to --source, or prepare once without --offline"
            )
    return [download(item, cache, offline) for item in spec.downloads]


def member_record(spec: RawSpec, key: str, path: Path, origin: str, verify: bool) -> dict:
    """What the manifest records of one member found at ``path`` (``origin``: ``ARCHIVE!MEMBER`` when extracted):
    its size, sha256 and whether a published checksum vouches for it, its own or its archive's."""
    checked = {d.fname: d for d in spec.downloads if d.hashes()}
    sha256 = sha256_of(path)
    member_checked = check_member(path, path.name, spec, sha256) if verify else False
    archive = Path(origin.split("!")[0]).name if "!" in origin else None
    if verify and archive is None and path.name in checked:  # a published file, found on its own
        check_hashes(path, checked[path.name])
        member_checked = True
    from_checked_archive = verify and archive in checked
    record = {
        "member": key,
        "file": path.name,
        "origin": origin,
        "bytes": path.stat().st_size,
        "sha256": sha256,
        "verified": bool(member_checked or from_checked_archive),
    }
    pinned = {d.fname: d.sha256 for d in spec.downloads if d.sha256}
    if from_checked_archive and archive in pinned:  # the archive's pinned sha256
        record["archive_sha256"] = pinned[archive]
    return record
