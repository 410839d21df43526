"""Run the real ``fastagent start`` / ``dev`` process and talk to it (helpers for the process tests).

::

    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        events = await invoke(port, "s1", "hello")
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from fastagent_cli.contract import AgentEvent
from tests.conftest import cli_command
from tests.serving.conftest import sse_events

HOST_LINE = re.compile(r"http host on (?:\S+?)?:(\d+)")


def established_connections(pid: int, remote_port: int) -> int:
    """How many TCP connections process ``pid`` holds ESTABLISHED to ``127.0.0.1:remote_port``
    (Linux: its socket fds matched against ``/proc/<pid>/net/tcp``)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    count = 0
    with open(f"/proc/{pid}/net/tcp", encoding="ascii") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and int(remote.split(":")[1], 16) == remote_port and inode in inodes:
                count += 1
    return count


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One ``fastagent`` process; its stderr is collected line by line as it arrives."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, *args: str, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
    ) -> ServerProcess:
        full_env = dict(os.environ)
        full_env.update(env or {})
        process = await asyncio.create_subprocess_exec(
            *cli_command(),
            *args,
            env=full_env,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(cls, *args: str, **kwargs: Any) -> AsyncIterator[ServerProcess]:
        server = await cls.start(*args, **kwargs)
        try:
            yield server
        finally:
            await server.aclose()

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while raw := await self.process.stderr.readline():
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
            self._changed.set()
        self._changed.set()

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    async def wait_for(self, pattern: str, *, after: int = 0, within: float = 30) -> re.Match[str]:
        """The first line at index >= ``after`` matching ``pattern`` (a regex)."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + within
        while True:
            for line in self.lines[after:]:
                found = compiled.search(line)
                if found:
                    return found
            if self._reader.done():
                raise AssertionError(f"exited ({self.process.returncode}) before /{pattern}/:\n{self.text}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no line matching /{pattern}/ within {within} s:\n{self.text}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def count(self, pattern: str) -> int:
        compiled = re.compile(pattern)
        return sum(1 for line in self.lines if compiled.search(line))

    async def port(self, *, after: int = 0, within: float = 30) -> int:
        return int((await self.wait_for(HOST_LINE.pattern, after=after, within=within)).group(1))

    async def wait(self, within: float = 30) -> int:
        code = await asyncio.wait_for(self.process.wait(), within)
        await self._reader
        return code

    def send(self, sig: int = signal.SIGTERM) -> None:
        self.process.send_signal(sig)

    async def aclose(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        await self._reader


async def get(port: int, path: str = "/health") -> tuple[int, str]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
        http.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, await response.text()


async def invoke(port: int, session: str, text: str) -> list[AgentEvent]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(f"http://127.0.0.1:{port}/invoke", json={"session": session, "text": text}) as response,
    ):
        assert response.status == 200, await response.text()
        return sse_events(await response.text())


def answer(events: list[AgentEvent]) -> str:
    from fastagent_cli.contract import Completed, Text

    assert isinstance(events[-1], Completed), events
    return "".join(e.delta for e in events if isinstance(e, Text))
