"""The seam between deploy and a host CLI (``docker``, ``fly``, ``railway``).

:class:`CliRunner` runs the host binary in the workspace (the build context). Its output streams
to this process's stderr (stdout stays for the runbook) unless captured; ``input`` feeds stdin
(how secret values reach ``fly`` and ``railway``); ``env`` adds child-only variables (how they
reach Docker Compose). A binary that is not installed answers code 127. Tests put fake ``docker``,
``fly`` and ``railway`` executables first on ``PATH``.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NOT_FOUND", "CliRunner", "RunResult", "wait_for_health"]

NOT_FOUND = 127


@dataclass(frozen=True, slots=True)
class RunResult:
    code: int
    stdout: str = ""


class CliRunner:
    def __init__(self, binary: str, cwd: Path) -> None:
        self.binary = binary
        self.cwd = cwd

    def __call__(
        self,
        args: list[str],
        *,
        capture: bool = False,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        try:
            done = subprocess.run(
                [self.binary, *args],
                cwd=self.cwd,
                env={**os.environ, **(env or {})},
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE if capture else 2,
                text=True,
                check=False,
            )
        except FileNotFoundError:
            return RunResult(NOT_FOUND)
        except PermissionError:
            return RunResult(126)
        return RunResult(done.returncode, done.stdout if capture else "")


def wait_for_health(
    url: str,
    *,
    timeout: float = 30.0,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Poll ``url`` until it answers 200 (``True``) or ``timeout`` seconds pass (``False``)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a local URL: no proxy
    deadline = time.monotonic() + timeout
    while True:
        try:
            with opener.open(url, timeout=max(interval, 2.0)) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() + interval > deadline:
            return False
        sleep(interval)
