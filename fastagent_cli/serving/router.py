"""The router: a dict of literal routes, dispatched by exact lookup on the path as it arrives.

::

    routes = {
        "/webhook": handle_any_method,        # any method
        "GET /status": status,                # one method
        "POST /status": update_status,
    }
    handler = build_router(routes, mounts={"/control": control_plane})

Rules (API reference, "Route types"):

* A key is ``"/path"`` (any method) or ``"METHOD /path"``. The path is a literal: ``:id`` and ``*``
  are ordinary characters, so whether two keys fight over a request is string equality.
* Dispatch looks up ``request.raw_path`` without its query string and **without percent-decoding**
  (decoding would undo the normalisation a URL performs, turning ``%2F..%2F`` back into ``/../``).
* A path known under other methods answers ``405 method not allowed`` (with ``Allow``); an unknown
  path answers ``404 not found``. ``HEAD`` is answered by the ``GET`` route without the body
  (RFC 9110); an explicit ``HEAD`` route wins.
* A mount owns a whole prefix (``/control`` answers ``/control`` and ``/control/...``).
* Assembly refuses, with a :class:`~fastagent_cli.errors.ServeError` naming both keys, what would
  cost another route: two keys naming the same route (``/x`` and ``GET /x``), a route inside a
  mount, and any path a URL would rewrite (``?``, ``#``, ``.``/``..`` segments, characters a URL
  percent-encodes), because such a key never matches and compares as distinct, hiding a collision.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from aiohttp import web

from fastagent_cli.errors import ServeError
from fastagent_cli.serving.body import text_response

__all__ = [
    "Handler",
    "RouteKey",
    "Routes",
    "build_router",
    "check_routes",
    "find_collisions",
    "parse_route_key",
    "path_of",
]

Handler: TypeAlias = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
"""``async (request) -> response``. A :class:`web.Request` handler works too: it is a subclass."""

Routes: TypeAlias = Mapping[str, Handler]

_METHOD = re.compile(r"[A-Z][A-Z0-9_-]*")
_DOT_SEGMENTS = {".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"}
_REWRITTEN = re.compile(r"[\x00-\x20\x7f\"<>\\`{}]|[^\x00-\x7f]")


@dataclass(frozen=True, slots=True)
class RouteKey:
    """A parsed route key: ``method`` is ``None`` for any method."""

    method: str | None
    path: str

    def __str__(self) -> str:
        return self.path if self.method is None else f"{self.method} {self.path}"

    def overlaps(self, other: RouteKey) -> bool:
        """Would both keys answer one request? Same path and overlapping methods."""
        if self.path != other.path:
            return False
        return self.method is None or other.method is None or self.method == other.method


def parse_route_key(key: str) -> RouteKey:
    """Parse and validate ``"/path"`` or ``"METHOD /path"``; refuse what a URL would rewrite."""
    if not isinstance(key, str):
        raise ServeError(f"route key {key!r} is not a string")
    method: str | None = None
    path = key
    if not key.startswith("/"):
        head, sep, rest = key.partition(" ")
        if not sep or not _METHOD.fullmatch(head):
            raise ServeError(f'route key "{key}" must be "/path" or "METHOD /path" (path starting with /)')
        method, path = head, rest
        if not path.startswith("/"):
            raise ServeError(f'route key "{key}": the path must start with /')
    reason = rewrite_reason(path)
    if reason is not None:
        raise ServeError(f'route key "{key}" can never match: {reason}')
    return RouteKey(method, path)


def rewrite_reason(path: str) -> str | None:
    """Why a URL would deliver a request for ``path`` under a different path, or ``None``."""
    if "?" in path:
        return "a URL reads '?' as the start of the query string"
    if "#" in path:
        return "a URL reads '#' as the start of the fragment, which is never sent"
    if any(segment.lower() in _DOT_SEGMENTS for segment in path.split("/")):
        return "a URL resolves '.' and '..' segments before sending the request"
    bad = _REWRITTEN.search(path)
    if bad is not None:
        return f"a URL percent-encodes {bad.group()!r}; write the path as it arrives (percent-encoded)"
    return None


def path_of(request: web.BaseRequest) -> str:
    """The path as it arrived: no query string, no percent-decoding."""
    raw = request.raw_path
    cut = raw.find("?")
    return raw if cut < 0 else raw[:cut]


def find_collisions(entries: Iterable[tuple[str, RouteKey]]) -> list[str]:
    """Every pair of keys that name the same route; ``entries`` are ``(owner, key)`` pairs (the
    owner is a channel file, or ``""`` for keys of one dict)."""
    by_path: dict[str, list[tuple[str, RouteKey]]] = {}
    for owner, key in entries:
        by_path.setdefault(key.path, []).append((owner, key))
    out: list[str] = []
    for group in by_path.values():
        for i, (owner_a, a) in enumerate(group):
            for owner_b, b in group[i + 1 :]:
                if a.overlaps(b):
                    out.append(f'"{a}"{_of(owner_a)} and "{b}"{_of(owner_b)} name the same route')
    return out


def _of(owner: str) -> str:
    return f" ({owner})" if owner else ""


def _mount_prefix(prefix: str) -> str:
    if not prefix.startswith("/") or prefix == "/":
        raise ServeError(f'mount prefix "{prefix}" must start with / and name a path below the root')
    reason = rewrite_reason(prefix)
    if reason is not None:
        raise ServeError(f'mount prefix "{prefix}" can never match: {reason}')
    return prefix.rstrip("/")


def _inside(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


@dataclass(slots=True)
class _Entry:
    any_method: Handler | None = None
    methods: dict[str, Handler] = field(default_factory=dict)

    def allowed(self) -> str:
        names = set(self.methods)
        if "GET" in names:
            names.add("HEAD")
        return ", ".join(sorted(names))


def check_routes(routes: Routes, mounts: Mapping[str, Handler] | None = None) -> dict[RouteKey, Handler]:
    """Validate ``routes`` against each other and the mounts; the parsed table, or ServeError."""
    parsed = {parse_route_key(key): handler for key, handler in routes.items()}
    problems = find_collisions(("", key) for key in parsed)
    prefixes = [_mount_prefix(prefix) for prefix in (mounts or {})]
    for key in parsed:
        for prefix in prefixes:
            if _inside(key.path, prefix):
                problems.append(f'"{key}" is inside the mount "{prefix}", which answers it first')
    if problems:
        raise ServeError("route setup refused: " + "; ".join(problems))
    return parsed


def build_router(routes: Routes, mounts: Mapping[str, Handler] | None = None) -> Handler:
    """One handler answering ``routes`` and ``mounts`` by the rules above (ServeError if refused)."""
    table: dict[str, _Entry] = {}
    for key, handler in check_routes(routes, mounts).items():
        entry = table.setdefault(key.path, _Entry())
        if key.method is None:
            entry.any_method = handler
        else:
            entry.methods[key.method] = handler
    owned = [(_mount_prefix(prefix), handler) for prefix, handler in (mounts or {}).items()]

    async def dispatch(request: web.BaseRequest) -> web.StreamResponse:
        path = path_of(request)
        entry = table.get(path)
        if entry is None:
            for prefix, mounted in owned:
                if _inside(path, prefix):
                    return await mounted(request)
            return text_response("not found\n", 404)
        if entry.any_method is not None:
            return await entry.any_method(request)
        method = request.method
        handler = entry.methods.get(method)
        if handler is None and method == "HEAD":
            handler = entry.methods.get("GET")
        if handler is None:
            response = text_response("method not allowed\n", 405)
            response.headers["Allow"] = entry.allowed()
            return response
        return await handler(request)

    return dispatch
