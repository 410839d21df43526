"""Run an agent service in the foreground: what ``start``, ``dev --no-watch`` and a dev worker do.

Open the service on the directory the command read (:func:`~fastagent_cli.assembly.open_agent`,
then :func:`~fastagent_cli.serving.service.open_agent_service`), bind, print the startup lines,
then serve until SIGINT / SIGTERM (or the dev supervisor going away, or a long connection closing
unexpectedly). A dev worker asked to drain (a code edit) lets its turns finish first (see
:func:`_until_stopped_or_drained`). Shutdown does not drain turns (features G16): it stops the long
connections, stops listening and force-closes every open stream at once, within
:data:`SHUTDOWN_BUDGET_S`; a timer armed when shutdown begins ends the process after
:data:`FORCED_EXIT_S` whatever is still running (a tool blocked in a thread cannot hold it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.assembly import AgentSurface, open_agent
from fastagent_cli.errors import ServeError, one_line
from fastagent_cli.heap import settle_heap
from fastagent_cli.serving.binding import (
    ServeOptions,
    check_tunnel_bind,
    is_loopback,
    local_base_url,
    resolve_bind,
    resolve_port,
)
from fastagent_cli.serving.control import (
    DEV_CONTROL_TOKEN_ENV,
    TUNNEL_WARNING,
    remove_control_file,
    write_control_file,
)
from fastagent_cli.serving.faces import check_face_exposure
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.http_limits import raise_open_file_limit
from fastagent_cli.serving.service import AgentService, SchedulerFactory, open_agent_service
from fastagent_cli.serving.startup import startup_report
from fastagent_cli.serving.tunnel import Tunnel
from fastagent_cli.serving.webhooks import announce_webhooks
from fastagent_cli.serving.worker_link import WorkerLink

__all__ = [
    "FORCED_EXIT_S",
    "SESSION_CONTROL_TUNNEL_WARNING",
    "SHUTDOWN_BUDGET_S",
    "Outcome",
    "ShutdownSignal",
    "serve_foreground",
]

log = logging.getLogger("fastagent.host")

SHUTDOWN_BUDGET_S = 0.8
"""How long the orderly part of shutdown may take."""
FORCED_EXIT_S = 1.0
"""After this many seconds from the start of shutdown the process exits, done or not."""
_HANDLER_GRACE_S = 0.5
_CONNECTION_STOP_S = 0.5
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
SESSION_CONTROL_TUNNEL_WARNING = TUNNEL_WARNING


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int = 0
    signal: int | None = None
    """The signal that stopped the service; the caller re-raises it once everything is closed."""


def _force_exit(code: int, why: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"WARN  [fastagent] {why}; exiting now\n")
        sys.stderr.flush()
    os._exit(code)


class ShutdownSignal:
    """Why and when to stop: SIGINT / SIGTERM, a lost supervisor, or a fatal service failure.

    Whatever the reason, stopping arms the forced-exit timer. A second signal exits at once.
    """

    def __init__(self, forced_exit_s: float = FORCED_EXIT_S, *, dev_worker: bool = False) -> None:
        self.forced_exit_s = forced_exit_s
        self.dev_worker = dev_worker
        """A dev worker: its SIGTERM comes from the supervisor, which said why (a reload, a stop)."""
        self.event = asyncio.Event()
        self.signal: int | None = None
        self.error: str | None = None
        self._timer: threading.Timer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        self._loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            self._loop.add_signal_handler(sig, self._on_signal, sig)

    def uninstall(self) -> None:
        if self._loop is not None:
            for sig in _SIGNALS:
                self._loop.remove_signal_handler(sig)
            self._loop = None

    def _on_signal(self, sig: int) -> None:
        if self.event.is_set():
            _force_exit(128 + sig, f"second {signal.Signals(sig).name}")
        self.signal = sig
        if self.dev_worker:
            log.debug("[dev] worker %d: %s: stopping", os.getpid(), signal.Signals(sig).name)
        else:
            log.info("[fastagent] %s: shutting down", signal.Signals(sig).name)
        self.trigger(128 + sig)

    def fail(self, message: str) -> None:
        if not self.event.is_set():
            self.error = message
            self.trigger(1)

    def trigger(self, exit_code: int = 0) -> None:
        if self.event.is_set():
            return
        self._timer = threading.Timer(
            self.forced_exit_s, _force_exit, (exit_code, f"shutdown overran {self.forced_exit_s:g} s")
        )
        self._timer.daemon = True
        self._timer.start()
        self.event.set()


async def serve_foreground(
    options: ServeOptions,
    surface: AgentSurface,
    link: WorkerLink | None = None,
    *,
    scheduler: SchedulerFactory | None = None,
) -> Outcome:
    """Serve the agent read into ``surface`` until told to stop. Raises the opener's errors and
    ServeError (bind failure, channel setup, a long connection that failed). ``link``: this is a
    dev worker (report ready to the supervisor, bind its port, stop when it goes away).
    ``scheduler``: run the agent's schedules and wake-ups too (armed once the server listens)."""
    raise_open_file_limit()  # room for the connection cap, model connections and session files
    stop = ShutdownSignal(dev_worker=link is not None)
    stop.install()
    try:
        if link is not None:
            await link.open(lambda: stop.trigger(0))

        def channel_closed(name: str, error: BaseException | None) -> None:
            reason = f": {one_line(f'{type(error).__name__}: {error}', 300)}" if error else ""
            stop.fail(f"long connection {name} closed unexpectedly{reason}")

        boot_token = os.environ.pop(DEV_CONTROL_TOKEN_ENV, None)  # dev's, kept from tools' sight
        opened = open_agent(surface, wake_tools=scheduler is not None)
        service = await open_agent_service(
            opened,
            on_channel_closed=channel_closed,
            scheduler=scheduler,
            web_chat_default=options.command == "dev",
            boot_token=boot_token if options.command == "dev" else None,
        )
        return await _serve(service, options, stop, link)
    finally:
        stop.uninstall()
        if link is not None:
            link.close()


async def _serve(
    service: AgentService, options: ServeOptions, stop: ShutdownSignal, link: WorkerLink | None
) -> Outcome:
    config = service.opened.config
    host = resolve_bind(options, config.http.host)
    service.opened.serve_on(is_loopback(host) and not options.tunnel)
    try:
        check_tunnel_bind(options, config.http.host)
        check_face_exposure(service.faces, host, tunnel=options.tunnel, token=service.token)
        sockets = link.listen_sockets() if link is not None else []  # the dev supervisor's
        port = resolve_port(options, config.http.port)
        server = serve(service.handler, port=port, host=host, close_timeout=_HANDLER_GRACE_S, sockets=sockets)
        bound = await server.listening
        settle_heap()  # start-up is done: what it left is frozen, out of every collection
    except BaseException:
        await _close_quietly(service.close(_CONNECTION_STOP_S))
        raise
    tunnel: Tunnel | None = None
    opening: asyncio.Task[Any] | None = None
    control_file: Path | None = None
    try:
        on_start = link is None or not link.reload
        dev = options.command == "dev"
        _print_startup(service, host, bound, options.tunnel and link is None, dev=dev, on_start=on_start)
        control_file = _publish_control(service, host, bound, quiet=not on_start)
        service.start_schedules()
        service.start_notices(on_start=on_start)
        if options.tunnel and link is None and service.control is not None:
            log.warning("[fastagent] %s", SESSION_CONTROL_TUNNEL_WARNING)
        service.ready.add_done_callback(lambda ready: _on_ready(ready, stop))
        if link is not None:
            await link.ready(bound, service.channels.routes)
            opening = asyncio.create_task(_announce_from(link, service))
        elif options.tunnel:
            tunnel = Tunnel(bound)
            opening = asyncio.create_task(_open_and_announce(tunnel, service))
        if link is None:
            await stop.event.wait()
        else:
            await _until_stopped_or_drained(server, service, link, stop)
    finally:
        if control_file is not None and service.control is not None:
            remove_control_file(control_file, service.control.token)
        await _shutdown(server, service, tunnel, opening)
    if stop.error is not None:
        raise ServeError(stop.error)
    return Outcome(0, stop.signal)


async def _until_stopped_or_drained(
    server: Server, service: AgentService, link: WorkerLink, stop: ShutdownSignal
) -> None:
    """A dev worker: serve until told to stop, or until the supervisor asks it to drain (a code
    edit). Draining, it stops accepting (the next worker takes the connections still queued),
    stops its long connections and schedules, tells the supervisor, lets its turns finish for the
    drain timeout and ends the rest with a retryable ``failed``; a stop cuts the drain short."""
    stopped = asyncio.create_task(stop.event.wait())
    asked = asyncio.create_task(link.drains.get())
    try:
        done, _ = await asyncio.wait({stopped, asked}, return_when=asyncio.FIRST_COMPLETED)
        if stopped in done:
            return
        draining = asyncio.create_task(_drain(server, service, link, asked.result()))
        await asyncio.wait({stopped, draining}, return_when=asyncio.FIRST_COMPLETED)
        if not draining.done():
            draining.cancel()
        elif draining.exception() is not None:
            log.warning("[fastagent] draining failed: %s", draining.exception())
    finally:
        stopped.cancel()
        asked.cancel()


async def _drain(server: Server, service: AgentService, link: WorkerLink, within: float) -> None:
    await server.stop_accepting()
    await link.draining()
    await service.quiesce(_CONNECTION_STOP_S)
    ended = await service.opened.drain(within)
    if ended:
        log.warning(
            "[fastagent] the reload ended %d turn(s) still running after %g s (retryable failed)",
            ended,
            within,
        )
    await server.settle(_HANDLER_GRACE_S * 2)  # the terminals being written reach their clients


async def _open_and_announce(tunnel: Tunnel, service: AgentService) -> str | None:
    """Open the tunnel, then tell the channels its URL (webhook registration)."""
    url = await tunnel.open()
    if url is not None:
        service.guard.allow_public_url(url)
        await announce_webhooks(url, service.loaded)
    return url


async def _announce_from(link: WorkerLink, service: AgentService) -> None:
    """A dev worker: announce each tunnel URL the supervisor sends."""
    while True:
        url = await link.public_urls.get()
        service.guard.allow_public_url(url)
        await announce_webhooks(url, service.loaded)


def _print_startup(
    service: AgentService, host: str | None, port: int, tunnel: bool, *, dev: bool, on_start: bool
) -> None:
    report = startup_report(service, host, port, tunnel=tunnel, reveal_token=dev, on_start=on_start)
    if not on_start:  # a dev reload: the supervisor's "X changed" line is the one INFO line
        for warning in report.warnings:
            log.warning("[fastagent] %s", warning)
        log.debug("[dev] worker %d reloaded: %s", os.getpid(), report.serving[0])
        return
    for line in report.lines:
        log.info("[fastagent] %s", line)
    for warning in report.warnings:
        log.warning("[fastagent] %s", warning)
    for line in report.serving:
        log.info("[fastagent] %s", line)


def _publish_control(
    service: AgentService, host: str | None, port: int, *, quiet: bool = False
) -> Path | None:
    """Write ``control.json`` for local clients when this boot minted the plane's token
    (``quiet``: a dev reload, which says where at debug level only)."""
    access = service.control
    if access is None or not access.minted:
        return None
    url = local_base_url(host, port)
    try:
        path = write_control_file(service.opened.state_root, url, access.token)
    except OSError as exc:
        log.warning("[fastagent] cannot write control.json: %s (attach needs --url and --token)", exc)
        return None
    log.log(
        logging.DEBUG if quiet else logging.INFO,
        "[fastagent] control plane on %s%s (token in %s)",
        url,
        access.prefix,
        path,
    )
    return path


def _on_ready(ready: asyncio.Future[None], stop: ShutdownSignal) -> None:
    if ready.cancelled():
        return
    error = ready.exception()
    if error is not None:
        stop.fail(error.message if isinstance(error, ServeError) else one_line(str(error), 300))


async def _shutdown(
    server: Server, service: AgentService, tunnel: Tunnel | None, opening: asyncio.Task[Any] | None
) -> None:
    """Stop everything at once, boundedly: long connections, the listener and open streams, the
    agent's clients, the tunnel."""
    if opening is not None and not opening.done():
        opening.cancel()
    steps = [server.close(), service.close(_CONNECTION_STOP_S)]
    if tunnel is not None:
        steps.append(tunnel.close())
    tasks = [asyncio.ensure_future(step) for step in steps]
    done, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_BUDGET_S)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            log.warning("[fastagent] while shutting down: %s", getattr(error, "message", error))
    for task in pending:
        task.cancel()
    if pending:
        log.warning("[fastagent] shutdown: %d step(s) still running; leaving them", len(pending))


async def _close_quietly(step: Any) -> None:
    with contextlib.suppress(Exception):
        await step
