"""The directory agent's system prompt: four segments (core design section 2), fresh every turn.

1. engine base and identity: ``persona.md`` replaces the default identity line; ``Available
   tools:`` lists the mounted non-deferred tools; a note points at ``search_tools`` when deferred
   tools exist; then the guidelines;
2. project context: the ``AGENTS.md`` files, each wrapped ``<project_instructions path="...">``
   inside one ``<project_context>`` block;
3. the skills listing in pi's ``<available_skills>`` form, only when ``read`` is mounted;
4. runtime context: ``Current working directory: <workspace>``, and no date (a date line would
   invalidate the provider's prompt cache every day).

:class:`DefinitionPrompt` is the per-turn callable. It re-reads the definition only when a stat
of the files it depends on changed (see :mod:`.freshness`), so an unchanged definition costs a
few ``stat`` calls; a definition broken by an edit raises for that turn only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.definition.context import (
    PERSONA_FILE,
    ContextFile,
    context_candidates,
    load_context_files,
    read_persona,
)
from fastagent_cli.definition.freshness import Fingerprint, fingerprint
from fastagent_cli.definition.on_start import split_on_start
from fastagent_cli.definition.placement import check_containment
from fastagent_cli.definition.skills import (
    Skill,
    SkillCollision,
    SkillDiagnostic,
    format_skills_for_prompt,
    load_skills,
)
from fastagent_cli.tools.base import Tool

__all__ = [
    "CODING_IDENTITY",
    "DEFAULT_IDENTITY",
    "DefinitionPrompt",
    "LoadedDefinition",
    "base_prompt",
    "project_context",
    "system_prompt",
]

log = logging.getLogger("fastagent.definition")

CODING_IDENTITY = (
    "You are an expert coding assistant operating inside fastagent, an agent harness. You help users "
    "by reading files, executing commands, editing code, and writing new files."
)
DEFAULT_IDENTITY = (
    "You are an AI assistant operating inside fastagent, an agent harness. Help users using only the "
    "tools and context available to you."
)
_CODING = ("read", "bash", "edit", "write")


def _snippet(tool: Tool) -> str:
    text = tool.prompt_snippet or tool.description or ""
    return text.strip().split("\n", 1)[0].strip()


def _guidelines(names: set[str]) -> list[str]:
    lines: list[str] = []
    if "bash" in names and not names & {"grep", "find", "ls"}:
        lines.append("Use bash for file operations like ls, rg, find")
    elif "bash" in names:
        lines.append("Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)")
    if "read" in names and "edit" in names:
        lines.append(
            "Use read to examine files before editing. You must use this tool instead of cat or sed."
        )
    if "edit" in names:
        lines.append("Use edit for precise changes (old text must match exactly)")
    if "write" in names:
        lines.append("Use write only for new files or complete rewrites")
    if "edit" in names or "write" in names:
        lines.append(
            "When summarizing your actions, output plain text directly - do NOT use cat or bash to "
            "display what you did"
        )
    lines += ["Be concise in your responses", "Show file paths clearly when working with files"]
    return lines


def base_prompt(tools: Sequence[Tool], persona: str | None = None) -> str:
    """Segment 1: identity, the non-deferred tool list, the discovery note, the guidelines."""
    names = {t.name for t in tools}
    listed = [t for t in tools if not t.deferred]
    deferred = len(tools) - len(listed)
    identity = (persona or "").strip() or (
        CODING_IDENTITY if all(n in names for n in _CODING) else DEFAULT_IDENTITY
    )
    tool_lines = "\n".join(f"- {t.name}: {_snippet(t)}" for t in listed) or "(none)"
    note = (
        f"\n\n{deferred} additional tool(s) are registered but inactive — use search_tools to discover "
        "and activate them before concluding a capability is missing."
        if deferred
        else ""
    )
    guidelines = "\n".join(f"- {line}" for line in _guidelines(names))
    return (
        f"{identity}\n\nAvailable tools:\n{tool_lines}{note}\n\n"
        "In addition to the tools above, you may have access to other custom tools depending on the "
        f"project.\n\nGuidelines:\n{guidelines}"
    )


def project_context(files: Sequence[ContextFile]) -> str:
    """Segment 2 (pi's exact wrapping), or ``""`` without context files."""
    if not files:
        return ""
    parts = ["\n\n<project_context>\n\nProject-specific instructions and guidelines:\n\n"]
    for file in files:
        path = file.path.as_posix()
        parts.append(f'<project_instructions path="{path}">\n{file.content}\n</project_instructions>\n\n')
    parts.append("</project_context>\n")
    return "".join(parts)


def system_prompt(
    tools: Sequence[Tool],
    workspace: Path,
    *,
    persona: str | None = None,
    context_files: Sequence[ContextFile] = (),
    skills: Sequence[Skill] = (),
) -> str:
    """The whole prompt from its parts (pure)."""
    prompt = base_prompt(tools, persona) + project_context(context_files)
    if any(t.name == "read" for t in tools):
        prompt += format_skills_for_prompt(skills)
    return prompt + f"\nCurrent working directory: {workspace.as_posix()}"


@dataclass(frozen=True, slots=True)
class LoadedDefinition:
    """One read of the definition: what ``info`` reports and what the prompt was built from."""

    agent_dir: Path
    workspace: Path
    persona: str | None
    context_files: tuple[ContextFile, ...]
    skills: tuple[Skill, ...]
    diagnostics: tuple[SkillDiagnostic, ...]
    collisions: tuple[SkillCollision, ...]
    warnings: tuple[str, ...]
    system_prompt: str
    on_start: str | None = None
    """The ``On Start`` sections of ``persona.md`` and the agent's ``AGENTS.md``, taken out of the
    prompt (see :mod:`.on_start`)."""

    @property
    def persona_path(self) -> Path | None:
        return self.agent_dir / PERSONA_FILE if self.persona is not None else None


ToolsSource = Callable[[], Sequence[Tool]]


def _without_on_start(
    agent_dir: Path, persona: str | None, files: list[ContextFile]
) -> tuple[str | None, list[ContextFile], str | None]:
    """Take the On Start sections out of ``persona.md`` and the agent's own context file."""
    sections: list[str] = []
    if persona is not None:
        persona, section = split_on_start(persona)
        persona = persona.strip() or None
        if section:
            sections.append(section)
    kept: list[ContextFile] = []
    for file in files:
        if file.path.parent == agent_dir:
            content, section = split_on_start(file.content)
            if section:
                sections.append(section)
                file = ContextFile(file.path, content)
        kept.append(file)
    return persona, kept, "\n\n".join(sections) or None


class DefinitionPrompt:
    """The per-turn system prompt of a directory agent (a ``() -> str`` for the engine)."""

    def __init__(self, agent_dir: Path, workspace: Path, tools: Sequence[Tool] | ToolsSource = ()) -> None:
        self.agent_dir = agent_dir
        self.workspace = workspace
        if callable(tools):
            self._tools: ToolsSource = tools
        else:
            fixed = list(tools)
            self._tools = lambda: fixed
        self._static = [p for group in context_candidates(agent_dir, workspace) for p in group]
        self._static.append(agent_dir / PERSONA_FILE)
        self._cached: LoadedDefinition | None = None
        self._stamp: Fingerprint | None = None
        self._paths: list[Path] = []
        self._tool_key: tuple[tuple[str, bool, str], ...] = ()
        self._reported: tuple[str, ...] = ()
        self.loads = 0

    def __call__(self) -> str:
        return self.snapshot().system_prompt

    def snapshot(self) -> LoadedDefinition:
        """The current definition: re-read only when a watched file changed."""
        tools = list(self._tools())
        key = tuple((t.name, t.deferred, _snippet(t)) for t in tools)
        if self._cached is not None and self._stamp is not None and self._stamp.still_valid(self._paths):
            if key == self._tool_key:
                return self._cached
            self._tool_key = key
            self._cached = self._render(self._cached, tools)
            return self._cached
        return self._load(tools, key)

    def _load(self, tools: list[Tool], key: tuple[tuple[str, bool, str], ...]) -> LoadedDefinition:
        check_containment(self.agent_dir)
        warnings: list[str] = []
        persona, files, on_start = _without_on_start(
            self.agent_dir,
            read_persona(self.agent_dir),
            load_context_files(self.agent_dir, self.workspace, warnings.append),
        )
        found = load_skills(self.agent_dir / "skills")
        paths = [*self._static, *found.consulted]
        stamp = fingerprint(paths)
        loaded = LoadedDefinition(
            self.agent_dir,
            self.workspace,
            persona,
            tuple(files),
            tuple(found.skills),
            tuple(found.diagnostics),
            tuple(found.collisions),
            tuple(warnings),
            "",
            on_start,
        )
        self.loads += 1
        self._cached = self._render(loaded, tools)
        self._stamp, self._paths, self._tool_key = stamp, paths, key
        self._report(self._cached)
        return self._cached

    def _render(self, loaded: LoadedDefinition, tools: Sequence[Tool]) -> LoadedDefinition:
        text = system_prompt(
            tools,
            self.workspace,
            persona=loaded.persona,
            context_files=loaded.context_files,
            skills=loaded.skills,
        )
        return LoadedDefinition(
            loaded.agent_dir,
            loaded.workspace,
            loaded.persona,
            loaded.context_files,
            loaded.skills,
            loaded.diagnostics,
            loaded.collisions,
            loaded.warnings,
            text,
            loaded.on_start,
        )

    def _report(self, loaded: LoadedDefinition) -> None:
        """Log findings once per change, not once per turn."""
        lines = tuple(
            [f"skill {d.path}: {d.message}" for d in loaded.diagnostics]
            + [f"skill {c.loser_path}: {c.message} (kept {c.winner_path})" for c in loaded.collisions]
            + list(loaded.warnings)
        )
        if lines != self._reported:
            for line in lines:
                if line not in self._reported:
                    log.warning("[fastagent] %s", line)
            self._reported = lines
