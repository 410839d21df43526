"""``fastagent login mcp:<name> [DIR]``: OAuth for a remote MCP server of the agent in DIR.

The server is ``[mcp_servers.<name>]`` of the agent's ``fastagent.toml`` (a ``url`` server); the
flow is :mod:`fastagent_cli.auth.mcp.login`. It reads nothing from the terminal, so it runs from a
script too: it prints the URL to open (stdout), opens a browser where one can appear (not with
``--no-browser``), and waits for the redirect to its loopback port for ``--timeout`` seconds. The
login goes to the agent's credential file (the same ``auth.json`` as the provider logins);
``fastagent logout mcp:<name>`` removes it.
"""

from __future__ import annotations

import asyncio

import click

from fastagent_cli.cli.common import say
from fastagent_cli.errors import UsageError

__all__ = ["login_mcp_server"]


def login_mcp_server(
    name: str, directory: str, auth_path: str | None, *, browser: bool, timeout: float
) -> None:
    from fastagent_cli.assembly import login_target
    from fastagent_cli.auth.mcp.login import login_mcp
    from fastagent_cli.auth.store import AuthStore
    from fastagent_cli.cli.oauth_login import TerminalLoginUI
    from fastagent_cli.definition.config import CONFIG_NAME, load_config

    target = login_target(directory, auth_path)
    if target.placement is None:
        raise UsageError(f"mcp:{name} is a server of an agent, and there is no agent in {directory}")
    toml = target.placement.agent_dir / CONFIG_NAME
    servers = load_config(toml).mcp_servers
    server = servers.get(name)
    if server is None:
        known = f"its servers: {', '.join(servers)}" if servers else "it has no [mcp_servers]"
        raise UsageError(f'no MCP server "{name}" in {toml} ({known})')
    if server.url is None:
        raise UsageError(
            f'MCP server "{name}" is a command the agent starts; only url servers log in with OAuth'
        )
    say(f"[fastagent] credential file of the agent {target.placement.agent_dir}: {target.path}")
    store = AuthStore(target.path)
    try:
        asyncio.run(login_mcp(name, server, store, TerminalLoginUI(), timeout_s=timeout, browser=browser))
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise click.Abort() from None
    say(f"[fastagent] logged in to MCP server {name}; saved to {store.path}")
