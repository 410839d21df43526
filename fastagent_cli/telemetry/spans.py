"""Spans: what the engine, the model clients and the hosts open, and the W3C ``traceparent``.

A span is a plain object (ids, name, kind, times, attributes, events, status). The current one
is a context variable, so a task inherits its parent's span when it is created (the run's task
inherits the trigger's root span, a tool task the turn's). When telemetry is off there is no
tracer: :func:`span` and :func:`root_span` yield ``None`` after one global check, and nothing
else of this package is imported.
"""

from __future__ import annotations

import contextvars
import random
import re
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

__all__ = [
    "CLIENT",
    "CONSUMER",
    "INTERNAL",
    "SERVER",
    "Span",
    "SpanSink",
    "current_span",
    "install",
    "parse_traceparent",
    "root_span",
    "span",
    "traceparent",
]

INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER = 1, 2, 3, 4, 5
"""``Span.SpanKind`` values of OTLP."""
STATUS_OK, STATUS_ERROR = 1, 2
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


@dataclass(slots=True, eq=False)
class Span:
    trace_id: bytes
    span_id: bytes
    parent_id: bytes | None
    name: str
    kind: int = INTERNAL
    start_ns: int = 0
    end_ns: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    status_code: int = 0
    status_message: str = ""

    @property
    def trace_hex(self) -> str:
        return self.trace_id.hex()

    def set(self, **attributes: Any) -> None:
        """Set attributes (dotted names: pass a dict through :meth:`update`)."""
        self.attributes.update(attributes)

    def update(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        self.events.append((time.time_ns(), name, dict(attributes or {})))

    def fail(self, message: str, error_type: str | None = None) -> None:
        """Status ``ERROR`` with ``message``; ``error.type`` (a failure code) when given."""
        self.status_code = STATUS_ERROR
        self.status_message = message
        if error_type:
            self.attributes["error.type"] = error_type

    def traceparent(self) -> str:
        return f"00-{self.trace_id.hex()}-{self.span_id.hex()}-01"


class SpanSink(Protocol):
    capture_content: bool

    def submit(self, span: Span) -> None:
        """Take a finished span (never blocks; exporting happens elsewhere)."""
        ...


_random = random.Random()  # ids need uniqueness, not secrecy: no system call per span


def _id(size: int) -> bytes:
    value = 0
    while not value:  # an all-zero id is invalid
        value = _random.getrandbits(size * 8)
    return value.to_bytes(size, "big")


_CURRENT: contextvars.ContextVar[Span | None] = contextvars.ContextVar("fastagent_span", default=None)
_sink: SpanSink | None = None


def install(sink: SpanSink | None) -> None:
    """Turn tracing on (a sink) or off (``None``) for this process."""
    global _sink
    _sink = sink


def sink() -> SpanSink | None:
    return _sink


def current_span() -> Span | None:
    return _CURRENT.get() if _sink is not None else None


def traceparent() -> str | None:
    """The ``traceparent`` header for an outgoing request made in the current span."""
    if _sink is None:
        return None
    current = _CURRENT.get()
    return current.traceparent() if current is not None else None


def parse_traceparent(header: str | None) -> tuple[bytes, bytes] | None:
    """``(trace id, parent span id)`` of a valid W3C ``traceparent`` (version 00), else ``None``."""
    if not header:
        return None
    found = _TRACEPARENT.fullmatch(header.strip().lower())
    if found is None or set(found.group(1)) == {"0"} or set(found.group(2)) == {"0"}:
        return None
    return bytes.fromhex(found.group(1)), bytes.fromhex(found.group(2))


def span(
    name: str, kind: int = INTERNAL, attributes: Mapping[str, Any] | None = None
) -> AbstractContextManager[Span | None]:
    """A child of the current span (a new trace when there is none) for the block; ``None`` when
    telemetry is off. An exception leaving the block sets the status (unless already set)."""
    if _sink is None:
        return _OFF
    return _Opened(None, name, kind, attributes)


def root_span(
    name: str,
    *,
    trigger: str,
    traceparent: str | None = None,
    kind: int = SERVER,
    attributes: Mapping[str, Any] | None = None,
) -> AbstractContextManager[Span | None]:
    """The root span of one trigger (``http``, ``channel``, ``schedule``, ``control``, a face's
    name...): a new trace, or the caller's when ``traceparent`` is a valid W3C header."""
    if _sink is None:
        return _OFF
    remote = parse_traceparent(traceparent)
    trace_id, parent_id = remote if remote is not None else (_id(16), None)
    made = Span(trace_id, _id(8), parent_id, name, kind)
    made.attributes["fastagent.trigger"] = trigger
    return _Opened(made, name, kind, attributes)


_OFF: AbstractContextManager[None] = nullcontext()
"""What :func:`span` and :func:`root_span` return while telemetry is off."""


class _Opened:
    """A span for a ``with`` block: current while it runs, submitted when it ends. A class rather
    than a generator context manager: a turn opens several, and this costs a quarter of the CPU."""

    __slots__ = ("attributes", "kind", "made", "name", "token")

    def __init__(self, made: Span | None, name: str, kind: int, attributes: Mapping[str, Any] | None) -> None:
        self.made = made
        self.name = name
        self.kind = kind
        self.attributes = attributes
        self.token: contextvars.Token[Span | None] | None = None

    def __enter__(self) -> Span:
        made = self.made
        if made is None:  # a child: of the span current where the block starts
            parent = _CURRENT.get()
            if parent is not None:
                made = Span(parent.trace_id, _id(8), parent.span_id, self.name, self.kind)
            else:
                made = Span(_id(16), _id(8), None, self.name, self.kind)
            self.made = made
        if self.attributes:
            made.attributes.update(self.attributes)
        made.start_ns = time.time_ns()
        self.token = _CURRENT.set(made)
        return made

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        made = self.made
        assert made is not None and self.token is not None
        if exc is not None and not made.status_code:
            cancelled = isinstance(exc, GeneratorExit) or type(exc).__name__ == "CancelledError"
            made.fail("cancelled" if cancelled else f"{type(exc).__name__}: {exc}"[:500])
        _CURRENT.reset(self.token)
        made.end_ns = time.time_ns()
        target = _sink
        if target is not None:
            target.submit(made)
