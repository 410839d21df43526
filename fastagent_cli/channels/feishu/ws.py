"""The Feishu/Lark WebSocket ingress (features O6, O7): a long connection, no public URL.

``POST <api base>/callback/ws/endpoint`` with the App ID and Secret returns the connection URL (its
query names the ``service_id``) and the client config (``PingInterval``, ``ReconnectCount``,
``ReconnectInterval``, ``ReconnectNonce``, in seconds). Over the WebSocket the client pings every
``PingInterval`` and answers each event frame once the event is durable: ``{"code": 200}``, or
``500`` when it could not be persisted, so the platform pushes it again (the ~3 s ACK budget holds:
acceptance only persists and enqueues). A card button's press (an approval card's) arrives as a
data frame of ``type: card`` holding the ``card.action.trigger`` envelope; the response frame's
``data`` is the callback's answer (the toast and new card the webhook would return), base64 JSON,
as the SDK's ws client answers ``type: card`` frames. ``ready`` settles on the first connection; a
dropped connection reconnects (first after a random share of ``ReconnectNonce``, then every
``ReconnectInterval``, ``ReconnectCount`` times, -1 forever); credentials refused or retries
exhausted reject ``closed``, which fails serving. ``stop`` closes the connection and the channel.

This is written against the frame protocol (:mod:`~fastagent_cli.channels.feishu.frames`) rather
than the ``lark-oapi`` SDK: its wheel alone is 10 700 files (21 MB unpacked, 1.7.5) plus requests,
pycryptodome and websockets, and its WebSocket client captures a module-global event loop at import
and drives a blocking ``start()`` with ``run_until_complete``, which fails when imported lazily inside
the server's running asyncio loop (larksuite/oapi-sdk-python issues 119 and 133).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp

from fastagent_cli.channels.feishu.approvals import CARD_ACTION
from fastagent_cli.channels.feishu.frames import CONTROL, DATA, Frame, decode_frame, encode_frame
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.errors import one_line

__all__ = ["LongConnection", "connect_long_connection"]

log = logging.getLogger("fastagent.channel")

ENDPOINT_PATH = "/callback/ws/endpoint"
_NOT_RETRYABLE = {403, 514, 1000040344, 1000040350}


class _Terminal(Exception):
    """A failure no reconnect can fix (credentials, app configuration)."""


@dataclass(slots=True)
class _Config:
    ping_s: float = 120.0
    reconnect_count: int = -1
    reconnect_interval_s: float = 120.0
    reconnect_nonce_s: float = 30.0

    def update(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        for key, attr in (
            ("PingInterval", "ping_s"),
            ("ReconnectCount", "reconnect_count"),
            ("ReconnectInterval", "reconnect_interval_s"),
            ("ReconnectNonce", "reconnect_nonce_s"),
        ):
            if isinstance(data.get(key), int | float):
                setattr(self, attr, type(getattr(self, attr))(data[key]))


@dataclass(slots=True)
class LongConnection:
    ready: asyncio.Future[None]
    closed: asyncio.Future[None]
    task: asyncio.Task[None] | None = None
    parts: dict[str, list[bytes | None]] = field(default_factory=dict)


def connect_long_connection(
    label: str, base: str, app_id: str, secret: str, runtime: Any, stop: asyncio.Event
) -> LongConnection:
    loop = asyncio.get_running_loop()
    connection = LongConnection(loop.create_future(), loop.create_future())
    connection.task = asyncio.create_task(
        _run(connection, f"{label[:-1]}:ws]", base, app_id, secret, runtime, stop)
    )
    return connection


async def _endpoint(http: aiohttp.ClientSession, base: str, app_id: str, secret: str, config: _Config) -> str:
    try:
        async with http.post(
            base + ENDPOINT_PATH, json={"AppID": app_id, "AppSecret": secret}, headers={"locale": "zh"}
        ) as response:
            try:
                data = await response.json(content_type=None)
            except ValueError:
                data = {}
    except aiohttp.ClientError as exc:
        raise ConnectionError(f"the endpoint request failed: {type(exc).__name__}: {exc}") from None
    code = data.get("code") if isinstance(data, dict) else None
    if response.status != 200 or code != 0:
        message = (data.get("msg") if isinstance(data, dict) else None) or "system busy"
        if code in _NOT_RETRYABLE or response.status in (401, 403):
            raise _Terminal(f"the long-connection endpoint refused the app (code {code}): {message}")
        raise ConnectionError(
            f"the long-connection endpoint answered {response.status} code {code}: {message}"
        )
    payload = data.get("data") or {}
    config.update(payload.get("ClientConfig"))
    url = payload.get("URL")
    if not isinstance(url, str):
        raise ConnectionError("the endpoint answer carried no URL")
    return url


async def _run(
    connection: LongConnection,
    label: str,
    base: str,
    app_id: str,
    secret: str,
    runtime: Any,
    stop: asyncio.Event,
) -> None:
    config = _Config()
    started = False
    try:
        await runtime.start()
        started = True
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            failures = 0
            while not stop.is_set():
                try:
                    url = await _endpoint(http, base, app_id, secret, config)
                    await _session(connection, label, http, url, runtime, stop, config)
                    failures = 0
                except _Terminal:
                    raise
                except (ConnectionError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                    failures += 1
                    if 0 <= config.reconnect_count < failures:
                        raise ConnectionError(
                            f"gave up after {failures - 1} reconnect(s): {one_line(str(exc), 300)}"
                        ) from None
                    log.warning("%s disconnected (%s) — reconnecting…", label, one_line(str(exc), 200))
                if stop.is_set():
                    break
                delay = (
                    random.random() * config.reconnect_nonce_s
                    if failures <= 1
                    else config.reconnect_interval_s
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
    except Exception as exc:
        error = (
            exc
            if isinstance(exc, _Terminal | ConnectionError)
            else ConnectionError(f"{type(exc).__name__}: {exc}")
        )
        if not connection.ready.done():
            connection.ready.set_exception(error)
        if not connection.closed.done():
            connection.closed.set_exception(error)
    finally:
        if started:
            await runtime.aclose()
        if not connection.ready.done():
            connection.ready.set_result(None)
        if not connection.closed.done():
            connection.closed.set_result(None)


async def _session(
    connection: LongConnection,
    label: str,
    http: aiohttp.ClientSession,
    url: str,
    runtime: Any,
    stop: asyncio.Event,
    config: _Config,
) -> None:
    query = parse_qs(urlsplit(url).query)
    service = int((query.get("service_id") or ["0"])[0] or 0)
    try:
        ws = await http.ws_connect(
            url, timeout=aiohttp.ClientWSTimeout(ws_close=5.0), autoping=True, heartbeat=None
        )
    except aiohttp.WSServerHandshakeError as exc:
        if exc.status in (401, 403):
            raise _Terminal(f"the long connection was refused ({exc.status}): {exc.message}") from None
        raise
    async with ws:
        if not connection.ready.done():
            connection.ready.set_result(None)
            log.info("%s connected", label)
        else:
            log.info("%s reconnected", label)
        pinger = asyncio.create_task(_ping(ws, service, config))
        stopper = asyncio.create_task(stop.wait())
        try:
            while True:
                receive = asyncio.ensure_future(ws.receive())
                await asyncio.wait({receive, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if stopper.done():
                    receive.cancel()
                    return
                message = receive.result()
                if message.type == aiohttp.WSMsgType.BINARY:
                    await _handle(connection, label, ws, message.data, runtime, config)
                elif message.type in (
                    aiohttp.WSMsgType.CLOSE,
                    aiohttp.WSMsgType.CLOSED,
                    aiohttp.WSMsgType.CLOSING,
                ):
                    raise ConnectionError(f"the server closed the connection ({ws.close_code})")
                elif message.type == aiohttp.WSMsgType.ERROR:
                    raise ConnectionError(f"the connection failed: {ws.exception()}")
        finally:
            pinger.cancel()
            stopper.cancel()
            with contextlib.suppress(BaseException):
                await pinger


async def _ping(ws: aiohttp.ClientWebSocketResponse, service: int, config: _Config) -> None:
    while True:
        with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
            await ws.send_bytes(
                encode_frame(Frame(service=service, method=CONTROL, headers=[("type", "ping")]))
            )
        await asyncio.sleep(max(1.0, config.ping_s))


async def _handle(
    connection: LongConnection,
    label: str,
    ws: aiohttp.ClientWebSocketResponse,
    data: bytes,
    runtime: Any,
    config: _Config,
) -> None:
    try:
        frame = decode_frame(data)
    except ValueError as exc:
        log.warning("%s ignored an unreadable frame: %s", label, exc)
        return
    kind = frame.header("type")
    if frame.method == CONTROL:
        if kind == "pong" and frame.payload:
            with contextlib.suppress(ValueError):
                config.update(json.loads(frame.payload))
        return
    if frame.method != DATA or kind not in ("event", "card"):
        return
    payload = frame.payload or b""
    total = int(frame.header("sum") or "1")
    if total > 1:
        message_id = frame.header("message_id") or ""
        parts = connection.parts.setdefault(message_id, [None] * total)
        parts[int(frame.header("seq") or "0")] = payload
        if any(p is None for p in parts):
            return
        payload = b"".join(p for p in parts if p is not None)
        del connection.parts[message_id]
    started = time.monotonic()
    code, answer = await _dispatch(label, kind, payload, runtime)
    frame.headers.append(("biz_rt", str(int((time.monotonic() - started) * 1000))))
    frame.payload = json.dumps({"code": code, "headers": None, "data": answer}).encode()
    with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
        await ws.send_bytes(encode_frame(frame))


async def _dispatch(label: str, kind: str | None, payload: bytes, runtime: Any) -> tuple[int, str | None]:
    """The response frame's ``code`` and ``data`` for one event or card frame. A card action's
    answer (the toast, the new card) travels as ``data``: its JSON, base64-encoded, as the SDK's
    ws client sends a callback handler's result."""
    try:
        envelope = json.loads(payload)
        header = envelope.get("header") or {}
        event_type = header.get("event_type")
        if kind == "card" or event_type == CARD_ACTION:
            if event_type != CARD_ACTION:
                return 200, None
            answer = await asyncio.shield(runtime.approvals.on_action(envelope.get("event") or {}))
            return 200, base64.b64encode(json.dumps(answer, ensure_ascii=False).encode()).decode()
        if event_type == "im.message.receive_v1":
            await asyncio.shield(runtime.accept(envelope.get("event") or {}))
    except StateWriteError as exc:
        log.error("%s could not persist an event, so it will be pushed again: %s", label, exc)
        return 500, None
    except (ValueError, AttributeError) as exc:
        log.warning("%s ignored an unreadable %s: %s", label, kind, exc)
    return 200, None
