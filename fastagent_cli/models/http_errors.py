"""Turning failed provider HTTP calls into one-line, classified :class:`ProviderError`\\ s.

Messages read ``<provider>: <status> <reason>: <the provider's own message>`` for HTTP errors and
``<provider>: connection failed: ...`` / ``... timed out ...`` / ``stream interrupted: ...`` for
transport failures; connection failures and timeouts name the URL (a timeout also the setting
that bounds it: the first byte of the answer, or the gap between two chunks). Retryable: 408,
429, 5xx (and 529), every transport failure, except:

* the connect failures a retry cannot fix (:mod:`~fastagent_cli.models.http_failures`: a host
  name that does not resolve, a certificate not trusted, expired or for another name, a TLS
  protocol error, a connection refused on this machine), each one line naming the URL and the fix;
* an answer whose text reports a context overflow (pi's patterns): it says what to do instead.
"""

from __future__ import annotations

import email.utils
import errno
import json
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import httpx

from fastagent_cli.errors import ProviderError, one_line
from fastagent_cli.models.http_failures import chain, lasting_failure
from fastagent_cli.models.http_socket import ChunkTimeout, FirstByteTimeout
from fastagent_cli.models.overflow import is_context_overflow, with_overflow_advice

__all__ = [
    "classify_status",
    "error_from_exception",
    "error_from_response",
    "extract_error_message",
    "parse_retry_after",
    "reason_phrase",
]

_MAX_BODY_CHARS = 500
_EXTRA_REASONS = {529: "Overloaded", 499: "Client Closed Request", 520: "Unknown Error"}


def classify_status(status: int) -> bool:
    """Whether a request that got ``status`` is worth retrying."""
    return status in (408, 429) or status >= 500


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return _EXTRA_REASONS.get(status, "")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None or isinstance(headers, httpx.Headers):
        return value
    for key, item in headers.items():  # plain dicts are case-sensitive
        if key.lower() == name:
            return item
    return None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` (seconds or an HTTP-date)."""
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _message_from_json(payload: Any) -> str | None:
    if isinstance(payload, list) and payload:
        return _message_from_json(payload[0])
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type") or error.get("code")
        if isinstance(message, str) and message.strip():
            return message
        if isinstance(kind, str | int):
            return str(kind)
    if isinstance(error, str) and error.strip():
        return error
    for key in ("message", "detail", "error_description"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if value is not None and key == "detail":
            return json.dumps(value, ensure_ascii=False)
    return None


def extract_error_message(body: bytes) -> str:
    """The provider's own message from an error body: JSON shapes first, else the trimmed text."""
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return ""
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    message = _message_from_json(payload) if payload is not None else None
    flat = one_line(message if message is not None else text)
    return flat if len(flat) <= _MAX_BODY_CHARS else flat[: _MAX_BODY_CHARS - 1] + "…"


def error_from_response(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], url: str | None = None
) -> ProviderError:
    """A :class:`ProviderError` for a non-success HTTP answer, with one readable line. A 404
    names ``url`` (the path is what is wrong) and what to check in ``baseUrl``."""
    reason = reason_phrase(status)
    head = f"{provider}: {status} {reason}".rstrip()
    message = extract_error_message(body)
    if _only_restates(message, status, reason):
        message = ""  # "404: Not Found" after "404 Not Found" says nothing new
    if status == 404 and url is not None:
        head = f"{head} at {_without_query(url)}"
        hint = _path_hint(url, bool(message))
        if hint:
            message = f"{message} ({hint})" if message else hint
    text = f"{head}: {message}" if message else head
    overflow = is_context_overflow(message)
    return ProviderError(
        with_overflow_advice(text) if overflow else text,
        status=status,
        retryable=classify_status(status) and not overflow,
        retry_after=parse_retry_after(headers),
    )


def _only_restates(message: str, status: int, reason: str) -> bool:
    words = [
        w for w in "".join(c if c.isalnum() else " " for c in message.lower()).split() if w != str(status)
    ]
    return bool(message) and words == reason.lower().split()


def _without_query(url: str) -> str:
    return str(httpx.URL(url).copy_with(query=None, fragment=None))


def _path_hint(url: str, explained: bool) -> str | None:
    """What to check for a 404: an OpenAI-style path without ``/v1`` is the usual slip; a server
    that explained itself (an unknown model) needs no guess."""
    path = httpx.URL(url).path
    if path.endswith(("/chat/completions", "/responses")) and "/v1/" not in path:
        return "does the provider's baseUrl in models.json end in /v1?"
    return None if explained else "is the provider's baseUrl in models.json right?"


def _detail(exc: BaseException) -> str:
    text = one_line(str(exc))
    return text or type(exc).__name__


def _url(exc: BaseException) -> str | None:
    """The URL of the request that failed (without its query), when httpx knows it."""
    try:
        request = exc.request if isinstance(exc, httpx.RequestError) else None
    except RuntimeError:  # an httpx error raised outside a request
        return None
    return None if request is None else str(request.url.copy_with(query=None, fragment=None))


def error_from_exception(provider: str, exc: BaseException) -> ProviderError:
    """A :class:`ProviderError` for a transport failure (httpx exceptions, resets, timeouts)."""
    detail = _detail(exc)
    url = _url(exc)
    retryable = True
    if url is not None:
        lasting = lasting_failure(provider, url, exc)
        if lasting is not None:
            return lasting
        if isinstance(exc, httpx.ConnectError) and any(
            isinstance(c, ConnectionRefusedError) or getattr(c, "errno", None) == errno.ECONNREFUSED
            for c in chain(exc)
        ):
            return ProviderError(f"{provider}: connection refused by {url}", retryable=True)
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            detail = f"{detail} ({url})"
    if isinstance(exc, httpx.PoolTimeout):
        message = "every model connection is busy (no free connection within the pool timeout)"
    elif isinstance(exc, httpx.ConnectTimeout):
        message = f"connection timed out: {detail} (connect timeout; set {_SETTINGS['connect']})"
    elif isinstance(exc, httpx.ReadTimeout):
        message = _read_timeout(exc, url)
    elif isinstance(exc, httpx.TimeoutException | TimeoutError):
        message = f"request timed out: {detail}"
    elif isinstance(exc, httpx.ConnectError | ConnectionRefusedError):
        message = f"connection failed: {detail}"
    elif isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | ConnectionResetError):
        message = f"stream interrupted: {detail}"
    elif isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError | httpx.InvalidURL):
        message, retryable = f"invalid request: {detail}", False
    elif isinstance(exc, httpx.TransportError | OSError):
        message = f"connection error: {detail}"
    else:
        message, retryable = f"request failed: {detail}", False
    return ProviderError(f"{provider}: {message}", retryable=retryable)


_SETTINGS = {
    "connect": "connect_timeout in [engine], or timeouts.connect for the provider in models.json",
    "first_byte": "first_byte_timeout in [engine], or timeouts.firstByte for the provider in models.json",
    "between_chunks": (
        "chunk_timeout in [engine], or timeouts.betweenChunks for the provider in models.json"
    ),
}


def _read_timeout(exc: BaseException, url: str | None) -> str:
    """Which wait ran out, with the URL and the setting that bounds it."""
    where = f" from {url}" if url else ""
    for cause in chain(exc):
        if isinstance(cause, FirstByteTimeout):
            return (
                f"no answer{where} within {cause.seconds:g} s of sending the request "
                f"(first-byte timeout; set {_SETTINGS['first_byte']})"
            )
        if isinstance(cause, ChunkTimeout):
            return (
                f"the answer{where} stopped: nothing for {cause.seconds:g} s "
                f"(between-chunks timeout; set {_SETTINGS['between_chunks']})"
            )
    return f"timed out waiting for the response{where}: {_detail(exc)}"
