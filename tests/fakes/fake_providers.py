"""Scriptable fake OpenAI / Anthropic servers on 127.0.0.1 that speak the real streaming wire format.

Each fake is an aiohttp app on a random port. Queue one canned response per expected request; each
SSE event is written and flushed separately with a short sleep in between, so clients really see a
stream arriving in pieces. Every request is recorded (method, path, lower-cased headers, JSON body).

::

    async with FakeOpenAI() as fake:
        fake.enqueue_stream(openai_reply("Hello there", usage=(12, 3)))
        fake.enqueue_error(429, headers={"Retry-After": "2"})
        model = fake.model_info()                  # ModelInfo pointing at fake.base_url
        ...
        assert fake.requests[0].body["stream"] is True

Responses: ``enqueue_stream(events)`` (OpenAI appends ``data: [DONE]`` unless ``done=False``),
``enqueue_cut(events)`` (closes the socket mid-answer), ``enqueue_hold(events)`` (keeps the stream
open until the client goes away; then ``await fake.wait_disconnect()``), ``enqueue_error(status,
body, headers)`` and ``enqueue_raw(status, body, content_type=...)``; ``answer_always(events)``
streams ``events`` to every request the queue has nothing for (load and soak runs);
``respond_with(fn)`` answers those with ``fn(body)`` instead (a model whose answer depends on the
request: :mod:`tests.fakes.small_window`). An event is a
dict (encoded as JSON; Anthropic dicts also get ``event: <type>``), a ``str`` written verbatim
(comments, CRLF tests) or ``bytes``. An empty queue answers 500 ``fake server: no response queued``.

Builders for typical streams (re-exported from :mod:`tests.fakes.wire_builders`): ``openai_reply``,
``openai_chunk``, ``openai_usage_chunk``, ``openai_error_body`` and ``anthropic_reply``,
``anthropic_*_block``, ``anthropic_message_start``/``_end``, ``anthropic_error_event``/``_body``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Self

from aiohttp import web

from fastagent_cli.models.types import ModelInfo

from .wire_builders import (
    FakeCall,
    anthropic_error_body,
    anthropic_error_event,
    anthropic_message_end,
    anthropic_message_start,
    anthropic_reply,
    anthropic_text_block,
    anthropic_thinking_block,
    anthropic_tool_use_block,
    openai_chunk,
    openai_error_body,
    openai_reply,
    openai_usage_chunk,
    split_text,
)

__all__ = [
    "FakeAnthropic",
    "FakeCall",
    "FakeCodex",
    "FakeOpenAI",
    "FakeResponses",
    "FakeProvider",
    "RecordedRequest",
    "anthropic_error_body",
    "anthropic_error_event",
    "anthropic_message_end",
    "anthropic_message_start",
    "anthropic_reply",
    "anthropic_text_block",
    "anthropic_thinking_block",
    "anthropic_tool_use_block",
    "openai_chunk",
    "openai_error_body",
    "openai_reply",
    "openai_usage_chunk",
    "split_text",
]

Event = dict[str, Any] | str | bytes


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or ``None`` when it was not JSON."""
    raw: bytes
    peer: str = ""
    """The client's ``host:port``: equal across requests when a connection was reused."""


@dataclass
class _Stream:
    events: list[Event]
    mode: str = "complete"  # complete | cut | hold
    done: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    burst_after: int | None = None
    pause: Callable[[], float] = float


@dataclass
class _Plain:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


class FakeProvider:
    """Base of the fakes: queue, recording, server lifecycle. Use a subclass."""

    path: ClassVar[str] = "/"
    api: ClassVar[str] = ""
    provider: ClassVar[str] = "fake"

    def __init__(
        self, *, delay: float = 0.002, record: bool = True, tls: ssl.SSLContext | None = None
    ) -> None:
        self.delay = delay
        self.tls = tls
        """A server context: serve ``https://localhost:<port>`` (the certificate must name localhost)."""
        self.record = record
        """Keep every request in ``requests`` (turn it off for long runs)."""
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self._queue: deque[_Stream | _Plain] = deque()
        self._always: _Stream | None = None
        self._responder: Callable[[Any], _Stream | _Plain] | None = None
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._stopping = asyncio.Event()
        self._disconnected = asyncio.Event()
        self._requested = asyncio.Event()

    # -- lifecycle
    async def start(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls)
        await site.start()
        self._port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def origin_port(self) -> int:
        return self._port

    @property
    def origin(self) -> str:
        if self.tls is not None:
            return f"https://localhost:{self._port}"
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        return self.origin

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    def model_info(self, id: str = "fake-model", **overrides: Any) -> ModelInfo:
        """A :class:`ModelInfo` aimed at this server; ``overrides`` are ModelInfo fields."""
        fields: dict[str, Any] = {"provider": self.provider, "id": id, "api": self.api}
        fields["base_url"] = self.base_url
        fields.update(overrides)
        return ModelInfo(**fields)

    # -- scripting
    def enqueue_stream(
        self, events: Sequence[Event], *, done: bool = True, headers: dict[str, str] | None = None
    ) -> None:
        self._queue.append(_Stream(list(events), "complete", done, dict(headers or {})))

    def answer_always(
        self, events: Sequence[Event], *, burst_after: int | None = None, pause: Callable[[], float] = float
    ) -> None:
        """Stream ``events`` (complete, with the done marker) whenever the queue is empty.

        ``burst_after=n``: the first ``n`` events one by one, then a wait of ``pause()`` seconds,
        then the rest and the end of the response in one write (a fast model whose answer is
        ready at once)."""
        self._always = _Stream(list(events), burst_after=burst_after, pause=pause)

    def respond_with(self, responder: Callable[[Any], tuple[int, Any] | Sequence[Event]]) -> None:
        """Answer every request the queue has nothing for with ``responder(body)``: a list of
        events (streamed, with the done marker) or ``(status, json_body)`` (an HTTP error): a
        server whose answer depends on the request (a model with a real context window)."""

        def answer(body: Any) -> _Stream | _Plain:
            result = responder(body)
            if isinstance(result, tuple):
                status, error = result
                return _Plain(status, json.dumps(error).encode(), "application/json")
            return _Stream(list(result))

        self._responder = answer

    def enqueue_cut(self, events: Sequence[Event]) -> None:
        """Send ``events`` then drop the connection without finishing the response."""
        self._queue.append(_Stream(list(events), "cut", False))

    def enqueue_hold(self, events: Sequence[Event]) -> None:
        """Send ``events`` then keep the response open until the client disconnects."""
        self._queue.append(_Stream(list(events), "hold", False))

    def enqueue_error(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        """An HTTP error; ``body`` is a dict (sent as JSON), str/bytes (verbatim) or ``None`` for
        this provider's usual error JSON."""
        if body is None:
            body = self.error_body(f"fake error {status}")
        if isinstance(body, dict | list):
            self.enqueue_raw(status, json.dumps(body), content_type="application/json", headers=headers)
        else:
            self.enqueue_raw(status, body, headers=headers)

    def enqueue_raw(
        self,
        status: int,
        body: bytes | str,
        *,
        content_type: str = "text/plain",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self._queue.append(_Plain(status, data, content_type, dict(headers or {})))

    @property
    def pending(self) -> int:
        """Queued responses not served yet."""
        return len(self._queue)

    async def wait_request(self) -> None:
        """Until the first request has arrived."""
        await self._requested.wait()

    async def wait_disconnect(self, within: float = 1.0) -> bool:
        """True once a held stream has seen its client go away (within ``within`` seconds)."""
        try:
            await asyncio.wait_for(self._disconnected.wait(), within)
        except TimeoutError:
            return False
        return True

    # -- provider specifics
    def error_body(self, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def encode(self, event: Event) -> bytes:
        raise NotImplementedError

    def done_marker(self) -> bytes:
        return b""

    # -- serving
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._requested.set()
        headers = {k.lower(): v for k, v in request.headers.items()}
        peername = request.transport.get_extra_info("peername") if request.transport else None
        peer = f"{peername[0]}:{peername[1]}" if peername else ""
        if self.record:
            self.requests.append(RecordedRequest(request.method, request.path, headers, body, raw, peer))
        if request.method != "POST" or request.path != self.path:
            message = f"fake server: no route for {request.method} {request.path}"
            return web.json_response(self.error_body(message), status=404)
        item: _Stream | _Plain | None
        if self._queue:
            item = self._queue.popleft()
        elif self._responder is not None:
            item = self._responder(body)
        else:
            item = self._always
        if item is None:
            return web.json_response(self.error_body("fake server: no response queued"), status=500)
        if isinstance(item, _Plain):
            return web.Response(
                status=item.status, body=item.body, content_type=item.content_type, headers=item.headers
            )
        return await self._stream(request, item)

    async def _stream(self, request: web.Request, item: _Stream) -> web.StreamResponse:
        response = web.StreamResponse(
            status=200,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **item.headers},
        )
        await response.prepare(request)
        try:
            if item.burst_after is not None:
                return await self._burst(response, item, item.burst_after)
            for event in item.events:
                await response.write(self.encode(event))
                await asyncio.sleep(self.delay)
            if item.mode == "cut":
                if request.transport is not None:
                    request.transport.close()
                return response
            if item.mode == "hold":
                await self._hold(request)
                return response
            if item.done:
                await response.write(self.done_marker())
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            self._note_disconnect()
        return response

    async def _burst(self, response: web.StreamResponse, item: _Stream, head: int) -> web.StreamResponse:
        for event in item.events[:head]:
            await response.write(self.encode(event))
        await asyncio.sleep(item.pause())
        rest = b"".join(self.encode(event) for event in item.events[head:])
        await response.write(rest + (self.done_marker() if item.done else b""))
        await response.write_eof()
        return response

    async def _hold(self, request: web.Request) -> None:
        while not self._stopping.is_set():
            transport = request.transport
            if transport is None or transport.is_closing():
                self._note_disconnect()
                return
            await asyncio.sleep(0.01)

    def _note_disconnect(self) -> None:
        self.disconnects += 1
        self._disconnected.set()


class FakeOpenAI(FakeProvider):
    """``POST /v1/chat/completions``; ``base_url`` ends in ``/v1`` like the real one."""

    path = "/v1/chat/completions"
    api = "openai-completions"
    provider = "fake-openai"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def error_body(self, message: str) -> dict[str, Any]:
        return openai_error_body(message)

    def encode(self, event: Event) -> bytes:
        if isinstance(event, bytes):
            return event
        if isinstance(event, str):
            return event.encode()
        return f"data: {json.dumps(event)}\n\n".encode()

    def done_marker(self) -> bytes:
        return b"data: [DONE]\n\n"


class FakeResponses(FakeProvider):
    """``POST /v1/responses`` (OpenAI Responses API); events framed with ``event: <type>``."""

    path = "/v1/responses"
    api = "openai-responses"
    provider = "fake-responses"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def error_body(self, message: str) -> dict[str, Any]:
        return openai_error_body(message)

    def encode(self, event: Event) -> bytes:
        if isinstance(event, bytes):
            return event
        if isinstance(event, str):
            return event.encode()
        return f"event: {event.get('type', 'message')}\ndata: {json.dumps(event)}\n\n".encode()


class FakeCodex(FakeResponses):
    """The ChatGPT subscription backend: ``POST /backend-api/codex/responses``."""

    path = "/backend-api/codex/responses"
    api = "openai-codex-responses"
    provider = "fake-codex"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/backend-api"


class FakeAnthropic(FakeProvider):
    """``POST /v1/messages``; ``base_url`` is the origin (the client appends ``/v1/messages``)."""

    path = "/v1/messages"
    api = "anthropic-messages"
    provider = "fake-anthropic"

    def error_body(self, message: str) -> dict[str, Any]:
        return anthropic_error_body(message)

    def encode(self, event: Event) -> bytes:
        if isinstance(event, bytes):
            return event
        if isinstance(event, str):
            return event.encode()
        return f"event: {event.get('type', 'message')}\ndata: {json.dumps(event)}\n\n".encode()
