"""A real ``fastagent dev`` and a real headless Chromium for the web chat tests.

Chromium and chromedriver are Debian's (``apt-get install chromium chromium-driver``; ``.ci/run``
installs them), driven by selenium. Without them the browser tests are skipped, saying so.
Screenshots go to ``build/screenshots/`` (``FASTAGENT_SCREENSHOTS`` overrides; never committed).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.conftest import cli_command

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOTS = Path(os.environ.get("FASTAGENT_SCREENSHOTS", ROOT / "build" / "screenshots"))
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
T = TypeVar("T")


def chromium_paths() -> tuple[str, str] | str:
    """``(chromium, chromedriver)``, or why the browser tests cannot run here."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        return "no chromium / chromedriver on PATH (apt-get install chromium chromium-driver)"
    return browser, driver


def browser_marks() -> list[pytest.MarkDecorator]:
    """A browser test module's ``pytestmark``: slow, and skipped saying why without Chromium."""
    paths = chromium_paths()
    reason = f"browser tests need Chromium: {paths}"
    return [pytest.mark.slow, pytest.mark.skipif(isinstance(paths, str), reason=reason)]


@contextlib.contextmanager
def chromium(profile: Path, size: tuple[int, int] = (1280, 860)) -> Iterator[Any]:
    """A headless Chromium with a fresh profile in ``profile`` (no network of its own)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = chromium_paths()
    assert isinstance(paths, tuple), paths
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(paths[1]))
    try:
        driver.set_script_timeout(20)
        yield driver
    finally:
        driver.quit()


def wait_until(check: Callable[[], T | None], what: str, within: float = 20.0, every: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy (exceptions count as not yet)."""
    deadline = time.monotonic() + within
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # a stale element mid-render: try again
            last = exc
        else:
            if value:
                return value
        time.sleep(every)
    raise AssertionError(
        f"timed out after {within} s waiting for {what}" + (f" (last error: {last})" if last else "")
    )


def screenshot(driver: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def dev_server(root: Path, files: dict[str, str]) -> DevServer:
    """``fastagent dev`` on an agent of ``files`` in ``root/agent``, with ``root`` as its home and
    none of the caller's fastagent settings or provider keys."""
    agent = root / "agent"
    for rel, text in files.items():
        (agent / rel).parent.mkdir(parents=True, exist_ok=True)
        (agent / rel).write_text(text, encoding="utf-8")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_") and not k.endswith("_API_KEY")
    }
    env["HOME"] = str(root)
    return DevServer(agent, env)


WEB_CHAT_LINE = re.compile(r"web chat: (http://127\.0\.0\.1:(\d+))/#token=(\S+)")


class DevServer:
    """``fastagent dev AGENT --port 0 --bind 127.0.0.1`` (the supervisor and its worker), with its
    stderr collected line by line."""

    def __init__(self, agent: Path, env: dict[str, str]) -> None:
        self.agent = agent
        self.process = subprocess.Popen(
            [*cli_command(), "dev", str(agent), "--port", "0", "--bind", "127.0.0.1"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        found = self.wait_for(WEB_CHAT_LINE.pattern, within=60)
        self.base, self.token = found.group(1), found.group(3)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_for(self, pattern: str, *, after: int = 0, within: float = 30) -> re.Match[str]:
        compiled = re.compile(pattern)
        deadline = time.monotonic() + within
        with self._changed:
            while True:
                for line in self.lines[after:]:
                    found = compiled.search(line)
                    if found:
                        return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._reader.is_alive():
                    raise AssertionError(f"no line matching /{pattern}/:\n" + "\n".join(self.lines))
                self._changed.wait(min(remaining, 0.5))

    def page(self, *, session: str | None = None, token: str | None = None) -> str:
        fragment = f"token={token if token is not None else self.token}"
        return f"{self.base}/#{fragment}" + (f"&s={session}" if session else "")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._reader.join(5)
        if self.process.stderr is not None:
            self.process.stderr.close()
