"""``fastagent mcp [dir]``: serve the agent as an MCP server on stdin/stdout.

For clients that launch their servers (Claude Code: ``claude mcp add <name> -- fastagent mcp
DIR``; Claude Desktop and editors: the same command in their JSON config). stdout carries the
protocol only (claimed first: a tool's output goes to stderr), stdin is the protocol's (tools'
processes get ``/dev/null``), and nothing ever prompts: a missing model fails with its one-line
error. The process ends with status 0 when the client closes stdin; SIGTERM / SIGINT stop the
running turns first.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

import click

from fastagent_cli.cli.common import (
    auth_path_option,
    claim_stdout,
    dir_argument,
    model_option,
    run_async,
    sessions_dir_option,
)
from fastagent_cli.cli.help_text import examples

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface

__all__ = ["mcp"]


def _claim_stdin() -> BinaryIO:
    """A private stream on the original stdin; fd 0 becomes ``/dev/null`` for everything else."""
    private = os.dup(sys.stdin.fileno())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, sys.stdin.fileno())
    os.close(devnull)
    return os.fdopen(private, "rb")


async def _serve(surface: AgentSurface, stdin: BinaryIO, stdout: TextIO) -> None:
    from fastagent_cli.assembly import open_agent
    from fastagent_cli.serving.faces import FACE_MODULES

    face = importlib.import_module(FACE_MODULES["mcp"])  # a face is loaded by name
    opened = open_agent(surface)
    try:
        await opened.connect()
        serving = asyncio.ensure_future(face.serve_opened(opened, stdin, stdout))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, serving.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        await opened.aclose()


@click.command("mcp", epilog=examples("mcp"))
@dir_argument
@model_option
@sessions_dir_option
@auth_path_option
def mcp(directory: str, **rest: Any) -> None:
    """Serve the agent in DIR (default .) as an MCP server on stdio (tool: ask).

    Add it to Claude Code with: claude mcp add my-agent -- fastagent mcp DIR
    """
    from fastagent_cli.assembly import inspect_agent_dir
    from fastagent_cli.cli.model_picker import ensure_model
    from fastagent_cli.logging_setup import configure_logging

    stdout = claim_stdout()
    stdin = _claim_stdin()
    configure_logging("warning")
    surface = inspect_agent_dir(
        directory, model=rest["model"], sessions_dir=rest["sessions_dir"], auth_path=rest["auth_path"]
    )
    ensure_model(surface, no_input=True)
    run_async(_serve(surface, stdin, stdout))
