"""What the OAuth tests share: the MCP server behind OAuth as a real process, a browser that
follows the login URL's redirects to the loopback callback, and a login run in-process."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from fastagent_cli.auth.mcp.login import login_mcp
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.tools.mcp_config import McpServerConfig

OAUTH_SERVER = str(Path(__file__).parent / "mcp_oauth_server.py")
URL_LINE = re.compile(r"^\s+(http://127\.0\.0\.1:\d+/authorize\?\S+)$", re.MULTILINE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class OAuthMcpServer:
    """``mcp_oauth_server.py`` on 127.0.0.1, checking tokens with the authorization server at ``issuer``."""

    def __init__(self, issuer: str, transport: str = "streamable-http") -> None:
        self.issuer = issuer
        self.transport = transport
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{'/sse' if self.transport == 'sse' else '/mcp'}"

    def start(self) -> OAuthMcpServer:
        self.process = subprocess.Popen(
            [sys.executable, OAUTH_SERVER, str(self.port), self.issuer, self.transport],
            env=dict(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the OAuth MCP server did not start listening")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def browse(url: str) -> httpx.Response:
    """What a browser does with the login URL: follow the redirects, to the loopback callback."""
    return httpx.get(url, follow_redirects=True, timeout=30)


class BrowserUI:
    """A LoginUI whose "browser" opens the URL in a thread (the callback answers on this loop)."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.pages: list[httpx.Response] = []
        self._tasks: list[asyncio.Future[None]] = []

    def show(self, text: str) -> None:
        self.shown.append(text)

    def progress(self, text: str) -> None:
        pass

    def open_browser(self, url: str) -> None:
        async def visit() -> None:
            self.pages.append(await asyncio.to_thread(browse, url))

        self._tasks.append(asyncio.ensure_future(visit()))

    async def ask(self, prompt: str) -> str:
        raise AssertionError("an MCP login never reads from the terminal")


async def log_in(name: str, config: McpServerConfig, auth_path: Path, **options: object) -> dict[str, object]:
    """``fastagent login mcp:<name>``'s flow, in-process."""
    entry: dict[str, object] = await login_mcp(name, config, AuthStore(auth_path), BrowserUI(), **options)  # type: ignore[arg-type]
    return entry
