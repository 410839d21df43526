"""Run a command in a pseudo-terminal (its controlling terminal) and read its screen output."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence

_ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text).replace("\r", "")


def _controlling_tty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyProcess:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        rows: int = 40,
        cols: int = 120,
    ) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        full_env = {**os.environ, "TERM": "xterm-256color", **(env or {})}
        self.proc = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=full_env,
            start_new_session=True,
            preexec_fn=_controlling_tty,
        )
        os.close(slave)
        self.master = master
        self.raw = b""

    @property
    def text(self) -> str:
        return strip_ansi(self.raw.decode("utf-8", "replace"))

    def _pump(self, wait: float) -> None:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            time.sleep(wait)
            return
        self.raw += chunk
        if b"\x1b[6n" in chunk:  # answer cursor-position requests like a terminal would
            os.write(self.master, b"\x1b[1;1R")

    def read_until(self, needle: str, timeout: float = 20.0, start: int = 0) -> str:
        """Read until ``needle`` shows up in the (ANSI-stripped) output after ``start``."""
        deadline = time.monotonic() + timeout
        while needle not in self.text[start:]:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {needle!r}; screen so far:\n{self.text}")
            if self.proc.poll() is not None:
                self._pump(0.05)
                if needle in self.text[start:]:
                    break
                raise AssertionError(
                    f"process exited ({self.proc.returncode}) before {needle!r}:\n{self.text}"
                )
            self._pump(0.05)
        return self.text

    def pump(self, wait: float = 0.05) -> None:
        """Read whatever the child wrote within ``wait`` seconds."""
        self._pump(wait)

    def send(self, data: str) -> None:
        os.write(self.master, data.encode("utf-8"))

    def wait(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._pump(0.05)
        return self.proc.wait(timeout=1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
