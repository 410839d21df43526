"""The Telegram Bot API client the channel and the ``telegram_send`` tool share (feature M14).

Every call goes through :meth:`BotApi.call`, on the kit's transport
(:class:`~fastagent_cli.channels.kit.api.PlatformClient`: one retry policy for ``429`` and ``5xx``,
one error type):

* each call has :data:`API_TIMEOUT_S` (a file download :data:`DOWNLOAD_TIMEOUT_S`), end to end;
* a ``429`` is retried up to three times after the ``retry_after`` Telegram sends, when that is at
  most 30 s (a longer flood ban fails at once, visibly);
* a network failure or a ``5xx`` is retried (1 s, 2 s, 4 s) only where repeating cannot duplicate
  anything: the request never left (a refused connection), or the method is idempotent. A
  ``sendMessage`` whose answer was lost is not repeated: it may have been delivered;
* success is the body's own ``ok: true``;
* every failure is a :class:`~fastagent_cli.errors.ChannelApiError` (``TelegramApiError`` here)
  naming the method; the bot token never appears in a message.

The base URL is ``api_base_url=``, else ``TELEGRAM_API_BASE_URL``, else ``https://api.telegram.org``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from fastagent_cli.channels.kit.api import MAX_RETRY_AFTER_S, RETRIES, Answer, PlatformClient, json_object
from fastagent_cli.channels.telegram.html import MAX_MESSAGE, split_message, telegram_html
from fastagent_cli.errors import ChannelApiError, one_line

__all__ = [
    "API_BASE_ENV",
    "API_TIMEOUT_S",
    "BOT_TOKEN_ENV",
    "DEFAULT_API_BASE",
    "DOWNLOAD_TIMEOUT_S",
    "FLOOD_WAIT_MAX_S",
    "MAX_DOWNLOAD_BYTES",
    "RETRIES",
    "SECRET_TOKEN_ENV",
    "BotApi",
    "Target",
    "TelegramApiError",
    "is_parse_error",
    "resolve_api_base",
]

DEFAULT_API_BASE = "https://api.telegram.org"
API_BASE_ENV = "TELEGRAM_API_BASE_URL"
BOT_TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
SECRET_TOKEN_ENV = "TELEGRAM_SECRET_TOKEN"
API_TIMEOUT_S = 30.0
DOWNLOAD_TIMEOUT_S = 120.0
FLOOD_WAIT_MAX_S = MAX_RETRY_AFTER_S
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
_IDEMPOTENT = {
    "getMe",
    "getFile",
    "editMessageText",
    "deleteMessage",
    "setWebhook",
    "getWebhookInfo",
    "sendChatAction",
}
_PARSE_ERROR = re.compile(
    r"can't parse|parse entities|unsupported start tag|unclosed|unmatched end tag", re.I
)
_NOT_MODIFIED = re.compile(r"message is not modified", re.I)

TelegramApiError = ChannelApiError
"""A failed Bot API call (the kit's one error type). ``status`` 0: no HTTP answer."""


def resolve_api_base(explicit: str | None = None) -> str:
    return (explicit or os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE).rstrip("/")


def is_parse_error(exc: ChannelApiError) -> bool:
    """Did Telegram refuse the message's HTML markup?"""
    return exc.status == 400 and bool(_PARSE_ERROR.search(exc.description))


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reply goes: a chat, maybe a thread, maybe quoting a message (first part only)."""

    chat_id: int | str
    thread_id: int | None = None
    reply_to: int | None = None


class BotApi(PlatformClient):
    platform = "telegram"

    def __init__(
        self,
        token: str,
        api_base_url: str | None = None,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(timeout=API_TIMEOUT_S, sleep=sleep, client=client)
        self.token = token
        self.base = resolve_api_base(api_base_url)

    def scrub(self, text: str) -> str:
        return one_line(text.replace(self.token, "<token>"), 500)

    def read(self, response: httpx.Response) -> Answer:
        data = json_object(response.content)
        if response.status_code == 200 and data.get("ok") is True:
            return Answer(ok=True, data=data)
        parameters = data.get("parameters")
        wait = parameters.get("retry_after") if isinstance(parameters, dict) else None
        if not (isinstance(wait, int | float) and not isinstance(wait, bool) and wait >= 0):
            wait = None
        return Answer(
            ok=False,
            description=str(data.get("description") or "the Bot API answer was not the expected JSON"),
            limited=response.status_code == 429,
            retry_after=None if wait is None else float(wait),
        )

    # --- the pipeline ---------------------------------------------------------------------------

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        upload: tuple[str, str, bytes] | None = None,
    ) -> Any:
        """One Bot API method; its ``result``. ``upload`` is ``(field, file name, bytes)``: the
        call is then sent as a multipart form. Raises :class:`TelegramApiError`."""
        url = f"{self.base}/bot{self.token}/{method}"
        body = {k: v for k, v in (params or {}).items() if v is not None}

        async def send() -> httpx.Response:
            if upload is None:
                return await self._client.post(url, json=body)
            field, name, content = upload
            form = {k: v if isinstance(v, str) else json_text(v) for k, v in body.items()}
            return await self._client.post(url, data=form, files={field: (name, content)})

        timeout = DOWNLOAD_TIMEOUT_S if upload else API_TIMEOUT_S
        data = await self.request(method, send, idempotent=method in _IDEMPOTENT, attempt_s=timeout)
        return data.get("result")

    # --- messages -------------------------------------------------------------------------------

    async def send_message(self, target: Target, text: str, *, html: bool = True) -> int | None:
        """Send ``text``, split into messages of at most 4 096 characters; the first quotes
        ``target.reply_to``. HTML by default (sanitised), resent as plain text if Telegram rejects
        the markup. Returns the first message's id."""
        parts = split_message(telegram_html(text), html_mode=True) if html else split_message(text)
        first_id: int | None = None
        for index, part in enumerate(parts):
            params: dict[str, Any] = {
                "chat_id": target.chat_id,
                "message_thread_id": target.thread_id,
                "text": part,
                "link_preview_options": {"is_disabled": True},
            }
            if index == 0 and target.reply_to is not None:
                params["reply_parameters"] = {
                    "message_id": target.reply_to,
                    "allow_sending_without_reply": True,
                }
            try:
                result = await self.call("sendMessage", {**params, "parse_mode": "HTML"} if html else params)
            except TelegramApiError as exc:
                if not (html and is_parse_error(exc)):
                    raise
                if index == 0:
                    return await self.send_message(target, text, html=False)
                result = await self.call("sendMessage", {**params, "text": _plain(part)})
            if index == 0 and isinstance(result, dict) and isinstance(result.get("message_id"), int):
                first_id = result["message_id"]
        return first_id

    async def edit_message_text(
        self, chat_id: int | str, message_id: int, text: str, *, html: bool = False
    ) -> None:
        """Replace a message's text (it must fit one message). "Not modified" is not an error; HTML
        that Telegram rejects is retried as plain text."""
        plain = text[:MAX_MESSAGE]
        params: dict[str, Any] = {"chat_id": chat_id, "message_id": message_id, "text": plain}
        try:
            if html:
                await self.call(
                    "editMessageText", {**params, "text": telegram_html(text), "parse_mode": "HTML"}
                )
            else:
                await self.call("editMessageText", params)
        except TelegramApiError as exc:
            if _NOT_MODIFIED.search(exc.description):
                return
            if not (html and is_parse_error(exc)):
                raise
            try:
                await self.call("editMessageText", params)
            except TelegramApiError as again:
                if not _NOT_MODIFIED.search(again.description):
                    raise

    async def delete_message(self, chat_id: int | str, message_id: int) -> None:
        await self.call("deleteMessage", {"chat_id": chat_id, "message_id": message_id})

    # --- files ----------------------------------------------------------------------------------

    async def download(self, file_id: str, max_bytes: int = MAX_DOWNLOAD_BYTES) -> tuple[bytes, str]:
        """``(bytes, remote path)`` of a file: ``getFile``, then the bytes, at most ``max_bytes``
        (checked on the metadata and on the bytes as they arrive), within :data:`DOWNLOAD_TIMEOUT_S`."""
        meta = await self.call("getFile", {"file_id": file_id})
        remote = meta.get("file_path") if isinstance(meta, dict) else None
        if not isinstance(remote, str) or not remote:
            raise self.error("getFile", 200, "no file_path in the answer (the file may be over 20 MB)")
        if int(meta.get("file_size") or 0) > max_bytes:
            raise self.error("getFile", 200, f"the file is too large (max {_size(max_bytes)})")
        url = f"{self.base}/file/bot{self.token}/{remote}"
        too_large = f"the file is too large (max {_size(max_bytes)})"
        async with (
            self.downloading("file download", DOWNLOAD_TIMEOUT_S),
            self._client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                description = json_object(await response.aread()).get("description")
                raise self.error(
                    "file download", response.status_code, str(description or response.reason_phrase)
                )
            data = await self.read_capped(response, "file download", max_bytes, too_large)
        return data, remote


def json_text(value: Any) -> str:
    """A form field's value: JSON for anything that is not a string (ids, objects)."""
    return json.dumps(value, separators=(",", ":"))


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MB" if count >= 1024 * 1024 else f"{count} bytes"


def _plain(part: str) -> str:
    """An HTML part as the text it shows (tags dropped, entities decoded)."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", part))
