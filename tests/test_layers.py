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

Inside ``channels/``: the kit (``channels/kit/``) imports no platform, and a platform (every other
folder or module of ``channels/`` but its ``__init__``) imports the kit and itself only, never
another platform.

A protocol face (``serving/faces/<name>/``, ``[http] <name> = true``) is imported by its own
modules only: ``serving/faces/__init__.py`` loads it by name when it is switched on, so a server
without the face never loads it.

Each third-party heavyweight is imported by the package that owns it only (:data:`HEAVY_HOMES`),
so an accidental import on the CLI's start-up path fails here, not in a benchmark; the modules of
:data:`HEAVY_LAZY_ALLOWED` may import one inside a function (login's terminal prompts).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import fastagent_cli

PACKAGE = "fastagent_cli"
ROOT = Path(fastagent_cli.__file__).resolve().parent

LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "contract",
        frozenset({"contract", "errors", "messages", "control", "sse", "_version", "logging_setup", "heap"}),
    ),
    ("state", frozenset({"state", "telemetry"})),
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
    {
        "contract",
        "errors",
        "messages",
        "control",
        "sse",
        "_version",
        "logging_setup",
        "heap",
        "state",
        "telemetry",
        "assembly",
    }
)
CLI_MAY_NOT_IMPORT = frozenset({"engine", "sessions"})
HEAVY_HOMES: dict[str, tuple[str, ...]] = {
    "asyncpg": ("fastagent_cli.state.pg",),
    "prompt_toolkit": ("fastagent_cli.chat",),
    "pydantic_monty": ("fastagent_cli.tools.code_mode",),
    "mcp": ("fastagent_cli.tools.mcp",),
    "mcp_types": ("fastagent_cli.tools.mcp",),
    "a2a": (),  # a dev-only test client: the A2A face speaks the wire itself
}
"""Third-party heavyweights (top-level import name) -> the packages that may import them."""
HEAVY_LAZY_ALLOWED = {
    ("prompt_toolkit", "fastagent_cli.cli.login_cmd"),
    ("prompt_toolkit", "fastagent_cli.cli.oauth_login"),
}
"""``(heavyweight, module)``: may import it inside a function (only when that command asks)."""
CHANNELS = f"{PACKAGE}.channels"
FACES = f"{PACKAGE}.serving.faces"
CHANNEL_KIT = "kit"
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


def channel_room(module: str) -> str | None:
    """The part of ``channels/`` a module is in: ``"kit"``, a platform's name, ``""`` for the
    package's ``__init__``; ``None`` outside ``channels/``."""
    if module == CHANNELS:
        return ""
    if not module.startswith(CHANNELS + "."):
        return None
    return module[len(CHANNELS) + 1 :].split(".")[0]


def channel_violations(root: Path) -> list[str]:
    """Imports inside ``channels/`` that break its rule: the kit imports no platform, and no
    platform imports another (nor the package ``__init__``, which reaches every platform)."""
    found = []
    for edge in imports(root):
        src, dst = channel_room(edge.importer), channel_room(edge.imported)
        if src is None or dst is None or src == "" or src == dst or dst == CHANNEL_KIT:
            continue
        arrow = f"{edge.importer} -> {edge.imported}"
        if src == CHANNEL_KIT:
            found.append(f"{edge.where()}: the channel kit imports a platform: {arrow}")
        else:
            found.append(f"{edge.where()}: a channel platform imports another: {arrow}")
    return found


def face_of(module: str) -> str | None:
    """The face package a module is in (``fastagent_cli.serving.faces.openai``), else ``None``."""
    if not module.startswith(FACES + "."):
        return None
    return f"{FACES}.{module[len(FACES) + 1 :].split('.')[0]}"


def face_violations(root: Path) -> list[str]:
    """Imports of a face's modules from outside that face (it loads only when switched on)."""
    found = []
    for edge in imports(root):
        face = face_of(edge.imported)
        if face is None or face_of(edge.importer) == face:
            continue
        found.append(
            f"{edge.where()}: {edge.importer} imports {edge.imported}; a face is loaded by name "
            "(serving/faces/load_faces) and only when [http] switches it on"
        )
    return found


@dataclass(frozen=True, slots=True)
class External:
    importer: str
    name: str
    """The imported top-level name (``asyncpg`` for ``from asyncpg.pool import Pool``)."""
    lazy: bool
    """Inside a function: imported when it runs, not when the module loads."""
    path: Path
    line: int


def external_imports(root: Path) -> Iterator[External]:
    """Every absolute import of a module outside the package, with whether it is lazy."""
    for name, path in modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(inner) for fn in functions for inner in ast.walk(fn) if inner is not fn}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module]
            else:
                continue
            for target in targets:
                top = target.split(".")[0]
                if top != PACKAGE:
                    yield External(name, top, id(node) in inside, path, node.lineno)


def heavy_violations(root: Path) -> list[str]:
    """Imports of a heavyweight outside the packages that own it (:data:`HEAVY_HOMES`)."""
    found = []
    for edge in external_imports(root):
        homes = HEAVY_HOMES.get(edge.name)
        if homes is None:
            continue
        if any(edge.importer == home or edge.importer.startswith(home + ".") for home in homes):
            continue
        if edge.lazy and (edge.name, edge.importer) in HEAVY_LAZY_ALLOWED:
            continue
        where = f"{edge.path.relative_to(root.parent)}:{edge.line}"
        how = "lazily " if edge.lazy else ""
        owners = ", ".join(h.removeprefix(PACKAGE + ".").replace(".", "/") + "/" for h in homes)
        found.append(f"{where}: {edge.importer} {how}imports {edge.name}, which only {owners} may import")
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


def test_channel_platforms_stand_on_the_kit_alone() -> None:
    found = channel_violations(ROOT)
    assert not found, "channels/ rule broken (see tests/test_layers.py):\n" + "\n".join(found)


def test_faces_load_only_when_switched_on() -> None:
    found = face_violations(ROOT)
    assert not found, "face imported from outside it:\n" + "\n".join(found)


def test_the_face_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "serving/__init__.py": "",
            "serving/service.py": "from fastagent_cli.serving.faces.openai.routes import OpenAIFace\n",
            "serving/faces/__init__.py": "def load():\n    import importlib\n",
            "serving/faces/openai/__init__.py": "from fastagent_cli.serving.faces.openai.routes import x\n",
            "serving/faces/openai/routes.py": "from fastagent_cli.serving.faces import FaceContext\n",
            "serving/faces/mcp/__init__.py": "from fastagent_cli.serving.faces.openai import errors\n",
        },
    )
    found = face_violations(root)
    joined = "\n".join(found)
    assert "fastagent_cli.serving.service imports fastagent_cli.serving.faces.openai.routes" in joined
    assert "fastagent_cli.serving.faces.mcp imports fastagent_cli.serving.faces.openai" in joined
    assert len(found) == 2  # a face imports itself and the shared faces package freely


def test_heavyweights_are_imported_by_their_packages_only() -> None:
    found = heavy_violations(ROOT)
    assert not found, "heavyweight imported outside its package (see HEAVY_HOMES):\n" + "\n".join(found)


def startup_heavyweights(*planted: str, path: Path | None = None) -> list[str]:
    """The heavyweights of :data:`HEAVY_HOMES` loaded on the CLI's start-up path as it runs: the
    entry point, the click tree and every command's module (each imported when its command runs),
    and the ``planted`` modules (found on ``path``) like commands."""
    code = (
        "import importlib, sys\n"
        "from fastagent_cli.cli import COMMANDS\n"
        "from fastagent_cli.cli.group import build_cli\n"
        "import fastagent_cli.cli.main\n"
        "build_cli()\n"
        f"for module in [*(t.partition(':')[0] for t, _ in COMMANDS.values()), *{list(planted)!r}]:\n"
        "    importlib.import_module(module)\n"
        f"heavy = {sorted(HEAVY_HOMES)!r}\n"
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    if path is not None:
        code = f"import sys\nsys.path.insert(0, {str(path)!r})\n" + code
    command = [sys.executable, "-c", code]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return [name for name in out.strip().split(",") if name]


def test_no_command_imports_a_heavyweight_when_it_loads() -> None:
    loaded = startup_heavyweights()
    assert not loaded, f"loaded on the CLI's start-up path: {loaded}"


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


def test_the_channel_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "channels/__init__.py": "def f():\n    from fastagent_cli.channels import telegram\n",
            "channels/kit/__init__.py": "",
            "channels/kit/runner.py": "from fastagent_cli.channels.slack.api import SlackApi\n",
            "channels/kit/send.py": "from . import runner\n",
            "channels/slack/__init__.py": "",
            "channels/slack/api.py": "from fastagent_cli.channels.kit import send\nfrom . import parse\n",
            "channels/slack/parse.py": "",
            "channels/telegram/__init__.py": "",
            "channels/telegram/runtime.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from fastagent_cli.channels.slack.parse import x\n",
            "channels/telegram/ingress.py": "from fastagent_cli.channels import Intent\n",
            "channels/github.py": "def f():\n    from ..channels.telegram import runtime\n",
        },
    )
    found = channel_violations(root)
    joined = "\n".join(found)
    assert (
        "the channel kit imports a platform: fastagent_cli.channels.kit.runner -> "
        "fastagent_cli.channels.slack.api" in joined
    )
    assert (
        "a channel platform imports another: fastagent_cli.channels.telegram.runtime -> "
        "fastagent_cli.channels.slack.parse" in joined
    )
    assert "fastagent_cli.channels.telegram.ingress -> fastagent_cli.channels" in joined  # the root: all
    assert "fastagent_cli.channels.github -> fastagent_cli.channels.telegram.runtime" in joined
    assert len(found) == 4  # the root may re-export platforms; a platform its own rooms and the kit


def test_the_heavyweight_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "state/__init__.py": "",
            "state/pg/__init__.py": "",
            "state/pg/driver.py": "import asyncpg\n",
            "state/channel_state.py": "from asyncpg.pool import Pool\n",
            "chat/__init__.py": "",
            "chat/app.py": "from prompt_toolkit import PromptSession\n",
            "cli/__init__.py": "",
            "cli/login_cmd.py": "def ask():\n    from prompt_toolkit import prompt\n",
            "cli/oauth_login.py": "from prompt_toolkit import PromptSession\n",
            "cli/main.py": "def run():\n    import prompt_toolkit.shortcuts\n",
            "tools/__init__.py": "",
            "tools/code_mode/sandbox.py": "import pydantic_monty\n",
            "tools/catalog.py": "def f():\n    import pydantic_monty\n",
            "tools/mcp/connection.py": "import mcp_types\nfrom mcp.client.session import ClientSession\n",
            "engine/__init__.py": "",
            "engine/agent.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mcp\n",
            "serving/__init__.py": "",
            "serving/app.py": "import httpx\nimport asyncpgx\n",
        },
    )
    found = heavy_violations(root)
    joined = "\n".join(found)
    assert (
        "fastagent_cli/state/channel_state.py:1: fastagent_cli.state.channel_state imports asyncpg, "
        "which only state/pg/ may import" in joined
    )
    assert "fastagent_cli.cli.oauth_login imports prompt_toolkit" in joined  # allowed lazily only
    assert "fastagent_cli.cli.main lazily imports prompt_toolkit, which only chat/ may import" in joined
    assert "fastagent_cli.tools.catalog lazily imports pydantic_monty" in joined
    assert "fastagent_cli.engine.agent imports mcp, which only tools/mcp/ may import" in joined
    assert len(found) == 5, joined  # the homes, login's lazy prompt and other packages pass


def test_the_start_up_check_catches_a_heavyweight_a_command_loads(tmp_path: Path) -> None:
    (tmp_path / "planted_cmd.py").write_text("import mcp\nimport asyncpg\n", encoding="utf-8")
    (tmp_path / "lazy_cmd.py").write_text("def run():\n    import pydantic_monty\n", encoding="utf-8")
    loaded = startup_heavyweights("planted_cmd", "lazy_cmd", path=tmp_path)
    assert "asyncpg" in loaded and "mcp" in loaded
    assert "pydantic_monty" not in loaded  # imported when the command runs, not when it loads
