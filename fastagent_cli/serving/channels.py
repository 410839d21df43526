"""Channel modules: ``channels/*.py`` in the agent directory.

Every ``channels/*.py`` file is enabled; rename one to ``<name>.py.disabled`` to disable it (dot
files and ``__init__.py`` are not channels). A module's ``channel`` attribute is either

* a **route channel**: a function ``(ctx) -> routes`` returning a non-empty dict of route keys
  (``"/path"`` or ``"METHOD /path"``) to handlers, synchronously::

      def channel(ctx):
          async def hook(request):
              ...
          return {"POST /webhook": hook}

* a **long connection**: an object with a string ``name`` and ``connect(ctx, stop)`` returning an
  object with ``ready`` and ``closed`` awaitables (``stop`` is an :class:`asyncio.Event`, the only
  shutdown command; see :mod:`fastagent_cli.serving.long_connections`).

``ctx`` is a :class:`ChannelContext` (the agent, the absolute state root: a channel keeps its
state under ``<state_root>/channels/<kind>/``, and the session hub when session control is
served). Loading collects every per-file failure and every route collision; serving treats any of
them as fatal (:meth:`LoadedChannels.raise_if_invalid`).

A route channel's routes may come with a lifecycle (``fastagent_cli.channels`` do): a dict with
``async start()`` is started before the server listens (a failure is fatal, like a broken file)
and one with ``async aclose()`` is closed on shutdown. A channel (or its module) with a
``register_webhook(public_url)`` hook is called once a ``--tunnel`` URL is known.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from fastagent_cli.assembly import (
    CHANNELS_DIR,
    channel_files,
    connection_name,
    describe_exception,
    import_channel,
    is_long_connection,
    module_name,
)
from fastagent_cli.contract import Agent
from fastagent_cli.control import SessionControl
from fastagent_cli.errors import FastagentError, ServeError
from fastagent_cli.serving.router import Handler, RouteKey, find_collisions, parse_route_key
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = [
    "CHANNELS_DIR",
    "ChannelContext",
    "ChannelFailure",
    "LongConnection",
    "LongConnectionChannel",
    "LoadedChannels",
    "load_channels",
]


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What a channel is mounted with."""

    agent: Agent
    state_root: Path
    """The resolved state root, absolute (``FASTAGENT_STATE_DIR`` > ``<agent dir>/.fastagent``)."""
    control: SessionControl | None = None
    """The session hub (what a chat's stop command aborts the active run through)."""
    channel_state: Callable[[str], ChannelStateStore] | None = None
    """Opens a channel kind's state store (the agent's state backend); ``None``: files under
    ``state_root``."""

    def __post_init__(self) -> None:
        if not Path(self.state_root).is_absolute():
            raise ServeError(f"a channel context needs an absolute state root, not {self.state_root}")


@runtime_checkable
class LongConnection(Protocol):
    ready: Awaitable[None]
    closed: Awaitable[None]


class LongConnectionChannel(Protocol):
    name: str

    def connect(self, ctx: ChannelContext, stop: Any) -> LongConnection | Awaitable[LongConnection]: ...


@dataclass(frozen=True, slots=True)
class ChannelFailure:
    file: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass(slots=True)
class LoadedChannels:
    enabled: list[Path] = field(default_factory=list)
    disabled: list[Path] = field(default_factory=list)
    routes: dict[str, Handler] = field(default_factory=dict)
    route_owners: dict[str, str] = field(default_factory=dict)
    """Route key -> the file that declared it."""
    long_connections: list[tuple[str, LongConnectionChannel]] = field(default_factory=list)
    """``(file, module)`` per long-connection channel."""
    failures: list[ChannelFailure] = field(default_factory=list)
    collisions: list[str] = field(default_factory=list)
    lifecycles: list[tuple[str, Any]] = field(default_factory=list)
    """``(file, routes)`` for route channels whose routes have ``start()`` / ``aclose()``."""
    webhooks: list[tuple[str, Any]] = field(default_factory=list)
    """``(file, register_webhook)`` for route channels that register their own webhook."""

    @property
    def invalid(self) -> bool:
        return bool(self.failures or self.collisions)

    def error_message(self) -> str | None:
        """The one fatal message for ``dev`` / ``start``, naming every file, or ``None``."""
        if not self.invalid:
            return None
        head = (
            f"channel setup is invalid ({len(self.failures)} load failure(s), "
            f"{len(self.collisions)} route collision(s)) — fix it, or rename an intentionally "
            "disabled file to *.disabled"
        )
        return head + ": " + "; ".join([*(str(f) for f in self.failures), *self.collisions])

    def raise_if_invalid(self) -> None:
        message = self.error_message()
        if message is not None:
            raise ServeError(message)


def load_channels(agent_dir: Path, ctx: ChannelContext, *, mounts: Iterable[str] = ()) -> LoadedChannels:
    """Import every enabled channel file, mount route channels with ``ctx``, and check the routes
    against each other and against ``mounts`` (prefixes owned by built-in handlers)."""
    files = channel_files(agent_dir)
    loaded = LoadedChannels(enabled=files.enabled, disabled=files.disabled)
    owned: list[tuple[str, RouteKey]] = []
    names: dict[str, str] = {}
    for path in loaded.enabled:
        shown = f"{CHANNELS_DIR}/{path.name}"
        try:
            channel = import_channel(path, agent_dir)
            if is_long_connection(channel):
                name = connection_name(channel)
                if name in names:
                    raise ServeError(f'a long connection named "{name}" is already declared by {names[name]}')
                names[name] = shown
                loaded.long_connections.append((shown, channel))
                continue
            routes, lifecycle = _mount_routes(channel, ctx)
        except ServeError as exc:
            loaded.failures.append(ChannelFailure(shown, exc.message))
            continue
        if lifecycle is not None:
            loaded.lifecycles.append((shown, lifecycle))
        hook = getattr(channel, "register_webhook", None) or getattr(
            sys.modules.get(module_name(path)), "register_webhook", None
        )
        if callable(hook):
            loaded.webhooks.append((shown, hook))
        for key, handler in routes.items():
            loaded.routes[str(key)] = handler
            loaded.route_owners[str(key)] = shown
            owned.append((shown, key))
    loaded.collisions.extend(find_collisions(owned))
    for prefix in mounts:
        for owner, key in owned:
            if key.path == prefix or key.path.startswith(prefix.rstrip("/") + "/"):
                loaded.collisions.append(f'"{key}" ({owner}) is inside the built-in "{prefix}"')
    return loaded


def _mount_routes(channel: Any, ctx: ChannelContext) -> tuple[dict[RouteKey, Handler], Any]:
    if not callable(channel):
        raise ServeError(
            f"`channel` is a {type(channel).__name__}: it must be a function (ctx) -> routes, "
            "or an object with name and connect(ctx, stop)"
        )
    try:
        routes = channel(ctx)
    except FastagentError as exc:
        raise ServeError(exc.message) from None
    except Exception as exc:
        raise ServeError(f"channel(ctx) raised {describe_exception(exc)}") from None
    if inspect.isawaitable(routes):
        close = getattr(routes, "close", None)
        if close is not None:
            close()  # a coroutine never awaited would warn
        raise ServeError(
            "channel(ctx) returned an awaitable: a route channel returns its routes synchronously"
        )
    if not isinstance(routes, Mapping) or not routes:
        raise ServeError(f"channel(ctx) must return a non-empty dict of routes, not {_shape(routes)}")
    parsed: dict[RouteKey, Handler] = {}
    for key, handler in routes.items():
        route = parse_route_key(key)
        if not callable(handler):
            raise ServeError(f'the handler of "{key}" is a {type(handler).__name__}, not an async function')
        parsed[route] = handler
    lifecycle = (
        routes
        if callable(getattr(routes, "start", None)) or callable(getattr(routes, "aclose", None))
        else None
    )
    return parsed, lifecycle


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an empty dict"
    return "None" if value is None else f"a {type(value).__name__}"
