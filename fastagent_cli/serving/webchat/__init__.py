"""The web chat page: ``GET /`` and its files under ``/webchat/``, a client of the control plane.

The page (plain HTML, CSS and JavaScript modules in ``fastagent_cli/data/webchat/``, no build
step, nothing fetched from elsewhere) talks only to ``/control/*`` with the plane's bearer token.

When it is served (:func:`plan_web_chat`):

* ``[http] web_chat`` in ``fastagent.toml`` decides; unset, it is on under ``dev`` and off under
  ``start`` (``default``).
* The page is a client of the control plane, so serving it turns the plane on, with the hub's
  writes (rename, fork, delete, model and thinking): what ``session_control = true`` does. A
  written ``session_control = false`` wins over ``dev``'s default (the page stays off and the
  startup lines say why); together with ``web_chat = true`` it is a config error.
* A channel file that answers ``GET /`` or a path under ``/webchat`` keeps it: the page stays off
  (said in the startup lines) unless ``web_chat = true`` asked for it, which is then a ServeError
  naming the route.

The token reaches the page in the URL's fragment (``/#token=...``, :func:`web_chat_url`), which a
browser never sends: it appears in no request line, so in no server, proxy or tunnel log. The page
moves it to the tab's session storage and removes it from the address bar.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from aiohttp import web

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.errors import ServeError
from fastagent_cli.serving.body import text_response
from fastagent_cli.serving.router import Handler, RouteKey, parse_route_key, path_of
from fastagent_cli.serving.webchat.assets import (
    CONTENT_SECURITY_POLICY,
    INDEX,
    Asset,
    load_assets,
    serve_asset,
)

__all__ = [
    "WEB_CHAT_KEY",
    "WEB_CHAT_PREFIX",
    "WebChat",
    "named_page",
    "plan_web_chat",
    "web_chat_handlers",
    "web_chat_url",
]

WEB_CHAT_KEY = "GET /"
WEB_CHAT_PREFIX = "/webchat"
_PAGE_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Frame-Options": "DENY"}


@dataclass(frozen=True, slots=True)
class WebChat:
    """Whether the page is served, and why not when it would have been by default."""

    served: bool
    note: str | None = None


def _claimed(keys: Iterable[str]) -> str | None:
    page = RouteKey("GET", "/")
    for key in keys:
        parsed = parse_route_key(key)
        if (
            parsed.overlaps(page)
            or parsed.path == WEB_CHAT_PREFIX
            or parsed.path.startswith(WEB_CHAT_PREFIX + "/")
        ):
            return key
    return None


def plan_web_chat(opened: OpenedAgent, channel_routes: Iterable[str], default: bool) -> WebChat:
    """Whether ``opened`` serves the page next to ``channel_routes`` (``default``: the command's
    default, on for ``dev``). Raises ServeError when ``web_chat = true`` meets a channel route."""
    config = opened.config
    asked = config.http.web_chat
    if asked is False or (asked is None and not default):
        return WebChat(False)
    if asked is None and config.session_control_refused:
        return WebChat(False, "web chat: off (session_control = false; the page needs the control plane)")
    claimed = _claimed(channel_routes)
    if claimed is not None:
        if asked:
            raise ServeError(
                f'[http] web_chat = true: the channel route "{claimed}" answers the page\'s paths '
                f"(GET / and {WEB_CHAT_PREFIX}/*); move the route or set web_chat = false"
            )
        return WebChat(
            False, f'web chat: off (the channel route "{claimed}" answers GET / or {WEB_CHAT_PREFIX}/*)'
        )
    return WebChat(True)


def named_page(body: bytes, name: str) -> bytes:
    """The page's document naming the agent: its header (``.brand``) and the tab's title."""
    shown = html.escape(name).encode("utf-8")
    return body.replace(
        b"<title>fastagent</title>", b"<title>" + shown + b" \xc2\xb7 fastagent</title>", 1
    ).replace(
        b'<span class="brand">fastagent</span>', b'<span class="brand" id="brand">' + shown + b"</span>", 1
    )


def web_chat_handlers(name: str = "fastagent") -> tuple[Handler, Handler]:
    """``(page, files)``: the ``GET /`` route and the handler mounted on :data:`WEB_CHAT_PREFIX`;
    the page names the agent ``name``."""
    assets = load_assets()
    index = Asset.of(INDEX, named_page(assets[INDEX].body, name))

    async def page(request: web.BaseRequest) -> web.StreamResponse:
        return serve_asset(request, index, _PAGE_HEADERS)

    async def files(request: web.BaseRequest) -> web.StreamResponse:
        name = path_of(request)[len(WEB_CHAT_PREFIX) + 1 :]
        asset = assets.get(name) if name != INDEX else None
        if asset is None:
            return text_response("not found\n", 404)
        return serve_asset(request, asset)

    return page, files


def web_chat_url(base: str, token: str | None = None) -> str:
    """The page's address; with ``token``, one that signs the page in (in the fragment)."""
    return f"{base}/#token={quote(token, safe='')}" if token else f"{base}/"
