"""A fake server's lifecycle: an aiohttp app on 127.0.0.1 (an ephemeral port) served by its own
event loop in a daemon thread, so ``fastagent`` subprocesses, sync tests and async tests can all use
it. A subclass builds its app in :meth:`ThreadedApp.make_app`; ``with Server() as s`` starts it and
stops it again."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Self

from aiohttp import web

__all__ = ["ThreadedApp"]


class ThreadedApp:
    shutdown_timeout = 1.0

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self.port = 0

    def make_app(self) -> web.Application:
        raise NotImplementedError

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.make_app(), access_log=None, shutdown_timeout=self.shutdown_timeout)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
