"""Clustered pools in the Ban-family repositories' format, on which the parity harness's controls separate.

The authors' loaders (M-CNB's ``load_movielen_dif_user``, Meta-Ban's ``load_yelp_new``) read three arrays:
``<name>_<U>users_<I>items_entry.npy`` (rows user, item, ±1) and the user and item feature arrays, 10 columns each
in the SVD layout of their pools (9 unit-normalised coordinates and a constant, all divided by √2). They group the
users by K-means and reward, in each round, the one *disliked* entry among ten entries of the served group.

This module writes such arrays with a structure that a clustering learner can exploit and the negative controls
cannot (``write``):

- ``groups`` tight blobs of users, far apart, so that K-means recovers every blob as one group; user i is in blob
  i mod ``groups``, so the first ``groups`` users hold one member of each blob and M-CNB's loader, which draws u
  among the first n_groups users, serves every group;
- ``tastes`` latent clusters of groups (group g has taste g mod ``tastes``) and as many kinds of items; a group
  dislikes the items of its taste's kind and likes the others.

A round then asks which entry is of the served group's kind. One model pooled over all groups cannot tell (each kind
is rewarded for some groups and not for others), one model per group learns from 1/``groups`` of the rounds, and a
clustering that finds the tastes learns from 1/``tastes`` of them. ``spread`` blurs the kinds (the noise around each
kind's direction), and so sets how many samples a learner needs.

The latent taste of every user is written beside the arrays as ``<name>_<U>users_truth.npy`` (not a file the
authors' loaders read): the harness scores each side's final clustering against it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

FEATURES = 10  # the width of the authors' SVD features


def svd_layout(directions: np.ndarray) -> np.ndarray:
    """The authors' feature layout: the 9 leading coordinates unit-normalised, a constant 1, all divided by √2."""
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    return np.hstack([unit, np.ones((len(unit), 1))]) / np.sqrt(2)


def kind_directions(tastes: int) -> np.ndarray:
    """One direction per kind over the 9 free coordinates: kind c weighs coordinates 3c … 3c + 2 (mod 9).

    Their loaders pass every feature through the N(0, 0.5²) density, which is even, so kinds must differ in the
    *magnitude* of coordinates, not only their sign: each kind has its own strong coordinates."""
    directions = np.full((tastes, FEATURES - 1), 0.15)
    for c in range(tastes):
        directions[c, [(3 * c + j) % (FEATURES - 1) for j in range(3)]] = 1.0
    return directions


def write(
    folder: Path,
    *,
    name: str = "clustered",
    users: int = 2000,
    groups: int = 50,
    tastes: int = 2,
    items: int = 1000,
    liked: int = 120,
    disliked: int = 30,
    spread: float = 0.5,
    seed: int = 0,
) -> Path:
    """Write the three arrays and the truth file of one instance into ``folder`` (created); returns ``folder``.

    ``liked`` and ``disliked``: entries per group (a group's raters are its members, drawn uniformly)."""
    if not 2 <= tastes <= groups <= users or tastes > FEATURES - 1:
        raise ValueError(f"need 2 ≤ tastes ≤ groups ≤ users and tastes ≤ 9, got {tastes}, {groups}, {users}")
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    # the groups are near one another (their raters' features barely differ, so a group's rater part is nearly the
    # same constant for every group) yet 50 times farther apart than their members
    centres = rng.normal(size=FEATURES - 1) + 0.1 * rng.normal(size=(groups, FEATURES - 1))
    blob = np.arange(users) % groups
    user_features = svd_layout(centres[blob] + 0.002 * rng.normal(size=(users, FEATURES - 1)))
    kind = np.arange(items) % tastes
    item_features = svd_layout(kind_directions(tastes)[kind] + spread * rng.normal(size=(items, FEATURES - 1)))
    rows = []
    for g in range(groups):
        taste, members = g % tastes, np.flatnonzero(blob == g)
        for count, mine, label in ((liked, False, 1), (disliked, True, -1)):
            pool = np.flatnonzero((kind == taste) == mine)
            chosen = rng.choice(pool, count, replace=False)
            raters = rng.choice(members, count)
            rows += [(int(u), int(i), label) for u, i in zip(raters, chosen)]
    stem = f"{name}_{users}users_{items}items"
    np.save(folder / f"{stem}_entry.npy", np.array(rows, dtype=np.int64))
    np.save(folder / f"{stem}_features.npy", user_features)
    np.save(folder / f"{name}_{items}items_{users}users_features.npy", item_features)
    np.save(folder / f"{name}_{users}users_truth.npy", blob % tastes)
    spec = {"users": users, "groups": groups, "tastes": tastes, "items": items, "spread": spread, "seed": seed}
    (folder / "instance.json").write_text(json.dumps({"clustered pools": name, **spec}))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="where to write the arrays (created)")
    for option, default in (("users", 2000), ("groups", 40), ("tastes", 2), ("items", 1000), ("seed", 0)):
        parser.add_argument(f"--{option}", type=int, default=default)
    parser.add_argument("--spread", type=float, default=0.5, help="noise around each kind's direction")
    args = vars(parser.parse_args())
    print(write(args.pop("folder"), **args))


if __name__ == "__main__":
    main()
