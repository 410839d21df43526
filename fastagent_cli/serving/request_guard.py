"""Who may talk to the server from a browser: ``Host`` and ``Origin`` checks and CORS, on every route.

A local agent with ``bash`` and no token is only as safe as the browser's same-origin rule, which
two tricks get around: **DNS rebinding** (a page on ``evil.example`` re-points its name to
``127.0.0.1`` and calls the server as its own origin) and the **simple request** (a cross-origin
``text/plain`` POST, which a browser sends without asking). :class:`RequestGuard` wraps the
composed router, so every route (``/invoke``, ``/control/*``, ``/``, channel routes and any added
later) gets, before its handler runs:

* **Host**: on a connection that arrived on a loopback address, a ``Host`` that is not an IP
  address, ``localhost`` / ``*.localhost``, a name in ``[http] allowed_hosts`` or the tunnel's
  public name is answered ``403 host not allowed`` (what Jupyter and Vite do). On other addresses
  the check applies once ``allowed_hosts`` is set. A rebinding page cannot send an IP ``Host``:
  the browser writes the name of the page's own origin.
* **Origin**: a state-changing request (not ``GET`` / ``HEAD`` / ``OPTIONS``) carrying an
  ``Origin`` that is neither the server's own (same scheme-less ``host:port`` as ``Host``) nor in
  ``[http] allowed_origins`` is answered ``403 origin not allowed``. Webhook senders and ``curl``
  send no ``Origin``.
* **CORS**: only origins in ``allowed_origins`` get ``Access-Control-Allow-Origin`` (their own
  origin, with ``Vary: Origin``), on every answer including 401s and streams; their preflight is
  answered here. Nothing is ever ``*``.

``/invoke`` also requires ``Content-Type: application/json`` (its handler answers 415), so a form
or a ``text/plain`` POST never reaches the agent even from an allowed origin.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from aiohttp import web

from fastagent_cli.serving.body import text_response
from fastagent_cli.serving.http_limits import PREPARE_HEADERS_KEY
from fastagent_cli.serving.router import Handler

__all__ = ["CORS_ALLOW_HEADERS", "CORS_ALLOW_METHODS", "RequestGuard"]

CORS_ALLOW_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
CORS_ALLOW_HEADERS = "authorization, content-type, last-event-id, x-fastagent-session"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _split_host(value: str) -> tuple[str, str | None] | None:
    """``(name, port)`` of a ``Host`` header value (lowercased, no trailing dot), ``None`` if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] or None
    else:
        name, sep, port_text = value.partition(":")
        port = port_text if sep else None
    if port is not None and not port.isdigit():
        return None
    return name.rstrip("."), port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _is_loopback_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _name_matches(name: str, allowed: Iterable[str]) -> bool:
    for entry in allowed:
        if entry == "*" or entry == name:
            return True
        if entry.startswith(".") and (name == entry[1:] or name.endswith(entry)):
            return True
    return False


def _origin_key(origin: str) -> str | None:
    """``host[:port]`` of an ``Origin`` (default port dropped), ``None`` for ``null`` or malformed."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is None or str(port) == _DEFAULT_PORTS[parts.scheme]:
        return name
    return f"{name}:{port}"


def _host_key(host: tuple[str, str | None]) -> str:
    name, port = host
    shown = f"[{name}]" if ":" in name else name
    if port is None or port in _DEFAULT_PORTS.values():
        return shown
    return f"{shown}:{port}"


class RequestGuard:
    """The ``Host`` / ``Origin`` / CORS policy of one server; :meth:`wrap` puts it before a handler."""

    def __init__(self, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()) -> None:
        self.allowed_hosts = tuple(allowed_hosts)
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self._public_hosts: set[str] = set()

    def allow_public_url(self, url: str) -> None:
        """Serve ``Host: <url's host>`` too (the tunnel's public name, once it is known)."""
        name = urlsplit(url).hostname
        if name:
            self._public_hosts.add(name.rstrip("."))

    def host_allowed(self, request: web.BaseRequest) -> bool:
        raw = request.headers.get("Host")
        if raw is None:
            return True  # HTTP/1.0 without a Host: no browser sends that
        host = _split_host(raw)
        if host is None:
            return False
        name = host[0]
        if _is_ip(name) or name == "localhost" or name.endswith(".localhost"):
            return True
        if name in self._public_hosts or _name_matches(name, self.allowed_hosts):
            return True
        return bool(not self.allowed_hosts and not _on_loopback(request))

    def origin_allowed(self, request: web.BaseRequest, origin: str) -> bool:
        if origin.rstrip("/").lower() in self.allowed_origins:
            return True
        key = _origin_key(origin)
        host = _split_host(request.headers.get("Host", ""))
        return key is not None and host is not None and key == _host_key(host)

    def _cors_headers(self, origin: str | None) -> Mapping[str, str] | None:
        if origin is None or origin.rstrip("/").lower() not in self.allowed_origins:
            return None
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}

    def wrap(self, handler: Handler) -> Handler:
        """``handler`` behind the checks above."""

        async def guarded(request: web.BaseRequest) -> web.StreamResponse:
            if not self.host_allowed(request):
                return text_response("host not allowed\n", 403)
            origin = request.headers.get("Origin")
            cors = self._cors_headers(origin)
            if (
                origin is not None
                and request.method == "OPTIONS"
                and "Access-Control-Request-Method" in request.headers
            ):
                if cors is None:
                    return text_response("origin not allowed\n", 403)
                preflight = web.Response(status=204)
                preflight.headers.update(cors)
                preflight.headers["Access-Control-Allow-Methods"] = CORS_ALLOW_METHODS
                preflight.headers["Access-Control-Allow-Headers"] = CORS_ALLOW_HEADERS
                preflight.headers["Access-Control-Max-Age"] = "600"
                return preflight
            if (
                origin is not None
                and request.method not in _SAFE_METHODS
                and not self.origin_allowed(request, origin)
            ):
                return text_response("origin not allowed\n", 403)
            if cors is not None:
                request[PREPARE_HEADERS_KEY] = cors  # streams get them when they start
            response = await handler(request)
            if cors is not None and not response.prepared:
                for name, value in cors.items():
                    response.headers.setdefault(name, value)
            return response

        return guarded


def _on_loopback(request: web.BaseRequest) -> bool:
    """Whether the connection arrived on a loopback address (unknown counts as loopback)."""
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if not isinstance(sockname, tuple) or not sockname:
        return True
    return _is_loopback_address(str(sockname[0]))
