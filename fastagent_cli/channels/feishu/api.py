"""The Feishu/Lark Open API client the channel and the send tools share (feature O15).

One pipeline, :meth:`FeishuApi.call`, carries every JSON call:

* the ``tenant_access_token`` (``auth/v3/tenant_access_token/internal``) is fetched lazily and cached
  until :data:`TOKEN_REFRESH_MARGIN_S` before its ``expire``; when the platform says a token is bad
  (codes 99991661/63/64/68) it is fetched again, once;
* the transport is the kit's (:class:`~fastagent_cli.channels.kit.api.PlatformClient`): each
  attempt has :data:`API_TIMEOUT_S`; a rate-limit answer (HTTP 429 or code ``99991400``) is retried
  up to three times after ``Retry-After`` (else 1 s, 2 s, 3 s); a network failure or a ``5xx`` only
  for reads (``GET``) or a request that never left (a send may have happened);
* success is the body's ``code == 0``; every failure is a
  :class:`~fastagent_cli.errors.ChannelApiError` (``FeishuApiError`` here) naming the call, with the
  platform's ``code``.

Resource downloads (message images and files) are capped at :data:`MAX_DOWNLOAD_BYTES` within
:data:`DOWNLOAD_TIMEOUT_S`. Text messages are split at :data:`MAX_TEXT_BYTES` of UTF-8.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from fastagent_cli.channels.feishu.card import utf8_prefix
from fastagent_cli.channels.kit.api import Answer, PlatformClient, json_object
from fastagent_cli.errors import ChannelApiError, one_line

__all__ = [
    "API_TIMEOUT_S",
    "MAX_DOWNLOAD_BYTES",
    "MAX_TEXT_BYTES",
    "RATE_LIMIT_CODE",
    "FeishuApi",
    "FeishuApiError",
    "FeishuTarget",
    "chunk_text",
    "streaming_closed",
]

API_TIMEOUT_S = 30.0
DOWNLOAD_TIMEOUT_S = 120.0
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
TOKEN_REFRESH_MARGIN_S = 300
MAX_TEXT_BYTES = 100 * 1024
RATE_LIMIT_CODE = 99991400
_AUTH_CODES = {99991661, 99991663, 99991664, 99991668}
STREAMING_CLOSED_CODES = {200850, 300309}


FeishuApiError = ChannelApiError
"""A failed Open API call (the kit's one error type): ``status`` 0, no HTTP answer; ``code``, the
platform's error code (``None`` when none)."""


def streaming_closed(exc: ChannelApiError) -> bool:
    """Has the card's streaming mode been closed (a late update is refused)?"""
    return exc.code in STREAMING_CLOSED_CODES


@dataclass(frozen=True, slots=True)
class FeishuTarget:
    """Where a reply goes: a chat; maybe a reply to a message, maybe inside its thread."""

    chat_id: str
    reply_to: str | None = None
    in_thread: bool = False


def chunk_text(text: str, max_bytes: int = MAX_TEXT_BYTES) -> list[str]:
    """Parts whose UTF-8 fits ``max_bytes``, cut at a line break when there is one."""
    parts: list[str] = []
    rest = text
    while len(rest.encode("utf-8")) > max_bytes:
        prefix = utf8_prefix(rest, max_bytes)
        cut = prefix.rfind("\n")
        cut = cut if cut > 0 else len(prefix)
        parts.append(rest[:cut])
        rest = rest[cut:].removeprefix("\n")
    if rest or not parts:
        parts.append(rest)
    return parts


class FeishuApi(PlatformClient):
    def __init__(
        self,
        kind: str,
        base_url: str,
        app_id: str,
        app_secret: str,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(timeout=API_TIMEOUT_S, sleep=sleep)
        self.kind = self.platform = kind
        self.base = base_url.rstrip("/")
        self.app_id = app_id
        self._secret = app_secret
        self._token: tuple[str, float] | None = None
        self._token_lock = asyncio.Lock()

    def scrub(self, text: str) -> str:
        return one_line(text.replace(self._secret, "<secret>"), 500)

    def read(self, response: httpx.Response) -> Answer:
        data = json_object(response.content)
        code = int(data.get("code") or 0) if isinstance(data.get("code"), int) else -1
        if response.status_code == 200 and code == 0:
            return Answer(ok=True, data=data)
        return Answer(
            ok=False,
            description=str(data.get("msg") or "not the expected JSON"),
            code=max(code, 0),
            limited=code == RATE_LIMIT_CODE,
            stale_credential=code in _AUTH_CODES,
        )

    async def reauthorize(self) -> None:
        self._token = None

    async def tenant_token(self) -> str:
        async with self._token_lock:
            if self._token is not None and time.monotonic() < self._token[1]:
                return self._token[0]
            try:
                response = await self._client.post(
                    f"{self.base}/open-apis/auth/v3/tenant_access_token/internal",
                    json={"app_id": self.app_id, "app_secret": self._secret},
                )
            except httpx.HTTPError as exc:
                raise self.error("tenant_access_token", 0, f"{type(exc).__name__}: {exc}") from None
            data = json_object(response.content)
            token = data.get("tenant_access_token")
            if response.status_code != 200 or data.get("code") != 0 or not isinstance(token, str):
                raise self.error(
                    "tenant_access_token",
                    response.status_code,
                    str(data.get("msg") or "not the expected JSON"),
                    int(data.get("code") or 0),
                )
            ttl = max(60, int(data.get("expire") or 0) - TOKEN_REFRESH_MARGIN_S)
            self._token = (token, time.monotonic() + ttl)
            return token

    async def call(self, label: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
        async def send() -> httpx.Response:
            token = await self.tenant_token()
            headers = {"authorization": f"Bearer {token}"}
            return await self._client.request(method, f"{self.base}{path}", json=body, headers=headers)

        return await self.request(label, send, idempotent=method == "GET")

    # --- messages -------------------------------------------------------------------------------

    async def bot_info(self) -> dict[str, Any]:
        data = await self.call("botInfo", "GET", "/open-apis/bot/v3/info")
        bot = data.get("bot")
        return bot if isinstance(bot, dict) else {}

    async def list_scopes(self) -> list[dict[str, Any]]:
        data = await self.call("listAppScopes", "GET", "/open-apis/application/v6/scopes")
        scopes = (data.get("data") or {}).get("scopes")
        return [s for s in scopes or [] if isinstance(s, dict)]

    async def send(self, chat_id: str, msg_type: str, content: str) -> dict[str, Any]:
        data = await self.call(
            "sendMessage",
            "POST",
            "/open-apis/im/v1/messages?receive_id_type=chat_id",
            {"receive_id": chat_id, "msg_type": msg_type, "content": content},
        )
        return dict(data.get("data") or {})

    async def reply(
        self, message_id: str, msg_type: str, content: str, *, in_thread: bool = False
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"msg_type": msg_type, "content": content}
        if in_thread:
            body["reply_in_thread"] = True
        data = await self.call(
            "replyMessage", "POST", f"/open-apis/im/v1/messages/{quote(message_id)}/reply", body
        )
        return dict(data.get("data") or {})

    async def deliver(
        self, target: FeishuTarget, msg_type: str, content: str, *, first: bool = True
    ) -> dict[str, Any]:
        """A reply when the target quotes (the first part only, unless in a thread), else a send."""
        if target.reply_to and (first or target.in_thread):
            return await self.reply(target.reply_to, msg_type, content, in_thread=target.in_thread)
        return await self.send(target.chat_id, msg_type, content)

    async def send_text(self, target: FeishuTarget, text: str) -> str | None:
        first_id: str | None = None
        for index, part in enumerate(chunk_text(text)):
            sent = await self.deliver(
                target, "text", json.dumps({"text": part}, ensure_ascii=False), first=index == 0
            )
            if index == 0:
                first_id = sent.get("message_id")
        return first_id

    async def edit_text(self, message_id: str, text: str) -> None:
        await self.call(
            "editTextMessage",
            "PUT",
            f"/open-apis/im/v1/messages/{quote(message_id)}",
            {"msg_type": "text", "content": json.dumps({"text": text}, ensure_ascii=False)},
        )

    async def delete(self, message_id: str) -> None:
        await self.call("deleteMessage", "DELETE", f"/open-apis/im/v1/messages/{quote(message_id)}")

    async def get_message(self, message_id: str) -> dict[str, Any] | None:
        data = await self.call(
            "getMessage", "GET", f"/open-apis/im/v1/messages/{quote(message_id)}?user_id_type=open_id"
        )
        items = (data.get("data") or {}).get("items")
        return items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else None

    async def download(self, message_id: str, key: str, kind: str) -> tuple[bytes, str]:
        token = await self.tenant_token()
        url = f"{self.base}/open-apis/im/v1/messages/{quote(message_id)}/resources/{quote(key)}?type={kind}"
        async with (
            self.downloading("downloadResource", DOWNLOAD_TIMEOUT_S),
            self._client.stream("GET", url, headers={"authorization": f"Bearer {token}"}) as response,
        ):
            if response.status_code != 200:
                data = json_object(await response.aread())
                raise self.error(
                    "downloadResource",
                    response.status_code,
                    str(data.get("msg") or "the resource was refused"),
                    int(data.get("code") or 0),
                )
            too_large = "the resource is too large (max 20 MB)"
            raw = await self.read_capped(response, "downloadResource", MAX_DOWNLOAD_BYTES, too_large)
            return raw, response.headers.get("content-type", "")

    # --- cards ----------------------------------------------------------------------------------

    async def create_card(self, card: str) -> str:
        data = await self.call(
            "createCard", "POST", "/open-apis/cardkit/v1/cards", {"type": "card_json", "data": card}
        )
        card_id = (data.get("data") or {}).get("card_id")
        if not isinstance(card_id, str):
            raise self.error("createCard", 200, "the answer carried no card_id")
        return card_id

    async def update_element(self, card_id: str, element: str, content: str, sequence: int) -> None:
        await self.call(
            "updateCardElement",
            "PUT",
            f"/open-apis/cardkit/v1/cards/{quote(card_id)}/elements/{quote(element)}/content",
            {"content": content, "sequence": sequence},
        )

    async def update_card(self, card_id: str, card: str, sequence: int) -> None:
        await self.call(
            "updateCard",
            "PUT",
            f"/open-apis/cardkit/v1/cards/{quote(card_id)}",
            {"card": {"type": "card_json", "data": card}, "sequence": sequence},
        )

    # --- application config (onboarding, registration) ------------------------------------------

    async def patch_config(self, body: dict[str, Any]) -> None:
        await self.call(
            "updateAppConfig",
            "PATCH",
            f"/open-apis/application/v7/applications/{quote(self.app_id)}/config",
            body,
        )
