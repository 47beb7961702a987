"""Write the files of one commit of the authors' repository into a folder, from a clone that may lack some blobs.

    .venv/bin/python benchmarks/parity_checkout.py GIT_DIR COMMIT DEST

``git worktree add`` and ``git archive`` stop at the first blob a clone does not hold (a partial clone, or a snapshot
of banyikun/MCNB without the MovieLens entry array). This writes every file of COMMIT whose blob GIT_DIR holds,
names the ones it cannot, and never writes into GIT_DIR. GIT_DIR is a repository's ``.git`` folder or a bare clone.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def git(git_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, check=check)


def checkout(git_dir: Path, commit: str, dest: Path) -> list[str]:
    """Write the files of ``commit`` under ``dest``; returns the paths whose blobs ``git_dir`` lacks."""
    listing = git(git_dir, "ls-tree", "-r", "-z", commit, check=False)
    if listing.returncode:
        raise SystemExit(f"{git_dir}: cannot list commit {commit}: {listing.stderr.decode().strip()}")
    missing = []
    for record in listing.stdout.decode().split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        kind, blob = meta.split()[1:3]
        if kind != "blob":
            continue
        content = git(git_dir, "cat-file", "blob", blob, check=False)
        if content.returncode:
            missing.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.stdout)
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("commit")
    parser.add_argument("dest", type=Path)
    args = parser.parse_args()
    missing = checkout(args.git_dir, args.commit, args.dest)
    for path in missing:
        print(f"not in {args.git_dir}: {path}", file=sys.stderr)
    print(f"{args.dest}: commit {args.commit} written, {len(missing)} file(s) missing")


if __name__ == "__main__":
    main()
