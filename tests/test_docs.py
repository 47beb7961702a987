"""The README and docs/ say only what the tool does.

Fenced blocks tagged ``bash`` are run, page by page, in a fresh folder. Blocks tagged ``shell`` (or
``console``) are shown and not run, but every ``banditbench`` command in them must name an existing
subcommand, options it takes, and registered presets and algorithms. The algorithm tables must match the
registry's defaults, and the site must build with ``mkdocs build --strict``, with a generated card for every
registered algorithm, dataset and preset and no broken internal link.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from site_links import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
#: Fence tags a page may use: bash is run; shell and console are shown only (their banditbench commands are
#: checked); the others are not commands.
LANGUAGES = {"bash", "shell", "console", "text", "toml", "python", "json"}
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def fenced_blocks(page: Path) -> list[tuple[str, str, int]]:
    """(language, code, first line number) of every fenced block of a Markdown page."""
    blocks, language, lines, start, indent = [], None, [], 0, ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if language is None and match:
            language, lines, start, indent = match.group(2), [], number, match.group(1)
        elif language is not None and line.strip() == "```":
            blocks.append((language, "\n".join(lines), start))
            language = None
        elif language is not None:
            lines.append(line[len(indent) :] if line.startswith(indent) else line)
    assert language is None, f"{page.name}: the block opened on line {start} is never closed"
    return blocks


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


RUNNABLE = [page for page in PAGES if any(lang == "bash" for lang, _, _ in fenced_blocks(page))]


# ---------------------------------------------------------------------------------------------- the pages


def test_readme_is_a_front_door_of_at_most_12_kb():
    assert len((ROOT / "README.md").read_bytes()) <= 12 * 1024


def test_readme_test_command_is_the_one_ci_runs():
    command = "bash scripts/setup.sh && .venv/bin/python -m pytest"
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '".[test,docs]"' in (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")


def test_readme_links_every_page_of_the_site():
    nav = re.findall(r"^\s*-\s[^:#]*:\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    nav = [page for page in nav if (ROOT / "docs" / page).is_file()]  # not those the build writes (reference/)
    assert nav, "no pages found in mkdocs.yml's nav"
    assert not [page for page in nav if f"(docs/{page})" not in readme], "pages the README does not link"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_fenced_block_says_whether_it_runs(page):
    for language, _, line in fenced_blocks(page):
        assert language in LANGUAGES, f"{page_id(page)}:{line}: fence tag {language!r}; use one of {LANGUAGES}"


HISTORY = re.compile(
    r"\bissue \d+|\bseed 00\d|\.md §|\bspecs/|before this work|this session|\bno longer\b", re.IGNORECASE
)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_development_history_or_internal_references(page):
    found = [
        f"{page_id(page)}:{number}: {match.group(0)!r}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for match in HISTORY.finditer(line)
    ]
    assert not found, "development history or internal references (cite papers by author and year):\n" + "\n".join(
        found
    )


# ------------------------------------------------------------------------------------ runnable bash blocks


@pytest.fixture()
def shell_env(tmp_path):
    """A PATH whose `banditbench` is this checkout's, and no data or cache folder outside tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "banditbench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m banditbench "$@"\n')
    shim.chmod(0o755)
    python = bin_dir / "python"  # the Python that has banditbench, for the pages' `python -` blocks
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith("BANDITBENCH_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        BANDITBENCH_CACHE=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        COLUMNS="160",
    )
    return env


@pytest.mark.slow  # one `banditbench` process per command: a few minutes in all
@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_runnable_blocks_succeed(page, tmp_path, shell_env):
    work = tmp_path / "work"
    work.mkdir()
    for language, code, line in fenced_blocks(page):
        if language != "bash":
            continue
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code],
            cwd=work,
            env=shell_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (
            f"{page_id(page)}:{line}: block failed with exit code {done.returncode}\n"
            f"{code}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )


# ------------------------------------------------------------------------- shown commands still exist


def banditbench_commands(code: str) -> list[list[str]]:
    """The argument lists of every `banditbench …` command in a shell block (comments and pipes removed)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue
        current: list[str] = []
        for token in [*tokens, "&&"]:
            if token in ("&&", "||", ";", "|"):
                if current and Path(current[0]).name == "banditbench":
                    commands.append(current[1:])
                current = []
            else:
                current.append(token)
    return commands


SHOWN = [
    (page, code, line)
    for page in PAGES
    for language, code, line in fenced_blocks(page)
    if language in ("bash", "shell", "console") and banditbench_commands(code)
]


@pytest.mark.parametrize(("page", "code", "line"), SHOWN, ids=[f"{page_id(p)}:{n}" for p, _, n in SHOWN])
def test_shown_commands_name_existing_subcommands_options_presets_and_algorithms(page, code, line):
    import typer

    from banditbench.algos import ALGORITHMS
    from banditbench.cli import app
    from banditbench.presets import PRESETS

    root = typer.main.get_command(app)
    for args in banditbench_commands(code):
        where = f"{page_id(page)}:{line}: banditbench {' '.join(args)}"
        command, rest = root, list(args)
        while rest and hasattr(command, "commands") and not rest[0].startswith("-"):
            assert rest[0] in command.commands, f"{where}: no subcommand {rest[0]!r}"
            command = command.commands[rest.pop(0)]
        options = {"--help", *(opt for param in command.params for opt in (*param.opts, *param.secondary_opts))}
        for i, token in enumerate(rest):
            if not token.startswith("-") or token == "-":
                continue
            name = token.split("=", 1)[0]
            assert name in options, f"{where}: {command.name} takes no option {name}"
            value = token.split("=", 1)[1] if "=" in token else (rest[i + 1] if i + 1 < len(rest) else "")
            if name == "--preset":
                assert value in PRESETS, f"{where}: no preset {value!r}"
            if name == "--algos":
                unknown = {name for name in value.split(",") if ":" not in name} - set(ALGORITHMS)  # or import paths
                assert not unknown, f"{where}: unknown algorithms {sorted(unknown)}"


# --------------------------------------------------------------------------- the algorithm tables


def registry_defaults(spec) -> dict:
    defaults = spec.defaults
    return dict(defaults() if callable(defaults) else defaults)


def same_value(documented: str, value) -> bool:
    if value is None:
        return documented in ("None", "none")
    if isinstance(value, bool):
        return documented in (str(value), str(value).lower())
    if isinstance(value, (int, float)):
        try:
            return math.isclose(float(documented), float(value), rel_tol=1e-4)
        except ValueError:
            return False
    return documented == str(value)


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def algorithm_tables(text: str) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """Rows of the tables headed `| name |` (names → documented defaults, shared groups resolved later) and
    the `k=v` settings under each heading (anchor → settings)."""
    rows: dict[str, tuple[dict[str, str], list[str]]] = {}
    groups: dict[str, dict[str, str]] = {}
    heading, in_table = "", False
    for line in text.splitlines():
        if line.startswith("#"):
            heading, in_table = slug(line.lstrip("#")), False
            continue
        if line.startswith("| name |"):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if in_table and len(cells) >= 3 and not set(cells[0]) <= {"-", " "}:
            own = dict(re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)=([^`]*)`", cells[2]))
            for name in re.findall(r"`([a-z0-9-]+)`", cells[0]):
                rows[name] = (own, re.findall(r"\(#([a-z0-9-]+)\)", cells[2]))
        elif not in_table:  # a settings table: `k=v` in its first column, the rest explains
            groups.setdefault(heading, {}).update(re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)=([^`]*)`", cells[0]))
    return rows, groups


def test_algorithm_tables_list_every_registered_algorithm_with_its_defaults():
    from banditbench.algos import ALGORITHMS

    rows, groups = algorithm_tables((ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8"))
    assert set(rows) == set(ALGORITHMS), (
        f"missing from docs/algorithms.md: {sorted(set(ALGORITHMS) - set(rows))}; "
        f"not registered: {sorted(set(rows) - set(ALGORITHMS))}"
    )
    problems = []
    for name, (own, links) in rows.items():
        defaults = registry_defaults(ALGORITHMS[name])
        shared = {key: value for link in links for key, value in groups.get(link, {}).items()}
        for key, documented in own.items():
            if key not in defaults:
                problems.append(f"{name}: documents {key}={documented}, which is not a hyper-parameter")
            elif not same_value(documented, defaults[key]):
                problems.append(f"{name}: documents {key}={documented}, the default is {defaults[key]!r}")
        for key, value in defaults.items():
            documented = own.get(key, shared.get(key))
            if documented is None:
                problems.append(f"{name}: {key}={value!r} is not documented")
            elif key not in own and not same_value(documented, value):
                problems.append(f"{name}: shared setting {key}={documented}, the default is {value!r}")
    assert not problems, "docs/algorithms.md disagrees with the registry:\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------------ the site


def build_site(folder: Path) -> None:
    """The site built strictly: a warning (a page left out of the navigation, a broken Markdown link) fails it."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def missing_cards(site: Path) -> list[str]:
    """The registered algorithms, datasets and presets without a generated card, and cards of unregistered ones."""
    from banditbench.algos import ALGORITHMS
    from banditbench.data import DATASETS
    from banditbench.presets import PRESETS

    problems = [] if (site / "reference" / "cli" / "index.html").is_file() else ["no command-line reference"]
    for kind, registry in (("algorithms", ALGORITHMS), ("datasets", DATASETS), ("presets", PRESETS)):
        cards = {path.parent.name for path in (site / "reference" / kind).glob("*/index.html")}
        problems += [f"{kind}: no card for {name}" for name in sorted(set(registry) - cards)]
        problems += [f"{kind}: a card for the unregistered {name}" for name in sorted(cards - set(registry))]
    return problems


def undocumented_api(site: Path, modules: dict[str, list[str]]) -> list[str]:
    """The public modules without a page, and the members their page does not document (mkdocstrings gives each
    documented object an element id of its full name)."""
    problems = []
    for module, members in modules.items():
        page = site / "reference" / "python" / module / "index.html"
        if not page.is_file():
            problems.append(f"no page for {module}")
            continue
        ids = set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))
        problems += [f"{module}.{name} is not documented" for name in members if f"{module}.{name}" not in ids]
    return problems


def reference_hook():
    """The mkdocs hook that writes the reference pages (docs/hooks/reference.py), imported from its file."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    spec = importlib.util.spec_from_file_location("reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_algorithm_cards_find_their_parity_and_speed_rows_in_the_parity_page():
    from banditbench.algos import ALGORITHMS

    hook = reference_hook()
    parity = (ROOT / "docs" / "parity.md").read_text(encoding="utf-8")
    keys = {hook.algorithm_key(name) for name in ALGORITHMS}
    for heading, _ in hook.PARITY.values():  # a renamed section would leave every card without its rows
        assert keys & set(hook.section_rows(parity, heading)), f"no algorithm's row under '## {heading}'"
    page = "## Parity table\n\n| algorithm | T |\n|---|---|\n| M-CNB (code) | 1 |\n| CLUB | 2 |\n| M-CNB, loop | 3 |\n"
    header = ["| algorithm | T |", "|---|---|"]
    assert hook.section_rows(page + "\n## Next\n| CLUB | 4 |\n", "Parity table") == {
        "mcnb": [[*header, "| M-CNB (code) | 1 |", "| M-CNB, loop | 3 |"]],
        "club": [[*header, "| CLUB | 2 |"]],
    }
    assert "No parity check." in hook.parity_sections("cofiba", page)


def test_preset_cards_take_their_times_from_the_pages_that_measured_them_and_say_when_none_did():
    hook = reference_hook()
    reproducing = "| preset | reproduces | time |\n|---|---|---|\n"
    reproducing += "| `a`, `b` | Fig. 1 | measured 5 min |\n| `c` | Fig. 2 | as above |\n"
    reproducing += "| `d` | Fig. 3 | see [GPU](performance.md#on-a-gpu) |\n"
    performance = (
        "- **A**: 2-core x86 VM\n- **G**: a GPU machine, 16 CPU cores\n\n| what | figure | machine | command |\n"
        "|---|---|---|---|\n| whole `a` preset | 40 s | A | `x.py` |\n| whole `b` preset | 9 s | G | `x.py` |\n"
    )
    times = hook.preset_times(reproducing, performance)
    assert [time.split(" (")[0] for time in times["a"]] == ["measured 5 min", "whole `a` preset: 40 s"]
    assert [time.split(" (")[0] for time in times["c"]] == ["measured 5 min"]  # "as above"
    assert len(times["b"]) == 1  # the 16-core machine's figure is left out
    assert times["d"][0].startswith("see [GPU](../../performance.md#on-a-gpu)")  # a link from the card's folder
    assert "## Expected time on a 2-core CPU\n\nNot measured." in hook.preset_card(next(iter(hook.PRESETS)), [])
    real = hook.preset_times(
        *((ROOT / "docs" / page).read_text(encoding="utf-8") for page in ("reproducing.md", "performance.md"))
    )
    assert {"bass-synthetic", "mcnb-movielens", "ghosh-synthetic"} <= set(real)  # a renamed column would lose them


# One test, so that the site is built once (a module fixture would be built once per pytest-xdist worker).
def test_the_site_builds_strictly_with_four_kinds_of_page_every_card_and_no_broken_link(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    for plugin in ("material", "mkdocs_jupyter", "mkdocstrings_handlers.python"):
        pytest.importorskip(plugin, reason=f"{plugin} is not installed (pip install -e '.[docs]')")
    from site_links import broken_links, rendered_problems

    build_site(tmp_path / "site")
    site = tmp_path / "site"
    home = re.sub(r"\s*(<|>)\s*", r"\1", (site / "index.html").read_text(encoding="utf-8"))
    kinds = ("Tutorial", "How-to guides", "Reference", "Explanation")
    assert not [kind for kind in kinds if f">{kind}<" not in home], "the navigation lacks a kind of page"
    assert not missing_cards(site), "\n".join(missing_cards(site))
    assert not undocumented_api(site, reference_hook().API), "\n".join(undocumented_api(site, reference_hook().API))
    tutorial = (site / "quickstart" / "index.html").read_text(encoding="utf-8")
    assert "data:image/png" in tutorial and "regret_mean" in tutorial, "the tutorial lacks its plot or its table"
    broken = broken_links(site)
    assert not broken, "broken links:\n" + "\n".join(broken[:40])
    if CHROMIUM:  # the home page and a card as a browser shows them
        shown = ("index.html", "reference/algorithms/club/index.html")
        problems = [problem for page in shown for problem in rendered_problems(site, site / page)]
        assert not problems, "\n".join(problems)


def test_a_missing_card_and_a_stale_card_are_reported(tmp_path):
    from banditbench.algos import ALGORITHMS
    from banditbench.data import DATASETS
    from banditbench.presets import PRESETS

    first = next(iter(ALGORITHMS))
    pages = [
        "cli",
        *(
            f"{kind}/{name}"
            for kind, names in (("algorithms", ALGORITHMS), ("datasets", DATASETS), ("presets", [*PRESETS, "gone"]))
            for name in names
        ),
    ]
    for page in pages:
        if page != f"algorithms/{first}":
            (tmp_path / "reference" / page).mkdir(parents=True)
            (tmp_path / "reference" / page / "index.html").write_text("card")
    assert missing_cards(tmp_path) == [f"algorithms: no card for {first}", "presets: a card for the unregistered gone"]


def test_the_api_reference_covers_the_public_api_and_a_gap_is_reported(tmp_path):
    modules = reference_hook().API
    assert "run" in modules["banditbench.api"] and "Policy" in modules["banditbench.algos.base"]
    assert "__version__" not in modules["banditbench.api"]  # a value, not a documented object
    page = tmp_path / "reference" / "python" / "banditbench.api" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text('<h2 id="banditbench.api.run">run</h2>')
    assert undocumented_api(tmp_path, {"banditbench.api": ["run", "load"], "banditbench.errors": ["UserError"]}) == [
        "banditbench.api.load is not documented",
        "no page for banditbench.errors",
    ]


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")
def test_headless_chromium_reports_a_script_error_a_missing_heading_and_a_link_broken_by_a_script(tmp_path):
    from site_links import rendered_problems

    (tmp_path / "index.html").write_text(
        '<html><body><h2 id="top">Home</h2><a href="#top">ok</a><script>'
        'let a = document.createElement("a"); a.href = "gone.html"; document.body.appendChild(a);'
        'throw new Error("boom")</script></body></html>'
    )
    problems = rendered_problems(tmp_path, tmp_path / "index.html")
    assert len(problems) == 3 and "Uncaught Error: boom" in problems[0]
    assert problems[1:] == ["index.html: no heading", "index.html: gone.html (no such file)"]


def test_the_docstrings_rest_becomes_markdown():
    pytest.importorskip("griffe", reason="griffe is not installed (pip install -e '.[docs]')")
    spec = importlib.util.spec_from_file_location("docstrings", ROOT / "docs" / "hooks" / "docstrings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (
        "Raises :class:`~banditbench.errors.UserError` (:func:`banditbench.run`).\n\n>>> import x\n>>> x.y()\n\nDone."
    )
    assert module.markdown(text) == (
        "Raises `UserError` (`banditbench.run`).\n\n```pycon\n>>> import x\n>>> x.y()\n```\n\nDone."
    )
    assert module.markdown(">>> 1 + 1") == "```pycon\n>>> 1 + 1\n```"


def test_the_link_checker_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    from site_links import broken_links

    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text(
        '<h1 id="top">Home</h1><a href="guide/">ok</a><a href="#top">ok</a><a href="https://example.org/x">ok</a>'
        '<a href="guide/#setup">ok</a><a href="gone/">gone</a><a href="guide/#nowhere">bad anchor</a>'
    )
    (tmp_path / "guide" / "index.html").write_text('<h2 id="setup">Setup</h2><img src="../img/missing.png">')
    assert sorted(broken_links(tmp_path)) == [
        "guide/index.html: ../img/missing.png (no such file)",
        "index.html: gone/ (no such file)",
        "index.html: guide/#nowhere (no such anchor)",
    ]
