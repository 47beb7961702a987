"""The ``banditbench`` command: parse, validate, call one function per command, print with rich."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from banditbench.errors import UserError

app = typer.Typer(
    name="banditbench",
    help="Reproducible benchmark for clustering-of-bandits and neural contextual bandits.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
prepare_app = typer.Typer(help="Build a prepared dataset (Parquet + manifest.json) under --data-dir.",
                          no_args_is_help=True)
app.add_typer(prepare_app, name="prepare")

# Not a terminal (CI logs, pipes): rich drops colour by itself; a wide fixed width keeps tables unwrapped.
console = Console(width=None if sys.stdout.isatty() else 160)
DATA_DIR = typer.Option(Path("datasets"), "--data-dir", envvar="BANDITBENCH_DATA_DIR",
                        help="Folder of prepared datasets.")


@app.command("list")
def list_registries(
    what: Optional[str] = typer.Argument(None, help="presets: the papers' experiments instead of the registries."),
) -> None:
    """Show the datasets, protocols and algorithms banditbench knows, with their papers (or the presets)."""
    from banditbench.algos import ALGORITHMS
    from banditbench.data import DATASETS
    from banditbench.envs import PROTOCOLS

    if what == "presets":
        print_presets()
        return
    if what is not None:
        raise UserError(f"unknown list {what!r}; `banditbench list` or `banditbench list presets`")
    for title, rows in (
        ("Datasets", [(d.name, d.description, d.paper, f"protocol: {d.protocol}") for d in DATASETS.values()]),
        ("Protocols", [(p.name, p.description, p.paper, "") for p in PROTOCOLS.values()]),
        ("Algorithms", [(a.name, a.description, a.paper, ", ".join(f"{k}={v}" for k, v in a.defaults().items()))
                        for a in ALGORITHMS.values()]),
    ):
        table = Table(title=title, title_justify="left")
        for column in ("name", "description", "paper", "defaults" if title == "Algorithms" else "notes"):
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)


def print_presets() -> None:
    from banditbench.presets import PRESETS, SHORT, missing_for

    table = Table(title="Presets (banditbench run --preset NAME)", title_justify="left")
    table.add_column("name", no_wrap=True)
    for column in ("reproduces", "runs", "not registered yet"):
        table.add_column(column, overflow="fold")
    for name, spec in PRESETS.items():
        tuning = f" + {spec['tune-seeds']} tuning" if spec["tune-seeds"] else ""
        table.add_row(name, f"{SHORT[spec['paper']]} {spec['reproduces']}",
                      f"{spec['dataset']}, T={spec['rounds']}, {spec['seeds']} seeds{tuning}",
                      "; ".join(missing_for(name)) or "[green]nothing: ready[/]")
    console.print(table)
    for paper, short in SHORT.items():
        console.print(f"{short}: {paper}", highlight=False)


@prepare_app.command("synthetic")
def prepare_synthetic(
    users: int = typer.Option(100, "--users", help="Number of users N."),
    clusters: int = typer.Option(5, "--clusters", help="Number of ground-truth clusters M."),
    dim: int = typer.Option(15, "--dim", help="Context dimension d (Ghosh et al.: 15)."),
    arms: int = typer.Option(25, "--arms", help="Arms K per round (Ghosh et al.: 25)."),
    noise: float = typer.Option(0.1, "--noise", help="Reward noise standard deviation σ."),
    z: float = typer.Option(0.0, "--z", help="Cluster sizes ∝ i^(−z); 0 gives balanced clusters."),
    seed: int = typer.Option(0, "--seed", help="Seed of the users and their parameters."),
    centres: str = typer.Option("sphere", "--centres",
                                help="Cluster centres: sphere (Ghosh et al.) or bass (e_m / cos ω e_{m-1} + sin ω e_m)."),
    omega: float = typer.Option(0.7853981633974483, "--omega", help="Angle ω of --centres bass (default π/4)."),
    protocol: str = typer.Option("linear", "--protocol",
                                 help="linear (one random user per round), synchronous (all users each step) or "
                                      "cosine (reward cos(3⟨θ, x⟩), prepared as synthetic-cosine)."),
    arm_set: str = typer.Option("fresh", "--arm-set",
                                help="fresh (K new contexts x ~ N(0, I/d) each round, Ghosh et al.) or fixed (BASS: "
                                     "the same K arms every round, K/M around each centre, x = θ_m + 0.5‖θ_m‖ξ)."),
    data_dir: Path = DATA_DIR,
    force: bool = typer.Option(False, "--force", help="Replace an existing prepared dataset."),
) -> None:
    """Clustered linear users with θ on the unit sphere (Ghosh et al. 2021; BASS). No download."""
    from banditbench.data import synthetic

    path = synthetic.prepare(data_dir, users=users, clusters=clusters, dim=dim, arms=arms, noise=noise, z=z,
                             seed=seed, force=force, centres=centres, omega=omega, protocol=protocol, arm_set=arm_set)
    console.print(f"[bold]{synthetic.dataset_name(protocol)}[/] is ready in {path}: "
                  f"{users} users in {clusters} clusters, d={dim}, K={arms} ({arm_set} arms)")


SOURCE = typer.Option(None, "--source", help="Local archive, folder or file (or a URL) to read instead of downloading.")
OFFLINE = typer.Option(False, "--offline", help="Never touch the network; say what is missing.")
FORCE = typer.Option(False, "--force", help="Replace an existing prepared dataset.")
CACHE = typer.Option(None, "--cache-dir", envvar="BANDITBENCH_CACHE",
                     help="Cache of raw downloads [default: ~/.cache/banditbench].")


def rating_options(top_users: int, top_items: int, positive_above: float, negative_below: Optional[float],
                   dim: int, groups: int, seed: int):
    from banditbench.data.ratings import RatingOptions

    return RatingOptions(top_users=top_users, top_items=top_items, positive_above=positive_above,
                         negative_below=negative_below, dim=dim, groups=groups, seed=seed)


TOP_USERS = typer.Option(10_000, "--top-users", help="Users kept by rating count (M-CNB 10000; Meta-Ban 2000).")
TOP_ITEMS = typer.Option(10_000, "--top-items", help="Items kept by rating count (both papers: 10000).")
POSITIVE_ABOVE = typer.Option(4.0, "--positive-above", help="A rating above this is a positive (reward 1).")
NEGATIVE_BELOW = typer.Option(None, "--negative-below",
                              help="Only ratings below this are negatives, the middle is dropped (authors' code: 2) "
                                   "[default: every other rating is a negative, as the papers say].")
DIM = typer.Option(10, "--dim", help="SVD feature dimension d of users and items.")
GROUPS = typer.Option(50, "--groups", help="K-means user groups (the bandit's users).")
KMEANS_SEED = typer.Option(0, "--seed", help="K-means random_state (the authors use 0).")
MODE = typer.Option("paper", "--mode", help="recommendation protocol: paper | metaban-code | mcnb-code.")
SERVE = typer.Option("groups", "--serve", help="Who a round serves: groups (K-means pre-clusters) | users.")


@prepare_app.command("movielens")
def prepare_movielens(
    variant: str = typer.Option("25m", "--variant", help="100k | 1m | 20m | 25m (the papers: ML-25M)."),
    top_users: int = TOP_USERS, top_items: int = TOP_ITEMS, positive_above: float = POSITIVE_ABOVE,
    negative_below: Optional[float] = NEGATIVE_BELOW, dim: int = DIM, groups: int = GROUPS, seed: int = KMEANS_SEED,
    mode: str = MODE, serve: str = SERVE,
    source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
    cache_dir: Optional[Path] = CACHE,
) -> None:
    """MovieLens ratings → top users × items, binary rewards, SVD features, K-means groups (M-CNB, Meta-Ban)."""
    from banditbench.data import movielens

    path = movielens.prepare(data_dir, variant=variant, mode=mode, serve=serve, source=source, offline=offline,
                             cache=cache_dir, force=force,
                             options=rating_options(top_users, top_items, positive_above, negative_below, dim,
                                                    groups, seed))
    report_prepared(path)


def prepare_classification(name: str, split: str, normalise: Optional[str], encoding: str, verify: bool,
                           source: Optional[str], data_dir: Path, offline: bool, force: bool,
                           cache_dir: Optional[Path]) -> None:
    from banditbench.data import classification

    report_prepared(classification.prepare(data_dir, name, split=split, normalise=normalise, encoding=encoding,
                                           verify=verify, source=source, offline=offline, cache=cache_dir,
                                           force=force))


def classification_command(name: str, default_normalise: str) -> None:
    """One `prepare NAME` command per classification family, all with the same options."""
    from banditbench.data.classification import FAMILIES

    def command(
        split: str = typer.Option("all", "--split", help="all | train | test (where the data has a split)."),
        normalise: str = typer.Option(default_normalise, "--normalise", help="meanstd (MNIST 0.1307/0.3081) | l2 "
                                      "(row unit norm, Bandit_multi) | none."),
        encoding: str = typer.Option("block", "--encoding", help="Arm contexts: block (d·K, M-CNB) | shift "
                                     "(d + K − 1, Meta-Ban's code)."),
        verify: bool = typer.Option(True, "--verify/--no-verify", help="Check the published checksums."),
        source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
        cache_dir: Optional[Path] = CACHE,
    ) -> None:
        prepare_classification(name, split, normalise, encoding, verify, source, data_dir, offline, force, cache_dir)

    command.__doc__ = f"{FAMILIES[name].description} → classification protocol (user = class)."
    prepare_app.command(name)(command)


for _name, _normalise in (("mnist", "meanstd"), ("fashion-mnist", "l2"), ("emnist-letters", "l2"),
                          ("notmnist", "l2"), ("shuttle", "l2"), ("letter", "l2"), ("pendigits", "l2"),
                          ("mushroom", "l2"), ("magic", "l2"), ("covertype", "l2")):
    classification_command(_name, _normalise)


@prepare_app.command("mnist-notmnist")
def prepare_mnist_notmnist(
    encoding: str = typer.Option("shift", "--encoding", help="shift (d + 9 = 793, Meta-Ban) | block (d·K)."),
    data_dir: Path = DATA_DIR, force: bool = FORCE,
) -> None:
    """MNIST + notMNIST mixture, 20 users in 2 groups (Meta-Ban); needs `prepare mnist` and `prepare notmnist`."""
    from banditbench.data import classification

    report_prepared(classification.prepare_mixture(data_dir, encoding=encoding, force=force))


@prepare_app.command("facebook")
def prepare_facebook(
    top_users: int = TOP_USERS, top_items: int = TOP_ITEMS, dim: int = DIM, groups: int = GROUPS,
    seed: int = KMEANS_SEED, serve: str = SERVE,
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Check the edge list's pinned sha256."),
    source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
    cache_dir: Optional[Path] = CACHE,
) -> None:
    """SNAP ego-Facebook: a link is a positive, non-links are negatives; SVD features, K-means groups (M-CNB)."""
    from banditbench.data import facebook

    report_prepared(facebook.prepare(data_dir, serve=serve, verify=verify, source=source, offline=offline,
                                     cache=cache_dir, force=force,
                                     options=rating_options(top_users, top_items, 0.0, None, dim, groups, seed)))


@prepare_app.command("lastfm")
def prepare_lastfm(
    pipeline: str = typer.Option("svd", "--pipeline", help="svd (rating-matrix pipeline, K = 10) | ghosh "
                                 "(tag tf-idf + PCA-25 artist contexts, real users, round-robin protocol, K = 25)."),
    guaranteed_positive: bool = typer.Option(False, "--guaranteed-positive", help="ghosh: one listened artist in "
                                             "every round (the paper's CLUB protocol) instead of 25 random ones."),
    top_users: int = TOP_USERS,
    top_items: int = typer.Option(20_000, "--top-items", help="Artists kept by listener count [default: all]."),
    dim: int = DIM, groups: int = GROUPS, seed: int = KMEANS_SEED,
    source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
    cache_dir: Optional[Path] = CACHE,
) -> None:
    """Last.fm HetRec 2011: a listen is a positive; SVD pipeline or Ghosh et al.'s tag tf-idf + PCA-25."""
    from banditbench.data import lastfm

    report_prepared(lastfm.prepare(data_dir, pipeline_name=pipeline, source=source, offline=offline, cache=cache_dir,
                                   force=force, guaranteed_positive=guaranteed_positive,
                                   options=rating_options(top_users, top_items, 0.0, None, dim, groups, seed)))


@prepare_app.command("yelp")
def prepare_yelp(
    top_users: int = TOP_USERS, top_items: int = TOP_ITEMS, positive_above: float = POSITIVE_ABOVE,
    negative_below: Optional[float] = NEGATIVE_BELOW, dim: int = DIM, groups: int = GROUPS, seed: int = KMEANS_SEED,
    mode: str = MODE, serve: str = SERVE,
    source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
    cache_dir: Optional[Path] = CACHE,
) -> None:
    """Yelp reviews (terms-gated: --source yelp_dataset.tar) → rating-matrix pipeline (M-CNB, Meta-Ban)."""
    from banditbench.data import yelp

    report_prepared(yelp.prepare(data_dir, mode=mode, serve=serve, source=source, offline=offline, cache=cache_dir,
                                 force=force, options=rating_options(top_users, top_items, positive_above,
                                                                     negative_below, dim, groups, seed)))


@prepare_app.command("authors-pools")
def prepare_authors_pools(
    source: Path = typer.Option(..., "--source", help="Folder with <name>_<U>users_<I>items_entry.npy and the "
                                                      "user / item feature arrays (a checkout of banyikun/MCNB)."),
    name: Optional[str] = typer.Option(None, "--name", help="Which dataset of the folder (yelp, movie…) if several."),
    mode: str = typer.Option("mcnb-code", "--mode", help="mcnb-code (100 groups, [item, rater] contexts) | "
                                                          "metaban-code (50 groups, item contexts) | paper."),
    groups: Optional[int] = typer.Option(None, "--groups", help="K-means user groups [default: 100 for mcnb-code, "
                                                                 "50 otherwise, as the authors' loaders]."),
    seed: int = KMEANS_SEED, data_dir: Path = DATA_DIR, force: bool = FORCE,
) -> None:
    """The authors' preprocessed arm pools → the recommendation protocol in their code mode (parity checks)."""
    from banditbench.data import authors

    report_prepared(authors.prepare(data_dir, source=source, name=name, mode=mode, groups=groups, seed=seed,
                                    force=force))


@prepare_app.command("amazon")
def prepare_amazon(
    version: str = typer.Option("2018", "--version", help="Release: 2014 | 2018 | 2023."),
    category: str = typer.Option("AMAZON_FASHION", "--category",
                                 help="Category file, e.g. AMAZON_FASHION (M-CNB's 883,636 ratings), Video_Games."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Check the pinned sha256 (2018 files)."),
    top_users: int = TOP_USERS, top_items: int = TOP_ITEMS, positive_above: float = POSITIVE_ABOVE,
    negative_below: Optional[float] = NEGATIVE_BELOW, dim: int = DIM, groups: int = GROUPS, seed: int = KMEANS_SEED,
    mode: str = MODE, serve: str = SERVE,
    source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
    cache_dir: Optional[Path] = CACHE,
) -> None:
    """Amazon ratings-only file of one release and category → rating-matrix pipeline (M-CNB)."""
    from banditbench.data import amazon

    report_prepared(amazon.prepare(data_dir, version=version, category=category, verify=verify, mode=mode,
                                   serve=serve, source=source, offline=offline, cache=cache_dir, force=force,
                                   options=rating_options(top_users, top_items, positive_above, negative_below, dim,
                                                          groups, seed)))


@prepare_app.command("mind")
def prepare_mind(
    variant: str = typer.Option("small", "--variant", help="small | large (train + dev)."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Check the pinned sha256 of MINDsmall files."),
    source: Optional[str] = typer.Option(None, "--source", help="Folder with MIND{small,large}_{train,dev} zips "
                                         "or their unpacked folders."),
    data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE, cache_dir: Optional[Path] = CACHE,
) -> None:
    """MIND news + impression logs for the IPS-simulator protocol (two-stage paper, seed 004)."""
    from banditbench.data import logged

    report_prepared(logged.prepare_mind(data_dir, variant=variant, verify=verify, source=source, offline=offline,
                                        cache=cache_dir, force=force))


@prepare_app.command("movielens-logged")
def prepare_movielens_logged(
    variant: str = typer.Option("20m", "--variant", help="MovieLens release (the paper: 20m)."),
    history_until: str = typer.Option("2010-01-01", "--history-until", help="History positives before this date."),
    test_from: str = typer.Option("2014-06-01", "--test-from", help="Train before, test from this date."),
    negatives: int = typer.Option(20, "--negatives", help="Negatives shown with each positive."),
    valid_fraction: float = typer.Option(0.2, "--valid-fraction", help="Share of test impressions marked valid."),
    seed: int = typer.Option(2021, "--seed", help="Seed of the negative and validation draws."),
    source: Optional[str] = SOURCE, data_dir: Path = DATA_DIR, offline: bool = OFFLINE, force: bool = FORCE,
    cache_dir: Optional[Path] = CACHE,
) -> None:
    """MovieLens in MIND's logged form (rating ≥ 4 positive, first genre as topic, time split; seed 004)."""
    from banditbench.data import logged

    report_prepared(logged.prepare_movielens_logged(
        data_dir, variant=variant, history_until=history_until, test_from=test_from, negatives=negatives,
        valid_fraction=valid_fraction, seed=seed, source=source, offline=offline, cache=cache_dir, force=force))


def report_prepared(path: Path) -> None:
    import json

    counts = json.loads((path / "manifest.json").read_text()).get("counts", {})
    console.print(f"[bold]{path.name}[/] is ready in {path}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))


simulator_app = typer.Typer(help="The IPS-trained user-choice simulator of seed 004 (logged datasets).",
                             no_args_is_help=True)
app.add_typer(simulator_app, name="simulator")


@simulator_app.command("train")
def simulator_train(
    dataset: str = typer.Argument(..., help="A prepared logged dataset: mind or movielens-logged."),
    variant: str = typer.Option("empirical", "--variant", help="Loss weighting: empirical (IPS 1/p(u,i), p = "
                                "n(u,i)/n(u), self-normalised per row; the paper) | empirical-unnormalised | none."),
    epochs: int = typer.Option(5, "--epochs", help="Epochs cap (early stopping on validation AUC)."),
    patience: int = typer.Option(1, "--patience", help="Epochs without a better validation AUC before stopping."),
    threshold: str = typer.Option("paper", "--threshold", help="Click threshold THRES: paper (0.384 MIND, 0.855 "
                                  "MovieLens-20M) | f1 (this model's F1-maximising one) | a number."),
    flip: float = typer.Option(0.1, "--flip", help="Probability that each simulated reward is flipped."),
    strict: bool = typer.Option(False, "--strict/--non-strict", help="Click if p > THRES (the authors' code) "
                                "instead of p ≥ THRES (the paper)."),
    user_history: str = typer.Option("true", "--user-history", help="The simulated user: true (logged history) | "
                                     "true+clicks (plus simulated clicks) | empty (the authors' code: one user)."),
    dim: int = typer.Option(128, "--dim", help="Item and user vector size."),
    lr: float = typer.Option(1e-3, "--lr", help="Adam learning rate."),
    batch: int = typer.Option(256, "--batch", help="Training rows per Adam step."),
    word_pooling: str = typer.Option("mean", "--word-pooling", help="Title words pooled by mean (bag of words) or "
                                     "attention (additive, as NRMS; slower)."),
    threads: int = typer.Option(1, "--threads", help="torch threads (results are reproducible for a fixed count)."),
    seed: int = typer.Option(0, "--seed", help="Seed of initialisation, negatives, batch order and dropout."),
    data_dir: Path = DATA_DIR,
    force: bool = typer.Option(False, "--force", help="Replace an existing simulator."),
) -> None:
    """Train the click model with the IPS-weighted logistic loss, print held-out metrics, save it next to the data."""
    from banditbench.simulator.metrics import QUANTILES
    from banditbench.simulator.train import TrainSettings, train_simulator

    settings = TrainSettings(variant=variant, epochs=epochs, patience=patience, lr=lr, batch=batch, dim=dim,
                             word_pooling=word_pooling,
                             threshold=threshold, flip=flip, strict=strict, user_history=user_history, seed=seed,
                             threads=threads)

    def progress(r: dict) -> None:
        console.print(f"epoch {r['epoch']}: train loss {r['train_loss']:.4f}, validation AUC per impression "
                      f"{r['auc_mean_per_impression']:.4f}, global {r['auc_global']:.4f}, log-loss "
                      f"{r['log_loss']:.4f} ({r['seconds']:.0f} s)", highlight=False)

    done = train_simulator(data_dir, dataset, settings, force=force, progress=progress)
    m = done["metrics"]
    console.print(f"best epoch {done['best_epoch']}: AUC per impression {m['auc_mean_per_impression']:.4f} "
                  f"({m['impressions_with_auc']} impressions), global AUC {m['auc_global']:.4f}, log-loss "
                  f"{m['log_loss']:.4f}, {m['candidates']} candidates, positive rate {m['positive_rate']:.4f}",
                  highlight=False)
    quantiles = "/".join(f"{q:.0%}" for q in QUANTILES)
    for label in ("positive", "negative"):
        console.print(f"{label} probabilities, quantiles {quantiles}: "
                      + ", ".join(f"{q:.3f}" for q in m[f"{label}_quantiles"]), highlight=False)
    for line in done["histogram"]:
        console.print(line, highlight=False)
    if m["f1_best"]:
        f = m["f1_best"]
        console.print(f"F1-maximising threshold {f['threshold']:.5f}: precision {f['precision']:.3f}, recall "
                      f"{f['recall']:.3f}, F1 {f['f1']:.3f}", highlight=False)
    t = m["at_threshold"]
    console.print(f"THRES {done['threshold']:.5f} ({done['threshold_source']}, {'>' if done['strict'] else '≥'}): "
                  f"{t['predicted_click_rate']:.1%} of validation candidates are clicks (precision "
                  f"{t['precision']:.3f}, recall {t['recall']:.3f}); flip {done['flip']}, user history "
                  f"{done['user_history']}", highlight=False)
    console.print(f"saved the simulator in {Path(data_dir) / dataset / 'simulator'} ("
                  f"{done['timing']['wall_seconds']:.0f} s wall, {done['timing']['cpu_seconds']:.0f} s CPU)",
                  highlight=False)


@app.command()
def run(
    config: Optional[Path] = typer.Option(None, "--config", help="Experiment file (TOML, the flags' names as keys); "
                                          "flags given here override it."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A paper's experiment (see `banditbench list presets`)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Prepared dataset to run on \\[default: synthetic]."),
    algos: Optional[str] = typer.Option(None, "--algos", help="Comma-separated algorithm names (see `banditbench list`) "
                                        "\\[default: random,linucb-one,linucb-ind,oracle]."),
    rounds: Optional[int] = typer.Option(None, "--rounds", help="Rounds T per unit \\[default: 10000]."),
    seeds: Optional[int] = typer.Option(None, "--seeds", help="Reported seeds S per algorithm \\[default: 5]."),
    tune_seeds: Optional[int] = typer.Option(None, "--tune-seeds", help="Tuning seeds, disjoint from the reported "
                                             "ones, that pick the best cell of each grid; 0 reports every cell "
                                             "\\[default: 0]."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Master seed; every unit's seed is spawned from it \\[default: 0]."),
    budget: Optional[str] = typer.Option(None, "--budget", help="Arms a policy may score per round, or none "
                                         "\\[default: unlimited, or the preset's]."),
    env: list[str] = typer.Option([], "--env", help="Protocol setting NAME=VALUE, e.g. twostage's users=100, "
                                  "slate_size=5; repeatable."),
    assignments: list[str] = typer.Option([], "--set", "--param", help="Hyper-parameter ALGO.NAME=VALUE, or a grid "
                                          "ALGO.NAME=V1,V2,…; repeatable."),
    out: Optional[Path] = typer.Option(None, "--out", help="Results folder \\[default: results/DATASET-TIMESTAMP]."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing results folder."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted run, skipping finished units."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="Units run in parallel \\[default: the number of cores]."),
    backend: Optional[str] = typer.Option(None, "--backend", help="local (process pool) or ray \\[default: local]."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster to join \\[default: start a local Ray]."),
    gpus_per_unit: Optional[float] = typer.Option(None, "--gpus-per-unit", help="GPUs each Ray task asks for \\[default: 0]."),
    checkpoint_every: Optional[int] = typer.Option(None, "--checkpoint-every", help="Save each unit's state every N "
                                                   "rounds, so --resume continues it \\[default: 0, never]."),
    device: Optional[str] = typer.Option(None, "--device",
                                         help="cpu, cuda or auto: sets `device` of every algorithm that has one."),
    data_dir: Path = DATA_DIR,
) -> None:
    """Run every (algorithm × grid cell × seed) unit, write one Parquet shard per unit, print the regret table."""
    from banditbench.runner.executors import make_executor
    from banditbench.runner.experiment import execute, plan, prepare_output
    from banditbench.runner.settings import resolve

    flags = {"dataset": dataset, "algos": algos, "rounds": rounds, "seeds": seeds, "tune-seeds": tune_seeds,
             "seed": seed, "budget": parse_budget(budget), "set": assignments, "env": env,
             "out": None if out is None else str(out),
             "jobs": jobs, "backend": backend, "address": address, "gpus-per-unit": gpus_per_unit,
             "checkpoint-every": checkpoint_every}
    s = resolve(flags, config, preset)
    if s["checkpoint-every"] < 0:
        raise UserError(f"--checkpoint-every must be zero or positive, got {s['checkpoint-every']}")
    experiment = plan(data_dir=data_dir, dataset=s["dataset"], algorithms=s["algos"], rounds=s["rounds"],
                      seeds=s["seeds"], master_seed=s["seed"], budget=s["budget"], params=s["set"],
                      tune_seeds=s["tune-seeds"], protocol=s["protocol"], device=device, env=s["env"])
    executor = make_executor(s["backend"], s["jobs"], s["address"], s["gpus-per-unit"])
    out = Path(s["out"]) if s["out"] else Path("results") / f"{s['dataset']}-{datetime.now():%Y%m%d-%H%M%S}"
    target = prepare_output(out, experiment, overwrite=overwrite, resume=resume)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=0)  # rounds of all units still to run; a tuned grid adds its phase 2
        ran = execute(experiment, target, out, executor=executor, checkpoint_every=s["checkpoint-every"],
                      settings={**s, "config": None if config is None else str(config)},
                      on_plan=lambda units: bar.update(task, total=bar.tasks[0].total + sum(u.rounds for u in units)),
                      on_unit_start=lambda unit: bar.update(task, description=unit.id),
                      progress=lambda n: bar.advance(task, n))
    tuning = f" ({len(experiment.tuning_units)} on tuning seeds)" if experiment.tuning_units else ""
    console.print(f"ran {len(ran)} of {len(experiment.units) + len(experiment.tuning_units)} units{tuning}; "
                  f"results in {out}")
    from banditbench.report.formats import to_rich
    from banditbench.report.tables import build_report, load_results

    report = build_report(load_results([out]))
    for table in to_rich(report)[:1]:  # the regret table; `banditbench report` shows the rest
        console.print(table)


def parse_budget(text: Optional[str]) -> int | str | None:
    """``--budget 5000`` → 5000; ``--budget none`` stays "none", so that it overrides a preset's budget."""
    if text is None or text.strip().lower() == "none":
        return text
    try:
        return int(text)
    except ValueError:
        raise UserError(f"--budget must be an integer or none, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


@app.command()
def report(
    folders: Optional[list[Path]] = typer.Argument(
        None, help="Results folders, e.g. one per dataset [default: the newest under results/]."),
    formats: str = typer.Option("md,csv", "--format",
                                help="Files to write, comma-separated: md, csv, latex, html (one self-contained "
                                     "file with the plots), png, svg (plots); 'none' writes nothing."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where to write the files [default: the results folder; "
                                                           "with several, their common parent]."),
    check: Optional[Path] = typer.Option(None, "--check", help="Exit 1 when an algorithm's final regret got worse "
                                                               "(or CTR lower) than in this baseline JSON."),
    tolerance: str = typer.Option("5%", "--tolerance", help="Allowed relative change for --check, e.g. 5% or 0.05."),
    save_baseline: Optional[Path] = typer.Option(None, "--save-baseline", help="Write a baseline JSON for --check."),
    allow_mixed: bool = typer.Option(False, "--allow-mixed",
                                     help="Aggregate shards run with different settings or dataset versions."),
    test: str = typer.Option("t", "--test", help="Paired test deciding ties and wins: t or wilcoxon."),
    baselines: str = typer.Option("", "--baselines", help="Algorithms to treat as baselines (overrides the registry)."),
    proposed: str = typer.Option("", "--proposed", help="Algorithms to treat as proposed methods."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only problems and --check failures."),
) -> None:
    """Tables with confidence intervals and paired tests, plots, and a CI check over one or more results folders."""
    from banditbench.report import check as gate
    from banditbench.report.formats import to_rich, write_files
    from banditbench.report.stats import TESTS
    from banditbench.report.tables import FORMATS, build_report, latest_experiment, load_results

    chosen = [] if formats.strip() == "none" else _names(formats)
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        raise UserError(f"unknown format {unknown[0]!r}; choose from: {', '.join(FORMATS)}")
    if test not in TESTS:
        raise UserError(f"--test must be one of: {', '.join(TESTS)}; got {test!r}")
    allowed = gate.parse_tolerance(tolerance)
    saved = gate.load_baseline(check) if check is not None else None  # a bad baseline fails before any output
    folders = folders or [latest_experiment(Path("results"))]
    results = load_results(folders, allow_mixed=allow_mixed)
    roles = {**{name: "baseline" for name in _names(baselines)}, **{name: "proposed" for name in _names(proposed)}}
    report_ = build_report(results, roles=roles, test=test)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    for exp in results.experiments:
        if exp.missing:
            errors.print(f"warning: {exp.folder}: {len(exp.missing)} units not finished: {', '.join(exp.missing)}")
    for warning in results.warnings:
        errors.print(f"warning: {warning}")
    if not quiet:
        for table in to_rich(report_):
            console.print(table)
    target = out or (folders[0] if len(folders) == 1 else Path(os.path.commonpath([p.resolve() for p in folders])))
    for path in write_files(report_, Path(target), chosen) if chosen else []:
        if not quiet:
            console.print(f"wrote {path}", highlight=False)
    failed = False
    if check is not None:
        outcome = gate.check(report_, saved, allowed)
        for line in outcome.failures:
            console.print(f"REGRESSION {line}", highlight=False, soft_wrap=True)
        if not quiet:
            for line in outcome.notes:
                console.print(f"ok {line}", highlight=False, soft_wrap=True)
            if not outcome.failures:
                console.print(f"check passed against {check}", highlight=False)
        failed = bool(outcome.failures)
    if save_baseline is not None:
        path = gate.save_baseline(report_, save_baseline)
        if not quiet:
            console.print(f"wrote baseline {path}", highlight=False)
    for problem in results.problems:
        errors.print(f"error: {problem}")
    if results.problems:
        sys.exit(2)
    if failed:
        sys.exit(1)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        app(standalone_mode=False)
    except UserError as e:
        Console(stderr=True).print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Abort:
        sys.exit(130)
    except Exception as e:
        # Usage errors of typer's (vendored or not) click: duck-typed, as their class moved between releases.
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):
            raise
        Console(stderr=True).print(f"[red]error:[/] {e.format_message()}", highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
