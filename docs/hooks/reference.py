"""An mkdocs hook that writes the reference pages from the code at every build, so they cannot drift from it.

Pages (none committed): ``reference/cli.md``, every command and option of the typer app; one card per registered
algorithm under ``reference/algorithms/``, per dataset under ``reference/datasets/`` and per preset under
``reference/presets/``; one page per public Python module under ``reference/python/``, which mkdocstrings fills
from the docstrings. Each kind has an index page, and its pages join the navigation under it.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import click
import typer
from mkdocs.structure.files import File

import banditbench
from banditbench.algos import ALGORITHMS
from banditbench.cli import app
from banditbench.data import DATASETS
from banditbench.presets import INVENTORY, PRESETS, covering

#: Modules a plug-in imports beside ``banditbench.__all__``: the policy contract, the hyper-parameters' domains and the
#: error a user is shown.
EXTENSION_MODULES = ("banditbench.algos.base", "banditbench.algos.domains", "banditbench.errors")


def api_members() -> dict[str, list[str]]:
    """The public modules, each with the names its page documents: the names of ``banditbench.__all__`` under the
    module that defines them, then every public class and function of the modules a plug-in imports."""
    found: dict[str, list[str]] = {}
    for name in banditbench.__all__:
        module = getattr(getattr(banditbench, name), "__module__", None)  # None: a value, such as __version__
        if module:
            found.setdefault(module, []).append(name)
    for module_name in EXTENSION_MODULES:
        defined = vars(importlib.import_module(module_name)).items()
        found[module_name] = [
            name
            for name, value in defined
            if not name.startswith("_")
            and (inspect.isclass(value) or inspect.isfunction(value))
            and value.__module__ == module_name
        ]
    return found


API = api_members()
REGISTRIES = {"algorithms": ALGORITHMS, "datasets": DATASETS, "presets": PRESETS, "python": API}


def plain(text: object) -> str:
    """Text from a declaration or a help string, safe in Markdown and in a table: ``<variant>`` is not a tag."""
    return str(text).replace("<", "&lt;").replace("|", "\\|").replace("\n", " ")


def cell(value: object) -> str:
    """A value as a Markdown table cell: code-formatted, pipes escaped, never empty."""
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if text else "–"


def first_paragraph(text: str | None) -> str:
    return inspect.cleandoc(text or "").split("\n\n")[0].replace("\n", " ")


# ------------------------------------------------------------------------------------------------ the CLI


def command_section(command: click.Command, path: str) -> list[str]:
    """A heading per command (its help and a table of its arguments and options), then its subcommands'."""
    level = "#" * min(path.count(" ") + 2, 4)
    lines = [f"{level} `{path}`", "", plain(inspect.cleandoc(command.help or "")), ""]
    params = [param for param in command.params if not getattr(param, "hidden", False)]
    if params:
        lines += ["| argument or option | default | help |", "|---|---|---|"]
        for param in params:
            names = ", ".join(f"`{name}`" for name in (*param.opts, *param.secondary_opts))
            empty = param.default is None or isinstance(param.default, (tuple, list)) and not param.default
            default = "required" if param.required else "–" if empty else cell(param.default)
            lines.append(f"| {names} | {default} | {plain(getattr(param, 'help', '') or '')} |")
        lines.append("")
    for name, sub in getattr(command, "commands", {}).items():
        lines += command_section(sub, f"{path} {name}")
    return lines


def cli_page() -> str:
    root = typer.main.get_command(app)
    intro = ["# Command line", "", "Every command and option of `banditbench`, read from the program itself.", ""]
    return "\n".join(intro + command_section(root, "banditbench"))


# ----------------------------------------------------------------------------------------- algorithm cards


#: Card section → the section of docs/parity.md whose tables give an algorithm's rows, and what it says without.
PARITY = {
    "Parity with the authors' code": ("Parity table", "No parity check."),
    "Speed beside the authors' code": ("Speed on the same instance", "No speed measurement beside the authors' code."),
}


def algorithm_key(name: str) -> str:
    """A name's letters and digits, so that a table's ``M-CNB`` or ``NeuUCB-ONE`` finds ``mcnb`` or ``neuucb-one``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def section_rows(text: str, heading: str) -> dict[str, list[list[str]]]:
    """The tables under ``## heading`` cut down, for each algorithm named in a first cell (before a parenthesis or a
    comma), to their header, separator and that algorithm's rows."""
    text = "\n" + text  # a heading on the first line too
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0] if f"\n## {heading}\n" in text else ""
    found: dict[str, list[list[str]]] = {}
    header: list[str] = []
    for previous, line in zip(["", *section.splitlines()], section.splitlines()):
        if not line.startswith("|"):
            continue
        if not previous.startswith("|"):
            header = [line]
        elif len(header) == 1:
            header.append(line)
        else:
            first_cell = line.strip("| ").split("|")[0]
            tables = found.setdefault(algorithm_key(re.split(r" \(|,", first_cell)[0]), [])
            if not tables or tables[-1][:2] != header:
                tables.append(list(header))
            tables[-1].append(line)
    return found


def parity_sections(name: str, parity: str) -> list[str]:
    """The card's sections of parity and speed: the algorithm's rows of docs/parity.md, or that it has none."""
    lines = []
    for title, (heading, absent) in PARITY.items():
        tables = section_rows(parity, heading).get(algorithm_key(name), [])
        lines += ["", f"## {title}", ""]
        for table in tables:
            lines += [*table, ""]
        anchor = re.sub(r"[^a-z0-9]+", "-", heading.lower())
        lines.append(f"From [Parity with the authors' code](../../parity.md#{anchor})." if tables else absent)
    return lines


def switches_table(spec) -> list[str]:
    """The hyper-parameters whose values select the authors' code over the paper's default, as the class declares."""
    switches = spec.authors_code()
    if not switches:
        return ["None: the paper's behaviour is the only one."]
    defaults = spec.defaults()
    lines = ["| switch | paper (default) | authors' code | what it changes |", "|---|---|---|---|"]
    for key, (value, what) in switches.items():
        lines.append(f"| `{key}` | {cell(defaults[key])} | {cell(value)} | {plain(what)} |")
    return lines


def algorithm_card(name: str, parity: str) -> str:
    """One algorithm's card: its declaration, its class's description, and its rows of docs/parity.md."""
    spec = ALGORITHMS[name]
    lines = [f"# {name}", "", plain(spec.description) + ".", "", f"**Paper:** {spec.paper}. **Role:** {spec.role}.", ""]
    # the class's own docstring, else its module's (a module that holds one policy describes it there)
    about = first_paragraph(vars(spec.policy).get("__doc__")) or first_paragraph(inspect.getmodule(spec.policy).__doc__)
    lines += [about, "", "## Hyper-parameters", ""]
    parameters = spec.parameters()
    if parameters:
        lines += ["| name | default | domain |", "|---|---|---|"]
        for key, parameter in parameters.items():
            domain = parameter.domain.describe() if parameter.domain else "cast to the default's type"
            lines.append(f"| `{key}` | {cell(parameter.default)} | {domain} |")
    else:
        lines.append("None: the name fixes everything.")
    if spec.fixed:
        lines += ["", "Fixed by the name: " + ", ".join(f"`{k}={v}`" for k, v in spec.fixed.items()) + "."]
    lines += ["", "## Switches to the authors' code", "", *switches_table(spec)]
    lines += ["", "## Capabilities", "", "| capability | declared |", "|---|---|"]
    lines += [
        f"| {key.replace('_', ' ')} | {'yes' if value else 'no'} |" for key, value in vars(spec.capabilities).items()
    ]
    lines += parity_sections(name, parity)
    presets = [f"[{preset}](../presets/{preset}.md)" for preset, spec in PRESETS.items() if name in spec["algos"]]
    lines += ["", "## Presets that run it", "", ", ".join(presets) + "." if presets else "None."]
    lines += ["", f"On a prepared dataset of its protocol: `banditbench run --algos {name} --dataset DATASET`.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- dataset cards


def sources(dataset) -> list[str]:
    """The raw files the registry declares for the options' defaults: URLs and the checksums they must match."""
    if dataset.raw is None:
        return ["Reads no raw file: " + plain(dataset.files or "built from nothing") + "."]
    defaults = {option.name: option.default for option in dataset.options}
    wanted = inspect.signature(dataset.raw).parameters
    raw = dataset.raw(**{key: defaults[key] for key in wanted if key in defaults})
    lines = [f"Gated: {raw.gated}", ""] if raw.gated else []
    lines += ["| file | URL | checksums |", "|---|---|---|"]
    for download in raw.downloads:
        checks = ", ".join(f"`{h}`" for h in download.hashes()) or "none published (the sha256 read is recorded)"
        lines.append(f"| `{download.fname}` | <{download.url}> | {checks} |")
    return lines


def dataset_card(name: str) -> str:
    dataset = DATASETS[name]
    protocols = ", ".join(f"`{p}`" for p in (dataset.protocol, *dataset.other_protocols))
    lines = [
        f"# {name}",
        "",
        plain(dataset.description) + ".",
        "",
        f"**Paper:** {dataset.paper}. **Protocols:** {protocols}.",
    ]
    if dataset.prepare is None:
        lines += ["", "Listed only: another dataset's `prepare` command builds it."]
    else:
        lines += ["", f"Prepare it: `banditbench prepare {name}{' --name NAME' if dataset.named else ''}`."]
    if dataset.files:
        lines += ["", f"**Files it reads:** {plain(dataset.files)}."]
    if dataset.options:
        lines += ["", "## Options", "", "| option | default | domain | help |", "|---|---|---|---|"]
        for option in dataset.options:
            default = "required" if option.required else cell(option.default)
            lines.append(f"| `{option.flag}` | {default} | {plain(option.domain())} | {plain(option.help)} |")
    if dataset.prepare is not None or dataset.raw is not None:
        lines += ["", "## Sources", "", *sources(dataset)]
    return "\n".join([*lines, ""])


# -------------------------------------------------------------------------------------------- preset cards


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of a page (header and separator rows included)."""
    return [
        [c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines() if line.startswith("|")
    ]


def preset_times(reproducing: str, performance: str) -> dict[str, list[str]]:
    """What docs/reproducing.md (its time column) and docs/performance.md (its summary rows measured on a 2-core
    machine) say of each preset's running time, by preset."""
    found: dict[str, list[str]] = {}
    source, time = "([Reproducing the papers](../../reproducing.md#presets-and-expected-times))", ""
    for cells in (cells for cells in table_rows(reproducing) if len(cells) >= 3 and cells[0].startswith("`")):
        # "as above": the row before's; a link of the page is relative to docs/, two folders above the card
        time = time if cells[2] == "as above" else re.sub(r"\]\((?![a-z]+:|#)", "](../../", cells[2])
        for preset in re.findall(r"`([a-z0-9-]+)`", cells[0]):
            found.setdefault(preset, []).append(f"{time} {source}")
    two_cores = set(re.findall(r"^- \*\*(.+?)\*\*: 2-core", performance, re.M))
    for what, figure, machine, *_ in (cells for cells in table_rows(performance) if len(cells) >= 4):
        if set(machine.split(", ")) <= two_cores:
            for preset in re.findall(r"`([a-z0-9-]+)` preset", what):
                found.setdefault(preset, []).append(f"{what}: {figure} ([Performance](../../performance.md#summary))")
    return found


def preset_card(name: str, times: list[str]) -> str:
    spec = PRESETS[name]
    data = ", ".join(f"`{key}={value}`" for key, value in spec["data"].items()) or "the dataset's defaults"
    lines = [f"# {name}", "", f"Reproduces {spec['reproduces']}; {spec['paper']}.", ""]
    lines += ["```shell", f"banditbench run --preset {name}", "```", ""]
    lines += ["| setting | value |", "|---|---|"]
    lines += [
        f"| dataset | [{spec['dataset']}](../datasets/{spec['dataset']}.md) |",
        f"| protocol | `{spec['protocol']}` |",
    ]
    lines += [f"| data it declares | {data} |", f"| rounds, seeds | {spec['rounds']}, {spec['seeds']} |"]
    lines += [f"| tuning seeds, rounds | {spec['tune-seeds']}, {spec['tune-rounds']} |"]
    lines.append("| algorithms | " + ", ".join(f"[{a}](../algorithms/{a}.md)" for a in spec["algos"]) + " |")
    if spec["notes"]:
        lines += ["", plain(spec["notes"])]
    lines += ["", "## Expected time on a 2-core CPU", ""]
    lines += [f"- {time}" for time in times] or ["Not measured."]
    exhibits = [exhibit for exhibit in INVENTORY if name in covering(exhibit)]
    lines += ["", "## Exhibits of the paper it judges", ""]
    lines += [f"- {exhibit.name}: {plain(exhibit.shows)}." for exhibit in exhibits] or ["None."]
    if exhibits:
        lines += ["", "Paper against here, claim by claim, with each verdict: the [claims scorecard](../../claims.md)."]
    return "\n".join([*lines, ""])


# ------------------------------------------------------------------------------------------ the Python API


def api_page(module: str) -> str:
    """A module's page: its docstring and its public members' signatures and docstrings, which mkdocstrings reads."""
    members = [f"        - {name}" for name in API[module]]
    return "\n".join([f"# `{module}`", "", f"::: {module}", "    options:", "      members:", *members, ""])


# -------------------------------------------------------------------------------------------- mkdocs hooks


def index_page(kind: str, summaries: dict[str, str]) -> str:
    entries = (f"- [{name}]({name}.md): {plain(summary)}" for name, summary in summaries.items())
    title = "Python API" if kind == "python" else kind.capitalize()
    return "\n".join([f"# {title}", "", *entries, ""])


def pages(docs_dir: Path) -> dict[str, str]:
    """Every generated page by its path under the docs folder."""
    parity, reproducing, performance = (
        (docs_dir / page).read_text(encoding="utf-8") if (docs_dir / page).is_file() else ""
        for page in ("parity.md", "reproducing.md", "performance.md")
    )
    times = preset_times(reproducing, performance)
    found = {"reference/cli.md": cli_page()}
    for kind, registry, card, summary in (
        (
            "algorithms",
            ALGORITHMS,
            lambda name: algorithm_card(name, parity),
            lambda name: ALGORITHMS[name].description,
        ),
        ("datasets", DATASETS, dataset_card, lambda name: DATASETS[name].description),
        (
            "presets",
            PRESETS,
            lambda name: preset_card(name, times.get(name, [])),
            lambda name: PRESETS[name]["reproduces"],
        ),
        ("python", API, api_page, lambda name: first_paragraph(importlib.import_module(name).__doc__)),
    ):
        found[f"reference/{kind}/index.md"] = index_page(kind, {name: summary(name) for name in registry})
        found.update({f"reference/{kind}/{name}.md": card(name) for name in registry})
    return found


def on_config(config):
    """Each ``reference/<kind>/index.md`` of the navigation becomes a section: the index, then every card."""

    def expand(entries):
        for entry in entries:
            title, target = next(iter(entry.items())) if isinstance(entry, dict) else (None, entry)
            kind = next((k for k in REGISTRIES if target == f"reference/{k}/index.md"), None)
            if isinstance(target, list):
                yield {title: list(expand(target))}
            elif kind:
                yield {
                    title: [{"Overview": target}, *({name: f"reference/{kind}/{name}.md"} for name in REGISTRIES[kind])]
                }
            else:
                yield entry

    config["nav"] = list(expand(config["nav"] or []))
    return config


def on_files(files, config):
    for path, content in pages(Path(config["docs_dir"])).items():
        files.append(File.generated(config, path, content=content))
    return files
