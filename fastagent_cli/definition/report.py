"""What an opened agent directory reports: warning lines (tool collisions and load failures,
skill diagnostics, MCP servers that cannot start, schedule files skipped, settings this version
does not serve yet) and the startup lines of the serving commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastagent_cli.definition.prompt import LoadedDefinition

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface

__all__ = ["report_findings", "startup_lines"]

_RESERVED = {
    "session_control": "the session control plane",
}


def report_findings(surface: AgentSurface, definition: LoadedDefinition) -> list[str]:
    lines = [c.message for c in surface.toolset.collisions]
    lines += [f.message for f in surface.toolset.failures]
    lines += list(surface.toolset.warnings)
    if surface.toolset.error:
        lines.append(surface.toolset.error)
    lines += [f"{d.path}: {d.message}" for d in definition.diagnostics]
    lines += [f"{c.loser_path}: {c.message} (kept {c.winner_path})" for c in definition.collisions]
    lines += list(definition.warnings)
    lines += [c.message for c in surface.live.collisions]
    lines += surface.live.diagnostics()
    lines += [f.message for f in surface.schedules.failures]
    for key, feature in _RESERVED.items():
        if getattr(surface.config, key):
            lines.append(
                f"{key} = true: {feature} is not served by this version yet; the setting has no effect"
            )
    return lines


def startup_lines(
    surface: AgentSurface, definition: LoadedDefinition, model_spec: str | None, model_source: str | None
) -> list[str]:
    def row(label: str, value: str) -> str:
        return f"{label + ':':<11}{value}"

    tools = surface.live.mounted()
    listed = [t.name for t in tools if not t.deferred]
    deferred = [t.name for t in tools if t.deferred]
    lines = [row("agent", str(surface.agent_dir)), row("workspace", str(surface.workspace))]
    if surface.placement.hint:
        lines.append(surface.placement.hint)
    lines.append(row("config", str(surface.placement.config_path)))
    lines.append(row("model", f"{model_spec} (from {model_source})" if model_spec else "(not set)"))
    lines.append(row("persona", "persona.md" if definition.persona is not None else "(default identity)"))
    lines.append(row("context", ", ".join(str(f.path) for f in definition.context_files) or "(none)"))
    lines.append(row("skills", ", ".join(s.name for s in definition.skills) or "(none)"))
    lines.append(row("tools", ", ".join(listed) or "(none)"))
    if deferred:
        lines.append(row("deferred", f"{', '.join(deferred)} (activated via search_tools)"))
    if surface.config.mcp_servers:
        lines.append(row("mcp", ", ".join(surface.config.mcp_servers)))
    lines += [f"warn: {line}" for line in report_findings(surface, definition)]
    return lines
