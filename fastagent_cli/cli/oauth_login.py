"""Running a subscription login (see :mod:`fastagent_cli.auth.oauth`) in the terminal.

Instructions the user acts on (the URL to open, the device code) go to stdout with the prompts;
status lines go to stderr. The browser is opened only where one can appear: ``$BROWSER`` if set,
``open`` on macOS, ``xdg-open`` under X11/Wayland, never a text browser that would take over this
terminal. Ctrl+C or Ctrl+D anywhere aborts the login and saves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import click

from fastagent_cli.cli.common import say

if TYPE_CHECKING:
    from fastagent_cli.auth.oauth import OAuthProvider
    from fastagent_cli.auth.store import AuthStore
    from fastagent_cli.models.registry import ProviderInfo

__all__ = ["TerminalLoginUI", "browser_command", "run_oauth_login"]


def browser_command(url: str, env: dict[str, str] | None = None) -> list[str] | None:
    """The command that shows ``url`` in a graphical browser here, or ``None``."""
    environ = dict(os.environ) if env is None else env
    chosen = environ.get("BROWSER", "").split(os.pathsep)[0].strip()
    if chosen:
        parts = shlex.split(chosen)
        return [p.replace("%s", url) for p in parts] if "%s" in chosen else [*parts, url]
    if sys.platform == "darwin":
        return ["open", url]
    if sys.platform.startswith("linux") and (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")):
        opener = shutil.which("xdg-open")
        return [opener, url] if opener else None
    return None


class TerminalLoginUI:
    def show(self, text: str) -> None:
        click.echo(text)

    def progress(self, text: str) -> None:
        say(f"[fastagent] {text}")

    def open_browser(self, url: str) -> None:
        command = browser_command(url)
        if command is None:
            return
        try:
            subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            self.progress("could not open a browser: open the URL above yourself")

    async def ask(self, prompt: str) -> str:
        from prompt_toolkit import PromptSession

        try:
            answer: str = await PromptSession[str]().prompt_async(prompt, reserve_space_for_menu=0)
        except (EOFError, KeyboardInterrupt):
            raise click.Abort() from None
        finally:
            _cancel_on_ctrl_c()
        return answer.strip()


def _cancel_on_ctrl_c() -> None:
    """Make Ctrl+C cancel the login's task again. A prompt leaves SIGINT at Python's default
    handler when it ends, which raises KeyboardInterrupt wherever the loop happens to be: inside
    a poll request that can leave the exit waiting on a half-released connection."""
    task = asyncio.current_task()
    if task is None:
        return
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, task.cancel)


def run_oauth_login(login: OAuthProvider, info: ProviderInfo, store: AuthStore) -> None:
    """Run ``login``'s flow in the terminal and store the result in ``store``."""
    from fastagent_cli.auth.oauth import LoginContext

    context = LoginContext(base_url=info.base_url, models=tuple(info.models))

    async def flow() -> dict[str, Any]:
        return await login.login(TerminalLoginUI(), context)

    try:
        entry = asyncio.run(flow())
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl+C (see _cancel_on_ctrl_c)
        raise click.Abort() from None
    store.set_oauth(login.name, entry)
    say(f"[fastagent] logged in with your {login.title}; saved to {store.path}")
