"""Tiny logs in the real raw formats, built by the tests: the Open Bandit Dataset's CSV files and Yahoo! R6's day
files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

OBD_ITEMS = 80  # the "all" campaign


def obd_rows(n_rows: int, seed: int = 0, propensity: float | None = 1 / OBD_ITEMS) -> list[list]:
    """Rows of an OBD log: item i is clicked with probability 0.2 when i < 10, else never; ``propensity`` None draws
    a Bernoulli-TS-like propensity per row."""
    rng = np.random.default_rng(seed)
    rows = []
    for index in range(n_rows):
        item = int(rng.integers(OBD_ITEMS))
        click = int(item < 10 and rng.random() < 0.2)
        p = propensity if propensity is not None else round(float(rng.uniform(0.001, 0.9)), 6)
        users = [f"u{j}{int(rng.integers(2))}" for j in range(4)]
        affinity = [float(rng.integers(3)) if rng.random() < 0.05 else 0.0 for _ in range(OBD_ITEMS)]
        stamp = f"2019-11-24 00:{index // 60:02d}:{index % 60:02d}.000000+00:00"
        rows.append([index, stamp, item, 1 + index % 3, click, p, *users, *affinity])
    return rows


def write_obd(folder: Path, policy: str = "random", n_rows: int = 60, seed: int = 0, rows: list | None = None) -> Path:
    """``folder/{policy}/all.csv`` and ``item_context.csv`` in the layout of the obp wheel's small sample."""
    place = Path(folder) / policy
    place.mkdir(parents=True, exist_ok=True)
    header = ",timestamp,item_id,position,click,propensity_score," + ",".join(f"user_feature_{j}" for j in range(4))
    header += "," + ",".join(f"user-item_affinity_{i}" for i in range(OBD_ITEMS))
    rows = obd_rows(n_rows, seed, 1 / OBD_ITEMS if policy == "random" else None) if rows is None else rows
    lines = [header] + [",".join(str(v) for v in row) for row in rows]
    (place / "all.csv").write_text("\n".join(lines) + "\n")
    items = [",item_id,item_feature_0,item_feature_1,item_feature_2,item_feature_3"]
    items += [f"{i},{i},{(i % 7) / 3 - 1:.6f},c{i % 3},d{i % 5},e{i % 2}" for i in range(OBD_ITEMS)]
    (place / "item_context.csv").write_text("\n".join(items) + "\n")
    return Path(folder)


def r6_lines(n_visits: int = 200, release: str = "R6A", seed: int = 0, pool: int = 10, articles: int = 30) -> list[str]:
    """Visits in Yahoo! R6A's (``id:value`` features) or R6B's (feature ids, ``id-`` article ids) line format: each
    shows one article of a pool of ``pool``, uniformly at random; article a is clicked with probability 0.05 + 0.01·(a
    mod 10)."""
    rng = np.random.default_rng(seed)
    ids = [f"1095{a:02d}" if release == "R6A" else f"id-5520{a:02d}" for a in range(articles)]
    lines = []
    for k in range(n_visits):
        shown = rng.choice(articles, size=pool, replace=False)
        displayed = int(rng.choice(shown))
        click = int(rng.random() < 0.05 + 0.01 * (displayed % 10))
        if release == "R6A":
            membership = rng.dirichlet(np.ones(5))
            user = " ".join(f"{j + 2}:{v:.6f}" for j, v in enumerate(membership)) + " 1:1.000000"
            segments = [f"{ids[a]} " + " ".join(f"{j}:{((a * j) % 7) / 7:.6f}" for j in range(1, 7)) for a in shown]
        else:
            user = " ".join(str(f) for f in sorted({1, *rng.choice(np.arange(2, 12), size=3, replace=False)}))
            segments = [ids[a] for a in shown]
        lines.append(f"{1241160900 + k} {ids[displayed]} {click} |user {user} |" + " |".join(segments))
    return lines


def write_r6(folder: Path, release: str = "R6A", lines: list[str] | None = None, **options) -> Path:
    """A day file ``ydata-fp-td-clicks-v1_0.20090501`` (R6A) or ``…v2_0.20111002`` (R6B) in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    name = "ydata-fp-td-clicks-v1_0.20090501" if release == "R6A" else "ydata-fp-td-clicks-v2_0.20111002"
    (folder / name).write_text("\n".join(lines or r6_lines(release=release, **options)) + "\n")
    return folder / name
