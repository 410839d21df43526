"""The one-shot HTTP server on 127.0.0.1 that receives an OAuth redirect (``/auth/callback``).

It answers the browser with a short page and hands the ``code`` to the waiting login once, after
checking ``state``; a wrong state or a provider ``error`` parameter gets a failure page and keeps
waiting (a stale tab must not end the login). With ``errors_end``, an ``error`` (a denied consent)
that carries the right ``state`` ends the login with that error instead.
"""

from __future__ import annotations

import asyncio
import html
from types import TracebackType
from typing import TYPE_CHECKING, Self

from fastagent_cli.errors import CredentialError, one_line

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["CallbackServer"]

_PAGE = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title></head>"
    "<body><p>{body}</p></body></html>"
)


class CallbackServer:
    def __init__(
        self, path: str, state: str, *, host: str = "127.0.0.1", port: int = 0, errors_end: bool = False
    ) -> None:
        self.path = path
        self.state = state
        self.errors_end = errors_end
        self.host = host
        self.port = port
        self._code: asyncio.Future[str] | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> Self:
        """Bind (``OSError`` when the port is taken) and start answering."""
        from aiohttp import web

        self._code = asyncio.get_running_loop().create_future()
        app = web.Application()
        app.router.add_get(self.path, self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        return self

    async def code(self) -> str:
        assert self._code is not None, "start() first"
        return await asyncio.shield(self._code)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.Response:
        from aiohttp import web

        assert self._code is not None
        query = request.query

        def page(status: int, title: str, body: str) -> web.Response:
            text = _PAGE.format(title=html.escape(title), body=html.escape(body))
            return web.Response(status=status, text=text, content_type="text/html")

        if query.get("error"):
            detail = query.get("error_description") or query["error"]
            if self.errors_end and query.get("state") == self.state and not self._code.done():
                said = query["error"] + (
                    f" ({query['error_description']})" if query.get("error_description") else ""
                )
                self._code.set_exception(
                    CredentialError(f"the authorization server refused the login: {one_line(said)[:300]}")
                )
            return page(400, "Login failed", f"Login failed: {detail}. Return to your terminal.")
        if query.get("state") != self.state:
            return page(400, "Login failed", "This page belongs to another login attempt (state mismatch).")
        code = query.get("code")
        if not code:
            return page(400, "Login failed", "The redirect carried no authorization code.")
        if not self._code.done():
            self._code.set_result(code)
        return page(200, "Logged in", "Authentication successful. Return to your terminal to continue.")
