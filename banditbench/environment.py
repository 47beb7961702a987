"""A bandit problem built in Python rather than prepared by hand: from a pandas DataFrame or a reward function,
much as coba's ``Environments.from_dataframe`` and ``from_lambda`` build one.

Either way the problem becomes an ordinary prepared dataset in a temporary folder that lives as long as the
:class:`Environment` object, so ``banditbench.run(environment=…)`` plays it through the same runner, protocols and
shard format as ``banditbench run --dataset``:

- ``from_dataframe`` stages the table as a Parquet file and prepares it with ``prepare interactions`` (user, item,
  reward columns: the recommendation protocol of Ban et al. 2024, §5.2) or ``prepare classification`` (features and
  a ``target`` column: the classification protocol, §5.3), with their options, checks and refusals; the staged
  file is removed once the dataset is built.
- ``from_function`` evaluates the reward function on every (user context, arm) pair into the dense reward table of
  the matrix protocol (Cherkaoui et al. 2025, Sec. 7): one user drawn uniformly a round, the same K arms every
  round, observation f(c_u, x_k) + σ·ε with ε ~ N(0, 1), regret max_k f(c_u, x_k) − f(c_u, x_chosen).
"""

from __future__ import annotations

import hashlib
import math
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from banditbench import api
from banditbench.data.own import check_name
from banditbench.data.prepared import load_dataset, write_dataset, write_parquet
from banditbench.errors import UserError

IN_MEMORY = "the DataFrame"  # what refusals call the table a DataFrame environment reads
SIZES = ("users", "items", "groups", "arms", "samples", "features", "classes")  # the counts its repr shows


class Environment:
    """A bandit problem staged as a prepared dataset in a temporary folder, removed when this object is.

    Build one with :meth:`from_dataframe` or :meth:`from_function` and run it with
    ``banditbench.run(environment=…)``. ``folder``: the prepared dataset (its name is the folder's name);
    ``temporary``: the folder removed with this object. Raises UserError when ``folder`` holds no prepared dataset."""

    def __init__(self, folder: Path, temporary: str):
        self._cleanup = weakref.finalize(self, shutil.rmtree, temporary, True)
        self.name = folder.name
        self.data_dir = folder.parent  # what run's data_dir= would be
        self.manifest = load_dataset(self.data_dir, self.name).manifest

    @property
    def protocol(self) -> str:
        return self.manifest["protocol"]

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {key}" for key, n in self.manifest["counts"].items() if key in SIZES)
        return f"Environment({self.name!r}: {self.protocol} protocol; {counts})"

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, *, target: str | None = None, name: str = "dataframe", **options):
        """An environment from an in-memory table, prepared exactly as ``banditbench prepare interactions`` (or
        ``prepare classification`` with ``target``) prepares the same table read from a file.

        ``frame``: one row per interaction (columns ``user``, ``item``, ``reward`` unless ``options`` name others)
        or, with ``target``, one row per labelled instance (every other column a feature). ``target``: the column
        of classes. ``name``: the dataset's name in the results. ``options``: the prepare command's options with
        underscores (``positive_above=3``, ``groups=10``, ``user="user_id"``; ``normalise``, ``encoding`` for a
        labelled table), checked against their domains.

        Returns the Environment. Raises UserError, one line, for what the prepare command refuses (a missing
        column, an empty value, too few rows, ratings all above the positive threshold, an unknown option), a
        ``frame`` that is not a DataFrame, or a file option (``source``), since the table is the source."""
        if not isinstance(frame, pd.DataFrame):
            raise UserError(f"from_dataframe takes a pandas DataFrame, got {type(frame).__name__}")
        given = sorted(set(options) & set(api.SOURCE_OPTIONS))
        if given:
            raise UserError(f"from_dataframe reads the DataFrame itself; it takes no {given[0]}= option")
        check_name(name)
        temporary = tempfile.mkdtemp(prefix="banditbench-environment-")
        try:
            staged = stage_table(frame, Path(temporary) / "table.parquet")
            kind = "interactions" if target is None else "classification"
            if target is not None:
                options["target"] = target
            try:
                folder = api.prepare(kind, data_dir=Path(temporary) / "datasets", name=name, source=staged, **options)
            except UserError as e:  # the staged file is an implementation detail: name the table the user gave
                raise UserError(str(e).replace(str(staged), IN_MEMORY)) from None
            staged.unlink()
            return cls(folder, temporary)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise

    @classmethod
    def from_function(
        cls,
        reward_fn: Callable[[np.ndarray, np.ndarray], float],
        contexts,
        *,
        n_arms: int | None = None,
        arms=None,
        dim: int | None = None,
        noise: float = 0.1,
        seed: int = 0,
        name: str = "function",
    ):
        """An environment whose expected reward is ``reward_fn(context, arm)``: the matrix protocol over users whose
        contexts only the function sees and a fixed set of arms whose features the policies see.

        Each round one user u is drawn uniformly and shown every arm; the policy observes reward_fn(c_u, x_k)
        + ``noise``·ε, ε ~ N(0, 1), drawn from the run's seed; regret is against the user's best expected reward.
        ``reward_fn``: called once per (user, arm) pair with a context row and an arm's feature row, returning a
        finite number. ``contexts``: one row per user (a 1-D array: one number per user). ``arms``: the arms'
        feature rows; or ``n_arms`` rows of ``dim`` features (default: the contexts' width) drawn from
        N(0, I/d) with ``seed``. ``noise``: σ ≥ 0. ``seed``: fixes the drawn arms (the run's own seed fixes
        the users drawn and the noise). ``name``: the dataset's name in the results.

        Returns the Environment. Raises UserError for a ``reward_fn`` that is not callable, fails or returns
        something other than a finite number, fewer than 1 user or 2 arms, both or neither of ``arms`` and
        ``n_arms``, a negative or non-finite ``noise``, or a ``seed`` that is not a non-negative integer."""
        check_name(name)
        if not callable(reward_fn):
            raise UserError(f"reward_fn must be a function of (context, arm), got {type(reward_fn).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise UserError(f"seed must be a non-negative integer, got {seed!r}")
        users = as_rows(contexts, "contexts")
        features = arm_features(arms, n_arms, users.shape[1] if dim is None else dim, seed)
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not (0 <= noise < math.inf):
            raise UserError(f"noise must be a finite σ ≥ 0, got {noise!r}")
        expected = reward_table(reward_fn, users, features)
        tables = {
            "rewards": pd.DataFrame(
                {"user": np.arange(len(users)), **{f"r_{k}": expected[:, k] for k in range(len(features))}}
            ),
            "arms": pd.DataFrame(
                {"arm": np.arange(len(features)), **{f"x_{j}": features[:, j] for j in range(features.shape[1])}}
            ),
        }
        parameters = {
            "agents": len(users),  # every user takes part in every run
            "noise": float(noise),
            "pulling": "async",
            "seed": int(seed),
            "rewards_sha256": hashlib.sha256(expected.tobytes() + features.tobytes()).hexdigest(),
        }
        temporary = tempfile.mkdtemp(prefix="banditbench-environment-")
        try:
            folder = write_dataset(
                Path(temporary) / "datasets" / name,
                name,
                tables,
                parameters,
                protocol="matrix",
                counts={"users": len(users), "arms": len(features)},
            )
            return cls(folder, temporary)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise


def stage_table(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` written to ``path`` as Parquet (column names as text, without its index), for the prepare commands,
    which read files."""
    try:
        table = pa.Table.from_pandas(frame.rename(columns=str), preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise UserError(f"{IN_MEMORY} cannot be stored as a table: {e}") from None
    write_parquet(table, path)
    return path


def as_rows(values, label: str) -> np.ndarray:
    """``values`` as a 2-D float array of at least one row (a 1-D array is one column)."""
    try:
        rows = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise UserError(f"{label} must be an array of numbers, one row each") from None
    rows = rows[:, None] if rows.ndim == 1 else rows
    if rows.ndim != 2 or len(rows) < 1 or rows.shape[1] < 1:
        raise UserError(f"{label} must be one row of numbers each, got an array of shape {np.shape(values)}")
    if not np.isfinite(rows).all():
        raise UserError(f"{label} must be finite numbers")
    return rows


def arm_features(arms, n_arms: int | None, dim: int, seed: int) -> np.ndarray:
    """The arms' feature rows: those given, or ``n_arms`` rows drawn from N(0, I/dim) with ``seed``."""
    if (arms is None) == (n_arms is None):
        raise UserError("give the arms' features (arms=) or how many to draw (n_arms=), one of the two")
    if arms is not None:
        features = as_rows(arms, "arms")
    else:
        for label, value in (("n_arms", n_arms), ("dim", dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise UserError(f"{label} must be a positive integer, got {value!r}")
        features = np.random.default_rng(seed).normal(scale=1 / math.sqrt(dim), size=(n_arms, dim))
    if len(features) < 2:
        raise UserError(f"a bandit needs at least 2 arms, got {len(features)}")
    return features


def reward_table(reward_fn: Callable, users: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """[users × arms] expected rewards, ``reward_fn`` called once per pair; a failure names the pair."""
    table = np.empty((len(users), len(arms)))
    for u, context in enumerate(users):
        for k, arm in enumerate(arms):
            try:
                value = reward_fn(context, arm)
            except Exception as e:
                raise UserError(f"reward_fn failed on user {u}, arm {k}: {type(e).__name__}: {e}") from None
            try:
                table[u, k] = value
            except (TypeError, ValueError):
                raise UserError(f"reward_fn must return a number; on user {u}, arm {k} it returned {value!r}") from None
            if not math.isfinite(table[u, k]):
                raise UserError(f"reward_fn must return a finite number; on user {u}, arm {k} it returned {value!r}")
    return table


__all__ = ["Environment"]
