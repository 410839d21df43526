"""What a Claude Pro/Max subscription token (``sk-ant-oat...``) requires of a Messages request.

Anthropic serves subscription tokens only to Claude Code, so such a request identifies as it
(pi-engine §4.2): the token goes out as ``Authorization: Bearer`` with the Claude Code beta flags
and user agent, the system prompt opens with Claude Code's identity line, and tools whose names
match a Claude Code tool case-insensitively are sent in its casing (``read`` → ``Read``) and
mapped back to the agent's own name when the model calls them.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CLAUDE_CODE_IDENTITY",
    "from_claude_code_name",
    "is_oauth_token",
    "oauth_headers",
    "to_claude_code_name",
]

CLAUDE_CODE_VERSION = "2.1.75"
CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
OAUTH_TOKEN_MARKER = "sk-ant-oat"
_BETAS = ("claude-code-20250219", "oauth-2025-04-20", "fine-grained-tool-streaming-2025-05-14")
_TOOLS = (
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
)
_BY_LOWER = {name.lower(): name for name in _TOOLS}


def is_oauth_token(key: str | None) -> bool:
    return bool(key) and OAUTH_TOKEN_MARKER in (key or "")


def oauth_headers(token: str) -> dict[str, str]:
    return {
        "authorization": f"Bearer {token}",
        "anthropic-beta": ",".join(_BETAS),
        "user-agent": f"claude-cli/{CLAUDE_CODE_VERSION}",
        "x-app": "cli",
        "anthropic-dangerous-direct-browser-access": "true",
    }


def to_claude_code_name(name: str) -> str:
    return _BY_LOWER.get(name.lower(), name)


def from_claude_code_name(name: str, tools: Iterable[str]) -> str:
    """The agent's tool the model meant (matched case-insensitively), else ``name`` unchanged."""
    lowered = name.lower()
    return next((tool for tool in tools if tool.lower() == lowered), name)
