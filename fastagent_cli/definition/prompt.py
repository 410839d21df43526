"""The directory agent's system prompt, re-read every turn.

Segments (core design section 2): (1) engine base and identity, where ``persona.md`` replaces the
default identity line; (4) runtime context: the working directory only, no date (a date line
would invalidate the provider's prompt cache every day).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastagent_cli.errors import ConfigError

__all__ = ["DEFAULT_IDENTITY", "DefinitionPrompt"]

DEFAULT_IDENTITY = (
    "You are a helpful AI assistant operating inside fastagent, an agent harness. "
    "You help users by answering questions and using the tools available to you."
)


class DefinitionPrompt:
    def __init__(self, agent_dir: Path, workspace: Path, tool_names: Sequence[str] = ()) -> None:
        self.agent_dir = agent_dir
        self.workspace = workspace
        self.tool_names = list(tool_names)

    def persona(self) -> str | None:
        path = self.agent_dir / "persona.md"
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        return text or None

    def __call__(self) -> str:
        parts = [self.persona() or DEFAULT_IDENTITY]
        if self.tool_names:
            parts.append("Available tools:\n" + "\n".join(f"- {n}" for n in self.tool_names))
        parts.append(f"Current working directory: {self.workspace.as_posix()}")
        return "\n\n".join(parts)
