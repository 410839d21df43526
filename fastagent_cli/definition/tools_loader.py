"""The agent's typed tools: ``tools/*.py`` discovery, config ``tools`` import refs, and the merge.

* ``tools/<name>.py`` (sorted; ``_*.py`` are helpers, not tools): the file name is the tool name.
  The module's tool is its ``tool`` attribute, else the attribute named like the file, else its
  only module-level :class:`~fastagent_cli.tools.base.Tool`. A file that fails to import, or holds
  no tool, is skipped and reported with its error; the others keep working.
* config ``tools = ["pkg.module:attr"]``: ``attr`` is a Tool or a list of Tools. The agent dir is
  importable. A ref that cannot be imported is a configuration error (the author named it).
* merge order: coding tools, then config tools, then ``tools/``, then whatever the caller adds;
  the earlier name wins and every shadowed tool is reported as a collision.

Agent tool modules are imported without writing ``__pycache__`` into the agent directory, each
in a thread of its own with a time limit (:data:`IMPORT_TIMEOUT_S`): a file that blocks at import
(a network call, a lock, an ``input()``) is skipped and reported by name, and the command goes on
(the stuck import is left behind in its daemon thread). What a module prints while it is imported
goes to stderr, so ``info --json`` and ``invoke --json`` keep a clean stdout.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from fastagent_cli.definition.config import FastagentConfig
from fastagent_cli.errors import ConfigError, one_line
from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.search_tools import with_search_tool

__all__ = [
    "IMPORT_TIMEOUT_S",
    "TOOL_NAME",
    "Catalog",
    "ToolCollision",
    "ToolLoadFailure",
    "ToolSet",
    "assemble_tools",
    "discover_tool_files",
    "import_tool_ref",
    "load_tool_file",
    "load_tools_dir",
    "merge_tools",
]

Catalog = Callable[[], Mapping[str, Tool]]
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MODULE_PREFIX = "fastagent_agent_tools"
IMPORT_TIMEOUT_S = 10.0
"""How long one tool module's import may take before it is skipped as blocked."""


class ImportBlocked(Exception):
    """A tool module's import did not finish within :data:`IMPORT_TIMEOUT_S`."""


def _bounded_import(run: Callable[[], object], what: str) -> None:
    """Run ``run`` (an import) in a daemon thread, its prints sent to stderr; re-raise what it
    raised, or :class:`ImportBlocked` when it is still running after :data:`IMPORT_TIMEOUT_S`."""
    outcome: list[BaseException] = []
    done = threading.Event()

    def body() -> None:
        try:
            run()
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)
        finally:
            done.set()

    previous = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        with redirect_stdout(sys.stderr):
            threading.Thread(target=body, name=f"import {what}", daemon=True).start()
            finished = done.wait(IMPORT_TIMEOUT_S)
    finally:
        sys.dont_write_bytecode = previous
    if not finished:
        raise ImportBlocked(
            f"its import did not finish within {IMPORT_TIMEOUT_S:g} s (does it wait on something "
            "at import time? move that into the tool's function)"
        )
    if outcome:
        raise outcome[0]


@dataclass(frozen=True, slots=True)
class ToolCollision:
    name: str
    source: str
    """Where the shadowed (not mounted) tool came from."""
    winner: str
    """Where the mounted tool of that name came from."""

    @property
    def message(self) -> str:
        return f'tool "{self.name}" ({self.source}) is shadowed by {self.winner} — not mounted'


@dataclass(frozen=True, slots=True)
class ToolLoadFailure:
    source: str
    error: str

    @property
    def message(self) -> str:
        return f"{self.source}: {self.error} (skipped)"


@dataclass(slots=True)
class ToolSet:
    """The merged tools and what happened on the way."""

    tools: list[Tool] = field(default_factory=list)
    collisions: list[ToolCollision] = field(default_factory=list)
    failures: list[ToolLoadFailure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    """A config ``tools`` ref that could not be imported (its tools are missing)."""

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    @property
    def deferred(self) -> list[str]:
        return [t.name for t in self.tools if t.deferred]


def discover_tool_files(agent_dir: Path) -> list[Path]:
    directory = agent_dir / "tools"
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.py") if p.is_file() and not p.name.startswith(("_", ".")))


def _importable(agent_dir: Path) -> None:
    if str(agent_dir) not in sys.path:
        sys.path.insert(0, str(agent_dir))


def _exec_module(path: Path) -> ModuleType:
    name = f"{_MODULE_PREFIX}.{path.stem.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    sys.modules[name] = module
    try:
        _bounded_import(lambda: loader.exec_module(module), f"tools/{path.name}")
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _module_tools(module: ModuleType) -> list[tuple[str, Tool]]:
    return [(k, v) for k, v in vars(module).items() if isinstance(v, Tool) and not k.startswith("_")]


def load_tool_file(path: Path) -> Tool:
    """Import ``tools/<name>.py`` and return its tool, named after the file."""
    stem = path.stem
    if not TOOL_NAME.fullmatch(stem):
        raise ValueError(f'"{stem}" is not a valid tool name (letters, digits, "_" and "-", at most 64)')
    module = _exec_module(path)
    found: Tool | None = None
    for attr in ("tool", stem, stem.replace("-", "_")):
        value = getattr(module, attr, None)
        if isinstance(value, Tool):
            found = value
            break
    if found is None:
        defined = _module_tools(module)
        if len(defined) > 1:
            names = ", ".join(k for k, _ in defined)
            raise ValueError(f"defines several tools ({names}); name the one to mount `tool`")
        if not defined:
            raise ValueError("defines no tool (expected a module-level tool built with @tool or define_tool)")
        found = defined[0][1]
    source = f"tools/{path.name}"
    return dataclasses.replace(found, name=stem, source=source)


def load_tools_dir(agent_dir: Path) -> tuple[list[Tool], list[ToolLoadFailure]]:
    _importable(agent_dir)
    tools: list[Tool] = []
    failures: list[ToolLoadFailure] = []
    for path in discover_tool_files(agent_dir):
        try:
            tools.append(load_tool_file(path))
        except ImportBlocked as exc:
            failures.append(ToolLoadFailure(f"tools/{path.name}", str(exc)))
        except (Exception, SystemExit) as exc:
            failures.append(ToolLoadFailure(f"tools/{path.name}", _describe(exc)))
    return tools, failures


def import_tool_ref(ref: str, agent_dir: Path) -> list[Tool]:
    """``"pkg.module:attr"`` -> its tools; a :class:`ConfigError` naming the ref when it fails."""
    _importable(agent_dir)
    module_name, _, attr = ref.partition(":")
    where = f'fastagent.toml tools: "{ref}"'
    imported: list[ModuleType] = []
    try:
        _bounded_import(lambda: imported.append(importlib.import_module(module_name)), module_name)
    except ImportBlocked as exc:
        raise ConfigError(f"{where}: cannot import {module_name}: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise ConfigError(f"{where}: cannot import {module_name} ({_describe(exc)})") from None
    module = imported[0]
    if not hasattr(module, attr):
        raise ConfigError(f"{where}: module {module_name} has no attribute {attr!r}")
    value = getattr(module, attr)
    items = list(value) if isinstance(value, list | tuple) else [value]
    bad = [type(v).__name__ for v in items if not isinstance(v, Tool)]
    if bad or not items:
        raise ConfigError(
            f"{where}: expected a Tool or a list of Tools (built with @tool / define_tool), "
            f"got {', '.join(bad) or 'an empty list'}"
        )
    return [dataclasses.replace(t, source=f"config.tools {ref}") for t in items if isinstance(t, Tool)]


def merge_tools(groups: Iterable[tuple[str, Sequence[Tool]]]) -> tuple[list[Tool], list[ToolCollision]]:
    """Concatenate ``(label, tools)`` groups in order; an earlier name wins."""
    merged: dict[str, Tool] = {}
    owner: dict[str, str] = {}
    collisions: list[ToolCollision] = []
    for label, tools in groups:
        for tool in tools:
            where = tool.source if tool.source not in ("", "builtin", "python") else label
            if tool.name in merged:
                collisions.append(ToolCollision(tool.name, where, owner[tool.name]))
                continue
            merged[tool.name] = tool
            owner[tool.name] = f"{label} tool" if label == "coding" else where
    return list(merged.values()), collisions


def _describe(exc: BaseException) -> str:
    text = str(exc)
    described = one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, 300)
    if isinstance(exc, ModuleNotFoundError) and exc.name and not exc.name.startswith("fastagent_cli"):
        return f"{described} ({_missing_module_hint(exc.name)})"
    return described


def _missing_module_hint(name: str) -> str:
    """Where a tool's missing package goes: the release binary carries a fixed set of packages
    (README), so another one means the pip install; elsewhere, the Python fastagent runs on."""
    top = name.partition(".")[0]
    if getattr(sys, "frozen", False):
        return (
            f"the fastagent binary carries a fixed set of packages; for {top}, run the pip install "
            f"instead: `pip install fastagent-cli <the package that provides {top}>`, then "
            "`python -m fastagent_cli ...`"
        )
    return f"install it into the Python fastagent runs on: `{sys.executable} -m pip install <the package>`"


def _coding_tools(names: Sequence[str], workspace: Path) -> tuple[list[Tool], list[str]]:
    if not names:
        return [], []
    try:
        from fastagent_cli.tools.coding import coding_tools
    except ImportError as exc:  # the module itself is absent from this build (not: it is broken)
        if exc.name != "fastagent_cli.tools.coding":
            raise
        return [], ["the coding tools (read, bash, edit, write) are not available in this build"]
    tools = [dataclasses.replace(t, source="coding") for t in coding_tools(names, workspace)]
    return tools, []


def assemble_tools(
    config: FastagentConfig,
    agent_dir: Path,
    workspace: Path,
    extra: Sequence[Tool] = (),
    *,
    catalog: Catalog | None = None,
    strict: bool = True,
) -> ToolSet:
    """Coding tools, config ``tools``, ``tools/``, ``extra``; then ``search_tools`` if any is deferred.

    ``strict``: a config ref that cannot be imported raises; otherwise it is kept in ``error``.
    ``catalog`` is what ``search_tools`` searches (default: the tools assembled here).
    """
    coding, warnings = _coding_tools(config.coding_tool_names, workspace)
    configured: list[Tool] = []
    error: str | None = None
    for ref in config.tools:
        try:
            configured.extend(import_tool_ref(ref, agent_dir))
        except ConfigError as exc:
            if strict:
                raise
            error = error or exc.message
    discovered, failures = load_tools_dir(agent_dir)
    merged, collisions = merge_tools(
        [("coding", coding), ("config.tools", configured), ("tools/", discovered), ("extra", extra)]
    )
    mounted, search_warnings = with_search_tool(merged, catalog)
    return ToolSet(mounted, collisions, failures, warnings + search_warnings, error)
