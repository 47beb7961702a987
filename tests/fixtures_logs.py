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
