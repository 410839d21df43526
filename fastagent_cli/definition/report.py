"""What an opened agent directory reports, as data: findings (tool collisions and load failures,
skill diagnostics, context warnings, MCP servers that cannot start, schedule files skipped) and
the summary rows the serving commands print when they start.

Hosts render these once (``warn: ...`` lines, log warnings, ``info`` output); nothing formats a
line to parse it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from fastagent_cli.definition.config import HTTP_FACES, FastagentConfig
from fastagent_cli.definition.live_tools import LiveTools
from fastagent_cli.definition.placement import Placement, display_name
from fastagent_cli.definition.prompt import LoadedDefinition
from fastagent_cli.definition.schedules import ScheduleSet
from fastagent_cli.definition.tools_loader import ToolSet

__all__ = ["Finding", "SummaryRow", "collect_findings", "format_row", "format_rows", "summary_rows"]

FindingKind: TypeAlias = Literal["tools", "skills", "context", "mcp", "schedules"]
SummaryRow: TypeAlias = tuple[str | None, str]
"""``(label, value)``; a row without a label is a line of its own (the placement hint)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem worth a warning; the agent still runs."""

    kind: FindingKind
    message: str

    def __str__(self) -> str:
        return self.message


def collect_findings(
    toolset: ToolSet,
    definition: LoadedDefinition,
    live: LiveTools,
    schedules: ScheduleSet,
) -> list[Finding]:
    found = [Finding("tools", c.message) for c in toolset.collisions]
    found += [Finding("tools", f.message) for f in toolset.failures]
    found += [Finding("tools", w) for w in toolset.warnings]
    if toolset.error:
        found.append(Finding("tools", toolset.error))
    found += [Finding("skills", f"{d.path}: {d.message}") for d in definition.diagnostics]
    found += [
        Finding("skills", f"{c.loser_path}: {c.message} (kept {c.winner_path})")
        for c in definition.collisions
    ]
    found += [Finding("context", w) for w in definition.warnings]
    found += [Finding("mcp", c.message) for c in live.collisions]
    found += [Finding("mcp", d) for d in live.diagnostics()]
    found += [Finding("schedules", f.message) for f in schedules.failures]
    return found


def summary_rows(
    placement: Placement,
    config: FastagentConfig,
    definition: LoadedDefinition,
    live: LiveTools,
    model_spec: str | None,
    model_source: str | None,
) -> list[SummaryRow]:
    tools = live.mounted()
    listed = [t.name for t in tools if not t.deferred]
    deferred = [t.name for t in tools if t.deferred]
    name = display_name(placement, config.name)
    rows: list[SummaryRow] = [
        ("agent", f"{name} ({placement.agent_dir})"),
        ("workspace", str(placement.workspace)),
    ]
    if placement.hint:
        rows.append((None, placement.hint))
    rows.append(("config", str(placement.config_path)))
    rows.append(("model", f"{model_spec} (from {model_source})" if model_spec else "(not set)"))
    rows.append(("persona", "persona.md" if definition.persona is not None else "(default identity)"))
    rows.append(("context", ", ".join(str(f.path) for f in definition.context_files) or "(none)"))
    rows.append(("skills", ", ".join(s.name for s in definition.skills) or "(none)"))
    rows.append(("tools", ", ".join(listed) or "(none)"))
    if deferred:
        rows.append(("deferred", f"{', '.join(deferred)} (activated via search_tools)"))
    if config.mcp_servers:
        rows.append(("mcp", ", ".join(config.mcp_servers)))
    faces = config.http.faces()
    if faces:
        rows.append(("faces", ", ".join(f"{name} ({HTTP_FACES[name]})" for name in faces)))
    code_mode = live.code_mode_summary()
    if code_mode is not None:
        rows.append(("code mode", code_mode))
    return rows


def format_row(row: SummaryRow) -> str:
    label, value = row
    return value if label is None else f"{label + ':':<11}{value}"


def format_rows(rows: Sequence[SummaryRow]) -> list[str]:
    return [format_row(row) for row in rows]
