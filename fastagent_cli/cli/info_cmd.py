"""``fastagent info [dir] [--json]``: what the directory assembles into, without serving it.

Read-only: it creates nothing (no state dir, no sessions dir, no ``__pycache__``). It exits 0 even
when tools, skills or MCP servers have problems (they are reported); only a directory that is not
an agent, or an unreadable ``fastagent.toml``, fails. ``--json`` prints one stable document, whose
keys are documented in ``docs/info-json.md``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fastagent_cli.cli.common import auth_path_option, dir_argument, model_option, sessions_dir_option
from fastagent_cli.cli.help_text import examples

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface
    from fastagent_cli.definition.prompt import LoadedDefinition
    from fastagent_cli.tools.approval import ApprovalPolicy
    from fastagent_cli.tools.base import Tool

__all__ = ["INFO_KEYS", "info", "info_document"]

INFO_SCHEMA = 2
INFO_KEYS = (
    "schema",
    "agentDir",
    "workspace",
    "configPath",
    "hint",
    "model",
    "modelSource",
    "modelError",
    "thinkingLevel",
    "codingTools",
    "persona",
    "context",
    "skills",
    "diagnostics",
    "skillCollisions",
    "tools",
    "deferredTools",
    "toolError",
    "toolCollisions",
    "toolFailures",
    "toolWarnings",
    "mcpServers",
    "mcpDiagnostics",
    "channels",
    "schedules",
    "scheduleFailures",
    "selfSchedule",
    "sessionControl",
    "faces",
    "approvals",
    "stateRoot",
    "stateBackend",
    "sessionsDir",
    "authPath",
    "credentialSource",
    "credentialPath",
    "name",
)
_MCP_PROBE_TIMEOUT_S = 30.0


def _names(directory: Path, pattern: str) -> list[str]:
    if not directory.is_dir():
        return []
    return sorted(
        p.stem for p in directory.glob(pattern) if p.is_file() and not p.name.startswith(("_", "."))
    )


def info_document(
    surface: AgentSurface, definition: LoadedDefinition, mcp_tools: list[Tool]
) -> dict[str, Any]:
    """The ``info --json`` document (keys :data:`INFO_KEYS`, in that order)."""
    tools = [*surface.toolset.tools, *(t for t in mcp_tools if t.name not in surface.toolset.names)]
    doc: dict[str, Any] = {
        "schema": INFO_SCHEMA,
        "agentDir": str(surface.agent_dir),
        "workspace": str(surface.workspace),
        "configPath": str(surface.placement.config_path),
        "hint": (surface.placement.hint or "").removeprefix("hint: ") or None,
        "model": surface.model_spec,
        "modelSource": surface.model_source,
        "modelError": surface.model_error,
        "thinkingLevel": surface.thinking_level,
        "codingTools": list(surface.config.coding_tool_names),
        "persona": str(definition.persona_path) if definition.persona_path else None,
        "context": [str(f.path) for f in definition.context_files],
        "skills": [
            {"name": s.name, "description": s.description, "path": str(s.file_path)}
            for s in definition.skills
        ],
        "diagnostics": [
            {"type": d.type, "message": d.message, "path": d.path} for d in definition.diagnostics
        ],
        "skillCollisions": [
            {"name": c.name, "winnerPath": c.winner_path, "loserPath": c.loser_path}
            for c in definition.collisions
        ],
        "tools": [{"name": t.name, "source": t.source, "deferred": t.deferred} for t in tools],
        "deferredTools": [t.name for t in tools if t.deferred],
        "toolError": surface.toolset.error,
        "toolCollisions": [
            {"name": c.name, "source": c.source, "winner": c.winner}
            for c in [*surface.toolset.collisions, *surface.live.collisions]
        ],
        "toolFailures": [{"source": f.source, "error": f.error} for f in surface.toolset.failures],
        "toolWarnings": [*surface.toolset.warnings, *definition.warnings],
        "mcpServers": [
            {
                "name": name,
                "command": server.command,
                "args": list(server.args),
                "url": server.url,
                "transport": server.transport if server.url else "stdio",
                "tools": [t.name for t in mcp_tools if t.name.startswith(f"{name}__")],
            }
            for name, server in surface.config.mcp_servers.items()
        ],
        "mcpDiagnostics": surface.live.diagnostics(),
        "channels": _names(surface.agent_dir / "channels", "*.py"),
        "schedules": _schedules(surface),
        "scheduleFailures": [{"file": f.file, "error": f.error} for f in surface.schedules.failures],
        "selfSchedule": surface.config.self_schedule,
        "sessionControl": surface.config.session_control,
        "faces": surface.config.http.faces(),
        "approvals": _approvals(surface.config.approval.policy(), tools),
        "stateRoot": str(surface.state_root),
        "stateBackend": _backend(surface),
        "sessionsDir": str(surface.sessions_dir),
        "authPath": str(surface.auth_path),
        **_credential(surface),
        "name": surface.name,
    }
    assert tuple(doc) == INFO_KEYS
    return doc


def _approvals(policy: ApprovalPolicy, tools: list[Tool]) -> dict[str, Any]:
    """Which tools wait for a person: locally (``chat``, ``invoke``, a loopback bind) and when
    served beyond loopback (``start``/``dev`` on another address: the served default applies)."""

    def needs(which: ApprovalPolicy) -> list[dict[str, str]]:
        found = [(t.name, which.static(t.name, t.approval)) for t in tools]
        return [{"name": name, "when": when} for name, when in found if when is not None]

    return {
        "mode": policy.mode,
        "timeout": policy.timeout,
        "tools": list(policy.tools),
        "allowFrom": list(policy.answerers),
        "local": needs(policy),
        "served": needs(policy.served(loopback=False)),
    }


def _approval_line(doc: dict[str, Any]) -> str:
    def names(items: list[dict[str, str]]) -> str:
        return ", ".join(f"{i['name']} ({i['when']})" for i in items) or "none"

    local, served = names(doc["local"]), names(doc["served"])
    if local == served:
        return local
    return f"{local} locally; {served} when served beyond loopback"


def _backend(surface: AgentSurface) -> str:
    """Where state lives: ``files (<state root>)`` or ``postgres <url> (namespace <ns>)`` (never
    a password), or what is wrong with the configured database (info still exits 0)."""
    from fastagent_cli.errors import FastagentError

    try:
        return surface.backend.describe()
    except FastagentError as exc:
        return f"unusable: {exc.message}"


def _credential(surface: AgentSurface) -> dict[str, Any]:
    """Where the model's key comes from (never the key): ``credentialSource`` / ``credentialPath``."""
    from fastagent_cli.assembly import describe_credential
    from fastagent_cli.errors import FastagentError

    try:
        found = surface.credential()
    except FastagentError as exc:
        return {"credentialSource": f"cannot read: {exc.message}", "credentialPath": None}
    if found is None:
        return {"credentialSource": None, "credentialPath": None}
    model, credential = found
    path = str(credential.path) if credential.path is not None else None
    return {"credentialSource": describe_credential(model, credential), "credentialPath": path}


def _schedules(surface: AgentSurface) -> list[dict[str, Any]]:
    """Each loaded schedule with its next instant (``null`` when its cron never fires again)."""
    if not surface.schedules.schedules:
        return []
    from fastagent_cli.state.clock import system_clock

    now = system_clock().now()
    return [s.to_json(now) for s in surface.schedules.schedules]


async def _probe_mcp(surface: AgentSurface) -> list[Tool]:
    if not surface.config.mcp_servers:
        return []
    try:
        return await asyncio.wait_for(surface.live.mcp_tools(), _MCP_PROBE_TIMEOUT_S)
    except TimeoutError:
        return []
    finally:
        await surface.live.aclose()


def _print_text(doc: dict[str, Any]) -> None:
    from fastagent_cli.definition.config import HTTP_FACES

    def line(label: str, value: str) -> None:
        click.echo(f"{label + ':' if label else '':<13} {value}")

    line("agent", f"{doc['name']} ({doc['agentDir']})")
    line("workspace", doc["workspace"])
    if doc["hint"]:
        line("hint", doc["hint"])
    line("config", doc["configPath"])
    model = f"{doc['model']} (from {doc['modelSource']})" if doc["model"] else "(not set)"
    line("model", model)
    if doc["modelError"]:
        line("", f"⚠ {doc['modelError']}")
    line("thinking", doc["thinkingLevel"])
    if doc["credentialSource"] is not None:
        line("key", doc["credentialSource"])
    line("persona", doc["persona"] or "(none: default identity)")
    line("context", ", ".join(doc["context"]) or "(none)")
    line("skills", ", ".join(s["name"] for s in doc["skills"]) or "(none)")
    listed = [f"{t['name']} ({t['source']})" for t in doc["tools"] if not t["deferred"]]
    line("tools", ", ".join(listed) or "(none)")
    if doc["deferredTools"]:
        line("deferred", f"{', '.join(doc['deferredTools'])} (activated via search_tools)")
    for server in doc["mcpServers"]:
        found = ", ".join(server["tools"]) or "(no tools)"
        reach = server["url"] or f"{server['command']} {' '.join(server['args'])}".strip()
        line("mcp", f"{server['name']}: {reach} -> {found}")
    line("channels", ", ".join(doc["channels"]) or "(none)")
    shown = [f"{s['name']} (next {s['next'] or 'never'})" for s in doc["schedules"]]
    line("schedules", ", ".join(shown) or "(none)")
    line("selfSchedule", "on" if doc["selfSchedule"] else "off")
    if doc["faces"]:
        line("faces", ", ".join(f"{name} ({HTTP_FACES[name]})" for name in doc["faces"]))
    line("approval", _approval_line(doc["approvals"]))
    line("state", doc["stateRoot"])
    line("backend", doc["stateBackend"])
    line("sessions", doc["sessionsDir"])
    line("auth", doc["authPath"])
    warnings = [
        f'tool "{c["name"]}" ({c["source"]}) is shadowed by {c["winner"]}' for c in doc["toolCollisions"]
    ]
    warnings += [f"{f['source']}: {f['error']} (skipped)" for f in doc["toolFailures"]]
    warnings += [*doc["toolWarnings"], *([doc["toolError"]] if doc["toolError"] else [])]
    warnings += [f"{d['path']}: {d['message']}" for d in doc["diagnostics"]]
    warnings += [
        f'{c["loserPath"]}: name "{c["name"]}" collision (kept {c["winnerPath"]})'
        for c in doc["skillCollisions"]
    ]
    warnings += doc["mcpDiagnostics"]
    warnings += [f"{f['file']}: {f['error']} (skipped)" for f in doc["scheduleFailures"]]
    for warning in warnings:
        sys.stderr.write(f"[fastagent] warn: {warning}\n")


def _check(surface: AgentSurface, as_json: bool) -> None:
    from fastagent_cli.cli.info_check import find_problems

    problems = find_problems(surface)
    if as_json:
        click.echo(json.dumps({"problems": [p.to_json() for p in problems]}, indent=2, ensure_ascii=False))
    else:
        for problem in problems:
            click.echo(f"{problem.kind}: {problem.message}")
        count = len(problems)
        summary = f"{count} problem{'s' if count != 1 else ''}" if count else "no problems"
        click.echo(f"{summary} found in {surface.agent_dir}", err=bool(count))
    if problems:
        raise SystemExit(1)


@click.command(epilog=examples("info"))
@dir_argument
@click.option(
    "-j", "--json", "as_json", is_flag=True, help="Print one JSON document (see docs/info-json.md)."
)
@click.option(
    "--check",
    is_flag=True,
    help="Only report problems start or a turn would hit, one line each; exit 1 when any (for CI).",
)
@model_option
@sessions_dir_option
@auth_path_option
def info(
    directory: str,
    as_json: bool,
    check: bool,
    model: str | None,
    sessions_dir: str | None,
    auth_path: str | None,
) -> None:
    """Show what the agent in DIR (default .) assembles into, without serving it.

    --check reports instead every problem start would refuse or a turn would hit (no key, a
    broken tool file, an MCP server that does not start, an invalid schedule, a channel without
    its token), one line each, and exits 1 when it finds any.
    """
    from fastagent_cli.assembly import inspect_agent_dir
    from fastagent_cli.cli.common import run_async

    sys.dont_write_bytecode = True  # read-only: not even __pycache__ in the agent's tools/
    surface = inspect_agent_dir(directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path)
    definition = surface.definition()
    mcp_tools = run_async(_probe_mcp(surface))
    if check:
        _check(surface, as_json)
        return
    doc = info_document(surface, definition, mcp_tools)
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        _print_text(doc)
