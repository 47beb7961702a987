"""The ``banditbench`` command: parse, validate, call one function per command, print with rich."""

from __future__ import annotations

import errno
import inspect
import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from banditbench import names
from banditbench.errors import Interrupted, SettingError, UserError

app = typer.Typer(
    name="banditbench",
    help="Reproducible benchmark for clustering-of-bandits and neural contextual bandits.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
prepare_app = typer.Typer(
    help="Build a prepared dataset (Parquet + manifest.json) under --data-dir.", no_args_is_help=True
)
app.add_typer(prepare_app, name="prepare")


def show_version(value: bool) -> None:
    if value:
        from banditbench.version import __version__

        typer.echo(f"banditbench {__version__}")
        raise typer.Exit()


@app.callback()
def banditbench(
    version: bool = typer.Option(
        False, "--version", callback=show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Reproducible benchmark for clustering-of-bandits and neural contextual bandits."""


# Not a terminal (CI logs, pipes): rich drops colour by itself; a wide fixed width keeps tables unwrapped.
console = Console(width=None if sys.stdout.isatty() else 160)
DATA_DIR = typer.Option(
    Path("datasets"), "--data-dir", envvar="BANDITBENCH_DATA_DIR", help="Folder of prepared datasets."
)


LISTS = ("algorithms", "datasets", "presets", "protocols", "suites")


@app.command("list")
def list_registries(
    what: str | None = typer.Argument(
        None,
        help="algorithms, datasets, presets (the papers' experiments), protocols or suites (run --suite) "
        "\\[default: all five].",
    ),
    wide: bool = typer.Option(False, "--wide", help="Full tables: defaults, options, files read, what is missing."),
    as_json: bool = typer.Option(False, "--json", help="Every field of every entry as JSON, for scripts."),
) -> None:
    """Show the algorithms, datasets, presets, protocols and suites banditbench knows, one line each with its paper."""
    kinds = LISTS if what is None else (names.pick("list", what, LISTS),)
    if as_json:
        listed = {kind: catalog(kind, defaults=True) for kind in kinds}
        typer.echo(json.dumps(listed if what is None else listed[kinds[0]], indent=2, default=str))
        return
    out = list_console()
    for kind in kinds:
        if wide:
            WIDE_TABLES[kind](out)
        else:
            print_compact(out, kind, catalog(kind))


def list_console() -> Console:
    """The terminal's width (or $COLUMNS); 160 columns when neither says, e.g. into a pipe."""
    columns = os.environ.get("COLUMNS", "")
    return Console(width=None if sys.stdout.isatty() or columns.isdigit() else 160, highlight=False)


def catalog(kind: str, defaults: bool = False) -> list[dict]:
    """Every entry of one registry as plain values: what ``list --json`` prints and the compact lines show.
    ``defaults``: add the algorithms' hyper-parameters, which imports every policy class (torch among them)."""
    from banditbench.algos import ALGORITHMS, plugins
    from banditbench.data import DATASETS
    from banditbench.envs import PROTOCOLS
    from banditbench.presets import PRESETS, SHORT, missing_for

    if kind == "algorithms":
        plugins.discover()  # installed through the entry-point group banditbench.algorithms
        return [
            {
                "name": a.name,
                "description": a.description,
                "paper": a.paper,
                "role": a.role,
                "needs": list(a.needs()),
                "plugin": plugins.ORIGINS.get(a.name),
                **({"defaults": {k: p.default for k, p in a.parameters().items()}} if defaults else {}),
            }
            for a in ALGORITHMS.values()
        ]
    if kind == "datasets":
        return [
            {
                "name": d.name,
                "description": d.description,
                "paper": d.paper,
                "protocol": d.protocol,
                "reads": d.files,
                "options": {o.flag: o.default for o in d.options},
            }
            for d in DATASETS.values()
        ]
    if kind == "protocols":
        return [{"name": p.name, "description": p.description, "paper": p.paper} for p in PROTOCOLS.values()]
    if kind == "suites":
        from banditbench.suites import BUILT_IN

        suites = [make() for make in BUILT_IN.values()]
        return [
            {
                "name": s.name,
                "description": f"{s.description} ({len(s.members)} datasets)",
                "datasets": s.datasets,
                "tune_on": list(s.tune_on),
            }
            for s in suites
        ]
    return [
        {
            "name": name,
            "description": f"{spec['reproduces']}: {spec['dataset']}, T={spec['rounds']}, {spec['seeds']} seeds",
            "paper": SHORT[spec["paper"]],
            "dataset": spec["dataset"],
            "rounds": spec["rounds"],
            "seeds": spec["seeds"],
            "tune_seeds": spec["tune-seeds"],
            "missing": missing_for(name),
        }
        for name, spec in PRESETS.items()
    ]


def print_compact(out: Console, kind: str, entries: list[dict]) -> None:
    """One entry a line, its name never wrapped and its text wrapped at whole words under itself."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")  # only a single word wider than the column itself is folded
    for entry in entries:
        cited = kind in ("algorithms", "presets") and entry["paper"] not in ("", "baseline")
        paper = f" ({short_citation(entry['paper'])})" if cited else ""
        notes = "".join(
            f"; {note}" for note in (entry.get("plugin"), entry.get("missing") and "not runnable yet") if note
        )
        table.add_row(entry["name"], escape(f"{entry['description']}{paper}{notes}"))
    out.print(f"[bold]{kind.capitalize()}[/] (banditbench list {kind} --wide for details)")
    out.print(table)
    out.print()


AUTHORS = re.compile(r"([A-Z][\w'-]+)((?:, [A-Z][\w'-]+)*)(?: & ([A-Z][\w'-]+))?( et al\.)?[ ,]")


def short_citation(paper: str) -> str:
    """ "Gentile, Li & Zappella, ICML 2014" → "Gentile et al. 2014"; "Ban & He, NeurIPS 2021" → "Ban & He 2021";
    a reference in another form is cut after its first year."""
    year = re.search(r"\b(?:19|20)\d\d\b", paper)
    if year is None:
        return paper
    authors = AUTHORS.match(paper)
    if authors is None or not (any(authors.groups()[1:]) or authors[0].endswith(",")):  # not an author list
        return paper[: year.end()]
    first, middle, last, et_al = authors.groups()
    if middle or et_al:
        return f"{first} et al. {year[0]}"
    return f"{first}{f' & {last}' if last else ''} {year[0]}"


def print_algorithms(out: Console) -> None:
    from banditbench.algos import ALGORITHMS, plugins

    def defaults(spec) -> str:
        return ", ".join(
            f"{k}={p.default}" + (f": {p.domain.short()}" if p.domain else "") for k, p in spec.parameters().items()
        )

    found = plugins.discover()  # installed through the entry-point group banditbench.algorithms
    table = Table(title="Algorithms", title_justify="left")
    table.add_column("name", no_wrap=True)
    for column in ("description", "paper", "defaults", *(["plugin from"] if found else [])):
        table.add_column(column, overflow="fold")
    for a in ALGORITHMS.values():
        if a.name not in plugins.ORIGINS:
            needs = f"{a.description} (capabilities: {', '.join(a.needs())})"
            table.add_row(a.name, needs, a.paper, defaults(a), *([""] if found else []))
    for name, origin in found:
        spec = ALGORITHMS.get(name)
        table.add_row(name, *((spec.description, spec.paper, defaults(spec)) if spec else ("", "", "")), origin)
    out.print(table)


def print_protocols(out: Console) -> None:
    from banditbench.envs import PROTOCOLS

    table = Table(title="Protocols", title_justify="left")
    table.add_column("name", no_wrap=True)
    for column in ("description", "paper"):
        table.add_column(column, overflow="fold")
    for p in PROTOCOLS.values():
        table.add_row(p.name, p.description, p.paper)
    out.print(table)


def print_datasets(out: Console) -> None:
    from banditbench.data import DATASETS

    table = Table(
        title="Datasets (banditbench prepare NAME; every one that reads files also takes --source, "
        "--offline, --no-verify, --cache-dir, --data-dir, --force)",
        title_justify="left",
    )
    table.add_column("name", no_wrap=True)
    for column in ("protocol", "reads", "options (default, domain)"):
        table.add_column(column, overflow="fold")
    for d in DATASETS.values():
        options = "; ".join(f"{o.flag} {o.default} ({o.domain()})" for o in d.options)
        command = "" if d.prepare is not None else " (no prepare command of its own)"
        table.add_row(d.name, d.protocol, (d.files or "") + command, options)
    out.print(table)


def print_presets(out: Console) -> None:
    from banditbench.presets import PRESETS, SHORT, missing_for

    table = Table(title="Presets (banditbench run --preset NAME)", title_justify="left")
    table.add_column("name", no_wrap=True)
    for column in ("reproduces", "runs", "not registered yet"):
        table.add_column(column, overflow="fold")
    for name, spec in PRESETS.items():
        tuning = f" + {spec['tune-seeds']} tuning" if spec["tune-seeds"] else ""
        table.add_row(
            name,
            f"{SHORT[spec['paper']]} {spec['reproduces']}",
            f"{spec['dataset']}, T={spec['rounds']}, {spec['seeds']} seeds{tuning}",
            "; ".join(missing_for(name)) or "[green]nothing: ready[/]",
        )
    out.print(table)
    for paper, short in SHORT.items():
        out.print(f"{short}: {paper}", highlight=False)


def print_suites(out: Console) -> None:
    table = Table(title="Suites (banditbench run --suite NAME, or a suite file)", title_justify="left")
    table.add_column("name", no_wrap=True)
    for column in ("description", "datasets"):
        table.add_column(column, overflow="fold")
    for entry in catalog("suites"):
        table.add_row(entry["name"], entry["description"], ", ".join(entry["datasets"]))
    out.print(table)


WIDE_TABLES = {
    "algorithms": print_algorithms,
    "datasets": print_datasets,
    "presets": print_presets,
    "protocols": print_protocols,
    "suites": print_suites,
}


SOURCE = typer.Option(None, "--source", help="Local archive, folder or file (or a URL) to read instead of downloading.")
OFFLINE = typer.Option(False, "--offline", help="Never touch the network; say what is missing.")
FORCE = typer.Option(False, "--force", help="Replace an existing prepared dataset.")
VERIFY = typer.Option(
    True,
    "--verify/--no-verify",
    help="Check the published checksums or row counts; --no-verify "
    "accepts a different release at your own risk (the dataset is marked unverified).",
)
CACHE = typer.Option(
    None, "--cache-dir", envvar="BANDITBENCH_CACHE", help="Cache of raw downloads \\[default: ~/.cache/banditbench]."
)
MAX_EXTRACT = typer.Option(
    None,
    "--max-extract-gb",
    help="Largest archive member to unpack, in GB \\[default: 100 times its compressed size, at least 0.064 and "
    "at most 20]; raise it for a genuine archive that is refused.",
)
COMMON = {
    "source": (Optional[str], SOURCE),
    "offline": (bool, OFFLINE),
    "verify": (bool, VERIFY),
    "cache_dir": (Optional[Path], CACHE),
    "max_extract_gb": (Optional[float], MAX_EXTRACT),
}


def option_parameter(option) -> inspect.Parameter:
    """A declared dataset option as a typer parameter (bools are on/off flags, the rest typed values)."""
    help_text = option.help
    if option.choices and " | ".join(map(str, option.choices)) not in option.help:
        help_text += f" [{option.domain()}]"
    help_text = help_text.replace("[", "\\[")  # rich would read [default: …] as markup
    if option.type is bool:
        flag = option.flag if not option.default else f"{option.flag}/--no-{option.flag[2:]}"
        return inspect.Parameter(
            option.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=bool,
            default=typer.Option(option.default, flag, help=help_text),
        )
    kind = Optional[option.type] if option.default is None else option.type
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=kind,
        default=typer.Option(option.default, option.flag, help=help_text),
    )


def prepare_command(dataset) -> None:
    """`banditbench prepare NAME`, generated from the dataset's declaration (data/registry.py)."""

    def command(**values) -> None:
        from banditbench.api import prepare

        data_dir, force = values.pop("data_dir"), values.pop("force")
        report_prepared(prepare(dataset.name, data_dir=data_dir, force=force, **values))

    parameters = [option_parameter(o) for o in dataset.options]
    if dataset.reads_raw:
        parameters += [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
            for name, (kind, default) in COMMON.items()
        ]
    parameters += [
        inspect.Parameter("data_dir", inspect.Parameter.KEYWORD_ONLY, annotation=Path, default=DATA_DIR),
        inspect.Parameter("force", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=FORCE),
    ]
    command.__signature__ = inspect.Signature(parameters)
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    files = f" Reads: {dataset.files}." if dataset.files else ""
    command.__doc__ = f"{dataset.description} ({dataset.paper}).{files}"
    prepare_app.command(dataset.name)(command)


def add_prepare_commands() -> None:
    from banditbench.data import DATASETS

    for dataset in DATASETS.values():
        if dataset.prepare is not None:
            prepare_command(dataset)


add_prepare_commands()


def report_prepared(path: Path) -> None:
    import json

    manifest = json.loads((path / "manifest.json").read_text())
    counts = manifest.get("counts") or {}
    summary = ", ".join(f"{v} {k}" for k, v in counts.items()) or ", ".join(
        f"{k}={v}" for k, v in manifest.get("parameters", {}).items()
    )  # generated data: its parameters
    sanity = manifest.get("sanity", {})
    for pools in ("groups", "users"):  # how many pools of the recommendation protocol can serve a round
        if f"servable_{pools}" in sanity:
            summary += f"; {sanity[f'servable_{pools}']} of the {sanity[pools]} {pools} can serve a round"
    console.print(f"[bold]{path.name}[/] is ready in {path}: {summary}", highlight=False)
    recognised = manifest.get("parameters", {}).get("recognised", {})
    if recognised:
        read = ", ".join(
            f"{role} from column {recognised[role]!r}" for role in ("user", "item", "reward") if role in recognised
        )
        console.print(f"read {read} (--user, --item, --reward name others)", highlight=False)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    for warning in manifest.get("warnings", []):
        errors.print(f"warning: {path.name}: {warning}")


@app.command()
def info(
    dataset: str = typer.Argument(..., help="A prepared dataset (its folder name under --data-dir)."),
    data_dir: Path = DATA_DIR,
) -> None:
    """Show a prepared dataset's sanity report: rows read / kept / dropped, users, items, positives per user,
    references resolved, arms per pool, verification and warnings."""
    from banditbench.api import user_path
    from banditbench.data import check_plain_name, load_dataset

    check_plain_name(dataset)
    data_dir = user_path(data_dir)
    manifest = load_dataset(data_dir, dataset).manifest
    sanity = dict(manifest.get("sanity", {}))
    table = Table(
        title=f"{dataset} ({manifest['protocol']} protocol) in {data_dir / dataset}",
        title_justify="left",
        show_header=False,
    )
    table.add_column("what", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_row("verification", manifest.get("verification", "not recorded (prepared by an older banditbench)"))
    rows = sanity.pop("rows", None)
    if rows:
        table.add_row("rows", f"{rows['read']:,} read, {rows['kept']:,} kept")
        for reason, n in rows["dropped"].items():
            table.add_row("", f"{n:,} dropped: {reason}")
    from banditbench.data.sanity import QUANTILES

    for key, value in sanity.items():
        if isinstance(value, dict):  # quantiles, in their order (the manifest sorts keys)
            value = ", ".join(f"{k} {value[k]:g}" for k in QUANTILES if k in value)
        elif isinstance(value, float):
            value = f"{value:.1%}" if key.startswith("resolved") or key.endswith("_share") else f"{value:g}"
        table.add_row(key.replace("_", " "), str(value))
    table.add_row("parameters", ", ".join(f"{k}={v}" for k, v in manifest.get("parameters", {}).items()))
    for record in manifest.get("raw_files", []):
        table.add_row("raw file", f"{record['origin']} ({record['bytes']:,} B, sha256 {record['sha256'][:16]}…)")
    console.print(table)
    for warning in manifest.get("warnings", []):
        console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if not manifest.get("warnings"):
        console.print("no warnings", highlight=False)


simulator_app = typer.Typer(
    help="The IPS-trained user-choice simulator of Zhang et al. 2022 (logged datasets).", no_args_is_help=True
)
app.add_typer(simulator_app, name="simulator")


@simulator_app.command("train")
def simulator_train(
    dataset: str = typer.Argument(..., help="A prepared logged dataset: mind or movielens-logged."),
    variant: str = typer.Option(
        "empirical",
        "--variant",
        help="Loss weighting: empirical (IPS 1/p(u,i), p = "
        "n(u,i)/n(u), self-normalised per row; the paper) | empirical-unnormalised | none.",
    ),
    propensity: str = typer.Option(
        "empirical",
        "--propensity",
        help="p(u,i) of the IPS weights: empirical (n(u,i)/n(u)) | learned (the authors' logistic model of "
        "display on frozen vectors of the towers first trained without IPS).",
    ),
    propensity_epochs: int = typer.Option(
        10, "--propensity-epochs", help="Epochs of the learned propensity model (one sample per user each)."
    ),
    epochs: int = typer.Option(5, "--epochs", help="Epochs cap (early stopping on validation AUC)."),
    patience: int = typer.Option(1, "--patience", help="Epochs without a better validation AUC before stopping."),
    threshold: str = typer.Option(
        "paper",
        "--threshold",
        help="Click threshold THRES: paper (0.384 MIND, 0.855 "
        "MovieLens-20M) | f1 (this model's F1-maximising one) | a number.",
    ),
    flip: float = typer.Option(0.1, "--flip", help="Probability that each simulated reward is flipped."),
    strict: bool = typer.Option(
        False, "--strict/--non-strict", help="Click if p > THRES (the authors' code) instead of p ≥ THRES (the paper)."
    ),
    user_history: str = typer.Option(
        "true",
        "--user-history",
        help="The simulated user: true (logged history) | "
        "true+clicks (plus simulated clicks) | empty (the authors' code: one user).",
    ),
    dim: int = typer.Option(128, "--dim", help="Item and user vector size."),
    lr: float = typer.Option(1e-3, "--lr", help="Adam learning rate."),
    batch: int = typer.Option(256, "--batch", help="Training rows per Adam step."),
    word_pooling: str = typer.Option(
        "mean",
        "--word-pooling",
        help="Title words pooled by mean (bag of words) or attention (additive, as NRMS; slower).",
    ),
    threads: int = typer.Option(1, "--threads", help="torch threads (results are reproducible for a fixed count)."),
    seed: int = typer.Option(0, "--seed", help="Seed of initialisation, negatives, batch order and dropout."),
    data_dir: Path = DATA_DIR,
    force: bool = typer.Option(False, "--force", help="Replace an existing simulator."),
) -> None:
    """Train the click model with the IPS-weighted logistic loss, print held-out metrics, save it next to the data."""
    from banditbench.simulator.train import TrainSettings, train_simulator

    settings = TrainSettings(
        variant=variant,
        propensity=propensity,
        propensity_epochs=propensity_epochs,
        epochs=epochs,
        patience=patience,
        lr=lr,
        batch=batch,
        dim=dim,
        word_pooling=word_pooling,
        threshold=threshold,
        flip=flip,
        strict=strict,
        user_history=user_history,
        seed=seed,
        threads=threads,
    )

    done = train_simulator(data_dir, dataset, settings, force=force, progress=print_epoch)
    print_trained(done, settings)
    console.print(
        f"saved the simulator in {Path(data_dir) / dataset / 'simulator'} ("
        f"{done['timing']['wall_seconds']:.0f} s wall, {done['timing']['cpu_seconds']:.0f} s CPU)",
        highlight=False,
    )


def print_epoch(r: dict) -> None:
    """One line per training epoch of the simulator (the propensity model's towers say so)."""
    console.print(
        ("towers without IPS, for the propensity model: " if r.get("stage") == "encoders" else "")
        + f"epoch {r['epoch']}: train loss {r['train_loss']:.4f}, validation AUC per impression "
        f"{r['auc_mean_per_impression']:.4f}, global {r['auc_global']:.4f}, log-loss "
        f"{r['log_loss']:.4f} ({r['seconds']:.0f} s)",
        highlight=False,
    )


def print_trained(done: dict, settings) -> None:
    """The trained simulator's held-out metrics: AUC, probability quantiles, threshold, propensities."""
    from banditbench.simulator.metrics import QUANTILES

    m = done["metrics"]
    console.print(
        f"best epoch {done['best_epoch']}: AUC per impression {m['auc_mean_per_impression']:.4f} "
        f"({m['impressions_with_auc']} impressions), global AUC {m['auc_global']:.4f}, log-loss "
        f"{m['log_loss']:.4f}, {m['candidates']} candidates, positive rate {m['positive_rate']:.4f}",
        highlight=False,
    )
    quantiles = "/".join(f"{q:.0%}" for q in QUANTILES)
    for label in ("positive", "negative"):
        console.print(
            f"{label} probabilities, quantiles {quantiles}: " + ", ".join(f"{q:.3f}" for q in m[f"{label}_quantiles"]),
            highlight=False,
        )
    for line in done["histogram"]:
        console.print(line, highlight=False)
    if m["f1_best"]:
        f = m["f1_best"]
        console.print(
            f"F1-maximising threshold {f['threshold']:.5f}: precision {f['precision']:.3f}, recall "
            f"{f['recall']:.3f}, F1 {f['f1']:.3f}",
            highlight=False,
        )
    t = m["at_threshold"]
    console.print(
        f"THRES {done['threshold']:.5f} ({done['threshold_source']}, {'>' if done['strict'] else '≥'}): "
        f"{t['predicted_click_rate']:.1%} of validation candidates are clicks (precision "
        f"{t['precision']:.3f}, recall {t['recall']:.3f}); flip {done['flip']}, user history "
        f"{done['user_history']}",
        highlight=False,
    )
    p = m["propensity"]
    for kind, summary in p["summaries"].items():
        console.print(
            f"{kind} propensity{' (used)' if kind == p['used'] else ''}: mean {summary['mean']:.3f}, {quantiles} "
            + ", ".join(f"{q:.3f}" for q in summary["quantiles"])
            + f"; ESS of the IPS weights {summary['ess']:.0f}/{summary['weights']} ({summary['ess_share']:.1%}),"
            f" {summary['ess_per_row_mean']:.2f}/{settings.npratio + 1} per row",
            highlight=False,
        )
    if "learned_model" in p:
        lm = p["learned_model"]
        console.print(
            f"learned propensity model: held-out AUC {lm['heldout_auc']:.4f} (displayed vs not, "
            f"{lm['heldout_users']} validation users), floor {lm['floor']}",
            highlight=False,
        )


@app.command()
def run(
    config: Path | None = typer.Option(
        None, "--config", help="Experiment file (TOML, the flags' names as keys); flags given here override it."
    ),
    preset: str | None = typer.Option(None, "--preset", help="A paper's experiment (see `banditbench list presets`)."),
    suite: str | None = typer.Option(
        None,
        "--suite",
        help="Run on every dataset of a suite: papers, uci, showdown, openml-cc18, or a suite file (TOML).",
    ),
    tune_on: str | None = typer.Option(
        None, "--tune-on", help="With --suite: members that choose each algorithm's grid cell, then not reported."
    ),
    dataset: str | None = typer.Option(
        None,
        "--dataset",
        help="Prepared dataset to run on \\[default: synthetic; with no --algos either, the default benchmark's "
        "synthetic and synthetic-cosine].",
    ),
    algos: str | None = typer.Option(
        None,
        "--algos",
        help="Comma-separated algorithm names (see `banditbench list`) "
        "\\[default: random,linucb-one,linucb-ind,oracle; with no --dataset either, the default benchmark's].",
    ),
    rounds: int | None = typer.Option(
        None, "--rounds", help="Rounds T per unit \\[default: 10000; the default benchmark's 5000 and 2000]."
    ),
    seeds: int | None = typer.Option(None, "--seeds", help="Reported seeds S per algorithm \\[default: 5]."),
    tune_seeds: int | None = typer.Option(
        None,
        "--tune-seeds",
        help="Tuning seeds, disjoint from the reported "
        "ones, that pick the best cell of each grid; 0 reports every cell "
        "\\[default: 0].",
    ),
    tune_rounds: int | None = typer.Option(
        None,
        "--tune-rounds",
        help="Rounds of each tuning unit, to tune on the first rounds as Ghosh et al. (2021) did; 0 tunes on the "
        "whole horizon \\[default: 0, or the preset's].",
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Master seed; every unit's seed is spawned from it \\[default: 0]."
    ),
    budget: str | None = typer.Option(
        None, "--budget", help="Arms a policy may score per round, or none \\[default: unlimited, or the preset's]."
    ),
    env: list[str] = typer.Option(
        [], "--env", help="Protocol setting NAME=VALUE, e.g. twostage's users=100, slate_size=5; repeatable."
    ),
    assignments: list[str] = typer.Option(
        [], "--set", "--param", help="Hyper-parameter ALGO.NAME=VALUE, or a grid ALGO.NAME=V1,V2,…; repeatable."
    ),
    out: Path | None = typer.Option(None, "--out", help="Results folder \\[default: results/DATASET-TIMESTAMP]."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing results folder."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted run, skipping finished units."),
    jobs: int | None = typer.Option(None, "--jobs", help="Units run in parallel \\[default: the number of cores]."),
    backend: str | None = typer.Option(None, "--backend", help="local (process pool) or ray \\[default: local]."),
    address: str | None = typer.Option(None, "--address", help="Ray cluster to join \\[default: start a local Ray]."),
    gpus_per_unit: float | None = typer.Option(
        None, "--gpus-per-unit", help="GPUs each Ray task asks for \\[default: 0]."
    ),
    checkpoint_every: int | None = typer.Option(
        None,
        "--checkpoint-every",
        help="Save each unit's state every N rounds, so --resume continues it \\[default: 0, never].",
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda or auto: sets `device` of every algorithm that has one."
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="units: every unit alone; lockstep: the seeds of algorithms that batch them run together, faster, "
        r"equal to units up to rounding \[default: units].",
    ),
    allow_stand_in: bool = typer.Option(
        False,
        "--allow-stand-in",
        help="Run a preset on data prepared otherwise than it declares; the report calls every verdict a stand-in.",
    ),
    prepare: bool = typer.Option(
        False, "--prepare", help="First prepare the data the preset declares (or the dataset), where it is missing."
    ),
    source: str | None = typer.Option(
        None, "--source", help="With --prepare: a local archive, folder or file of the raw data to read."
    ),
    data_dir: Path = DATA_DIR,
) -> None:
    """Run every (algorithm × grid cell × seed) unit, write one Parquet shard per unit, print the regret table.
    \f
    Over 80 lines only by its options, one typer declaration per flag: the run itself is the API's
    ``run_experiment`` (or the default benchmark's, or the suite's), and this body only shows its progress."""
    from banditbench.api import (
        Hooks,
        default_results_folder,
        is_default_benchmark,
        run_default_benchmark,
        run_experiment,
    )
    from banditbench.report.formats import to_rich
    from banditbench.runner.settings import RunSettings

    flags = RunSettings(
        dataset=dataset,
        algos=algos,
        rounds=rounds,
        seeds=seeds,
        tune_seeds=tune_seeds,
        tune_rounds=tune_rounds,
        seed=seed,
        budget=parse_budget(budget),
        params=assignments,
        env=env,
        out=None if out is None else str(out),
        jobs=jobs,
        backend=backend,
        address=address,
        gpus_per_unit=gpus_per_unit,
        checkpoint_every=checkpoint_every,
        engine=engine,
        allow_stand_in=allow_stand_in or None,
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=0)  # rounds of all units still to run; a tuned grid adds its phase 2
        hooks = Hooks(
            on_plan=lambda units: bar.update(task, total=bar.tasks[0].total + sum(u.rounds for u in units)),
            on_unit_start=lambda unit: bar.update(task, description=unit.id),
            progress=lambda n: bar.advance(task, n),
            warn=lambda line: Console(stderr=True, highlight=False).print(f"warning: {line}"),
            on_prepared=report_prepared,
        )
        common = dict(data_dir=data_dir, overwrite=overwrite, resume=resume, device=device, hooks=hooks)
        common |= dict(default_out=default_results_folder, prepare_data=prepare)
        if suite is not None:
            results, parts, where = run_suite_command(suite, tune_on, flags, config, preset, common)
        elif tune_on is not None:
            raise UserError("--tune-on goes with --suite: it names members of the suite")
        elif is_default_benchmark(flags, config, preset):
            results, parts = run_default_benchmark(flags, **common)
            where = results.folder.parent
        else:
            results, ran, experiment = run_experiment(flags, config=config, preset=preset, source=source, **common)
            parts, where = [(ran, experiment)], results.folder
    for ran, experiment in parts:
        tuning = f" ({len(experiment.tuning_units)} on tuning seeds)" if experiment.tuning_units else ""
        console.print(
            f"{experiment.config['dataset']}: ran {len(ran)} of {len(experiment.units) + len(experiment.tuning_units)} "
            f"units{tuning}"
        )
    console.print(f"results in {where}")
    first = {}  # the regret table of each dataset, its first; `banditbench report` shows the rest
    for table in to_rich(results.tables):
        first.setdefault(str(table.title).split(":")[0], table)
    for dataset in results.tables.results.datasets:
        console.print(first[dataset])


def run_suite_command(suite: str, tune_on: str | None, flags, config, preset, common: dict):
    """``run --suite``: every member as its own experiment under the suite's folder."""
    from banditbench.api import run_suite

    results, parts, chosen, missing = run_suite(suite, flags, tune_on=tune_on, config=config, preset=preset, **common)
    if missing:
        console.print(f"suite {chosen.name}: {len(parts)} member(s) run; not prepared, skipped: {', '.join(missing)}")
    return results, parts, results.folder.parent


def interrupted(stop: Interrupted) -> str:
    """The line a Ctrl-C prints: how far the run got and the command that finishes it."""
    from banditbench.results.shards import shard_path

    units, out = stop.units, stop.out
    if not (Path(out) / "manifest.json").is_file():  # stopped before the run had a folder: nothing to resume
        return "interrupted: no unit finished and nothing was written; run the command again"
    if stop.staged:
        return (
            f"interrupted: nothing replaced, the old results in {out} are kept; run the command again to replace them"
        )
    done = stop.done if stop.done is not None else sum(shard_path(out, u).exists() for u in units)
    args = [a for a in sys.argv[1:] if a not in ("--overwrite", "--resume")]
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out)]
    return f"interrupted: {done} of {len(units)} units done; resume with: banditbench {shlex.join(args)} --resume"


def parse_budget(text: str | None) -> int | str | None:
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
    folders: list[Path] | None = typer.Argument(
        None, help="Results folders, e.g. one per dataset \\[default: the newest under results/]."
    ),
    formats: str = typer.Option(
        "md,csv",
        "--format",
        help="Files to write, comma-separated: md, csv, latex, html (one self-contained "
        "file with the plots), png, svg, pdf (plots); 'none' writes nothing.",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Where to write the files \\[default: the results folder; with several, their common parent].",
    ),
    check: Path | None = typer.Option(
        None,
        "--check",
        help="Exit 1 when an algorithm's final regret got worse (or CTR lower) than in this baseline JSON.",
    ),
    tolerance: str = typer.Option("5%", "--tolerance", help="Allowed relative change for --check, e.g. 5% or 0.05."),
    save_baseline: Path | None = typer.Option(None, "--save-baseline", help="Write a baseline JSON for --check."),
    allow_mixed: bool = typer.Option(
        False, "--allow-mixed", help="Aggregate shards run with different settings or dataset versions."
    ),
    test: str = typer.Option("t", "--test", help="Paired test deciding ties and wins: t or wilcoxon."),
    baselines: str = typer.Option("", "--baselines", help="Algorithms to treat as baselines (overrides the registry)."),
    proposed: str = typer.Option("", "--proposed", help="Algorithms to treat as proposed methods."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only problems and --check failures."),
    plot_algos: str = typer.Option("", "--plot-algos", help="Algorithms the regret plot draws \\[default: all]."),
    band: str = typer.Option(
        "ci", "--band", help="Regret plot band: ci (mean, 95 % bootstrap), iqr (median, quartiles) or none."
    ),
    log_x: bool = typer.Option(False, "--log-x", help="Rounds on a log axis in the regret plot."),
    style: str = typer.Option("paper", "--style", help="Plot style: paper (a column wide) or slides (large type)."),
    panels: str = typer.Option(
        "dataset", "--panels", help="Regret plot panels: one per dataset, or per dataset and algorithm family."
    ),
) -> None:
    """Tables with confidence intervals and paired tests, plots, and a CI check over one or more results folders."""
    from banditbench.api import user_path
    from banditbench.report.formats import to_rich
    from banditbench.report.make import BrokenResults, ReportOptions, make_report
    from banditbench.report.plot_options import PlotOptions

    out, check, save_baseline = (None if path is None else user_path(path) for path in (out, check, save_baseline))
    options = ReportOptions(
        formats=() if formats.strip() == "none" else tuple(_names(formats)),
        out=out,
        check=check,
        tolerance=tolerance,
        save_baseline=save_baseline,
        allow_mixed=allow_mixed,
        test=test,
        baselines=tuple(_names(baselines)),
        proposed=tuple(_names(proposed)),
        plot=PlotOptions(tuple(_names(plot_algos)) or None, band, log_x, style, panels),
    )
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        made = make_report([user_path(folder) for folder in folders or []], options)
    except BrokenResults as broken:  # every shard is verified before any file is written
        for problem in broken.problems:
            errors.print(f"error: {problem}")
        raise UserError(
            f"{len(broken.problems)} broken result file(s); run `banditbench run --out FOLDER --resume` "
            "with the run's settings to run their units again; nothing was written"
        ) from None
    for warning in made.warnings:
        errors.print(f"warning: {warning}")
    if not quiet:
        for table in to_rich(made.report):
            console.print(table)
        for path in made.written:
            console.print(f"wrote {path}", highlight=False)
    print_gate(made, check, quiet)
    if made.outcome is not None and made.outcome.failures:
        sys.exit(1)


def print_gate(made, check: Path | None, quiet: bool) -> None:
    """The CI gate's lines: every regression, and unless ``quiet`` what passed and the baseline saved."""
    if made.outcome is not None:
        for line in made.outcome.failures:
            console.print(f"REGRESSION {line}", highlight=False, soft_wrap=True)
        if not quiet:
            for line in made.outcome.notes:
                console.print(f"ok {line}", highlight=False, soft_wrap=True)
            if not made.outcome.failures:
                console.print(f"check passed against {check}", highlight=False)
    if made.baseline is not None and not quiet:
        console.print(f"wrote baseline {made.baseline}", highlight=False)


@app.command()
def board(
    sources: list[Path] = typer.Argument(..., help="Results folders: suites, preset runs or experiments."),
    out: Path = typer.Option(Path("board"), "--out", help="The site's folder (replaced whole if it is a board)."),
    test: str = typer.Option("t", "--test", help="Paired test deciding ties and wins: t or wilcoxon."),
) -> None:
    """A static HTML results board: one page per folder, with tables, plots, verdicts and every cell's provenance."""
    from banditbench.api import user_path
    from banditbench.report.board import write_board
    from banditbench.report.stats import TESTS
    from banditbench.results.shards import disk_full

    if test not in TESTS:
        raise UserError(f"--test must be one of: {', '.join(TESTS)}; got {test!r}")
    out = user_path(out)
    try:
        pages = write_board([user_path(s) for s in sources], out, test)
    except OSError as e:
        raise disk_full(e, out) or UserError(f"cannot write the board to {out}: {e.strerror}") from None
    for page in pages:
        console.print(f"wrote {page}", highlight=False)
    console.print(f"open {out / 'index.html'}", highlight=False)


CLAIMS_FORMATS = ("text", "md", "json")


@app.command()
def claims(
    sources: list[Path] | None = typer.Argument(
        None, help="Results folders run with a preset, or evidence files (.json); none: the inventory alone."
    ),
    fmt: str = typer.Option("text", "--format", help="text (80 columns), md (the docs' scorecard) or json."),
    as_json: bool = typer.Option(False, "--json", help="The same as --format json."),
    test: str = typer.Option("t", "--test", help="Paired test of the stated comparisons: t or wilcoxon."),
    out: Path | None = typer.Option(None, "--out", help="Write the scorecard to this file instead of printing it."),
    into: Path | None = typer.Option(
        None, "--into", help="Write the scorecard between the claims markers of this file (a docs page)."
    ),
    save_evidence: Path | None = typer.Option(
        None, "--save-evidence", help="Also write the runs' per-unit values here, for later `claims` commands."
    ),
) -> None:
    """Every table and figure of the five papers: covered by a preset and judged by the runs given, or why not."""
    from banditbench.api import claims as scorecard_of
    from banditbench.report.scorecard import embed, evidence
    from banditbench.results.shards import replace_atomically

    fmt = "json" if as_json else fmt
    if fmt not in CLAIMS_FORMATS:
        raise UserError(f"--format must be one of: {', '.join(CLAIMS_FORMATS)}; got {fmt!r}")
    if into is not None and not into.is_file():
        raise UserError(f"--into {into}: no such file")
    for flag, path in (("--out", out), ("--save-evidence", save_evidence)):
        if path is not None and not path.parent.is_dir():
            raise UserError(f"{flag} {path}: folder {path.parent} does not exist")
    card = scorecard_of(*(sources or []), test=test)
    text = {"text": card.to_text, "md": card.to_markdown, "json": card.to_json}[fmt]()
    writes = [(save_evidence, evidence(card.runs))] if save_evidence is not None else []
    if into is not None:
        writes.append((into, embed(into.read_text(encoding="utf-8"), text, str(into))))  # markers checked here
    if out is not None:
        writes.append((out, text))
    for path, content in writes:  # every text is complete before the first file is replaced
        replace_atomically(path, lambda partial, content=content: partial.write_text(content, encoding="utf-8"))
        console.print(f"wrote {path}", highlight=False)
    if into is None and out is None:
        print(text, end="")


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        code = app(standalone_mode=False)
    except UserError as e:
        message = e.naming(flag) if isinstance(e, SettingError) else str(e)
        Console(stderr=True).print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except Interrupted as e:
        Console(stderr=True).print(interrupted(e), highlight=False, soft_wrap=True)
        sys.exit(130)
    except typer.Abort:  # a Ctrl-C that typer caught outside a run's units
        Console(stderr=True).print("interrupted", highlight=False)
        sys.exit(130)
    except SystemExit as e:
        if not closed_pipe(e):
            raise
        # The reader of our output went away (`banditbench report | head -1`): end quietly, as a tool killed by
        # SIGPIPE would, with nothing more written to the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(128 + 13)
    except Exception as e:
        # Usage errors of typer's (vendored or not) click: duck-typed, as their class moved between releases.
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):
            raise
        Console(stderr=True).print(f"[red]error:[/] {e.format_message()}", highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
    if code == 130:  # typer turns a Ctrl-C outside a run's units into this code, instead of exiting
        Console(stderr=True).print("interrupted", highlight=False)
    if isinstance(code, int) and code:
        sys.exit(code)


def flag(setting: str) -> str:
    """The flag of a run setting (``tune_seeds`` → ``--tune-seeds``), as error lines name it."""
    from banditbench.runner.settings import setting_key

    return f"--{setting_key(setting)}"


def entry() -> None:
    """The process's entry point (the `banditbench` script, `python -m banditbench`): `main`, then an exit that
    a Ctrl-C can neither turn into a traceback nor into a silent death by signal."""
    try:
        main()
    except KeyboardInterrupt:  # landed after the command's own handling, e.g. as typer returns from it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        # While the interpreter shuts down, Python restores SIGINT's default action, so a Ctrl-C landing then
        # killed a finished run without a word. Ignored from here on (a disposition Python keeps), it cannot.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        forget_interrupted_exec()


def forget_interrupted_exec() -> None:
    """CPython marks a KeyboardInterrupt that left an exec or eval of a string (dataclasses and namedtuple build
    their methods so) as unhandled, even once caught, and then ends the process by SIGINT whatever exit code was
    asked for: a Ctrl-C handled as exit 130 read as a death by signal. Each exec of a string clears the mark."""
    exec("")


def closed_pipe(exit: SystemExit) -> bool:
    """Whether typer is exiting because stdout's pipe was closed (it does so with code 1, from an EPIPE)."""
    cause = exit.__context__
    return isinstance(cause, OSError) and cause.errno == errno.EPIPE
