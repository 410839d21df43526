"""The ``fastagent`` command line: a click tree whose commands import their work lazily.

:data:`COMMANDS` is the command table: name -> ``(module:attribute, one-line help)``. ``--help``
lists commands from it without importing them; a command's module is imported only when that
command runs. Nothing here imports click.
"""

from __future__ import annotations

__all__ = ["COMMANDS"]

COMMANDS: dict[str, tuple[str, str]] = {
    "add": (
        "fastagent_cli.cli.add_cmd:add",
        "Add a skill or a channel (telegram, slack, github, feishu, lark) to the agent.",
    ),
    "attach": (
        "fastagent_cli.cli.attach_cmd:attach",
        "Attach the chat's terminal UI to a live session of a serve.",
    ),
    "chat": ("fastagent_cli.cli.chat_cmd:chat", "Chat with the agent in the terminal."),
    "completion": (
        "fastagent_cli.cli.completion_cmd:completion",
        "Print the shell completion script (bash, zsh, fish).",
    ),
    "db": (
        "fastagent_cli.cli.db_cmd:db",
        "The shared state database: status, migrate, import file sessions.",
    ),
    "deploy": (
        "fastagent_cli.cli.deploy_cmd:deploy",
        "Generate (and with --run, drive) a Docker, Fly.io or Railway deploy.",
    ),
    "dev": ("fastagent_cli.cli.serve_cmd:dev", "Serve the agent and restart it when its code changes."),
    "fire": ("fastagent_cli.cli.fire_cmd:fire", "Run one schedule's turn now (schedules/<name>.toml)."),
    "help": (
        "fastagent_cli.cli.help_cmd:help_command",
        "Show a command's help (fastagent help sessions list).",
    ),
    "info": ("fastagent_cli.cli.info_cmd:info", "Show what the agent directory assembles into."),
    "init": ("fastagent_cli.cli.init_cmd:init", "Create an agent directory that runs at once."),
    "invoke": ("fastagent_cli.cli.invoke_cmd:invoke", "Run one turn and print the answer."),
    "login": ("fastagent_cli.cli.login_cmd:login", "Log in with a subscription or store a verified API key."),
    "logout": ("fastagent_cli.cli.login_cmd:logout", "Remove a stored provider credential."),
    "mcp": (
        "fastagent_cli.cli.mcp_cmd:mcp",
        "Serve the agent as an MCP server on stdio (Claude Code, Claude Desktop, editors).",
    ),
    "models": ("fastagent_cli.cli.models_cmd:models", "List the built-in model catalog."),
    "schedule": (
        "fastagent_cli.cli.schedule_cmd:schedule",
        "List schedules and wake-ups, show run history, cancel a wake-up.",
    ),
    "sessions": (
        "fastagent_cli.cli.sessions_cmd:sessions",
        "List, show, export and import stored sessions.",
    ),
    "start": ("fastagent_cli.cli.serve_cmd:start", "Serve the agent over HTTP (POST /invoke, GET /health)."),
    "usage": (
        "fastagent_cli.cli.usage_cmd:usage",
        "Show what the model requests used and cost, and what the limits leave.",
    ),
    "tool": ("fastagent_cli.cli.tool_cmd:tool", "Run one tool directly with JSON arguments."),
}
