"""The temporary onboarding responder on 127.0.0.1: ``/health``, Slack's ``url_verification`` on an
unguessable path, and the OAuth redirect on another (see :mod:`~fastagent_cli.channels.slack.onboard`).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field

from aiohttp import web

__all__ = ["SetupServer"]


@dataclass(slots=True)
class SetupServer:
    """The temporary onboarding responder (see the module doc)."""

    nonce: str = field(default_factory=lambda: secrets.token_hex(24))
    port: int = 0
    oauth: asyncio.Future[dict[str, str]] | None = None
    runner: web.AppRunner | None = None

    @property
    def request_path(self) -> str:
        return f"/slack/setup/{self.nonce}"

    @property
    def redirect_path(self) -> str:
        return f"/slack/oauth/{self.nonce}"

    async def start(self) -> None:
        self.oauth = asyncio.get_running_loop().create_future()
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_get("/health", self._health)
        app.router.add_post(self.request_path, self._challenge)
        app.router.add_get(self.redirect_path, self._redirect)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _health(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok\n")

    async def _challenge(self, request: web.Request) -> web.StreamResponse:
        try:
            payload = await request.json()
        except ValueError:
            return web.Response(status=404, text="not found\n")
        if isinstance(payload, dict) and payload.get("type") == "url_verification":
            return web.json_response({"challenge": payload.get("challenge")})
        return web.Response(status=404, text="not found\n")

    async def _redirect(self, request: web.Request) -> web.StreamResponse:
        if self.oauth is not None and not self.oauth.done():
            self.oauth.set_result(
                {k: request.query[k] for k in ("code", "state", "error") if k in request.query}
            )
        return web.Response(
            text="<!doctype html><title>fastagent Slack setup</title><p>Slack authorization received. "
            "Return to your terminal.</p>",
            content_type="text/html",
        )

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
