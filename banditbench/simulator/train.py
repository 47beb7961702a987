"""`banditbench simulator train`: the off-policy user-choice simulator of Zhang et al. 2022 (§4).

What is trained: a two-tower click model (banditbench/simulator/encoders.py; the simulator's own instance,
larger than the learners': ``dim`` 128 by default) on every click of the prepared *training* impressions. A
training row is the clicked item plus ``npratio`` = 4 non-clicked items of the same impression (redrawn every
epoch), the user given by the impression's history (last 50). Loss: BCE-with-logits weighted by inverse
propensity, self-normalised per row (banditbench/simulator/ips.py; ``--variant``), the propensity being the
empirical n(u,i)/n(u) or, with ``--propensity learned``, a logistic model of display fitted on the frozen towers of
a first fit without IPS (banditbench/simulator/propensity.py gives the order). Adam, early stopping on the
validation impressions' mean per-impression AUC (the authors' checkpoint criterion) with ``patience`` epochs and
an ``epochs`` cap; the best epoch's weights are kept. Then the held-out figures (AUC, log-loss, score
distributions, the F1-maximising threshold) are computed and the model is saved next to the prepared data, in
``datasets/<name>/simulator/`` (``model.pt`` + ``simulator.json``), atomically.

Determinism: negatives and the batch order come from ``numpy.random.default_rng(seed)``, dropout masks from a
torch generator seeded from ``seed``, initialisation from ``seed``, and torch runs ``threads`` threads, so the
same data, settings and seed give bit-identical weights on CPU.

Choices where the paper is silent (its appendix is missing) and the authors' code is too slow for CPUs:
the simulator's item tower pools its title words by a masked mean (a bag of words plus the topic,
``word_pooling="mean"``; additive attention, the learners' default, needs the padded word tensor and costs more),
Adam lr 1e-3, batch 256, at most 5 epochs with patience 1 (the code: NRMS-400, lr 1e-4, batch 64, up to 1000
epochs, picked epoch 5 on MIND and 86 on MovieLens); the history of a row is its impression's last 50 items (the
code samples 50 at random when longer); validation scores every candidate of the validation impressions.
"""

from __future__ import annotations

import copy
import json
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from banditbench.data import DATASETS, load_dataset
from banditbench.data.prepared import swap_into_place
from banditbench.errors import UserError
from banditbench.simulator import ips
from banditbench.simulator import propensity as propensity_model
from banditbench.simulator.encoders import WORD_POOLING, TwoTower
from banditbench.simulator.logged import (
    HISTORY,
    NPRATIO,
    PROTOCOL,
    LoggedData,
    click_rows,
    initial_histories,
    last_items,
    load_logged,
    training_clicks,
)
from banditbench.simulator.metrics import at_threshold, click_metrics, text_histogram
from banditbench.version import __version__

FOLDER = "simulator"
MODEL_FILE = "model.pt"
METADATA_FILE = "simulator.json"
# THRES of Zhang et al. 2022, §4 (the F1-maximising thresholds of the authors' simulators); "f1" uses this model's own.
PAPER_THRESHOLDS = {"mind": 0.384, "movielens-logged": 0.855}
USER_HISTORIES = ("true", "true+clicks", "empty")
# Purposes of the seed's extra streams (``stream``); the simulator itself draws from the seed directly.
ENCODER_STREAM, PROPENSITY_STREAM, SUMMARY_STREAM = 1, 2, 3


@dataclass(frozen=True)
class TrainSettings:
    variant: str = "empirical"
    propensity: str = "empirical"  # or "learned": the logistic propensity model (banditbench/simulator/propensity.py)
    propensity_epochs: int = propensity_model.EPOCHS
    propensity_floor: float = propensity_model.FLOOR
    epochs: int = 5
    patience: int = 1
    lr: float = 1e-3
    batch: int = 256
    npratio: int = NPRATIO
    dim: int = 128
    word_dim: int = 128
    attention_dim: int = 128
    dropout: float = 0.2
    word_pooling: str = "mean"
    history: int = HISTORY
    threshold: str = "paper"  # "paper", "f1" or a number
    flip: float = 0.1
    strict: bool = False  # the paper's click rule is score >= THRES; the code's is score > THRES
    user_history: str = "true"
    seed: int = 0
    threads: int = 1

    def check(self) -> None:
        if self.variant not in ips.VARIANTS:
            raise UserError(f"unknown --variant {self.variant!r}; choose from: {', '.join(ips.VARIANTS)}")
        if self.propensity not in ips.PROPENSITIES:
            raise UserError(f"unknown --propensity {self.propensity!r}; choose from: {', '.join(ips.PROPENSITIES)}")
        if self.propensity == "learned" and self.variant == "none":
            raise UserError("--propensity learned needs IPS weights: --variant empirical or empirical-unnormalised")
        if not 0 < self.propensity_floor <= 1:
            raise UserError(f"the propensity floor must be in (0, 1], got {self.propensity_floor}")
        if self.word_pooling not in WORD_POOLING:
            raise UserError(f"unknown --word-pooling {self.word_pooling!r}; choose from: {', '.join(WORD_POOLING)}")
        if self.user_history not in USER_HISTORIES:
            raise UserError(f"unknown --user-history {self.user_history!r}; choose from: {', '.join(USER_HISTORIES)}")
        for name in (
            "epochs",
            "propensity_epochs",
            "batch",
            "npratio",
            "dim",
            "word_dim",
            "attention_dim",
            "history",
            "threads",
        ):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.patience < 0 or not self.lr > 0 or not 0 <= self.dropout < 1 or not 0 <= self.flip <= 1:
            raise UserError("need --patience ≥ 0, --lr > 0, 0 ≤ --dropout < 1 and 0 ≤ --flip ≤ 1")
        if self.threshold not in ("paper", "f1"):
            try:
                value = float(self.threshold)
            except ValueError:
                raise UserError(
                    f"--threshold must be paper, f1 or a number in [0, 1], got {self.threshold!r}"
                ) from None
            if not 0 <= value <= 1:
                raise UserError(f"--threshold must be in [0, 1], got {value}")


@dataclass(frozen=True)
class Validation:
    """Every candidate of the validation impressions, flat."""

    impression: np.ndarray  # [V] validation impressions
    histories: np.ndarray  # [V, history]
    group: np.ndarray  # [C] position in ``impression`` of each candidate
    items: np.ndarray  # [C]
    labels: np.ndarray  # [C]


def validation_set(data: LoggedData, history: int) -> Validation:
    imp = data.impressions
    impression = np.flatnonzero(imp.valid)
    if len(impression) == 0:
        raise UserError("the dataset has no validation impressions (MIND: dev; MovieLens: --valid-fraction > 0)")
    counts = np.diff(imp.shown_offsets)[impression]
    group = np.repeat(np.arange(len(impression)), counts)
    entry = np.repeat(imp.shown_offsets[impression] - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(
        counts.sum()
    )
    return Validation(
        impression,
        last_items(imp.history_offsets, imp.history, impression, history),
        group,
        imp.shown[entry],
        imp.clicked[entry],
    )


def validation_probabilities(model: TwoTower, data: LoggedData, valid: Validation, batch: int = 4096) -> np.ndarray:
    """σ(score) of every validation candidate, from item vectors computed once."""
    model.eval()
    items = model.item_vectors(data.titles, data.topic)
    users = torch.cat(
        [model.user_vectors(items, valid.histories[s : s + batch]) for s in range(0, len(valid.impression), batch)]
    )
    logits = (users[torch.as_tensor(valid.group)] * items[torch.as_tensor(valid.items, dtype=torch.long)]).sum(-1)
    return torch.sigmoid(logits).numpy().astype(np.float64)


def resolve_threshold(setting: str, dataset: str, f1_best: dict | None) -> tuple[float, str]:
    if setting == "paper":
        if dataset in PAPER_THRESHOLDS:
            return PAPER_THRESHOLDS[dataset], "paper"
        setting = "f1"  # no paper value for this dataset: the model's own F1 threshold
    if setting == "f1":
        if f1_best is None:
            raise UserError("--threshold f1 needs validation impressions with both clicks and non-clicks")
        return f1_best["threshold"], "f1"
    return float(setting), "given"


def simulator_folder(dataset_path: Path) -> Path:
    return Path(dataset_path) / FOLDER


def fit_click_model(
    data: LoggedData,
    settings: TrainSettings,
    variant: str,
    propensity: Callable,
    click_impression: np.ndarray,
    click_item: np.ndarray,
    valid: Validation,
    rng: np.random.Generator,
    generator: torch.Generator,
    started: float,
    progress: Callable[[dict], None] | None,
    stage: str | None = None,
) -> tuple[TwoTower, list[dict]]:
    """The click model trained with the ``variant`` loss weights of ``propensity``, early-stopped on the
    validation mean per-impression AUC, with the best epoch's weights; and the per-epoch log."""
    imp = data.impressions
    model = TwoTower(
        len(data.vocabulary),
        data.n_topics,
        dim=settings.dim,
        word_dim=settings.word_dim,
        attention_dim=settings.attention_dim,
        dropout=settings.dropout,
        history=settings.history,
        word_pooling=settings.word_pooling,
        seed=settings.seed,
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr)
    titles, topics = torch.as_tensor(data.titles, dtype=torch.long), torch.as_tensor(data.topic)

    best, best_state, history, waited = -np.inf, copy.deepcopy(model.state_dict()), [], 0
    for epoch in range(1, settings.epochs + 1):
        rows = click_rows(data, click_impression, click_item, rng, settings.npratio)
        users = imp.user[rows.impression]
        weights = torch.as_tensor(ips.row_weights(variant, propensity, users, rows.candidates))
        histories = torch.as_tensor(
            last_items(imp.history_offsets, imp.history, rows.impression, settings.history), dtype=torch.long
        )
        candidates, labels = torch.as_tensor(rows.candidates, dtype=torch.long), torch.as_tensor(rows.labels)
        model.train()
        total = 0.0
        for batch in np.array_split(rng.permutation(len(rows)), max(1, -(-len(rows) // settings.batch))):
            batch = torch.as_tensor(batch)
            logits = model.logits(titles, topics, histories[batch], candidates[batch], generator)
            loss = ips.weighted_logistic_loss(logits, labels[batch], weights[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        probabilities = validation_probabilities(model, data, valid)
        metrics = click_metrics(valid.group, probabilities, valid.labels)
        record = {
            "epoch": epoch,
            "train_loss": total / len(rows),
            "auc_mean_per_impression": metrics["auc_mean_per_impression"],
            "auc_global": metrics["auc_global"],
            "log_loss": metrics["log_loss"],
            "seconds": time.perf_counter() - started,
        }
        history.append(record)
        if progress:
            progress(record if stage is None else {**record, "stage": stage})
        score = metrics["auc_mean_per_impression"]
        if score > best or epoch == 1:
            best, best_state, waited = score, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited > settings.patience:
                break
    model.load_state_dict(best_state)
    return model, history


def propensity_metrics(
    data: LoggedData,
    settings: TrainSettings,
    empirical: ips.EmpiricalPropensity,
    learned: tuple | None,
    click_impression: np.ndarray,
    click_item: np.ndarray,
) -> dict:
    """The propensity used and the empirical one side by side, on one draw of training rows (its own stream):
    mean, quantiles and the effective sample size of the IPS weights; for the learned model its figures."""
    rng, _ = stream(settings.seed, SUMMARY_STREAM)
    rows = click_rows(data, click_impression, click_item, rng, settings.npratio)
    users = data.impressions.user[rows.impression]
    summaries = {"empirical": ips.propensity_summary(settings.variant, empirical, users, rows.candidates)}
    figures = {"used": settings.propensity, "variant": settings.variant, "summaries": summaries}
    if learned is not None:
        model, model_figures = learned
        summaries["learned"] = ips.propensity_summary(settings.variant, model, users, rows.candidates)
        figures["learned_model"] = model_figures
    return figures


def stream(seed: int, purpose: int) -> tuple[np.random.Generator, torch.Generator]:
    """Independent numpy and torch streams for one ``purpose`` of the learned-propensity path, so that the
    IPS-weighted simulator itself draws from ``seed`` exactly as with the empirical propensity."""
    sequence = np.random.SeedSequence([seed, purpose])
    return np.random.default_rng(sequence), torch.Generator().manual_seed(int(sequence.generate_state(1)[0]))


def learned_propensity(
    data: LoggedData,
    settings: TrainSettings,
    click_impression: np.ndarray,
    click_item: np.ndarray,
    valid: Validation,
    started: float,
    progress: Callable[[dict], None] | None,
) -> tuple[propensity_model.LearnedPropensity, dict]:
    """The logistic propensity model on frozen vectors of the simulator's towers fitted without IPS (see
    banditbench/simulator/propensity.py for the order), and its figures."""
    rng, generator = stream(settings.seed, ENCODER_STREAM)
    encoders, log = fit_click_model(
        data, settings, "none", None, click_impression, click_item, valid, rng, generator, started, progress, "encoders"
    )
    encoders.eval()
    with torch.no_grad():
        items = encoders.item_vectors(data.titles, data.topic)
        users = encoders.user_vectors(items, initial_histories(data, settings.history))
    rng, _ = stream(settings.seed, PROPENSITY_STREAM)
    learned, figures = propensity_model.fit_propensity(
        data,
        users.numpy(),
        items.numpy(),
        rng,
        settings.seed,
        settings.lr,
        epochs=settings.propensity_epochs,
        floor=settings.propensity_floor,
    )
    best_epoch = max(log, key=lambda r: (r["auc_mean_per_impression"], -r["epoch"]))["epoch"]
    return learned, {**figures, "encoder_epochs": log, "encoder_best_epoch": best_epoch}


def check_logged(name: str) -> None:
    """A registered dataset of logged impressions, the only data the simulator trains on."""
    logged = [d.name for d in DATASETS.values() if d.protocol == PROTOCOL]
    if name not in DATASETS:
        raise UserError(f"unknown dataset {name!r}; the simulator trains on {', '.join(logged)}")
    if name not in logged:
        raise UserError(
            f"dataset {name!r} is for the {DATASETS[name].protocol!r} protocol; the simulator trains on "
            f"logged impressions: {', '.join(logged)}"
        )


def train_simulator(
    data_dir: Path,
    name: str,
    settings: TrainSettings,
    force: bool = False,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Train, validate and save the simulator of prepared dataset ``name``; returns the saved metadata
    (plus ``histogram`` lines, not saved)."""
    settings.check()
    check_logged(name)
    dataset = load_dataset(data_dir, name)
    folder = simulator_folder(dataset.path)
    if folder.exists() and not force:
        raise UserError(f"{folder} already exists; pass --force to replace the simulator")
    data = load_logged(dataset)
    started, cpu_started = time.perf_counter(), time.process_time()
    torch.set_num_threads(settings.threads)
    rng = np.random.default_rng(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    imp = data.impressions

    click_impression, click_item = training_clicks(data)
    if len(click_impression) == 0:
        raise UserError(f"dataset {name!r} has no click in its training impressions")
    empirical = ips.EmpiricalPropensity(data, imp.train)
    valid = validation_set(data, settings.history)
    propensity, learned = empirical, None
    if settings.propensity == "learned":
        learned = learned_propensity(data, settings, click_impression, click_item, valid, started, progress)
        propensity = learned[0]
    model, history = fit_click_model(
        data,
        settings,
        settings.variant,
        propensity,
        click_impression,
        click_item,
        valid,
        rng,
        generator,
        started,
        progress,
    )
    probabilities = validation_probabilities(model, data, valid)
    metrics = click_metrics(valid.group, probabilities, valid.labels)
    metrics["propensity"] = propensity_metrics(data, settings, empirical, learned, click_impression, click_item)
    threshold, source = resolve_threshold(settings.threshold, name, metrics["f1_best"])
    metrics["at_threshold"] = at_threshold(probabilities, valid.labels, threshold, settings.strict)
    best_epoch = max(history, key=lambda r: (r["auc_mean_per_impression"], -r["epoch"]))["epoch"]
    metadata = {
        "dataset": name,
        "dataset_manifest_sha256": dataset.manifest_sha256,
        "banditbench_version": __version__,
        "settings": asdict(settings),
        "model": model.config,
        "threshold": threshold,
        "threshold_source": source,
        "flip": settings.flip,
        "strict": settings.strict,
        "user_history": settings.user_history,
        "training_rows": int(len(click_impression)),
        "training_impressions": int(imp.train.sum()),
        "validation_impressions": int(len(valid.impression)),
        "best_epoch": best_epoch,
        "epochs": history,
        "metrics": metrics,
        "timing": {
            "wall_seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        },
    }
    save(folder, model, metadata, force)
    return {**metadata, "histogram": text_histogram(probabilities, valid.labels)}


def save(folder: Path, model: TwoTower, metadata: dict, force: bool) -> None:
    """Write model.pt and simulator.json to a temporary sibling folder, then rename it into place."""
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError as e:
        raise UserError(f"cannot write to {folder.parent}: {e.strerror}") from None
    try:
        torch.save(model.state_dict(), staging / MODEL_FILE)
        (staging / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
        if folder.exists() and not force:
            raise UserError(f"{folder} already exists; pass --force to replace the simulator")
        swap_into_place(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
