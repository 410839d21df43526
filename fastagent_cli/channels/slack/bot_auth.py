"""The rotating Slack bot token (feature N15), kept in ``bot-auth`` (``bot-auth.json``, 0600).

An onboarded app has token rotation on: the bot token lives 12 hours and a single-use refresh token
replaces it through ``oauth.v2.access`` (``grant_type=refresh_token``, the client id and secret as
HTTP Basic). The four inputs (``SLACK_BOT_REFRESH_TOKEN``, ``SLACK_CLIENT_ID``,
``SLACK_CLIENT_SECRET``, ``SLACK_BOT_TOKEN_EXPIRES_AT`` in epoch milliseconds) come together or not
at all. A token is refreshed :data:`REFRESH_EARLY_S` before it expires, once however many calls
wait, and the new pair is made durable *before* it is used: the old refresh token is spent. At
start the pair with the later expiry wins, the environment's or the stored one (a deploy may carry
a newer pair than an old volume; a restart carries an env pair older than the stored one). Without
rotation inputs the token is used as it is (a long-lived classic token).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import Any

import httpx

from fastagent_cli.channels.kit.document import StateDocument
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.errors import ServeError
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["REFRESH_EARLY_S", "BotToken", "refresh_bot_token"]

log = logging.getLogger("fastagent.channel")

REFRESH_EARLY_S = 5 * 60
_TIMEOUT_S = 30.0


def _is_pair(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("version") == 1
        and isinstance(value.get("accessToken"), str)
        and isinstance(value.get("refreshToken"), str)
        and isinstance(value.get("expiresAt"), int | float)
    )


async def refresh_bot_token(
    api_base: str, refresh_token: str, client_id: str, client_secret: str
) -> dict[str, Any]:
    """One ``oauth.v2.access`` refresh; the new pair (``expiresAt`` in epoch ms). Tried twice:
    Slack honours a just-spent refresh token for a short grace window, which covers an answer
    that was lost on the way back."""
    basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode("ascii")
    problem = "no answer"
    async with httpx.AsyncClient(timeout=_TIMEOUT_S) as client:
        for _ in range(2):
            try:
                response = await client.post(
                    f"{api_base}/oauth.v2.access",
                    data={"grant_type": "refresh_token", "refresh_token": refresh_token},
                    headers={"authorization": f"Basic {basic}"},
                )
                data = response.json() if response.content else {}
            except (httpx.HTTPError, ValueError) as exc:
                problem = type(exc).__name__
                continue
            if (
                response.status_code == 200
                and isinstance(data, dict)
                and data.get("ok") is True
                and isinstance(data.get("access_token"), str)
                and isinstance(data.get("refresh_token"), str)
                and isinstance(data.get("expires_in"), int)
            ):
                return {
                    "version": 1,
                    "accessToken": data["access_token"],
                    "refreshToken": data["refresh_token"],
                    "expiresAt": int(time.time() * 1000) + data["expires_in"] * 1000,
                }
            problem = (
                f"HTTP {response.status_code} {data.get('error') if isinstance(data, dict) else ''}".strip()
            )
    raise RuntimeError(
        f"Slack bot-token rotation failed ({problem}); restore bot-auth.json or reinstall the app"
    )


class BotToken:
    """``await token()`` is the current bot token (refreshed when due)."""

    def __init__(
        self,
        store: ChannelStateStore,
        *,
        bot_token: str,
        refresh_token: str | None,
        client_id: str | None,
        client_secret: str | None,
        expires_at: int | None,
        api_base: str,
    ) -> None:
        fields = (refresh_token, client_id, client_secret, expires_at)
        self.rotating = any(f not in (None, "") for f in fields)
        if self.rotating and any(f in (None, "") for f in fields):
            raise ServeError(
                "Slack token rotation needs SLACK_BOT_REFRESH_TOKEN, SLACK_CLIENT_ID, "
                "SLACK_CLIENT_SECRET and "
                "SLACK_BOT_TOKEN_EXPIRES_AT together (or none of them, for a long-lived bot token)"
            )
        self._configured = {
            "version": 1,
            "accessToken": bot_token,
            "refreshToken": refresh_token or "",
            "expiresAt": int(expires_at or 0),
        }
        self._client = (client_id or "", client_secret or "")
        self._api_base = api_base
        self.document = StateDocument(store, "bot-auth", label="[slack]", check=_is_pair)
        self._pair: dict[str, Any] = dict(self._configured)
        self._refreshing: asyncio.Task[None] | None = None

    async def open(self) -> None:
        if not self.rotating:
            return
        await self.document.open()
        stored = self.document.value
        if _is_pair(stored) and stored["expiresAt"] >= self._configured["expiresAt"]:
            self._pair = dict(stored)

    @property
    def expires_at(self) -> int:
        return int(self._pair["expiresAt"])

    async def __call__(self) -> str:
        if not self.rotating or self._pair["expiresAt"] > (time.time() + REFRESH_EARLY_S) * 1000:
            return str(self._pair["accessToken"])
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._refresh())
        await asyncio.shield(self._refreshing)
        return str(self._pair["accessToken"])

    async def _refresh(self) -> None:
        pair = await refresh_bot_token(self._api_base, self._pair["refreshToken"], *self._client)
        self._pair = pair  # the old refresh token is spent: only this pair works now
        try:
            await self.document.set(pair)
        except StateWriteError as exc:
            log.error(
                "[slack] the rotated bot token could not be persisted (a restart needs a reinstall): %s", exc
            )
