"""``fastagent dev``: a supervisor that runs the server in a worker process and restarts it on
code edits (features R1-R5).

* The worker is this CLI again (``dev`` with the same options, ``FASTAGENT_DEV_WORKER=1``), in its
  own process group with the environment ``dev`` started with (so an edited ``.env`` is re-read,
  never shadowed by the supervisor's copy). It reports ``ready`` over an inherited socket
  (:mod:`~fastagent_cli.serving.worker_link`).
* The supervisor owns the address: it binds the listening sockets once, before the first worker
  (:mod:`~fastagent_cli.serving.listen`; ``--port 0`` picks the port then), and every worker
  serves on those inherited sockets. A worker is spawned only after the previous one has exited;
  connections that arrive in between wait in the kernel's queue for the new worker, so a reload
  refuses none (``bench/dev_reload.py`` counts them).
* A code edit (:mod:`~fastagent_cli.serving.watch`) retires the worker without cutting a running
  answer: asked to drain, it stops accepting and says so, the next worker is spawned on the same
  sockets at once, and the old one finishes its turns (for at most ``drain_timeout``, then ends
  the rest with a retryable ``failed``) and exits (SIGKILL to its group if it overruns that by
  :data:`STOP_GRACE_S`). A worker that does not answer the drain, or has not served yet, is
  stopped (SIGTERM, SIGKILL after :data:`STOP_GRACE_S`) before the next one is spawned.
* A worker that fails before any worker ever served ends ``dev`` with its exit code; after one
  has served, a failure is reported and ``dev`` waits for the next save, answering every request
  ``503`` meanwhile (saying why), rather than leaving clients waiting in the queue.
* The tunnel belongs to the supervisor: opened once the first worker is ready, it survives
  restarts. Its URL is sent to every worker once it is ready, which announces it to its channels
  (webhook registration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from asyncio.subprocess import Process
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastagent_cli.serving.listen import Unavailable, bind_sockets, bound_port
from fastagent_cli.serving.runner import Outcome, ShutdownSignal
from fastagent_cli.serving.tunnel import Tunnel
from fastagent_cli.serving.watch import CodeWatcher, watching_line
from fastagent_cli.serving.worker_link import (
    DEV_IPC_FD_ENV,
    DEV_LISTEN_FDS_ENV,
    DEV_RELOAD_ENV,
    DEV_WORKER_ENV,
    read_message,
    read_ready,
    send_drain,
    send_public_url,
)

__all__ = ["DRAIN_TIMEOUT_S", "STOP_GRACE_S", "DevSupervisor", "cli_command"]

log = logging.getLogger("fastagent.dev")

STOP_GRACE_S = 3.0
"""How long a worker gets to exit after SIGTERM before its process group is killed."""
DRAIN_TIMEOUT_S = 30.0
"""How long a retired worker's running turns get to finish (``dev --drain``)."""


def cli_command() -> list[str]:
    """How to run this CLI again (a frozen binary is its own entry point)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "fastagent_cli"]


@dataclass(slots=True)
class _Worker:
    process: Process
    link: asyncio.StreamWriter
    reader: asyncio.StreamReader
    ready: asyncio.Task[dict[str, Any] | None]
    exited: asyncio.Task[int]
    restarting: bool = False

    async def stop(self, grace: float) -> None:
        """SIGTERM, then SIGKILL to the whole group; returns once the process has exited."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            done, _ = await asyncio.wait({self.exited}, timeout=grace)
            if not done:
                log.warning("[dev] the worker did not exit within %g s; killing it", grace)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
        await asyncio.wait({self.exited})
        self.close()

    def close(self) -> None:
        self.ready.cancel()
        self.link.close()


@dataclass(slots=True)
class DevSupervisor:
    worker_args: Sequence[str]
    """The CLI arguments of a worker (``dev DIR --port ...``)."""
    env: Mapping[str, str]
    """The environment ``dev`` started with."""
    agent_dir: Path
    host: str | None = None
    """The address to listen on (``None``: every interface)."""
    listen_port: int = 8787
    """The port to bind (0 picks one)."""
    tunnel: bool = False
    stop_grace: float = STOP_GRACE_S
    drain_timeout: float = DRAIN_TIMEOUT_S
    port: int | None = None
    """The bound port."""
    served: bool = False
    _sockets: list[socket.socket] = field(default_factory=list)
    _worker: _Worker | None = None
    _retiring: dict[int, tuple[_Worker, asyncio.Task[None]]] = field(default_factory=dict)
    """Workers finishing their turns after a reload (by pid), and the tasks that see them exit."""
    _tunnel: Tunnel | None = None
    _opening: asyncio.Task[str | None] | None = None
    _public_url: str | None = None
    _stop: ShutdownSignal = field(default_factory=lambda: ShutdownSignal(STOP_GRACE_S + 2))

    async def run(self) -> Outcome:
        self._sockets = bind_sockets(self.host, self.listen_port)  # ServeError: nothing started yet
        self.port = bound_port(self._sockets)
        self._stop.install()
        watcher = CodeWatcher(self.agent_dir)
        await watcher.start()
        log.info("[fastagent] %s", watching_line(self.agent_dir))
        try:
            code = await self._supervise(watcher)
        finally:
            await self._shutdown(watcher)
            self._stop.uninstall()
        return Outcome(code, self._stop.signal)

    async def _supervise(self, watcher: CodeWatcher) -> int:
        while True:
            worker = self._worker = await self._spawn()
            event = await self._next(worker, watcher, want_ready=True)
            if event == "ready":
                self._on_ready(worker)
                event = await self._next(worker, watcher, want_ready=False)
            if event == "stop":
                return 0
            if event == "change":
                await self._retire(worker)
                watcher.drain()  # edits made while it stopped are read by the next worker anyway
                continue
            code = worker.process.returncode or 0
            worker.close()
            if not self.served:
                return code if code > 0 else 1
            log.error("[fastagent] dev stopped (worker exited: %s) — save a change to retry", _exit(code))
            unavailable = Unavailable(
                self._sockets,
                f"fastagent dev: the worker exited ({_exit(code)}); fix the error shown in the dev "
                "terminal and save a change to retry",
            )
            await unavailable.start()
            try:
                if await self._wait_change(watcher) == "stop":
                    return 0
            finally:
                await unavailable.close()

    async def _spawn(self) -> _Worker:
        parent, child = socket.socketpair()
        env = dict(self.env)
        env[DEV_WORKER_ENV] = "1"
        env[DEV_IPC_FD_ENV] = str(child.fileno())
        listening = [sock.fileno() for sock in self._sockets]
        env[DEV_LISTEN_FDS_ENV] = ",".join(map(str, listening))
        env.pop(DEV_RELOAD_ENV, None)
        if self.served:  # a reload: On Start fired in the first worker already
            env[DEV_RELOAD_ENV] = "1"
        try:
            process = await asyncio.create_subprocess_exec(
                *cli_command(),
                *self.worker_args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                pass_fds=(child.fileno(), *listening),
                process_group=0,  # the supervisor alone forwards Ctrl+C, as SIGTERM
            )
        finally:
            child.close()
        reader, writer = await asyncio.open_unix_connection(sock=parent)
        ready = asyncio.create_task(read_ready(reader))
        exited = asyncio.create_task(process.wait())
        log.debug("[dev] worker %d started", process.pid)
        return _Worker(process, writer, reader, ready, exited)

    async def _retire(self, worker: _Worker) -> None:
        """Ask a serving worker to drain and return once it stopped accepting (it finishes on
        its own, watched); stop any other at once."""
        if worker.ready.done() and not worker.ready.cancelled() and worker.ready.result() is not None:
            send_drain(worker.link, self.drain_timeout)
            acked = asyncio.create_task(read_message(worker.reader, "draining"))
            done, _ = await asyncio.wait({acked, worker.exited}, timeout=self.stop_grace)
            if acked in done and acked.result() is not None:
                self._retiring[worker.process.pid] = (worker, asyncio.create_task(self._see_out(worker)))
                return
            acked.cancel()
        await worker.stop(self.stop_grace)

    async def _see_out(self, worker: _Worker) -> None:
        try:
            # the drain, its runs' cancel grace and the worker's own bounded shutdown
            done, _ = await asyncio.wait({worker.exited}, timeout=self.drain_timeout + 5 + self.stop_grace)
            if not done:
                log.warning("[dev] the old worker overran its drain; stopping it")
            await worker.stop(self.stop_grace)
        finally:
            self._retiring.pop(worker.process.pid, None)

    def _on_ready(self, worker: _Worker) -> None:
        self.served = True
        if self._public_url is not None:
            send_public_url(worker.link, self._public_url)
        if self.tunnel and self._tunnel is None and self.port is not None:
            self._tunnel = Tunnel(self.port)
            self._opening = asyncio.create_task(self._tunnel.open())
            self._opening.add_done_callback(self._tunnel_opened)

    def _tunnel_opened(self, opening: asyncio.Task[str | None]) -> None:
        if opening.cancelled() or opening.exception() is not None or opening.result() is None:
            return
        self._public_url = opening.result()
        if self._worker is not None and self._worker.ready.done() and self._public_url is not None:
            send_public_url(self._worker.link, self._public_url)

    async def _next(self, worker: _Worker, watcher: CodeWatcher, *, want_ready: bool) -> str:
        """The first of: ``stop``, ``exited``, ``change`` (a code edit), ``ready``."""
        change = asyncio.create_task(watcher.changes.get())
        stop = asyncio.create_task(self._stop.event.wait())
        waiting: set[asyncio.Future[Any]] = {change, stop, worker.exited}
        if want_ready:
            waiting.add(worker.ready)
        event = ""
        try:
            while not event:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if stop in done:
                    event = "stop"
                elif worker.exited in done:
                    event = "exited"
                elif change in done:
                    self._report_change(change.result() + watcher.drain())
                    event = "change"
                elif worker.ready.result() is not None:
                    event = "ready"
                else:
                    waiting.discard(worker.ready)  # the line closed without a ready: wait for the exit
        finally:
            stop.cancel()
            if not change.done():
                change.cancel()
            elif event != "change" and not change.cancelled():
                watcher.changes.put_nowait(change.result())  # not acted on yet: keep it
        return event

    async def _wait_change(self, watcher: CodeWatcher) -> str:
        change = asyncio.create_task(watcher.changes.get())
        stop = asyncio.create_task(self._stop.event.wait())
        try:
            done, _ = await asyncio.wait({change, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            change.cancel()
            stop.cancel()
        if stop in done:
            return "stop"
        self._report_change(change.result() + watcher.drain())
        return "change"

    @staticmethod
    def _report_change(paths: list[str]) -> None:
        shown = ", ".join(dict.fromkeys(paths))
        log.info("[fastagent] %s changed — restarting the dev worker", shown)

    async def _shutdown(self, watcher: CodeWatcher) -> None:
        worker, self._worker = self._worker, None
        steps: list[Any] = [watcher.aclose()]
        if worker is not None:
            steps.append(worker.stop(self.stop_grace))
        for retired, watching in list(self._retiring.values()):
            watching.cancel()
            steps.append(retired.stop(self.stop_grace))
        if self._opening is not None:
            self._opening.cancel()
        if self._tunnel is not None:
            steps.append(self._tunnel.close())
        await asyncio.gather(*steps, return_exceptions=True)
        for sock in self._sockets:
            sock.close()


def _exit(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"code {code}"
