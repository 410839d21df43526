"""``--tunnel``: a Cloudflare Quick Tunnel to the local port.

Runs ``cloudflared tunnel --url http://localhost:<port>`` and reads the first
``https://<name>.trycloudflare.com`` URL from its output (``api.`` hosts, which appear in its
error lines, are not the tunnel). Up to :data:`ATTEMPTS` tries, :data:`RETRY_DELAY_S` apart, each
given :data:`START_TIMEOUT_S` to print the URL. No ``cloudflared`` on PATH, or no URL after every
attempt, is logged as an error and serving goes on without a tunnel. :meth:`Tunnel.close` ends
the process (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
from asyncio.subprocess import Process

__all__ = ["ATTEMPTS", "RETRY_DELAY_S", "START_TIMEOUT_S", "Tunnel", "find_tunnel_url"]

log = logging.getLogger("fastagent.tunnel")

ATTEMPTS = 3
RETRY_DELAY_S = 2.0
START_TIMEOUT_S = 30.0
_STOP_GRACE_S = 1.0
_URL = re.compile(r"https://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)\.trycloudflare\.com\b")
INSTALL_HINT = "https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/"


def find_tunnel_url(line: str) -> str | None:
    """The Quick Tunnel URL in one line of cloudflared output, if any (never an ``api.`` host)."""
    for match in _URL.finditer(line):
        if not match.group(1).lower().startswith("api"):
            return match.group(0)
    return None


class Tunnel:
    """One Quick Tunnel to ``http://localhost:<port>``; :meth:`open` it, then :meth:`close` it."""

    def __init__(
        self,
        port: int,
        *,
        binary: str = "cloudflared",
        attempts: int = ATTEMPTS,
        retry_delay: float = RETRY_DELAY_S,
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        self.port = port
        self.binary = binary
        self.attempts = attempts
        self.retry_delay = retry_delay
        self.start_timeout = start_timeout
        self.url: str | None = None
        self._process: Process | None = None
        self._drain: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def command(self) -> list[str]:
        return [self.binary, "tunnel", "--url", f"http://localhost:{self.port}"]

    async def open(self) -> str | None:
        """Start cloudflared and return the public URL, or ``None`` (the reason is logged)."""
        path = shutil.which(self.binary)
        if path is None:
            log.error(
                "[tunnel] %s is not on PATH, so there is no tunnel (install it: %s); serving continues",
                self.binary,
                INSTALL_HINT,
            )
            return None
        for attempt in range(1, self.attempts + 1):
            problem = None if self._closing else await self._attempt(path)
            if self._closing:
                return None  # closed while trying: nothing to report
            if problem is None:
                log.info("[fastagent] tunnel: %s -> http://localhost:%d", self.url, self.port)
                return self.url
            log.warning("[tunnel] attempt %d/%d failed: %s", attempt, self.attempts, problem)
            if attempt < self.attempts:
                await asyncio.sleep(self.retry_delay)
        log.error("[tunnel] no tunnel after %d attempts; serving continues without one", self.attempts)
        return None

    async def _attempt(self, path: str) -> str | None:
        try:
            process = await asyncio.create_subprocess_exec(
                path,
                *self.command[1:],
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as exc:
            return f"cannot run {path}: {exc.strerror or exc}"
        self._process = process
        try:
            url = await asyncio.wait_for(self._read_url(process), self.start_timeout)
        except TimeoutError:
            url = None
            problem = f"no trycloudflare.com URL within {self.start_timeout:g} s"
        else:
            problem = f"cloudflared exited ({process.returncode}) without printing a URL"
        if url is None:
            await self._stop(process)
            self._process = None
            return problem
        self.url = url
        self._drain = asyncio.create_task(self._keep_reading(process))
        return None

    @staticmethod
    async def _read_url(process: Process) -> str | None:
        assert process.stdout is not None
        while True:
            raw = await process.stdout.readline()
            if not raw:
                await process.wait()
                return None
            url = find_tunnel_url(raw.decode("utf-8", "replace"))
            if url is not None:
                return url

    async def _keep_reading(self, process: Process) -> None:
        """Drain cloudflared's output (a full pipe would stall it) and report its exit."""
        assert process.stdout is not None
        while await process.stdout.read(65536):
            pass
        code = await process.wait()
        if not self._closing:
            log.error("[tunnel] cloudflared exited (%s); %s no longer reaches this server", code, self.url)

    async def close(self) -> None:
        """Stop cloudflared (safe to call twice, and while :meth:`open` is still trying)."""
        self._closing = True
        process, self._process = self._process, None
        if process is not None:
            await self._stop(process)
        if self._drain is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain

    @staticmethod
    async def _stop(process: Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), _STOP_GRACE_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
