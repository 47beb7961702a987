"""The ``banditbench`` command: parse, validate, call one function per command, print with rich."""

from __future__ import annotations

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

console = Console()
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
    data_dir: Path = DATA_DIR,
    force: bool = typer.Option(False, "--force", help="Replace an existing prepared dataset."),
) -> None:
    """Clustered linear users with θ on the unit sphere (Ghosh et al. 2021; BASS). No download."""
    from banditbench.data import synthetic

    path = synthetic.prepare(data_dir, users=users, clusters=clusters, dim=dim, arms=arms, noise=noise, z=z,
                             seed=seed, force=force)
    console.print(f"[bold]synthetic[/] is ready in {path}: {users} users in {clusters} clusters, d={dim}, K={arms}")


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
    budget: Optional[int] = typer.Option(None, "--budget", help="Arms a policy may score per round \\[default: unlimited]."),
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
    data_dir: Path = DATA_DIR,
) -> None:
    """Run every (algorithm × grid cell × seed) unit, write one Parquet shard per unit, print the regret table."""
    from banditbench.report.tables import load_experiment, regret_table
    from banditbench.runner.executors import make_executor
    from banditbench.runner.experiment import execute, plan, prepare_output
    from banditbench.runner.settings import resolve

    flags = {"dataset": dataset, "algos": algos, "rounds": rounds, "seeds": seeds, "tune-seeds": tune_seeds,
             "seed": seed, "budget": budget, "set": assignments, "out": None if out is None else str(out),
             "jobs": jobs, "backend": backend, "address": address, "gpus-per-unit": gpus_per_unit,
             "checkpoint-every": checkpoint_every}
    s = resolve(flags, config, preset)
    if s["checkpoint-every"] < 0:
        raise UserError(f"--checkpoint-every must be zero or positive, got {s['checkpoint-every']}")
    experiment = plan(data_dir=data_dir, dataset=s["dataset"], algorithms=s["algos"], rounds=s["rounds"],
                      seeds=s["seeds"], master_seed=s["seed"], budget=s["budget"], params=s["set"],
                      tune_seeds=s["tune-seeds"], protocol=s["protocol"])
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
    results = load_experiment(out)
    tuning = f" ({len(experiment.tuning_units)} on tuning seeds)" if experiment.tuning_units else ""
    console.print(f"ran {len(ran)} of {len(experiment.units) + len(experiment.tuning_units)} units{tuning}; "
                  f"results in {out}")
    print_regret_table(regret_table(results), results.config)


def print_regret_table(table, config) -> None:
    from banditbench.report.tables import format_mean_std

    view = Table(title=f"Final cumulative regret, T = {config['rounds']}, dataset {config['dataset']}",
                 title_justify="left")
    for column in ("algorithm", "seeds", "cumulative regret (mean ± std)", "mean reward", "rounds/s"):
        view.add_column(column, justify="left" if column == "algorithm" else "right")
    for row in table.itertuples():
        view.add_row(row.algorithm, str(row.seeds), format_mean_std(row.regret_mean, row.regret_std),
                     f"{row.mean_reward:.4f}", f"{row.rounds_per_second:,.0f}")
    console.print(view)


@app.command()
def report(
    folder: Optional[Path] = typer.Argument(None, help="Results folder [default: the newest under results/]."),
    formats: str = typer.Option("md,csv", "--format", help="Files to write: md (report.md), csv (report.csv, curves.csv)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where to write the files [default: the results folder]."),
) -> None:
    """Print the final-regret table (mean ± std over seeds) and write it with per-round curves."""
    from banditbench.report.tables import FORMATS, latest_experiment, load_experiment, regret_table, write_report

    chosen = [f.strip() for f in formats.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        raise UserError(f"unknown format {unknown[0]!r}; choose from: {', '.join(FORMATS)}")
    results = load_experiment(folder or latest_experiment(Path("results")))
    if results.missing:
        console.print(f"[yellow]warning:[/] {len(results.missing)} units not finished: {', '.join(results.missing)}")
    print_regret_table(regret_table(results), results.config)
    for path in write_report(results, out or results.folder, chosen):
        console.print(f"wrote {path}")


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
