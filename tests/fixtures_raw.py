"""Tiny raw files in the exact formats of the real datasets, built by the tests themselves."""

from __future__ import annotations

import gzip
import os
import struct
import zipfile
from pathlib import Path

import numpy as np

# Genuine raw files beside the checkout (../shared/datasets), or where $BANDITBENCH_SHARED_DATASETS points.
SHARED = Path(
    os.environ.get("BANDITBENCH_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets")
)


def ratings_table(n_users: int = 40, n_items: int = 60, seed: int = 0) -> np.ndarray:
    """(user, item, rating, timestamp) rows: user u rates items with ratings 1–5; users with more ratings
    come first by count. Every user rates at least 20 items, a quarter of them with 5 stars."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(1, n_users + 1):
        items = rng.choice(np.arange(1, n_items + 1), size=20 + u % 15, replace=False)
        for i in items:
            rows.append(
                (u, int(i), int(rng.choice([1, 2, 3, 4, 5], p=[0.1, 0.15, 0.25, 0.25, 0.25])), 978300000 + len(rows))
            )
    return np.array(rows, dtype=np.int64)


def write_ml1m_zip(folder: Path, name: str = "fixture-ml-1m.zip", crlf: bool = False) -> tuple[Path, np.ndarray]:
    """An ml-1m style zip: '::'-separated ratings.dat and Latin-1 movies.dat."""
    rows = ratings_table()
    end = "\r\n" if crlf else "\n"
    ratings = end.join("::".join(map(str, r)) for r in rows) + end
    movies = (
        end.join(
            f"{i}::Les Misérables {i} (1995)::Drama|Romance" if i % 2 else f"{i}::Film {i} (1990)::Comedy"
            for i in range(1, 61)
        )
        + end
    )
    path = Path(folder) / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ml-1m/ratings.dat", ratings.encode("latin-1"))
        z.writestr("ml-1m/movies.dat", movies.encode("latin-1"))
    return path, rows


def write_idx(path: Path, array: np.ndarray) -> None:
    """LeCun IDX (gzip'ed): magic 2051 for images [n, 28, 28], 2049 for labels [n]."""
    magic = 2051 if array.ndim == 3 else 2049
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


CIFAR_BATCHES = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch")


def cifar_batches(per_batch: int = 20, seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pixels uint8 [n, 3072] and labels of the six CIFAR-10 batches; every batch holds all ten classes."""
    rng = np.random.default_rng(seed)
    return {
        name: (
            rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8),
            (np.arange(per_batch) + k) % 10,
        )
        for k, name in enumerate(CIFAR_BATCHES)
    }


def write_cifar_python(folder: Path, batches, tar: bool = True, protocol: int = 2) -> Path:
    """The Python release: cifar-10-batches-py/ with one pickled dict per batch (bytes keys, as the
    published Python 2 pickles load with encoding="bytes"), in cifar-10-python.tar.gz when ``tar``."""
    import pickle
    import tarfile

    inner = folder / "cifar-10-batches-py"
    inner.mkdir(parents=True, exist_ok=True)
    for name, (pixels, labels) in batches.items():
        batch = {
            b"batch_label": f"{name} of 6".encode(),
            b"labels": [int(v) for v in labels],
            b"data": pixels,
            b"filenames": [f"image_{i}.png".encode() for i in range(len(labels))],
        }
        (inner / name).write_bytes(pickle.dumps(batch, protocol=protocol))
    if not tar:
        return inner
    path = folder / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        archive.add(inner, arcname="cifar-10-batches-py")
    return path


def write_cifar_binary(folder: Path, batches) -> Path:
    """The binary release's folder cifar-10-batches-bin/: records of 1 label byte + 3072 pixel bytes."""
    inner = folder / "cifar-10-batches-bin"
    inner.mkdir(parents=True, exist_ok=True)
    for name, (pixels, labels) in batches.items():
        records = np.concatenate([np.asarray(labels, np.uint8)[:, None], pixels], axis=1)
        (inner / f"{name}.bin").write_bytes(records.tobytes())
    return inner


def covertype_rows(n: int = 21) -> np.ndarray:
    """Covertype's layout: 10 whole-number measurements, 4 wilderness and 40 soil-type indicators, class 1 … 7."""
    rng = np.random.default_rng(0)
    indicators = np.zeros((n, 44), dtype=np.int64)
    indicators[np.arange(n), rng.integers(0, 4, n)] = 1
    indicators[np.arange(n), 4 + rng.integers(0, 40, n)] = 1
    return np.column_stack([rng.integers(0, 3000, (n, 10)), indicators, np.arange(n) % 7 + 1])


def write_covertype(folder, rows: np.ndarray, compressed: bool = True):
    """The published covtype.data.gz (gzip), or the file decompressed."""
    folder.mkdir(exist_ok=True)
    text = "".join(",".join(map(str, row)) + "\n" for row in rows).encode()
    if compressed:
        (folder / "covtype.data.gz").write_bytes(gzip.compress(text))
    else:
        (folder / "covtype.data").write_bytes(text)
    return folder
