"""Yahoo! Front Page Today Module user click logs, R6A (May 2009, ``ydata-fp-td-clicks-v1_0.YYYYMMDD``) and R6B
(October 2011, ``ydata-fp-td-clicks-v2_0.YYYYMMDD``), from Yahoo! Webscope after registration: the logs of Li, Chu,
Langford & Schapire (WWW 2010) and of Li, Chu, Langford & Wang (WSDM 2011).

Each line is one visit: ``timestamp displayed_article click |user <user features> |<article> [<features>] …``, the
articles after ``|user`` being the pool the displayed one was drawn from, uniformly at random (Yahoo!'s description
of the data), so the propensity of the displayed article is 1 / (pool size). R6A writes features as ``id:value``: six
for the user (feature 1 the constant 1, features 2–6 the user's membership of five clusters) and six for each
article; R6B lists the ids of the user's non-zero binary features (1–136) and gives no article features.

What a policy sees:
- R6A: the user is the cluster of largest membership (Li et al. 2010, §5.2.2's five user clusters); an article's
  context is the outer product of the user's six features and the article's six (their hybrid model's 36 features).
- R6B: the user is the combination of binary features, the ``--users`` most frequent each their own id and the rest
  one shared id; an article's context is a one-hot of its id hashed into ``--arm-buckets`` buckets (R6B publishes no
  article features); the 136 binary features are the user features.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from banditbench.data import logs
from banditbench.data.fetch import UNPUBLISHED, RawSpec, open_bytes, reading, sha256_of
from banditbench.data.obd import LOG_OPTIONS
from banditbench.data.prepared import up_to_date
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

WEBSCOPE = (
    "request R6A or R6B (Yahoo! Front Page Today Module user click log) at https://webscope.sandbox.yahoo.com, unpack "
    "it, and pass a day file (ydata-fp-td-clicks-v1_0.20090501, .gz or not) or their folder to --source"
)
FILES = "ydata-fp-td-clicks-v*"
R6A_FEATURES, R6B_FEATURES = 6, 136
EXPECTED = "a Yahoo! R6 line: timestamp article click |user <features> |<article> [<features>] …"


def day_files(source: str | None) -> list[Path]:
    """The day files of ``--source`` (a file, or a folder holding ydata-fp-td-clicks-v* files), in day order."""
    if source is None:
        raise UserError(f"yahoo-r6 cannot be downloaded automatically: {WEBSCOPE}")
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob(FILES) if p.is_file()) if path.is_dir() else []
    if not files:
        raise UserError(f"--source {source} holds no {FILES} day file; {WEBSCOPE}")
    return files


def features(tokens: list[str], r6a: bool, where: str) -> np.ndarray:
    """A user's or an article's features: R6A ``id:value`` pairs into [6], R6B feature ids into a binary [136]."""
    width = R6A_FEATURES if r6a else R6B_FEATURES
    values = np.zeros(width)
    try:
        if r6a:
            for token in tokens:
                key, value = token.split(":")
                values[int(key) - 1] = float(value)
        else:
            for token in tokens:
                values[int(token) - 1] = 1.0
    except (ValueError, IndexError):
        raise UserError(
            f"{where}: feature {' '.join(tokens)[:60]!r} is not {'id:value with id 1–6' if r6a else 'an id 1–136'}"
        ) from None
    if not np.isfinite(values).all():
        raise UserError(f"{where}: a feature value is not a finite number")
    return values


class Reader:
    """The visits of R6 day files, every field checked where it is read (module docstring)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.r6a: bool | None = None
        self.articles: dict[str, int] = {}  # article id → arm index, in order of first appearance
        self.article_features: list[np.ndarray] = []
        self.user_features: list[np.ndarray] = []
        self.action, self.reward, self.pools = [], [], []

    def read(self, path: Path) -> None:
        with reading(path, EXPECTED), open_bytes(path) as f:
            for number, raw in enumerate(f, 1):
                if len(self.action) == self.limit:
                    return
                line = raw.decode("ascii").strip()
                if line:
                    self.visit(line, f"{path}, line {number}")

    def visit(self, line: str, where: str) -> None:
        head, *segments = line.split("|")
        fields = head.split()
        if len(fields) != 3:
            raise UserError(f"{where}: {len(fields)} fields before the first '|', expected timestamp, article, click")
        timestamp, displayed, click = fields
        if not timestamp.isdigit() or click not in ("0", "1"):
            raise UserError(f"{where}: timestamp {timestamp!r} and click {click!r} must be a whole number and 0 or 1")
        if not segments or segments[0].split()[:1] != ["user"]:
            raise UserError(f"{where}: no '|user' features after the click; the format is {EXPECTED}")
        user = segments[0].split()[1:]
        r6a = any(":" in token for token in user) or not user
        if self.r6a is None:
            self.r6a = r6a
        elif r6a != self.r6a:
            raise UserError(
                f"{where}: user features written as in {'R6A' if r6a else 'R6B'}, earlier lines as in the other"
            )
        pool = []
        for segment in segments[1:]:
            tokens = segment.split()
            if not tokens:
                raise UserError(f"{where}: an empty '|' article segment")
            arm = self.articles.setdefault(tokens[0], len(self.articles))
            if arm == len(self.article_features):
                self.article_features.append(features(tokens[1:], self.r6a, where) if self.r6a else np.zeros(0))
            pool.append(arm)
        if displayed not in self.articles or self.articles[displayed] not in pool:
            raise UserError(
                f"{where}: the displayed article {displayed} is not in the line's pool of {len(pool)} articles"
            )
        self.user_features.append(features(user, self.r6a, where))
        self.action.append(self.articles[displayed])
        self.reward.append(float(click))
        self.pools.append(np.array(pool, np.int64))


def hashed(article: str, buckets: int) -> int:
    return int.from_bytes(hashlib.sha256(article.encode()).digest()[:8], "big") % buckets


def build(reader: Reader, users_limit: int, arm_buckets: int) -> logs.Log:
    user_features = np.array(reader.user_features, np.float32)
    pools = reader.pools
    items = np.array(list(reader.articles))
    if reader.r6a:
        user = (np.argmax(user_features[:, 1:], axis=1)).astype(np.int64)  # the cluster of largest membership
        arm_features, contexts = np.array(reader.article_features, np.float32), "user x arm"
    else:
        key = pd.DataFrame({"features": [row.tobytes() for row in user_features]})
        user, _ = logs.user_ids(key, users_limit)
        arm_features = np.eye(arm_buckets, dtype=np.float32)[[hashed(a, arm_buckets) for a in items]]
        contexts = "arm"
    sizes = np.fromiter(map(len, pools), np.int64, len(pools))
    return logs.Log(
        user=user,
        action=np.array(reader.action, np.int64),
        reward=np.array(reader.reward),
        propensity=1.0 / sizes,
        arm_features=arm_features,
        items=items,
        candidates=pools,
        user_features=user_features,
        contexts=contexts,
        notes={"clicks": int(sum(reader.reward)), "release": "R6A" if reader.r6a else "R6B"},
    )


def prepare_yahoo_r6(
    data_dir: Path,
    *,
    events: int = 0,
    users: int = 1000,
    arm_buckets: int = 16,
    folds: int = logs.DEFAULT_FOLDS,
    ridge: float = logs.DEFAULT_RIDGE,
    source: str | None = None,
    force: bool = False,
    **_,
) -> Path:
    files = day_files(source)
    records = [
        {
            "member": "log",
            "file": p.name,
            "origin": str(p),
            "bytes": p.stat().st_size,
            "sha256": sha256_of(p),
            "verified": False,
        }
        for p in files
    ]
    given = {"events": events, "users": users, "arm_buckets": arm_buckets, "files": [r["sha256"] for r in records]}
    parameters = logs.log_parameters(given, "user x arm" if is_r6a(files[0]) else "arm", folds, ridge)
    folder = Path(data_dir) / "yahoo-r6"
    if up_to_date(folder, parameters, force):
        return folder
    reader = Reader(events or -1)
    for path in files:
        reader.read(path)
    log = build(reader, users, arm_buckets)
    kept = {"read": len(reader.action), "kept": len(reader.action), "dropped": {}}
    return logs.write_log(
        folder, "yahoo-r6", log, parameters, raw_files=records, verification=UNPUBLISHED, rows=kept, force=force
    )


def is_r6a(path: Path) -> bool:
    """Whether the first visit of ``path`` writes its user features as R6A's ``id:value`` pairs."""
    with reading(path, EXPECTED), open_bytes(path) as f:
        for raw in f:
            segments = raw.decode("ascii").split("|")
            if raw.strip():
                return len(segments) > 1 and ":" in segments[1]
    raise UserError(f"{path}: the file is empty (expected {EXPECTED})")


register(
    Dataset(
        "yahoo-r6",
        "Yahoo! Front Page Today Module click logs R6A | R6B (registration-gated, --source): uniformly random "
        "articles from a pool of about 20 per visit; users = R6A's five user clusters or R6B's feature combinations",
        "Li, Chu, Langford & Wang, WSDM 2011; Li, Chu, Langford & Schapire, WWW 2010",
        logs.PROTOCOL,
        prepare_yahoo_r6,
        (
            Option("events", int, 0, "Read at most this many visits, in day order (0: all).", minimum=0),
            Option("users", int, 1000, "R6B: the most frequent feature combinations kept as users.", minimum=1),
            Option("arm_buckets", int, 16, "R6B: buckets an article id is hashed into (its context).", minimum=2),
            *LOG_OPTIONS,
        ),
        raw=lambda: RawSpec("yahoo-r6", (), {}, gated=WEBSCOPE),  # what a preset's prepare command says to fetch
        files="ydata-fp-td-clicks-v1_0.YYYYMMDD (R6A) or ydata-fp-td-clicks-v2_0.YYYYMMDD (R6B) day files, .gz or "
        "not, or a folder holding them",
    )
)
