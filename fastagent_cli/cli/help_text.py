"""The examples at the foot of every command's ``--help`` (click's epilog), in one table so they
stay in one voice and ``tests/cli/test_help.py`` can check that none is missing."""

from __future__ import annotations

__all__ = ["EXAMPLES", "examples"]

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("fastagent init bot && cd bot && fastagent chat", 'fastagent invoke "What can you do?"'),
    "add": ("fastagent add skill ./skills/review", "fastagent add telegram"),
    "add skill": ("fastagent add skill ./path/to/my-skill", "fastagent add skill my-skill --update"),
    "add github": ("fastagent add github", "fastagent add github ./bot"),
    "add telegram": ("fastagent add telegram", "fastagent add telegram ./bot"),
    "add slack": ("fastagent add slack", "fastagent add slack --no-onboard"),
    "add feishu": ("fastagent add feishu", "fastagent add feishu --ingress webhook"),
    "add lark": ("fastagent add lark", "fastagent add lark --ingress webhook"),
    "attach": ("fastagent attach s1", "fastagent attach s1 --url https://agent.example.com --token $TOKEN"),
    "chat": ("fastagent chat", "fastagent chat -c", "fastagent chat -m anthropic/claude-sonnet-4-5 -s work"),
    "completion": ("fastagent completion bash > ~/.local/share/bash-completion/completions/fastagent",),
    "db": ("fastagent db status", "fastagent db migrate"),
    "db status": ("fastagent db status", "fastagent db status -j"),
    "db migrate": ("fastagent db migrate",),
    "db import": ("fastagent db import", "fastagent db import ./bot -j"),
    "deploy": ("fastagent deploy docker", "fastagent deploy fly --run"),
    "dev": ("fastagent dev", "fastagent dev --port 9000 -m scripted/echo"),
    "fire": ("fastagent fire nightly", "fastagent fire nightly ./bot -j"),
    "help": ("fastagent help sessions list", "fastagent help invoke"),
    "info": ("fastagent info", "fastagent info ./bot -j"),
    "init": ("fastagent init bot", "fastagent init bot --minimal -m anthropic/claude-sonnet-4-5"),
    "invoke": (
        'fastagent invoke "Summarize README.md"',
        "git diff | fastagent invoke - -m openai/gpt-5-mini",
        'fastagent invoke "And the tests?" -c',
        "fastagent invoke \"Who wrote it?\" --schema 'name str, year int'",
    ),
    "login": ("fastagent login", "fastagent login anthropic", "fastagent login mcp:linear"),
    "logout": ("fastagent logout anthropic", "fastagent logout mcp:linear"),
    "models": ("fastagent models", "fastagent models claude", "fastagent models -j"),
    "schedule": ("fastagent schedule list", "fastagent schedule history nightly"),
    "schedule list": ("fastagent schedule list", "fastagent schedule list ./bot -j"),
    "schedule history": ("fastagent schedule history nightly", "fastagent schedule history wake -j"),
    "schedule cancel": ("fastagent schedule cancel 0b7c1f2e",),
    "sessions": ("fastagent sessions list", "fastagent sessions show <id>"),
    "sessions list": ("fastagent sessions list", "fastagent sessions list --limit 5 -j"),
    "sessions show": ("fastagent sessions show <id>",),
    "sessions export": (
        "fastagent sessions export <id> -o chat.md",
        "fastagent sessions export <id> > chat.jsonl",
    ),
    "sessions import": (
        "fastagent sessions import ~/.pi/agent/sessions --all",
        "fastagent sessions import ../other-bot",
    ),
    "mcp": (
        "fastagent mcp ~/agents/my-agent",
        "fastagent mcp ./bot --model openai/gpt-4.1",
    ),
    "start": ("fastagent start", "PORT=9000 fastagent start ./bot"),
    "usage": ("fastagent usage --since 7d", "fastagent usage --by session -j", "fastagent usage -s <id>"),
    "tool": (
        'fastagent tool read \'{"path": "README.md"}\'',
        'fastagent tool fetch_url \'{"url": "https://example.com"}\' -j',
    ),
}
"""Command path (``""`` for ``fastagent`` itself, ``"schedule list"``) -> example command lines."""


def examples(path: str) -> str:
    """The epilog of the command at ``path``: its examples, kept as written (click's ``\\b``)."""
    lines = "\n".join(f"  {line}" for line in EXAMPLES[path])
    return f"\b\nExamples:\n{lines}"
