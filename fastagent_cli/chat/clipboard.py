"""``/copy``: put text on the clipboard and say how.

Two routes, both tried: the OSC 52 escape (the terminal sets the clipboard, also over ssh; only
sent when the output is a terminal, some terminals ignore it) and a clipboard program when one is
installed (``pbcopy``, ``wl-copy`` with Wayland, ``xclip``/``xsel`` with X11).
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
from collections.abc import Callable

__all__ = ["clipboard_program", "copy_text", "osc52"]

_TIMEOUT_S = 3.0


def osc52(text: str) -> str:
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"\x1b]52;c;{payload}\x07"


def clipboard_program(env: dict[str, str] | None = None) -> list[str] | None:
    environ = os.environ if env is None else env
    candidates: list[list[str]] = [["pbcopy"]]
    if environ.get("WAYLAND_DISPLAY"):
        candidates.append(["wl-copy"])
    if environ.get("DISPLAY"):
        candidates += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    for argv in candidates:
        if shutil.which(argv[0]):
            return argv
    return None


async def copy_text(text: str, write_terminal: Callable[[str], None] | None) -> str:
    """Copy ``text``; return one line saying what happened. ``write_terminal`` writes raw bytes to
    the terminal (``None`` when the output is not one)."""
    done: list[str] = []
    problems: list[str] = []
    if write_terminal is not None:
        write_terminal(osc52(text))
        done.append("sent OSC 52 to the terminal")
    program = clipboard_program()
    if program is not None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *program,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            problems.append(f"{program[0]} failed: {exc.strerror or exc}")
        else:
            try:
                _, err = await asyncio.wait_for(proc.communicate(text.encode("utf-8")), _TIMEOUT_S)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                problems.append(f"{program[0]} did not finish in {_TIMEOUT_S:.0f}s")
            else:
                if proc.returncode == 0:
                    done.append(f"copied with {program[0]}")
                else:
                    lines = err.decode("utf-8", "replace").strip().splitlines()
                    problems.append(f"{program[0]} exited {proc.returncode}: {lines[0] if lines else ''}")
    chars = f"{len(text)} characters"
    if not done:
        reason = "; ".join(problems) or "no clipboard program (pbcopy, wl-copy, xclip, xsel) found"
        return f"could not copy {chars}: not a terminal and {reason}"
    line = f"{chars}: " + ", ".join(done)
    if problems:
        line += " (" + "; ".join(problems) + ")"
    elif program is None:
        line += " (no clipboard program found; terminals without OSC 52 support ignore it)"
    return line
