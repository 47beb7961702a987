"""The arm pools published with the Ban-family code (M-CNB, Meta-Ban, LOCB) as a prepared dataset.

Those repositories ship their preprocessed rating matrices as three NumPy arrays per dataset:

- ``<name>_<U>users_<I>items_features.npy``: [U, d] user SVD features;
- ``<name>_<I>items_<U>users_features.npy``: [I, d] item SVD features;
- ``<name>_<U>users_<I>items_entry.npy``: [n, 3] integer rows (user, item, label ±1).

``prepare authors-pools --source DIR`` turns them into the users / items / interactions tables of the
recommendation protocol, served in the authors' code mode so that their implementation and ours face the same
users, items and rewards (Ban et al. 2022, Meta-Ban §4.1; Ban et al. 2024, M-CNB §5.2):

- ``mcnb-code`` (default): 100 K-means user groups (``random_state`` 0, 10 restarts, as scikit-learn 0.24 did
  for the authors), context [item feature, rater feature]; each round draws one of the *first* ``groups`` real
  users and serves its group, which is what M-CNB's loader does (it draws ``u`` from ``range(n_groups)``).
- ``metaban-code``: 50 groups, context = item feature, a real user drawn uniformly among all of them.

The arrays are read as they are: no rating threshold or SVD is applied again.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from banditbench.data.prepared import sha256_of, up_to_date, write_dataset
from banditbench.data.ratings import MODES
from banditbench.data.registry import Dataset, Option, register
from banditbench.errors import UserError

PATTERN = re.compile(r"^(?P<name>[A-Za-z0-9-]+)_(?P<users>\d+)users_(?P<items>\d+)items_entry\.npy$")
DEFAULT_GROUPS = {"mcnb-code": 100, "metaban-code": 50, "paper": 50}


def find_family(source: Path, name: str | None) -> tuple[str, dict[str, Path]]:
    """The three arrays of one dataset in ``source``: ``{"entry", "users", "items"}`` → path."""
    if not source.is_dir():
        raise UserError(f"--source {source} is not a folder holding <name>_<U>users_<I>items_entry.npy files")
    families = {}
    for path in sorted(source.iterdir()):
        match = PATTERN.match(path.name)
        if match and (name is None or match["name"] == name):
            stem = f"{match['name']}_{match['users']}users_{match['items']}items"
            families[match["name"]] = {
                "entry": path,
                "users": source / f"{stem}_features.npy",
                "items": source / f"{match['name']}_{match['items']}items_{match['users']}users_features.npy",
            }
    if not families:
        wanted = f"{name}_<U>users_<I>items_entry.npy" if name else "<name>_<U>users_<I>items_entry.npy"
        raise UserError(f"{source} has no {wanted} (a Git LFS pointer or a missing file cannot be read)")
    if len(families) > 1:
        raise UserError(f"{source} holds several datasets ({', '.join(sorted(families))}); choose one with --name")
    ((family, paths),) = families.items()
    for path in paths.values():
        if not path.is_file():
            raise UserError(f"{source} has {paths['entry'].name} but no {path.name}, which it needs")
    return family, paths


def load_array(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:  # a Git LFS pointer is text, not an .npy header
        raise UserError(f"{path}: not a NumPy array file ({error})") from None


def read_arrays(paths: dict[str, Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    entry, users, items = (load_array(paths[key]) for key in ("entry", "users", "items"))
    if users.ndim != 2 or items.ndim != 2 or users.shape[1] != items.shape[1]:
        raise UserError(
            f"{paths['users'].name} {users.shape} and {paths['items'].name} {items.shape} must be "
            "2-D feature arrays of the same width"
        )
    if entry.ndim != 2 or entry.shape[1] != 3 or not np.issubdtype(entry.dtype, np.number) or len(entry) == 0:
        raise UserError(f"{paths['entry'].name}: expected [n, 3] rows (user, item, label), got {entry.shape}")
    entry = entry.astype(np.int64)
    user, item, label = entry.T
    if user.min() < 0 or user.max() >= len(users) or item.min() < 0 or item.max() >= len(items):
        raise UserError(
            f"{paths['entry'].name}: user or item index outside the {len(users)} × {len(items)} feature arrays"
        )
    if not np.isin(label, (-1, 1)).all():
        raise UserError(f"{paths['entry'].name}: labels must be +1 or -1")
    return entry, users.astype(np.float64), items.astype(np.float64)


def prepare(
    data_dir: Path,
    *,
    source: str | Path | None,
    name: str | None = None,
    mode: str = "mcnb-code",
    groups: int | None = None,
    seed: int = 0,
    force: bool = False,
) -> Path:
    from banditbench.data.ratings import check_protocol

    check_protocol(mode, "groups")
    if source is None:
        raise UserError(
            "--source is required: the folder with <name>_<U>users_<I>items_entry.npy and the user and "
            "item feature arrays (e.g. a checkout of banyikun/MCNB)"
        )
    source = Path(source).expanduser()
    family, paths = find_family(source, name)
    groups = DEFAULT_GROUPS[mode] if groups is None else groups
    entry, user_features, item_features = read_arrays(paths)
    if not 1 <= groups <= len(user_features):
        raise UserError(f"--groups must be between 1 and the {len(user_features)} users, got {groups}")
    parameters = {
        "source_name": family,
        "groups": groups,
        "seed": seed,
        "mode": mode,
        "serve": "groups",
        "arms": 10,
        "draw_first_users": groups if mode == "mcnb-code" else None,
    }
    folder = Path(data_dir) / f"authors-{family}"
    if up_to_date(folder, parameters, force):
        return folder
    # One OpenMP thread: the same labels on every machine; n_init = 10 was scikit-learn 0.24's default.
    with threadpool_limits(1):
        from sklearn.cluster import KMeans  # heavy: imported when a dataset is built, not by every worker

        labels = KMeans(n_clusters=groups, random_state=seed, n_init=10).fit_predict(user_features)
    columns = [f"f_{j}" for j in range(user_features.shape[1])]
    users = pd.DataFrame({"user": np.arange(len(user_features)), "group": labels.astype(np.int64)})
    users[columns] = user_features
    items = pd.DataFrame({"item": np.arange(len(item_features))})
    items[columns] = item_features
    interactions = pd.DataFrame({"user": entry[:, 0], "item": entry[:, 1], "label": entry[:, 2]})
    records = [
        {"member": key, "file": path.name, "origin": str(path), "bytes": path.stat().st_size, "sha256": sha256_of(path)}
        for key, path in paths.items()
    ]
    counts = {
        "users": len(users),
        "items": len(items),
        "interactions": len(interactions),
        "positives": int((entry[:, 2] > 0).sum()),
        "negatives": int((entry[:, 2] < 0).sum()),
        "groups": groups,
    }
    return write_dataset(
        folder,
        f"authors-{family}",
        {"users": users, "items": items, "interactions": interactions},
        parameters,
        protocol="recommendation",
        raw_files=records,
        counts=counts,
        force=force,
    )


register(
    Dataset(
        "authors-pools",
        "the Ban-family repositories' preprocessed arrays (<name>_<U>users_<I>items_entry.npy and "
        "feature arrays, --source DIR) served in the authors' code mode (mcnb-code | metaban-code); written as "
        "authors-<name>",
        "M-CNB §5.2 (banyikun/MCNB); Meta-Ban §4.1",
        "recommendation",
        prepare,
        (
            Option(
                "name", str, None, "Which dataset of the folder (yelp, movie…) when it holds several.", optional=True
            ),
            Option(
                "mode",
                str,
                "mcnb-code",
                "mcnb-code (100 groups, [item, rater] contexts) | metaban-code (50 groups, item contexts) | paper.",
                choices=MODES,
            ),
            Option(
                "groups",
                int,
                None,
                "K-means user groups [default: 100 for mcnb-code, 50 otherwise, as the authors' loaders].",
                optional=True,
                minimum=1,
            ),
            Option("seed", int, 0, "K-means random_state (the authors use 0).", minimum=0),
        ),
        files="a folder with <name>_<U>users_<I>items_entry.npy, <name>_<U>users_<I>items_features.npy and "
        "<name>_<I>items_<U>users_features.npy",
    )
)
