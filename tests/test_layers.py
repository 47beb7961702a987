"""The layers of docs/architecture.md, read from the source: every import, at module level or inside a function,
goes to the same layer or a lower one, and no two modules import each other through any chain."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "banditbench"

# Lowest first. A module may import its own layer and every layer before it.
LAYERS = [
    ("errors", "names", "lazy", "version", "parent_death", "worker_signals"),
    ("data",),
    ("simulator",),
    ("envs",),
    ("results",),
    ("algos",),
    ("runner",),
    ("presets", "suites"),
    ("report",),
    ("api", "suite_run", "standalone", "environment"),
    ("cli", "__main__", "__init__"),
]
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> set[str]:
    """Every banditbench module ``path`` imports, resolved to absolute names."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import module` imports the module; `from module import name` the module itself
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}
    return {name for name in found if name in MODULES and name != module_name(path)}


MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}
GRAPH = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_room_has_a_layer():
    assert {room(m) for m in GRAPH} <= set(RANK), "add the new room to LAYERS (and to docs/architecture.md)"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_go_down_the_layers(module):
    upward = [name for name in GRAPH[module] if RANK[room(name)] > RANK[room(module)]]
    assert not upward, f"{module} imports the higher layer(s) {', '.join(upward)}"


def test_no_import_circles():
    def cycle_from(start: str) -> list[str] | None:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in GRAPH[node]:
                if nxt == start:
                    return [*path, start]
                if nxt not in seen and not nxt.startswith(f"{start}."):  # a package importing its own modules
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None

    circles = [cycle for module in GRAPH if (cycle := cycle_from(module))]
    assert not circles, "import circle: " + " -> ".join(circles[0])
