"""What a first-party channel returns when it is mounted: its routes, plus a lifecycle.

A route channel is ``channel(ctx) -> {route key: handler}``. A stateful channel also has work to do
before it serves (load its state, replay unfinished turns, look itself up on the platform) and
after (stop its background turns). :class:`ChannelRoutes` is that dict with two optional
coroutines the host awaits: :meth:`~ChannelRoutes.start` once, before listening (a failure there is
a fatal channel error, like a broken file), and :meth:`~ChannelRoutes.aclose` on shutdown.

The checks every webhook shares live here too: the body read as a JSON object
(:func:`json_delivery`), a presented secret compared in constant time
(:func:`secret_matches`) and a signed request's timestamp within :data:`MAX_SIGNATURE_AGE_S` of now
(:func:`timestamp_fresh`: a replayed capture is refused), and the acknowledgement that comes only once
what a delivery causes is durable (:meth:`Redelivery.acknowledge`). :class:`WebhookIngress` is the
base of every platform's ingress: its route in front of the intake, inside the request's trace
context (:mod:`~fastagent_cli.channels.kit.trace`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from aiohttp import web

from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.channels.kit.trace import receiving
from fastagent_cli.serving.body import json_object_or_400, read_body_or_413, read_post_body, text_response

__all__ = [
    "MAX_SIGNATURE_AGE_S",
    "ChannelRoutes",
    "Redelivery",
    "Route",
    "WebhookIngress",
    "decide_route",
    "json_delivery",
    "secret_matches",
    "timestamp_fresh",
]

log = logging.getLogger("fastagent.channel")

R = TypeVar("R")

Route = Callable[[Mapping[str, Any]], Any]
"""A channel's ``route(payload)``: the platform's route type, a dict of its fields, or ``None``."""

MAX_SIGNATURE_AGE_S = 5 * 60
"""How far a signed request's timestamp may be from now (Slack's and Feishu/Lark's window)."""

_TIMESTAMP = re.compile(r"^\d{1,12}$")


class ChannelRoutes(dict[str, Any]):
    def __init__(
        self,
        routes: dict[str, Any],
        *,
        start: Callable[[], Awaitable[None]] | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(routes)
        self._start = start
        self._close = close

    async def start(self) -> None:
        if self._start is not None:
            await self._start()

    async def aclose(self) -> None:
        if self._close is not None:
            await self._close()


async def json_delivery(
    request: web.BaseRequest, *, method_checked: bool = False
) -> tuple[bytes, dict[str, Any]] | web.Response:
    """A webhook delivery's body and the JSON object it holds, or the refusal to answer: ``405`` for
    a method other than POST (unless the caller checked it already), ``413`` over the body cap
    (the connection closed after it), ``400`` for a body that is not a JSON object."""
    raw = await (read_body_or_413(request) if method_checked else read_post_body(request))
    if isinstance(raw, web.Response):
        return raw
    payload = json_object_or_400(raw)
    return payload if isinstance(payload, web.Response) else (raw, payload)


def secret_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented secret (a missing one never matches)."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def timestamp_fresh(timestamp: str | None, now: float | None = None) -> bool:
    """Is ``timestamp`` (Unix seconds, as a platform's header sends it) within
    :data:`MAX_SIGNATURE_AGE_S` of ``now``? A missing or malformed one is not."""
    if not timestamp or not _TIMESTAMP.match(timestamp):
        return False
    current = time.time() if now is None else now
    return abs(int(current) - int(timestamp)) <= MAX_SIGNATURE_AGE_S


@dataclass(frozen=True, slots=True)
class Redelivery:
    """How a platform's webhook deliveries are acknowledged, and how one comes again when it is not:
    ``label`` (the channel's log label), ``what`` one delivery is called (``"update"``,
    ``"event"``), ``again`` (how it comes again, for the log line)."""

    label: str
    what: str
    again: str

    async def acknowledge(self, accepting: Awaitable[None], delivery: object) -> web.Response:
        """``200`` once ``accepting`` (shielded: a client that hangs up does not cut it short) has
        made the delivery's effects durable; ``500 "cannot persist the <what>"`` when a state write
        failed, so the platform delivers it again."""
        try:
            await asyncio.shield(accepting)
        except StateWriteError as exc:
            log.error(
                "%s could not persist %s %s, so %s: %s", self.label, self.what, delivery, self.again, exc
            )
            return text_response(f"cannot persist the {self.what}\n", 500)
        return web.Response(status=200)


class _Intake(Protocol):
    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


IntakeT = TypeVar("IntakeT", bound=_Intake)


class WebhookIngress(ABC, Generic[IntakeT]):
    """The base of a platform's webhook ingress: the one :attr:`route` of a mounted channel, in
    front of its intake (started before the host listens, closed on shutdown); the platform's
    checks live in :meth:`handle`, its acknowledgement in :attr:`redelivery`."""

    route: str
    redelivery: Redelivery

    def __init__(self, intake: IntakeT) -> None:
        self.intake = intake

    def routes(self) -> ChannelRoutes:
        return ChannelRoutes({self.route: self.receive}, start=self.intake.start, close=self.intake.aclose)

    async def receive(self, request: web.BaseRequest) -> web.StreamResponse:
        """The route's handler: :meth:`handle` inside the request's trace context."""
        with receiving(request.headers):  # the caller's trace goes into the turns it causes
            return await self.handle(request)

    @abstractmethod
    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """One delivery: the platform's checks, then the intake's acceptance."""


def decide_route(
    route: Callable[[Any], Any] | None,
    default: Callable[[], R | None],
    payload: Any,
    kind: type[R],
    build: Callable[[Mapping[str, Any]], R],
    *,
    label: str,
    argument: str,
    dropped: str,
) -> R | None:
    """Where a delivery goes: the channel's ``route(payload)`` (a ``kind``, a dict read by ``build``,
    or ``None``: not answered), else ``default()``. A route that raises or returns anything else
    drops the delivery with one log line (``argument`` names the payload, ``dropped`` what is lost)."""
    try:
        if route is None:
            return default()
        decided = route(payload)
    except Exception as exc:
        log.error(
            "%s route(%s) raised, so %s is dropped: %s",
            label,
            argument,
            dropped,
            " ".join(f"{type(exc).__name__}: {exc}".split())[:500],
        )
        return None
    if decided is None or isinstance(decided, kind):
        return decided
    if isinstance(decided, Mapping):
        return build(decided)
    log.error(
        "%s route(%s) returned %r: return a %s, a dict or None", label, argument, decided, kind.__name__
    )
    return None
