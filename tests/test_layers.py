"""The layer rule of ``shared/design/ARCHITECTURE.md``, enforced on the package's source.

Layers, inner to outer (imports point inward only)::

    contract   contract.py, errors.py, messages.py, control/ (the session hub's vocabulary), sse.py
               (Server-Sent Events parsing, for model clients and remote clients alike)
               (+ _version, logging_setup): stdlib only
    state      state/
    models | sessions          (siblings: never import each other)
    tools
    engine
    definition (+ auth/, which may read the definition)
    assembly
    hosts      chat/, serving/, schedules/, channels/, remote/ (siblings; chat may use remote/ for
               attach): contract, errors, messages, state and assembly only
    tooling    deploy/: the ``deploy`` command's machinery (it writes files and drives host CLIs;
               it hosts no agent), held to the cli's rule
    cli        (never the engine or the session stores: it reaches them through assembly)
    api        the package root (fastagent_cli/__init__.py: the public API, lazily) and __main__

Every import counts, including the ones inside functions and under ``TYPE_CHECKING``: a lazy or
type-only import still couples the layers. The module graph must have no cycle either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import fastagent_cli

PACKAGE = "fastagent_cli"
ROOT = Path(fastagent_cli.__file__).resolve().parent

LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "contract",
        frozenset({"contract", "errors", "messages", "control", "sse", "_version", "logging_setup"}),
    ),
    ("state", frozenset({"state"})),
    ("models|sessions", frozenset({"models", "sessions"})),
    ("tools", frozenset({"tools"})),
    ("engine", frozenset({"engine"})),
    ("definition", frozenset({"definition", "auth"})),
    ("assembly", frozenset({"assembly"})),
    ("hosts", frozenset({"chat", "serving", "schedules", "channels", "remote"})),
    ("tooling", frozenset({"deploy"})),
    ("cli", frozenset({"cli"})),
    ("api", frozenset({"", "__main__"})),
]
SIDEWAYS_ALLOWED = {("auth", "definition"), ("chat", "remote"), ("control", "contract")}
"""Same-layer imports that are allowed: ``(importer, imported)``."""
SIDEWAYS_MODULES_ALLOWED = {("channels", "fastagent_cli.serving.body")}
"""Same-layer imports of one module: the chat channels are HTTP handlers the serving host mounts,
and use its handler helpers (the capped body read and plain-text answers) like any channel file."""
HOST_MAY_IMPORT = frozenset(
    {"contract", "errors", "messages", "control", "sse", "_version", "logging_setup", "state", "assembly"}
)
CLI_MAY_NOT_IMPORT = frozenset({"engine", "sessions"})
EXCLUDED = ("data",)
"""Template files shipped as data (they import the package as a user would)."""

LAYER_OF = {part: index for index, (_, parts) in enumerate(LAYERS) for part in parts}


@dataclass(frozen=True, slots=True)
class Import:
    importer: str
    imported: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path.relative_to(self.path.parents[len(self.importer.split('.')) - 1])}:{self.line}"


def part_of(module: str) -> str:
    """The top-level part a module belongs to (``""`` for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_name(root: Path, path: Path) -> str:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        name = module_name(root, path)
        if part_of(name) not in EXCLUDED:
            found[name] = path
    return found


def imports(root: Path) -> Iterator[Import]:
    """Every import of a package module by a package module (all of them, lazy ones included)."""
    known = modules(root)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                    for alias in node.names
                ]
            for target in targets:
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    yield Import(name, target, path, node.lineno)


def violations(root: Path) -> list[str]:
    """Every import that breaks the layer rule, one line each."""
    found = []
    for edge in imports(root):
        src, dst = part_of(edge.importer), part_of(edge.imported)
        if src == dst or part_of(edge.imported) in EXCLUDED:
            continue
        if src not in LAYER_OF or dst not in LAYER_OF:
            unknown = src if src not in LAYER_OF else dst
            found.append(f"{edge.where()}: {PACKAGE}.{unknown} is in no layer (add it to LAYERS)")
            continue
        here, there = LAYER_OF[src], LAYER_OF[dst]
        arrow = f"{edge.importer} -> {edge.imported} ({LAYERS[here][0]} -> {LAYERS[there][0]})"
        if there > here:
            found.append(f"{edge.where()}: outward import {arrow}")
        elif (
            there == here
            and (src, dst) not in SIDEWAYS_ALLOWED
            and (src, edge.imported) not in SIDEWAYS_MODULES_ALLOWED
        ):
            found.append(f"{edge.where()}: sideways import {arrow}")
        elif LAYERS[here][0] == "hosts" and there < here and dst not in HOST_MAY_IMPORT:
            found.append(f"{edge.where()}: a host imports {arrow}; hosts use assembly's ports")
        elif LAYERS[here][0] in ("tooling", "cli") and dst in CLI_MAY_NOT_IMPORT:
            found.append(f"{edge.where()}: the cli imports {arrow}; commands use assembly's ports")
    return found


def cycles(root: Path) -> list[list[str]]:
    """The import cycles between modules (strongly connected components larger than one)."""
    graph: dict[str, set[str]] = {name: set() for name in modules(root)}
    for edge in imports(root):
        if edge.imported in graph and edge.imported != edge.importer:
            graph[edge.importer].add(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_imports_point_inward() -> None:
    found = violations(ROOT)
    assert not found, "layer rule broken (see tests/test_layers.py):\n" + "\n".join(found)


def test_no_import_cycles() -> None:
    found = cycles(ROOT)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_every_package_part_has_a_layer() -> None:
    parts = {part_of(name) for name in modules(ROOT)}
    assert parts <= set(LAYER_OF), f"parts in no layer: {sorted(parts - set(LAYER_OF))}"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / PACKAGE
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_checker_catches_what_it_forbids(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "errors.py": "",
            "engine/__init__.py": "",
            "engine/agent.py": "def f():\n    from fastagent_cli.serving import app\n",
            "models/__init__.py": "",
            "models/types.py": "from fastagent_cli.sessions import record\n",
            "sessions/__init__.py": "",
            "sessions/record.py": "from fastagent_cli.errors import E\n",
            "chat/__init__.py": "",
            "chat/ui.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from fastagent_cli.engine.agent import EngineAgent\n",
            "serving/__init__.py": "",
            "serving/app.py": "from . import routes\nfrom fastagent_cli.assembly import x\n",
            "serving/routes.py": "from .app import y\n",
            "assembly/__init__.py": "",
            "cli/__init__.py": "",
            "cli/run.py": "import fastagent_cli.sessions.record\n",
            "elsewhere/__init__.py": "from fastagent_cli import errors\n",
        },
    )
    found = "\n".join(violations(root))
    assert "outward import fastagent_cli.engine.agent -> fastagent_cli.serving.app (engine -> hosts)" in found
    assert "sideways import fastagent_cli.models.types -> fastagent_cli.sessions.record" in found
    assert "a host imports fastagent_cli.chat.ui -> fastagent_cli.engine.agent" in found
    assert "the cli imports fastagent_cli.cli.run -> fastagent_cli.sessions.record" in found
    assert "fastagent_cli.elsewhere is in no layer" in found
    assert "serving.app -> fastagent_cli.assembly" not in found  # a host may use assembly
    assert "sessions.record -> fastagent_cli.errors" not in found
    assert cycles(root) == [["fastagent_cli.serving.app", "fastagent_cli.serving.routes"]]
