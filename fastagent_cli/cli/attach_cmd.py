"""``fastagent attach <session> [dir] [--url URL --token TOKEN]``: the chat's terminal UI on a
session that a serve runs (``fastagent start`` / ``dev`` with ``session_control = true``).

Without ``--url`` the endpoint and its token come from ``<state root>/control.json`` of the agent in
DIR (the serve writes it at start and removes it on exit), read again after a failure so a
restarted serve is found. With ``--url`` (a remote serve) the token is ``--token`` or
``FASTAGENT_CONTROL_TOKEN``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from fastagent_cli.cli.common import dir_argument, run_async
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import ServeError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["attach"]


@click.command(epilog=examples("attach"))
@click.argument("session")
@dir_argument
@click.option("--url", help="A remote serve's base URL (e.g. https://agent.example.com); skips control.json.")
@click.option("--token", help="The remote serve's control token (default: $FASTAGENT_CONTROL_TOKEN).")
@click.option(
    "--history",
    type=click.IntRange(min=0),
    default=40,
    show_default=True,
    help="How many entries of the session's history to show when attaching.",
)
def attach(session: str, directory: str, url: str | None, token: str | None, history: int) -> None:
    """Attach to SESSION of the serve running the agent in DIR (default .).

    Shows the session's history, then its runs live. A typed line steers the running answer, or
    starts a run when none is active; Alt+Enter queues a follow-up while a run streams; /abort
    stops the run; /commands lists the agent's skills; chat's /model, /thinking, /compact,
    /navigate and /attach work too; y/n/a answers a tool call waiting for approval. Ctrl+C
    detaches (a run this attach started is cancelled).
    """
    from fastagent_cli.chat.attach import Endpoint
    from fastagent_cli.chat.attach import attach as run_attach

    if not session.strip():
        raise UsageError("SESSION cannot be empty")
    endpoint = None
    if url is not None:
        token = token or os.environ.get("FASTAGENT_CONTROL_TOKEN", "").strip() or None
        if not url.strip() or token is None:
            raise UsageError("--url needs a token: --token TOKEN or FASTAGENT_CONTROL_TOKEN")
        from fastagent_cli.remote import control_url

        try:
            endpoint = Endpoint(control_url(url), token)
        except ValueError as exc:
            raise UsageError(f"--url: {exc}") from None
    elif token is not None:
        raise UsageError("--token goes with --url (a local serve's token is read from control.json)")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("attach needs a terminal (stdin and stdout must be a TTY)")
    if endpoint is not None:
        code = run_async(run_attach(session, endpoint=endpoint, discover=None, history=history))
    else:
        code = run_async(_attach_local(session, directory, history))
    if code:
        raise SystemExit(code)


async def _attach_local(session: str, directory: str, history: int) -> int:
    from fastagent_cli.assembly import locate_agent
    from fastagent_cli.chat.attach import Endpoint
    from fastagent_cli.chat.attach import attach as run_attach
    from fastagent_cli.chat.launch import HISTORY_NAME
    from fastagent_cli.serving.control import read_control_file

    location = locate_agent(directory)
    if location is None:
        raise UsageError(
            f"no agent at {directory} (attach reads the control.json of a serve there; "
            "pass --url and --token for a remote serve)"
        )
    state_root = location.state_root

    def discover() -> Endpoint | None:
        found = read_control_file(state_root)
        return None if found is None else Endpoint(found[0], found[1])

    endpoint = discover()
    if endpoint is None:
        _refuse_without_a_plane(location.placement.config_path, state_root)
    return await run_attach(
        session,
        endpoint=endpoint,
        discover=discover,
        history=history,
        history_path=state_root / HISTORY_NAME,
        source=str(state_root / "control.json"),
    )


def _refuse_without_a_plane(config_path: Path, state_root: Path) -> None:
    """Nothing serves the agent (no ``control.json``): wait for a serve (attach's startup budget)
    only when one of this config would have a control plane; otherwise say so at once."""
    from fastagent_cli.definition.config import load_config

    config = load_config(config_path)
    if config.session_control or config.http.web_chat is True:
        return  # a serve of it is starting or restarting: attach waits for its control.json
    where = config_path.parent
    if config.session_control_refused or config.http.web_chat is False:
        said = "session_control = false" if config.session_control_refused else "[http] web_chat = false"
        raise ServeError(
            f"nothing to attach to: {config_path} says {said}, so a serve of {where} has no "
            "control plane; set session_control = true and run `fastagent start` (or `fastagent dev`)"
        )
    raise ServeError(
        f"nothing serves {where} (no {state_root / 'control.json'}): run `fastagent dev` there (its "
        "web chat brings the control plane), or set session_control = true for `fastagent start`"
    )
