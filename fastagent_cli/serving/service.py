"""``create_agent_service``: the whole assembly ``dev`` / ``start`` perform, without the process.

::

    service = await create_agent_service("./my-agent")
    server = serve(service.handler, port=8787)
    await server.listening
    ...
    await server.close()
    await service.close()

No port is bound, no signal handler installed, nothing exits the process: this is the supported
way to mount a whole agent inside an app. Composition (core design section 7):

* the agent is opened with :func:`~fastagent_cli.assembly.open_agent_dir` (or, for a directory
  the caller already read, :func:`open_agent_service` takes the opened agent);
* ``channels/*.py`` are loaded; any load failure or route collision raises one ServeError naming
  the files (rename an intentionally disabled file to ``*.disabled``);
* ``/invoke`` is mounted only when there are no enabled channel files (a broken one never makes it
  appear), behind the bearer token of ``FASTAGENT_TOKEN`` / ``[http] token`` when one is set;
  ``GET /health`` is added unless a channel answers it, and says ``starting`` (503) until every
  long connection is ready, ``degraded`` (503) while the state database is unreachable;
* with ``session_control = true`` the session control plane owns ``/control`` (bearer token:
  ``FASTAGENT_CONTROL_TOKEN``, else ``boot_token``, else minted for this boot;
  :attr:`AgentService.control`), and ``POST /control/invoke`` drives the agent (its detached runs
  are cancelled by :meth:`AgentService.close`);
* the web chat page (``GET /`` and ``/webchat/*``) when ``[http] web_chat`` says so, or unset
  with ``web_chat_default`` (``dev``); it turns the control plane on
  (:mod:`~fastagent_cli.serving.webchat` has the rules);
* the protocol faces ``[http]`` switches on (``openai = true``: ``/v1``), each module imported
  only then (:mod:`~fastagent_cli.serving.faces`), behind the same token as ``/invoke``;
* every route sits behind :class:`~fastagent_cli.serving.request_guard.RequestGuard` (``Host``
  and ``Origin`` checks, CORS for ``[http] allowed_origins``), whatever mounts it later;
* long connections are started; one that closes unexpectedly is reported to ``on_channel_closed``;
* with ``scheduler`` (``dev`` / ``start`` pass
  :func:`fastagent_cli.schedules.host.prepare_schedule_host`), ``wake`` / ``unwake`` are mounted
  when ``self_schedule`` is on and the scheduler is prepared now (reading its state, so unreadable
  schedule state fails here); :meth:`AgentService.start_schedules` arms it once the server
  listens. Without it, the service runs no schedules;
* route channels with a lifecycle are started (loading their state, replaying unfinished turns);
  a failure there is as fatal as a broken file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fastagent_cli.assembly import OpenedAgent, open_agent_dir
from fastagent_cli.contract import Agent
from fastagent_cli.errors import FastagentError, ServeError, one_line
from fastagent_cli.serving.channels import ChannelContext, LoadedChannels, load_channels
from fastagent_cli.serving.control import (
    CONTROL_PREFIX,
    ControlAccess,
    DetachedRuns,
    control_access,
    create_control_plane,
)
from fastagent_cli.serving.faces import Face, FaceContext, load_faces
from fastagent_cli.serving.health import HEALTH_KEY, create_health_handler
from fastagent_cli.serving.invoke_auth import InvokeToken, resolve_invoke_token
from fastagent_cli.serving.invoke_http import create_invoke_handler
from fastagent_cli.serving.long_connections import STOP_TIMEOUT_S, CloseCallback, LongConnections
from fastagent_cli.serving.notices import NoticeHost
from fastagent_cli.serving.request_guard import RequestGuard
from fastagent_cli.serving.router import Handler, RouteKey, build_router, parse_route_key
from fastagent_cli.serving.sse import KeyedStreams
from fastagent_cli.serving.webchat import (
    WEB_CHAT_KEY,
    WEB_CHAT_PREFIX,
    WebChat,
    plan_web_chat,
    web_chat_handlers,
)

__all__ = [
    "INVOKE_KEY",
    "AgentService",
    "BackgroundHost",
    "ChannelsSummary",
    "SchedulerFactory",
    "compose_routes",
    "create_agent_service",
    "open_agent_service",
]

log = logging.getLogger("fastagent.host")

INVOKE_KEY = "/invoke"


@dataclass(frozen=True, slots=True)
class ChannelsSummary:
    routes: list[str] = field(default_factory=list)
    """Route keys declared by channel files."""
    long_connections: list[str] = field(default_factory=list)
    """Names of long-connection channels."""
    builtin_invoke: bool = True
    """Whether the built-in ``/invoke`` is mounted (only when no channel file is enabled)."""


class BackgroundHost(Protocol):
    """A host that runs beside the HTTP one on the same agent: the scheduler."""

    warnings: list[str]

    def startup_lines(self) -> list[str]: ...

    def start(self) -> None: ...

    async def stop(self, within: float) -> None: ...


SchedulerFactory = Callable[[OpenedAgent], Awaitable[BackgroundHost | None]]
"""Builds the scheduler for an opened agent (``None``: nothing to schedule)."""


@dataclass(slots=True)
class AgentService:
    handler: Handler
    """Every route composed: give it to :func:`~fastagent_cli.serving.host.serve`."""
    agent: Agent
    routes: dict[str, Handler]
    """What is served, key -> handler (for startup lines)."""
    opened: OpenedAgent
    channels: ChannelsSummary
    loaded: LoadedChannels
    ready: asyncio.Future[None]
    """Resolves when every long connection is ready (at once without any); raises ServeError if
    one fails first."""
    _connections: LongConnections
    schedules: BackgroundHost | None = None
    """The scheduler, when one was asked for and the agent has schedules or ``self_schedule``;
    armed by :meth:`start_schedules`."""
    token: InvokeToken | None = None
    """The bearer token ``/invoke`` requires, if any."""
    control: ControlAccess | None = None
    """The control plane's bearer token and prefix, when it is served (``session_control = true``
    or the web chat page)."""
    web_chat: WebChat = field(default_factory=lambda: WebChat(False))
    """Whether the web chat page is served on ``GET /`` (and why not, when it would have been)."""
    detached: DetachedRuns | None = None
    notices: NoticeHost | None = None
    """On Start and MCP resource watches, started by :meth:`start_notices`."""
    guard: RequestGuard = field(default_factory=RequestGuard)
    """The ``Host`` / ``Origin`` / CORS checks in front of every route (``[http] allowed_hosts``,
    ``allowed_origins``); :meth:`RequestGuard.allow_public_url` adds a tunnel's name."""
    faces: list[Face] = field(default_factory=list)
    """The protocol faces ``[http]`` switched on (``openai = true``...), mounted beside ``/invoke``."""

    @property
    def agent_dir(self) -> Path:
        return self.opened.agent_dir

    def start_schedules(self) -> None:
        """Arm the schedules (a missed slot fires once now) and start the wake-up poll."""
        if self.schedules is not None:
            self.schedules.start()

    def start_notices(self, *, on_start: bool = True) -> None:
        """Subscribe to the watched MCP resources and, with ``on_start``, send the definition's
        On Start section as the first notice (``dev`` / ``start`` do, once serving began; a
        ``dev`` reload does not)."""
        if self.notices is None:
            self.notices = NoticeHost(self.opened)
        self.notices.start(on_start=on_start)

    @property
    def workspace(self) -> Path:
        return self.opened.workspace

    async def quiesce(self, within: float = STOP_TIMEOUT_S) -> None:
        """Stop taking work by itself (long connections, schedules, notices), leaving the agent
        and the runs in flight alone: a ``dev`` worker that drains before its successor takes
        over (the successor polls and schedules instead)."""
        steps = [self._connections.stop(within)]
        if self.schedules is not None:
            steps.append(self.schedules.stop(within))
        if self.notices is not None:
            steps.append(self.notices.stop(within))
        await asyncio.gather(*steps, return_exceptions=True)

    async def close(self, within: float = STOP_TIMEOUT_S) -> None:
        """Stop long connections (within ``within`` seconds) and close the agent's model clients. Raises
        ServeError if a connection fails to stop in time (the agent is closed anyway)."""
        try:
            if self.detached is not None:
                await self.detached.aclose(min(within, 0.5))
            steps = [self._connections.stop(within)]
            if self.schedules is not None:
                steps.append(self.schedules.stop(within))
            if self.notices is not None:
                steps.append(self.notices.stop(within))
            await asyncio.gather(*steps)
        finally:
            try:
                await close_route_channels(self.loaded)
                await close_faces(self.faces)
            finally:
                await self.opened.aclose()


async def start_route_channels(loaded: LoadedChannels) -> None:
    """Start every route channel that has a lifecycle; ServeError naming the file on a failure."""
    for file, routes in loaded.lifecycles:
        start = getattr(routes, "start", None)
        if start is None:
            continue
        try:
            await start()
        except FastagentError as exc:
            raise ServeError(f"{file}: {exc.message}") from None
        except Exception as exc:
            raise ServeError(
                f"{file}: start() raised {type(exc).__name__}: {one_line(str(exc), 300)}"
            ) from None


async def close_route_channels(loaded: LoadedChannels) -> None:
    """Close every route channel that has a lifecycle (their background turns stop)."""
    for file, routes in loaded.lifecycles:
        aclose = getattr(routes, "aclose", None)
        if aclose is None:
            continue
        try:
            await aclose()
        except Exception as exc:
            log.warning("[fastagent] %s: closing it raised %s: %s", file, type(exc).__name__, exc)


async def close_faces(faces: list[Face]) -> None:
    for face in faces:
        if face.aclose is None:
            continue
        try:
            await face.aclose()
        except Exception as exc:
            log.warning("[fastagent] closing the %s face raised %s: %s", face.name, type(exc).__name__, exc)


def mount_faces(faces: list[Face], routes: dict[str, Handler], mounts: dict[str, Handler]) -> None:
    """Add the faces' routes and mounts; ServeError when one takes a route already served."""
    for face in faces:
        for key, handler in face.routes.items():
            if key in routes:
                raise ServeError(f'route setup refused: [http] {face.name} serves "{key}", which is taken')
            routes[key] = handler
        for prefix, handler in face.mounts.items():
            if prefix in mounts:
                raise ServeError(f'route setup refused: [http] {face.name} mounts "{prefix}", which is taken')
            mounts[prefix] = handler


def compose_routes(
    loaded: LoadedChannels,
    agent: Agent,
    is_ready: Callable[[], bool],
    token: InvokeToken | None = None,
    store_reachable: Callable[[], bool] = lambda: True,
    streams: KeyedStreams | None = None,
) -> dict[str, Handler]:
    """Channel routes, plus ``/invoke`` when no channel file is enabled (behind ``token`` when
    there is one), plus ``GET /health`` unless a channel answers it."""
    routes: dict[str, Handler] = dict(loaded.routes)
    if not loaded.enabled:
        routes[INVOKE_KEY] = create_invoke_handler(agent, token, streams)
    health = RouteKey("GET", "/health")
    if not any(parse_route_key(key).overlaps(health) for key in routes):
        routes[HEALTH_KEY] = create_health_handler(is_ready, store_reachable)
    return routes


async def create_agent_service(
    directory: str | os.PathLike[str] = ".",
    *,
    model: str | None = None,
    sessions_dir: str | None = None,
    auth_path: str | None = None,
    on_channel_closed: CloseCallback | None = None,
    scheduler: SchedulerFactory | None = None,
    control_token: str | None = None,
    web_chat_default: bool = False,
) -> AgentService:
    """Open the agent in ``directory``, load its channels, compose the routes, mount the control
    plane (``session_control = true``; ``control_token`` overrides the token) and the web chat
    page (``[http] web_chat``, else ``web_chat_default``), prepare the scheduler (when
    ``scheduler`` is given) and start the long connections. Raises the opener's errors
    (ConfigError, ModelError...), ScheduleError for unreadable schedule state and ServeError for a
    fatal channel setup."""
    opened = open_agent_dir(
        directory,
        model=model,
        sessions_dir=sessions_dir,
        auth_path=auth_path,
        wake_tools=scheduler is not None,
    )
    return await open_agent_service(
        opened,
        on_channel_closed=on_channel_closed,
        scheduler=scheduler,
        control_token=control_token,
        web_chat_default=web_chat_default,
    )


async def open_agent_service(
    opened: OpenedAgent,
    *,
    on_channel_closed: CloseCallback | None = None,
    scheduler: SchedulerFactory | None = None,
    control_token: str | None = None,
    web_chat_default: bool = False,
    boot_token: str | None = None,
) -> AgentService:
    """:func:`create_agent_service` for an agent already opened (the service closes it; open it
    with ``wake_tools=True`` when a scheduler is given). ``boot_token``: the plane's token when
    ``FASTAGENT_CONTROL_TOKEN`` is not set (``dev`` keeps one across worker restarts)."""
    agent = opened.agent
    loaded = LoadedChannels()
    faces: list[Face] = []
    try:
        token = resolve_invoke_token(opened.config.http.token)  # after open: .env may hold it
        await opened.connect()  # the state database: unreachable fails startup with one line
        shared = opened.backend.kind == "postgres"
        channel_state = opened.backend.channel_state if shared else None
        ctx = ChannelContext(agent, opened.state_root.resolve(), opened.control, channel_state)
        loaded = load_channels(opened.agent_dir, ctx)
        loaded.raise_if_invalid()
        schedules = await scheduler(opened) if scheduler is not None else None
        connections = LongConnections(loaded.long_connections, ctx, on_channel_closed)
        backend = opened.backend
        streams = KeyedStreams()
        routes = compose_routes(
            loaded, agent, connections.is_ready, token, lambda: backend.reachable, streams
        )
        chat = plan_web_chat(opened, loaded.routes, web_chat_default)
        access: ControlAccess | None = None
        detached: DetachedRuns | None = None
        mounts: dict[str, Handler] = {}
        if chat.served:
            opened.enable_session_control()  # the page renames, forks, deletes and sets the model
            routes[WEB_CHAT_KEY], mounts[WEB_CHAT_PREFIX] = web_chat_handlers(opened.name)
        if opened.session_control:
            if control_token:
                access = ControlAccess(control_token, minted=False)
            else:
                access = control_access(boot_token=boot_token)
            detached = DetachedRuns()
            mounts[CONTROL_PREFIX] = create_control_plane(opened.control, access.token, agent, detached)
        http = opened.config.http
        faces = load_faces(http.faces(), FaceContext(opened, agent, token, streams))
        mount_faces(faces, routes, mounts)
        guard = RequestGuard(http.allowed_hosts, http.allowed_origins)
        handler = guard.wrap(build_router(routes, mounts))
        await start_route_channels(loaded)
        await connections.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await close_route_channels(loaded)
            await close_faces(faces)
        await opened.aclose()
        raise
    summary = ChannelsSummary(
        routes=list(loaded.routes), long_connections=connections.names, builtin_invoke=not loaded.enabled
    )
    if loaded.disabled:
        log.debug("[fastagent] disabled channels: %s", ", ".join(p.name for p in loaded.disabled))
    return AgentService(
        handler,
        agent,
        routes,
        opened,
        summary,
        loaded,
        connections.ready,
        connections,
        schedules,
        token,
        access,
        chat,
        detached,
        guard=guard,
        faces=faces,
    )
