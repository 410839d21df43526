"""The web chat page's files, shipped in the package (``fastagent_cli/data/webchat/``) and served
from memory.

Read once when the page is mounted (a few tens of kilobytes). Every answer revalidates
(``Cache-Control: no-cache`` with a strong ``ETag``, ``304`` on a match), so a page never runs
stale files after an upgrade; a gzip copy is sent to clients that accept it. The page's document
carries a Content-Security-Policy that allows only its own files and its own origin (no inline
script, no CDN, no frames), and no answer sends a ``Referer`` onward.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

from aiohttp import web

from fastagent_cli.serving.body import text_response

__all__ = ["CONTENT_SECURITY_POLICY", "INDEX", "Asset", "load_assets", "serve_asset"]

INDEX = "index.html"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".webmanifest": "application/manifest+json",
    ".txt": "text/plain; charset=utf-8",
}
_COMMON = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Vary": "Accept-Encoding",
}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    gzipped: bytes | None
    """The gzip copy, when it is smaller."""
    content_type: str
    etag: str

    @classmethod
    def of(cls, name: str, body: bytes) -> Asset:
        suffix = name[name.rfind(".") :] if "." in name else ""
        packed = gzip.compress(body, mtime=0)
        return cls(
            body,
            packed if len(packed) < len(body) else None,
            _TYPES.get(suffix, "text/plain; charset=utf-8"),
            f'"{hashlib.sha256(body).hexdigest()[:20]}"',
        )


def _walk(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        name = f"{prefix}{item.name}"
        if item.is_dir():
            yield from _walk(item, f"{name}/")
        elif not item.name.startswith("."):
            yield name, item


def load_assets() -> dict[str, Asset]:
    """Every file of the page by its path below the folder (``index.html``, ``js/app.js``...)."""
    folder = resources.files("fastagent_cli") / "data" / "webchat"
    return {name: Asset.of(name, item.read_bytes()) for name, item in _walk(folder)}


def _accepts_gzip(request: web.BaseRequest) -> bool:
    return any(
        part.split(";")[0].strip().lower() == "gzip"
        for part in request.headers.get("Accept-Encoding", "").split(",")
    )


def serve_asset(
    request: web.BaseRequest, asset: Asset, extra: Mapping[str, str] | None = None
) -> web.StreamResponse:
    """Answer ``GET`` / ``HEAD`` with ``asset`` (``304`` when the client holds this version)."""
    if request.method not in ("GET", "HEAD"):
        refused = text_response("method not allowed\n", 405)
        refused.headers["Allow"] = "GET, HEAD"
        return refused
    headers = {**_COMMON, "ETag": asset.etag, **(extra or {})}
    held = request.headers.get("If-None-Match", "")
    if asset.etag in (tag.strip().removeprefix("W/") for tag in held.split(",")):
        return web.Response(status=304, headers=headers)
    body = asset.body
    if asset.gzipped is not None and _accepts_gzip(request):
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    headers["Content-Type"] = asset.content_type
    return web.Response(status=200, body=body, headers=headers)  # aiohttp sends no body to HEAD
