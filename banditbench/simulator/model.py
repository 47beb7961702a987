"""The trained user-choice simulator as the environment uses it (Zhang et al. 2022, §4; the click
rule of the authors' CB4Rec code).

    sim = Simulator.load(dataset)                      # a PreparedDataset (or its folder); optional overrides
    p = sim.click_probabilities(users, items)          # σ(z_u · x_i), [U, K] for users [U] and items [K] or [U, K]
    y = sim.clicks(user, items, rng)                   # 0/1 [K]: 1{p ≥ THRES} (> if strict), flipped w.p. flip
    e = sim.expected_clicks(users, items)              # E[y] = (1 − flip)·1{p ≥ THRES} + flip·1{p < THRES}

The flips are drawn from the ``rng`` the environment passes in (its own stream: common random numbers across
policies). Item vectors are computed once at load (no dropout); user vectors are computed on first use and
cached; ``sim.user_vectors(trial_users)`` at the start of a trial computes them in one batched call.

Whose history makes the user vector (``user_history``):
- ``"true"`` (default, the paper's "personalised" intent): the user's logged history, the history field of
  their earliest training impression (banditbench.simulator.logged.initial_histories), fixed for the whole run,
  so the simulated user's taste does not drift with what the policies recommend;
- ``"true+clicks"``: as "true", plus every simulated click the environment reports through ``record``;
- ``"empty"`` (the authors' released code, which never gives its simulator a history): every user has an empty
  history, i.e. one constant user vector (the encoder's learned empty-history vector), so rewards depend on the
  item only. This is what reproduces the paper's Random rows being equal for 10, 100 and 1,000 users.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from banditbench.data import PreparedDataset, load_dataset
from banditbench.errors import UserError
from banditbench.simulator.encoders import TwoTower
from banditbench.simulator.logged import LoggedData, initial_histories, load_logged
from banditbench.simulator.train import METADATA_FILE, MODEL_FILE, USER_HISTORIES, simulator_folder


class Simulator:
    def __init__(
        self,
        model: TwoTower,
        data: LoggedData,
        threshold: float,
        flip: float = 0.1,
        strict: bool = False,
        user_history: str = "true",
        metadata: dict | None = None,
    ):
        if user_history not in USER_HISTORIES:
            raise UserError(
                f"unknown simulator user history {user_history!r}; choose from: {', '.join(USER_HISTORIES)}"
            )
        if not 0 <= flip <= 1 or not 0 <= threshold <= 1:
            raise UserError(f"need 0 ≤ flip ≤ 1 and 0 ≤ threshold ≤ 1, got flip={flip}, threshold={threshold}")
        self.model, self.threshold, self.flip, self.strict = model.eval(), threshold, flip, strict
        self.user_history, self.metadata = user_history, metadata or {}
        with torch.no_grad():
            self.item_vectors = model.item_vectors(data.titles, data.topic).numpy()  # [n+1, d]
        self.histories = initial_histories(data, model.history) if user_history != "empty" else None
        self.user_cache = np.zeros((data.n_users, self.item_vectors.shape[1]), np.float32)
        self.cached = np.zeros(data.n_users, bool)
        if user_history == "empty":  # one constant user vector, computed once
            with torch.no_grad():
                self.user_cache[:] = model.user_vectors(torch.from_numpy(self.item_vectors), np.zeros((1, 1))).numpy()
            self.cached[:] = True

    @classmethod
    def load(
        cls,
        dataset: PreparedDataset | str | Path,
        data: LoggedData | None = None,
        *,
        data_dir: Path | None = None,
        threshold: float | None = None,
        flip: float | None = None,
        strict: bool | None = None,
        user_history: str | None = None,
    ) -> Simulator:
        """The simulator trained for ``dataset`` (a PreparedDataset, or a dataset name with ``data_dir``);
        ``data`` avoids reading the logged tables again; every other argument overrides the trained default."""
        if not isinstance(dataset, PreparedDataset):
            dataset = load_dataset(Path(data_dir or "datasets"), str(dataset))
        folder = simulator_folder(dataset.path)
        if not (folder / METADATA_FILE).is_file():
            raise UserError(
                f"dataset {dataset.name!r} has no simulator; run `banditbench simulator train {dataset.name}` first"
            )
        metadata = json.loads((folder / METADATA_FILE).read_text())
        if metadata["dataset_manifest_sha256"] != dataset.manifest_sha256:
            raise UserError(
                f"the simulator in {folder} was trained on another preparation of {dataset.name!r}; "
                f"retrain it with `banditbench simulator train {dataset.name} --force`"
            )
        data = data if data is not None else load_logged(dataset)
        model = TwoTower.from_state(metadata["model"], torch.load(folder / MODEL_FILE, weights_only=True))
        return cls(
            model,
            data,
            metadata["threshold"] if threshold is None else threshold,
            metadata["flip"] if flip is None else flip,
            metadata["strict"] if strict is None else strict,
            metadata["user_history"] if user_history is None else user_history,
            metadata,
        )

    def user_vectors(self, users: np.ndarray) -> np.ndarray:
        """[U, d] user vectors, computed once per user (again after ``record`` changed a history)."""
        users = np.asarray(users, np.int64)
        missing = np.unique(users[~self.cached[users]])
        if len(missing):
            with torch.no_grad():
                self.user_cache[missing] = self.model.user_vectors(
                    torch.from_numpy(self.item_vectors), self.histories[missing]
                ).numpy()
            self.cached[missing] = True
        return self.user_cache[users]

    def click_probabilities(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """σ(z_u · x_i) [U, K] for users [U] and items [K] (the same for every user) or [U, K]."""
        z = self.user_vectors(np.atleast_1d(users))
        items = np.asarray(items)
        if items.ndim == 1 and len(items) * 4 >= len(self.item_vectors):  # many items: score the catalogue once
            logits = (z @ self.item_vectors.T)[:, items]
        elif items.ndim == 1:
            logits = z @ self.item_vectors[items].T
        else:
            logits = np.einsum("ud,ukd->uk", z, self.item_vectors[items])
        return 1 / (1 + np.exp(-logits.astype(np.float64)))

    def deterministic_clicks(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """1{p ≥ THRES} (1{p > THRES} when strict), [U, K] bool, before the flips."""
        p = self.click_probabilities(users, items)
        return p > self.threshold if self.strict else p >= self.threshold

    def expected_clicks(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """E[click] [U, K]: 1 − flip where the deterministic reward is 1, flip where it is 0."""
        return np.where(self.deterministic_clicks(users, items), 1 - self.flip, self.flip)

    def feedback(self, user: int, items: np.ndarray, uniforms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clicks [K] of ``user`` on ``items`` (the thresholded click, flipped where ``uniforms`` [K] < flip) and
        their expectations [K] (1 − flip where the thresholded click is 1, flip where it is 0)."""
        labels = self.deterministic_clicks(np.array([user]), np.asarray(items))[0]
        return (labels ^ (uniforms < self.flip)).astype(np.int8), np.where(labels, 1.0 - self.flip, self.flip)

    def clicks(self, user: int, items: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Simulated 0/1 feedback [K] of ``user`` on ``items``: the thresholded click, each flipped with
        probability ``flip`` by one uniform draw per item from ``rng``."""
        return self.feedback(user, items, rng.random(len(items)))[0]

    def record(self, user: int, items: np.ndarray, clicks: np.ndarray) -> None:
        """With user_history="true+clicks": append the clicked items to the user's simulator history (last
        ``history`` kept) and forget the cached vector; otherwise nothing (the simulated user is fixed)."""
        if self.user_history != "true+clicks":
            return
        new = np.asarray(items)[np.asarray(clicks) == 1]
        if len(new):
            row = self.histories[user]
            kept = np.concatenate([row[row > 0], new])[-len(row) :]
            self.histories[user] = np.pad(kept, (0, len(row) - len(kept)))
            self.cached[user] = False
