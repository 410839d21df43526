"""One ``/control`` endpoint over httpx: the base URL, the bearer token, the deadlines, and how a
request that got no usable answer becomes a :class:`~fastagent_cli.errors.ControlRequestError`.

Every request has a deadline, so a black-hole endpoint (a firewall that drops packets, a half-dead
tunnel) fails instead of hanging: :data:`REQUEST_TIMEOUT_S` for reads, :data:`PAYLOAD_TIMEOUT_S`
for the calls that carry a payload (``entries``, the list, actions and writes, opening
``/control/invoke``). An event stream's response headers may take as long as its silence may
(the original writes them with the first event or the first ping, 30 s in). An open stream is
watched: no bytes at all (the server's ``: ping`` comments included) for :data:`IDLE_BEATS`
heartbeats means a dead connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from fastagent_cli.errors import ControlRequestError
from fastagent_cli.sse import SSEDecoder

__all__ = [
    "HEARTBEAT_S",
    "REQUEST_FAILED",
    "IDLE_BEATS",
    "PAYLOAD_TIMEOUT_S",
    "REQUEST_TIMEOUT_S",
    "ControlEndpoint",
    "control_url",
    "session_path",
]

REQUEST_FAILED = "request_failed"
"""The code of a call whose request failed, on an acting call's ``ok: false`` result and on the
data plane's ``failed`` event (the client's own code; no serve sends it)."""
REQUEST_TIMEOUT_S = 10.0
"""Deadline of a read (capabilities, commands, state)."""
PAYLOAD_TIMEOUT_S = 60.0
"""Deadline of the calls that carry a payload: entries, the session list, actions and writes."""
HEARTBEAT_S = 30.0
"""The server's ``: ping`` interval."""
IDLE_BEATS = 3
"""An open stream with no bytes for this many heartbeats is a dead connection."""


def control_url(url: str) -> str:
    """The serve's base URL, normalised (``http://127.0.0.1:8787``): no trailing ``/``, and a
    trailing ``/control`` dropped (the plane's routes add it). ``ValueError`` if it is not an
    http(s) URL with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or not parts.hostname:
        raise ValueError(f"not an http(s) URL with a host: {url!r} (e.g. http://127.0.0.1:8787)")
    if parts.query or parts.fragment:
        raise ValueError(f"the control URL takes no query or fragment: {url!r}")
    path = parts.path.rstrip("/")
    path = path.removesuffix("/control")
    return f"{parts.scheme}://{parts.netloc}{path}"


def session_path(session: str, tail: str = "") -> str:
    """``/control/sessions/<id><tail>`` with the id percent-encoded (ids may hold ``:`` and ``/``)."""
    if not session:
        raise ValueError("a session id cannot be empty")
    return f"/control/sessions/{quote(session, safe='')}{tail}"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _declared(body: str) -> tuple[str | None, bool | None]:
    """The ``code`` and ``retryable`` a JSON error body declares (at its top level, or under
    ``error`` as in a result)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return None, None
    if isinstance(parsed, Mapping) and isinstance(parsed.get("error"), Mapping):
        parsed = parsed["error"]
    if not isinstance(parsed, Mapping):
        return None, None
    code, retryable = parsed.get("code"), parsed.get("retryable")
    return (code if isinstance(code, str) else None), (retryable if isinstance(retryable, bool) else None)


class ControlEndpoint:
    """A serve's ``/control`` plane: ``url`` is the serve's base URL, ``token`` its bearer token.

    ``client``: an httpx client to send through (a gateway's credentials, a proxy, a test
    transport); it is left open by :meth:`aclose`. Without one, the endpoint makes its own (proxies
    from the environment apply, except to a loopback address).
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        client: httpx.AsyncClient | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        request_timeout_s: float | None = None,
    ) -> None:
        if not token:
            raise ValueError("the control plane needs its bearer token")
        self.base = control_url(url)
        self.token = token
        self.idle_s = IDLE_BEATS * heartbeat_s
        """How long an open stream may be silent, and an event stream's headers take."""
        self.request_timeout_s = REQUEST_TIMEOUT_S if request_timeout_s is None else request_timeout_s
        self._headers = {"Authorization": f"Bearer {token}"}
        host = urlsplit(self.base).hostname or ""
        self._client = client or httpx.AsyncClient(trust_env=not _loopback(host), timeout=None)
        self._owns_client = client is None

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # --- plain requests -------------------------------------------------------------------------

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        payload: bool = False,
        accept: tuple[int, ...] = (),
    ) -> Any:
        """Send one request and return its JSON answer (2xx, or a status in ``accept``: a
        refusal whose body is a result); ControlRequestError otherwise. ``payload``: the longer
        deadline of the calls that carry one."""
        what = f"{method} {path}"
        deadline_s = PAYLOAD_TIMEOUT_S if payload else self.request_timeout_s
        headers = dict(self._headers)
        content = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(body, ensure_ascii=False).encode()
        try:
            async with asyncio.timeout(deadline_s):
                response = await self._client.request(
                    method,
                    self.base + path,
                    content=content,
                    params=params,
                    headers=headers,
                    timeout=httpx.Timeout(deadline_s),
                )
        except (TimeoutError, httpx.TimeoutException):
            raise self._timed_out(what, deadline_s) from None
        except httpx.HTTPError as exc:
            raise self._unreachable(what, exc) from None
        if not response.is_success and response.status_code not in accept:
            raise self._refused(what, response.status_code, response.text)
        try:
            return response.json()
        except ValueError:
            raise ControlRequestError(
                f"{what}: the answer is not JSON (is {self.base} a fastagent serve?)",
                status=response.status_code,
                retryable=False,
            ) from None

    # --- streams --------------------------------------------------------------------------------

    @asynccontextmanager
    async def stream(
        self, method: str, path: str, *, body: Any = None, payload: bool = False
    ) -> AsyncIterator[httpx.Response]:
        """Open an SSE response (200 ``text/event-stream``) within :attr:`idle_s` (an event
        stream) or the payload deadline (``payload``: an invoke); it is closed when the block
        ends."""
        what = f"{method} {path}"
        connect_timeout = PAYLOAD_TIMEOUT_S if payload else self.idle_s
        headers = {**self._headers, "Accept": "text/event-stream"}
        content = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(body, ensure_ascii=False).encode()
        request = self._client.build_request(
            method, self.base + path, content=content, headers=headers, timeout=httpx.Timeout(None)
        )
        response: httpx.Response | None = None
        try:
            async with asyncio.timeout(connect_timeout):
                response = await self._client.send(request, stream=True)
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise self._refused(what, response.status_code, text)
            if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
                raise ControlRequestError(
                    f"{what}: the answer is not an event stream (is {self.base} a fastagent serve?)",
                    status=response.status_code,
                    retryable=False,
                )
        except BaseException as exc:
            if response is not None:
                await response.aclose()
            if isinstance(exc, TimeoutError | httpx.TimeoutException):
                raise self._timed_out(what, connect_timeout) from None
            if isinstance(exc, httpx.HTTPError):
                raise self._unreachable(what, exc) from None
            raise
        try:
            yield response
        finally:
            await response.aclose()

    async def data(self, response: httpx.Response) -> AsyncIterator[str]:
        """The ``data`` of each event on ``response`` (comments skipped); ``TimeoutError`` when no
        bytes arrive for :attr:`idle_s`, ``httpx.HTTPError`` when the connection fails."""
        decoder = SSEDecoder()
        chunks = response.aiter_bytes()
        try:
            while True:
                try:
                    async with asyncio.timeout(self.idle_s):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                for event in decoder.feed(chunk):
                    yield event.data
        finally:
            with contextlib.suppress(Exception):
                await chunks.aclose()  # type: ignore[attr-defined]
        for event in decoder.close():
            yield event.data

    # --- failures -------------------------------------------------------------------------------

    def _timed_out(self, what: str, seconds: float) -> ControlRequestError:
        return ControlRequestError(f"{what}: no answer from {self.base} within {seconds:g} s")

    def _unreachable(self, what: str, exc: httpx.HTTPError) -> ControlRequestError:
        reason = str(exc) or type(exc).__name__
        return ControlRequestError(f"{what}: cannot reach {self.base} ({reason})")

    def _refused(self, what: str, status: int, text: str) -> ControlRequestError:
        code, retryable = _declared(text)
        line = " ".join(text.split())[:300] or httpx.codes.get_reason_phrase(status)
        return ControlRequestError(f"{what}: {status} {line}", status=status, code=code, retryable=retryable)
