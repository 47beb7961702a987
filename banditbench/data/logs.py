"""Logged bandit feedback, the prepared form every log takes (Open Bandit Dataset, Yahoo! R6, MIND impressions,
your own log, a simulated log): its tables, its checks and the reward model fitted on it.

A log is a sequence of events. In event t the logging policy saw user u_t and a pool of arms, chose the arm a_t with
probability p_t (its propensity) and observed the reward r_t; Li, Chu, Langford & Wang (WSDM 2011) replay a policy on
it, and the off-policy estimators weight r_t by 1/p_t (report/offpolicy.py). Tables:

- ``events``, in the log's order: ``user`` (the id a policy sees), ``action`` (a_t, an index into ``arms``),
  ``reward``, ``propensity``, ``fold`` (the reward model's cross-fitting fold), and where the data has them
  ``position`` (the slot the arm was shown in, from 1), ``candidates`` (the arms offered, when the pool changes from
  event to event), ``extras`` (per-event arm features [K · e], such as the Open Bandit Dataset's user–item affinity)
  and ``user_features``;
- ``arms``: the catalogue, ``arm``, ``item`` (the raw id) and the arm features ``x_0 …``;
- ``reward_model``: the ridge coefficients of :func:`fit_reward_model`, one row per fold and user (user −1: the
  pooled fit).

Arm contexts (what a policy scores) are built by :func:`arm_contexts` from the ``contexts`` parameter: ``arm``, the
arm's features followed by its per-event extras; or ``user x arm``, the outer product of the event's user features
and the arm's features (Li, Chu, Langford & Schapire, WWW 2010, §5.2's hybrid features for the Yahoo! logs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from banditbench.data.prepared import write_dataset
from banditbench.errors import UserError

PROTOCOL = "logged"
CONTEXTS = ("arm", "user x arm")
DEFAULT_FOLDS, DEFAULT_RIDGE = 2, 1.0
UNIFORM_TOLERANCE = 1e-6  # relative: a logged propensity 1/K printed with six or more significant digits
MODEL_KIND = "ridge per user, shrunk towards the pooled fit; cross-fitted"
MODEL_CHUNK = 8192  # events per step of the reward model's sums: bounds its [chunk, d, d] outer products


@dataclass
class Log:
    """A log as arrays, before it is written (see the module docstring for each field)."""

    user: np.ndarray  # [n] int64, 0 … n_users − 1
    action: np.ndarray  # [n] int64, an index into the catalogue
    reward: np.ndarray  # [n] float64
    propensity: np.ndarray  # [n] float64 in (0, 1]
    arm_features: np.ndarray  # [N, s] float32 (s may be 0)
    items: np.ndarray  # [N] the arms' raw ids, as text
    position: np.ndarray | None = None  # [n] int64 ≥ 1
    candidates: list[np.ndarray] | None = None  # per event, the arms offered (None: every arm of the catalogue)
    extras: np.ndarray | None = None  # [n, N, e] float32 per-event arm features (only without candidates)
    user_features: np.ndarray | None = None  # [n, m] float32
    contexts: str = "arm"
    notes: dict[str, Any] = field(default_factory=dict)  # what the reader decided, for the manifest's counts

    @property
    def n_events(self) -> int:
        return len(self.action)

    @property
    def n_users(self) -> int:
        return int(self.user.max()) + 1

    def pool_sizes(self) -> np.ndarray:
        if self.candidates is None:
            return np.full(self.n_events, len(self.items), np.int64)
        return np.fromiter(map(len, self.candidates), np.int64, self.n_events)

    def uniform(self) -> bool:
        """Whether every propensity is 1 / (the event's pool size): a uniformly random logging policy."""
        return bool(np.allclose(self.propensity * self.pool_sizes(), 1.0, rtol=UNIFORM_TOLERANCE, atol=0.0))


def user_ids(keys: pd.DataFrame, limit: int | None = None) -> tuple[np.ndarray, int]:
    """Dense user ids for the rows of ``keys`` (one row per event, the columns that identify a user): the most
    frequent key is user 0, ties broken by first appearance. With ``limit``, keys after the ``limit`` most frequent
    share the id ``limit``. Returns the ids and the number of users."""
    codes = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()  # by first appearance
    counts = np.bincount(codes)
    order = np.argsort(-counts, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    if limit is not None and len(order) > limit:
        return np.minimum(rank[codes], limit).astype(np.int64), limit + 1
    return rank[codes].astype(np.int64), len(order)


def check_log(log: Log, where: str) -> None:
    """The checks every log passes before it is written, naming the first offending event of ``where`` (counted from
    1); readers of raw files refuse the same faults earlier, by file and line."""
    n = log.n_events
    if n == 0:
        raise UserError(f"{where}: the log has no events")
    for name, values in (("reward", log.reward), ("propensity", log.propensity)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise UserError(f"{where}, event {bad[0] + 1}: {name} {values[bad[0]]} is missing or not a finite number")
    bad = np.flatnonzero((log.propensity <= 0) | (log.propensity > 1))
    if bad.size:
        raise UserError(
            f"{where}, event {bad[0] + 1}: propensity {log.propensity[bad[0]]:g} is outside (0, 1]: a logged action "
            "has a positive probability of at most 1"
        )
    offered = (
        (log.action >= 0) & (log.action < len(log.items))
        if log.candidates is None
        else np.fromiter((a in set(c.tolist()) for a, c in zip(log.action, log.candidates)), bool, n)
    )
    bad = np.flatnonzero(~offered)
    if bad.size:
        raise UserError(
            f"{where}, event {bad[0] + 1}: the logged action {log.action[bad[0]]} is not among the arms offered"
        )
    if log.contexts not in CONTEXTS:
        raise ValueError(f"contexts must be one of {CONTEXTS}")


def arm_contexts(
    contexts: str, features: np.ndarray, extras: np.ndarray | None, users: np.ndarray | None
) -> np.ndarray:
    """Arm contexts [B, K, d] of B events from the arms' features [B, K, s] (or [K, s], shared), their per-event
    extras [B, K, e] and the events' user features [B, m] (see the module docstring)."""
    if contexts == "user x arm":
        return (
            users[:, None, :, None] * np.broadcast_to(features, (len(users), *features.shape[-2:]))[:, :, None, :]
        ).reshape(len(users), features.shape[-2], -1)
    if extras is None:
        return features if features.ndim == 3 else features[None]
    shared = np.broadcast_to(features, (len(extras), *features.shape[-2:]))
    return np.concatenate([shared, extras], axis=2)


def model_features(contexts: np.ndarray, position: np.ndarray | None, positions: int) -> np.ndarray:
    """The reward model's features of B events' arms [B, K, d + positions]: the arm context, then the one-hot slot."""
    if not positions:
        return contexts
    slots = np.zeros((*contexts.shape[:2], positions), contexts.dtype)
    slots[np.arange(len(position)), :, position - 1] = 1.0
    return np.concatenate([contexts, slots], axis=2)


def logged_contexts(log: Log, rows: slice) -> np.ndarray:
    """The logged arm's context [B, d] of the events ``rows``."""
    action = log.action[rows]
    features = log.arm_features[action][:, None, :]
    extras = None if log.extras is None else log.extras[rows][np.arange(len(action)), action][:, None, :]
    users = None if log.user_features is None else log.user_features[rows]
    return arm_contexts(log.contexts, features, extras, users)[:, 0, :]


def fit_reward_model(
    log: Log, folds: int = DEFAULT_FOLDS, ridge: float = DEFAULT_RIDGE
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted ridge regression of the reward on the logged arm's context and slot, one coefficient vector per
    user shrunk towards the pooled fit (the direct method's and doubly robust estimator's reward model).

    Event t falls in fold t mod ``folds``; the model that predicts the events of fold f is fitted on the other folds
    only (cross-fitting, Chernozhukov et al. 2018), so that no event's reward predicts itself. Within those events,
    the pooled fit is θ₀ = (XᵀX + λI)⁻¹ Xᵀr and user u's fit θ_u = (X_uᵀX_u + λI)⁻¹ (X_uᵀr_u + λθ₀): ridge towards the
    pooled fit, which a user with few events stays close to. Returns each event's fold [n] and the coefficients
    [folds, n_users + 1, d], the last row of each fold being θ₀. A linear model of a click is a linear probability
    model: its predictions are clipped to the rewards' range where they are used."""
    n, positions = log.n_events, int(log.position.max()) if log.position is not None else 0
    fold = (np.arange(n) % folds).astype(np.int8)
    d = logged_contexts(log, slice(0, 1)).shape[1] + positions
    U = log.n_users
    gram, moment = np.zeros((folds * U, d, d)), np.zeros((folds * U, d))
    from scipy import sparse

    for start in range(0, n, MODEL_CHUNK):
        rows = slice(start, min(start + MODEL_CHUNK, n))
        x = logged_contexts(log, rows)[:, None, :]
        x = model_features(x, None if log.position is None else log.position[rows], positions)[:, 0, :].astype(
            np.float64
        )
        owner = fold[rows].astype(np.int64) * U + log.user[rows]
        member = sparse.csr_matrix((np.ones(len(owner)), (owner, np.arange(len(owner)))), shape=(folds * U, len(owner)))
        gram += (member @ (x[:, :, None] * x[:, None, :]).reshape(len(owner), d * d)).reshape(-1, d, d)
        moment += member @ (x * log.reward[rows][:, None])
    gram, moment = gram.reshape(folds, U, d, d), moment.reshape(folds, U, d)
    theta = np.empty((folds, U + 1, d))
    eye = ridge * np.eye(d)
    for f in range(folds):
        others = [g for g in range(folds) if g != f] if folds > 1 else [f]
        user_gram, user_moment = gram[others].sum(axis=0), moment[others].sum(axis=0)
        pooled = np.linalg.solve(user_gram.sum(axis=0) + eye, user_moment.sum(axis=0))
        theta[f, :U] = np.linalg.solve(user_gram + eye, (user_moment + ridge * pooled)[:, :, None])[:, :, 0]
        theta[f, U] = pooled
    return fold, theta


def events_table(log: Log, fold: np.ndarray) -> pa.Table:
    columns = {
        "user": pa.array(log.user, pa.int64()),
        "action": pa.array(log.action, pa.int64()),
        "reward": pa.array(log.reward, pa.float64()),
        "propensity": pa.array(log.propensity, pa.float64()),
        "fold": pa.array(fold, pa.int8()),
    }
    if log.position is not None:
        columns["position"] = pa.array(log.position, pa.int8())
    if log.candidates is not None:
        columns["candidates"] = pa.array([c.tolist() for c in log.candidates], pa.list_(pa.int64()))
    for name, values in (("extras", log.extras), ("user_features", log.user_features)):
        if values is not None:
            flat = np.ascontiguousarray(values, np.float32).reshape(len(values), -1)
            columns[name] = pa.FixedSizeListArray.from_arrays(pa.array(flat.ravel()), flat.shape[1])
    return pa.table(columns)


def arms_table(log: Log) -> pd.DataFrame:
    table = pd.DataFrame({"arm": np.arange(len(log.items), dtype=np.int64), "item": np.asarray(log.items).astype(str)})
    features = pd.DataFrame(
        log.arm_features.astype(np.float32), columns=[f"x_{j}" for j in range(log.arm_features.shape[1])]
    )
    return pd.concat([table, features], axis=1)


def model_table(theta: np.ndarray) -> pa.Table:
    folds, users, d = theta.shape
    user = np.tile(np.append(np.arange(users - 1), -1), folds)
    return pa.table(
        {
            "fold": pa.array(np.repeat(np.arange(folds), users), pa.int8()),
            "user": pa.array(user, pa.int64()),
            "theta": pa.FixedSizeListArray.from_arrays(pa.array(theta.ravel()), d),
        }
    )


def summary(log: Log) -> dict[str, Any]:
    """The log's figures for the manifest's counts: sizes, the reward range, how uniform the logging was, and how
    many events a replay keeps on average (a policy matches the logged arm with probability 1/K on a uniform log)."""
    pools = log.pool_sizes()
    contexts = logged_contexts(log, slice(0, 1))
    return {
        "events": log.n_events,
        "arms": len(log.items),
        "users": log.n_users,
        "largest_pool": int(pools.max()),
        "context_dim": int(contexts.shape[1]),
        "user_feature_dim": 0 if log.user_features is None else int(log.user_features.shape[1]),
        "positions": 0 if log.position is None else int(log.position.max()),
        "reward_min": float(log.reward.min()),
        "reward_max": float(log.reward.max()),
        "mean_reward": float(log.reward.mean()),
        "propensity_min": float(log.propensity.min()),
        "propensity_max": float(log.propensity.max()),
        "uniform_log": log.uniform(),
        "expected_replay_matches": int(round(float((1.0 / pools).sum()))),
        **log.notes,
    }


def log_parameters(
    given: dict[str, Any], contexts: str = "arm", folds: int = DEFAULT_FOLDS, ridge: float = DEFAULT_RIDGE
) -> dict[str, Any]:
    """A log's preparation parameters: the reader's, how arm contexts are built, and the reward model's settings."""
    return {**given, "contexts": contexts, "reward_model": {"kind": MODEL_KIND, "folds": folds, "ridge": ridge}}


def write_log(
    folder: Path,
    name: str,
    log: Log,
    parameters: dict[str, Any],
    *,
    raw_files: list[dict[str, Any]] | None = None,
    verification: str | None = None,
    warnings: list[str] | tuple[str, ...] = (),
    rows: dict[str, Any] | None = None,
    force: bool = False,
) -> Path:
    """Check ``log``, fit its reward model (the settings :func:`log_parameters` put in ``parameters``) and write the
    dataset atomically: nothing is written when a check fails."""
    check_log(log, name)
    model = parameters["reward_model"]
    fold, theta = fit_reward_model(log, model["folds"], model["ridge"])
    tables = {"events": events_table(log, fold), "arms": arms_table(log), "reward_model": model_table(theta)}
    return write_dataset(
        folder,
        name,
        tables,
        parameters,
        protocol=PROTOCOL,
        raw_files=raw_files,
        counts=summary(log),
        force=force,
        rows=rows,
        verification=verification,
        reader_warnings=list(warnings),
    )
