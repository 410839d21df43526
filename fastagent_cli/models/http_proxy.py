"""The model connections' way through a proxy named in the environment.

``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` (either case) name an ``http://`` proxy,
``NO_PROXY`` the hosts reached directly (as curl and httpx read them, through
:func:`urllib.request.getproxies`). An ``https://`` model URL goes through a ``CONNECT`` tunnel,
with TLS to the model server inside it (the proxy sees only the host name); an ``http://`` one is
sent to the proxy in absolute form. ``user:password@`` in the proxy URL becomes a
``Proxy-Authorization: Basic`` header. The same pool, limits and timeouts serve both ways.
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass
from urllib import request as _urllib
from urllib.parse import unquote, urlsplit

import httpcore

from fastagent_cli.models.http_socket import PacedStream, open_stream

__all__ = ["Proxy", "environment_proxies", "open_through"]

_MAX_HEAD = 64 * 1024


@dataclass(frozen=True, slots=True)
class Proxy:
    url: str
    """As the environment names it, without its credentials (for messages)."""
    host: str
    port: int
    authorization: bytes | None = None
    """The ``Proxy-Authorization`` value, when the URL carries ``user:password@``."""


def _parse(raw: str) -> Proxy:
    parts = urlsplit(raw if "://" in raw else f"http://{raw}")
    if parts.scheme != "http" or not parts.hostname:
        raise httpcore.UnsupportedProtocol(  # a setting to change, not worth a retry
            f"the proxy {parts.scheme}://{parts.hostname or ''} is not supported: "
            "model requests go through http:// proxies (HTTPS_PROXY=http://host:port)"
        )
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = b"Basic " + base64.b64encode(pair)
    port = parts.port or 80
    return Proxy(f"http://{parts.hostname}:{port}", parts.hostname, port, authorization)


class environment_proxies:
    """The proxies the environment names, read once (when the model client is created)."""

    def __init__(self) -> None:
        self._proxies = {k: v for k, v in _urllib.getproxies().items() if k in ("http", "https", "all", "no")}

    def __bool__(self) -> bool:
        return any(k != "no" for k in self._proxies)

    def for_origin(self, scheme: str, host: str) -> Proxy | None:
        raw = self._proxies.get(scheme) or self._proxies.get("all")
        if not raw:
            return None
        if _urllib.proxy_bypass_environment(host, self._proxies):  # type: ignore[attr-defined]
            return None
        return _parse(raw)


async def open_through(
    proxy: Proxy, host: str, port: int, ssl_context: ssl.SSLContext | None, timeout_s: float | None
) -> PacedStream:
    """A connection to the proxy; for TLS (``ssl_context``) a ``CONNECT`` tunnel to
    ``host:port`` with the TLS handshake inside it. ``timeout_s`` bounds the connect, the
    tunnel and the handshake each."""
    stream = await open_stream(proxy.host, proxy.port, None, timeout_s)
    if ssl_context is None:
        return stream
    try:
        await _connect(stream, proxy, host, port, timeout_s)
        return await stream.start_tls(ssl_context, host, timeout_s)
    except BaseException:
        await stream.aclose()
        raise


async def _connect(stream: PacedStream, proxy: Proxy, host: str, port: int, timeout_s: float | None) -> None:
    target = f"{host}:{port}".encode("ascii")
    lines = [b"CONNECT %s HTTP/1.1\r\n" % target, b"Host: %s\r\n" % target]
    if proxy.authorization is not None:
        lines.append(b"Proxy-Authorization: %s\r\n" % proxy.authorization)
    await stream.write(b"".join(lines) + b"\r\n", timeout_s)
    head = b""
    while b"\r\n\r\n" not in head:
        try:
            data = await stream.read(_MAX_HEAD, timeout_s)
        except httpcore.ReadTimeout:
            raise httpcore.ConnectTimeout(f"the proxy {proxy.url} did not answer CONNECT in time") from None
        if not data:
            raise httpcore.ProxyError(f"the proxy {proxy.url} closed the connection on CONNECT {host}:{port}")
        head += data
        if len(head) > _MAX_HEAD:
            raise httpcore.ProxyError(f"the proxy {proxy.url} sent an oversized answer to CONNECT")
    status_line, _, rest = head.partition(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise httpcore.ProxyError(
            f"the proxy {proxy.url} sent a malformed answer to CONNECT: {status_line[:80]!r}"
        )
    status = int(parts[1])
    if not 200 <= status < 300:
        reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        hint = ": check the proxy's credentials" if status == 407 else ""
        raise httpcore.ProxyError(
            f"the proxy {proxy.url} refused CONNECT {host}:{port} ({status} {reason}){hint}".replace(
                " )", ")"
            )
        )
    if rest.partition(b"\r\n\r\n")[2]:
        raise httpcore.ProxyError(f"the proxy {proxy.url} sent bytes before the tunnel was open")
