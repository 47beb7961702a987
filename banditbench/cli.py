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
def list_registries() -> None:
    """Show the datasets, protocols and algorithms banditbench knows, with their papers."""
    from banditbench.algos import ALGORITHMS
    from banditbench.data import DATASETS
    from banditbench.envs import PROTOCOLS

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
    protocol: str = typer.Option("linear", "--protocol",
                                 help="linear, or cosine (reward cos(3⟨θ, x⟩), prepared as synthetic-cosine)."),
) -> None:
    """Clustered linear users with θ on the unit sphere (Ghosh et al. 2021; BASS). No download."""
    from banditbench.data import synthetic

    path = synthetic.prepare(data_dir, users=users, clusters=clusters, dim=dim, arms=arms, noise=noise, z=z,
                             seed=seed, force=force, protocol=protocol)
    console.print(f"[bold]{synthetic.dataset_name(protocol)}[/] is ready in {path}: {users} users in {clusters} clusters, d={dim}, K={arms}")


@app.command()
def run(
    dataset: str = typer.Option("synthetic", "--dataset", help="Prepared dataset to run on."),
    algos: str = typer.Option("random,linucb-one,linucb-ind,oracle", "--algos",
                              help="Comma-separated algorithm names (see `banditbench list`)."),
    rounds: int = typer.Option(10_000, "--rounds", help="Rounds T per unit."),
    seeds: int = typer.Option(5, "--seeds", help="Number of seeds S per algorithm."),
    seed: int = typer.Option(0, "--seed", help="Master seed; every unit's seed is spawned from it."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Arms a policy may score per round [default: unlimited]."),
    param: list[str] = typer.Option([], "--param", help="Hyper-parameter override ALGO.NAME=VALUE; repeatable."),
    out: Optional[Path] = typer.Option(None, "--out", help="Results folder [default: results/DATASET-TIMESTAMP]."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing results folder."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted run, skipping finished units."),
    device: Optional[str] = typer.Option(None, "--device",
                                         help="cpu, cuda or auto: sets `device` of every algorithm that has one."),
    data_dir: Path = DATA_DIR,
) -> None:
    """Run every (algorithm × seed) unit, write one Parquet shard per unit, print the regret table."""
    from banditbench.report.tables import load_experiment, regret_table
    from banditbench.runner.experiment import execute, plan, prepare_output

    experiment = plan(data_dir=data_dir, dataset=dataset, algorithms=[a.strip() for a in algos.split(",") if a.strip()],
                      rounds=rounds, seeds=seeds, master_seed=seed, budget=budget, params=param,
                      device=device)
    out = out or Path("results") / f"{dataset}-{datetime.now():%Y%m%d-%H%M%S}"
    target = prepare_output(out, experiment, overwrite=overwrite, resume=resume)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=len(experiment.units) * rounds)
        ran = execute(experiment, target, out,
                      on_unit_start=lambda unit: bar.update(task, description=unit.id),
                      progress=lambda n: bar.advance(task, n))
    results = load_experiment(out)
    console.print(f"ran {len(ran)} of {len(experiment.units)} units; results in {out}")
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
