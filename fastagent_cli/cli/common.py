"""Helpers every command shares: option groups, running a coroutine, stderr lines."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TextIO, TypeVar

import click

from fastagent_cli.cli.completers import agent_dirs, model_specs

__all__ = [
    "auth_path_option",
    "claim_stdout",
    "dir_argument",
    "log_format_option",
    "model_option",
    "nearest_agent",
    "run_async",
    "say",
    "sessions_dir_option",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _set_log_format(_ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:  # through the environment: a dev worker and a schedule host inherit it
        os.environ["FASTAGENT_LOG_FORMAT"] = value


log_format_option = click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    expose_value=False,
    is_eager=True,
    callback=_set_log_format,
    help="Log lines on stderr as text or one JSON object per line (FASTAGENT_LOG_FORMAT).",
)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def say(line: str) -> None:
    """A diagnostic line on stderr (stdout stays clean for answers and JSON)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def claim_stdout() -> TextIO:
    """Keep stdout for this command's own output (an answer, ``--json`` events).

    Returns a stream on the original stdout; from then on the process's stdout, at the Python
    level (``print`` in a tool) and at the descriptor (a process a tool starts, a C library), is
    stderr, so nothing else lands between the answer's lines. Call it once, after any prompt.
    """
    sys.stdout.flush()
    original = sys.stdout
    out = os.fdopen(
        os.dup(original.fileno()),
        "w",
        encoding=getattr(original, "encoding", None) or "utf-8",
        errors=getattr(original, "errors", None) or "strict",
    )
    os.dup2(sys.stderr.fileno(), original.fileno())
    sys.stdout = sys.stderr
    return out


def color(stream: Any = None) -> bool:
    target = stream or sys.stderr
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(target, "isatty", lambda: False)())


def nearest_agent(ctx: click.Context | None, _param: click.Parameter | None, value: str) -> str:
    """DIR as given, or, when it holds no agent, the nearest agent above it (the way git finds its
    repository; see :func:`~fastagent_cli.definition.placement.find_agent_above`), said on stderr."""
    from fastagent_cli.definition.placement import find_agent_above

    if ctx is not None and ctx.resilient_parsing:
        return value  # shell completion: no lines on the user's prompt
    found = find_agent_above(value)
    if found is None:
        return value
    below = "this directory" if Path(value).resolve() == Path.cwd().resolve() else str(Path(value).resolve())
    say(f"[fastagent] agent: {found.agent_dir} (the nearest agent above {below})")
    return str(found.target)


def dir_argument(fn: F) -> F:
    return click.argument(
        "directory",
        required=False,
        default=".",
        metavar="[DIR]",
        shell_complete=agent_dirs,
        callback=nearest_agent,
    )(fn)


def model_option(fn: F) -> F:
    return click.option(
        "-m",
        "--model",
        "model",
        help="Model spec provider/model (overrides config).",
        shell_complete=model_specs,
    )(fn)


def sessions_dir_option(fn: F) -> F:
    return click.option(
        "--sessions-dir",
        help="Where session records live (default FASTAGENT_SESSIONS_DIR, else <state>/sessions).",
    )(fn)


def auth_path_option(fn: F) -> F:
    return click.option("--auth-path", help="Credential file to read (default <state>/auth.json).")(fn)
