"""The loopback callback of an MCP login: only the login's own ``state`` is heard; a denied
consent with that state ends the login, one with another state (a stale tab) does not."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from fastagent_cli.auth.oauth.callback_server import CallbackServer
from fastagent_cli.errors import CredentialError


async def test_a_stale_tab_is_turned_away_and_the_right_state_ends_the_wait() -> None:
    async with CallbackServer("/callback", "s-right", errors_end=True) as server:
        base = f"http://127.0.0.1:{server.port}/callback"
        async with httpx.AsyncClient() as http:
            stale = await http.get(base, params={"code": "c-old", "state": "s-old"})
            denied_elsewhere = await http.get(base, params={"error": "access_denied", "state": "s-old"})
            assert (stale.status_code, denied_elsewhere.status_code) == (400, 400)
            assert "state mismatch" in stale.text
            waiting = asyncio.ensure_future(server.code())
            await asyncio.sleep(0.05)
            assert not waiting.done()  # neither ended the login
            good = await http.get(base, params={"code": "c-new", "state": "s-right"})
            assert good.status_code == 200
        assert await waiting == "c-new"


async def test_a_denied_consent_with_the_right_state_ends_the_login() -> None:
    async with CallbackServer("/callback", "s1", errors_end=True) as server:
        async with httpx.AsyncClient() as http:
            page = await http.get(
                f"http://127.0.0.1:{server.port}/callback",
                params={"error": "access_denied", "error_description": "no thanks", "state": "s1"},
            )
        assert page.status_code == 400 and "no thanks" in page.text
        with pytest.raises(CredentialError, match=r"refused the login: access_denied \(no thanks\)"):
            await server.code()
