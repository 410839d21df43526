"""Run a real ``fastagent`` process on a pseudo-terminal (stdin and stdout are the pty; stderr goes
to a file so tests can tell the two apart) and talk to it like a user.

Cursor-position requests from prompt_toolkit (``ESC [6n``) are answered, so it renders as in a
real terminal. ``expect(regex)`` searches the output with escape sequences stripped, moving
forward past each match.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import tempfile
import termios
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

__all__ = ["FASTAGENT", "PtyProcess", "clean_env", "strip_ansi"]

FASTAGENT = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "fastagent")
_ANSI = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMc]"
)
_CPR = b"\x1b[6n"


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text).replace("\r", "")


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The test environment: no provider keys or FASTAGENT_* from the outside, HOME moved."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (
            k.startswith("FASTAGENT_") or k.endswith(("_API_KEY", "_TOKEN")) or k == "PYTEST_CURRENT_TEST"
        )
    }
    env.update({"HOME": str(home), "TERM": "xterm", "NO_COLOR": "1", "COLUMNS": "120", "LINES": "40"})
    env.update(extra)
    return env


class PtyProcess:
    def __init__(
        self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str], rows: int = 40, cols: int = 120
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        try:
            self.proc = subprocess.Popen(
                [FASTAGENT, *args],
                stdin=slave,
                stdout=slave,
                stderr=self._stderr,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
            )
        except BaseException:
            os.close(master)
            self._stderr.close()
            raise
        finally:
            os.close(slave)
        self.master = master
        self.raw = b""
        self._pos = 0
        self._eof = False

    # -- reading
    @property
    def text(self) -> str:
        return strip_ansi(self.raw.decode("utf-8", errors="replace"))

    @property
    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", errors="replace")

    def _pump(self, wait: float) -> None:
        if self._eof:
            time.sleep(min(wait, 0.05))
            return
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            self._eof = True
            return
        if _CPR in data:
            os.write(self.master, b"\x1b[1;1R" * data.count(_CPR))
        self.raw += data

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.text, self._pos)
            if match:
                self._pos = match.end()
                return match
            if self._eof and self.proc.poll() is not None:
                raise AssertionError(
                    f"fastagent exited ({self.proc.returncode}) before {pattern!r}\n--- terminal:\n"
                    f"{self.text}\n--- stderr:\n{self.stderr}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {pattern!r}\n--- terminal:\n{self.text}\n"
                    f"--- stderr:\n{self.stderr}"
                )
            self._pump(0.05)

    def expect_stderr(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """Wait until stderr (a file, not the terminal) matches ``pattern``."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while not (match := regex.search(self.stderr)):
            if time.monotonic() > deadline or (self._eof and self.proc.poll() is not None):
                raise AssertionError(
                    f"stderr never matched {pattern!r}:\n{self.stderr}\n--- terminal:\n{self.text}"
                )
            self._pump(0.05)
        return match

    # -- writing
    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def sendline(self, text: str = "") -> None:
        self.send(text + "\r")

    # -- ending
    def wait(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None or not self._eof:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"fastagent did not exit\n--- terminal:\n{self.text}\n--- stderr:\n{self.stderr}"
                )
            self._pump(0.05)
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)
        self._stderr.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
