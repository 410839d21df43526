"""What a protocol face says about the agent it serves: its name, a description from the persona,
and its skills (an MCP server's ``serverInfo`` and prompts, an A2A agent card)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli._version import __version__
from fastagent_cli.assembly import OpenedAgent

__all__ = ["AgentIdentity", "SkillInfo", "describe_persona", "identity_of"]

DESCRIPTION_MAX_CHARS = 300


@dataclass(frozen=True, slots=True)
class SkillInfo:
    name: str
    description: str
    path: Path

    async def instructions(self) -> str:
        """The skill file's body (its frontmatter taken off), read off the event loop."""
        text = await asyncio.to_thread(self.path.read_text, encoding="utf-8", errors="replace")
        return strip_frontmatter(text)


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    name: str
    description: str
    version: str
    opened: OpenedAgent

    def skills(self) -> list[SkillInfo]:
        """The skills as the next turn sees them (re-read when a skill file changes)."""
        return [SkillInfo(s.name, s.description, s.file_path) for s in self.opened.skills()]


def identity_of(opened: OpenedAgent) -> AgentIdentity:
    persona = opened.definition().persona
    return AgentIdentity(opened.name, describe_persona(opened.name, persona), __version__, opened)


def describe_persona(name: str, persona: str | None) -> str:
    """The persona's first paragraph of prose (headings and On Start left out), at most
    :data:`DESCRIPTION_MAX_CHARS`; without a persona, a plain sentence naming the agent."""
    paragraph: list[str] = []
    for raw in (persona or "").splitlines():
        line = raw.strip()
        if line.startswith(("#", "---")):
            if paragraph:
                break
            continue
        if not line:
            if paragraph:
                break
            continue
        paragraph.append(line)
    text = " ".join(paragraph)
    if not text:
        return f"The {name} agent, served by fastagent."
    if len(text) > DESCRIPTION_MAX_CHARS:
        text = text[: DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"
    return text


def strip_frontmatter(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end >= 0:
            return text[end + 4 :].lstrip("\n")
    return text
