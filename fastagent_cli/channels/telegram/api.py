"""The Telegram Bot API client the channel and the ``telegram_send`` tool share (feature M14).

Every call goes through :meth:`BotApi.call`, which owns the transport rules:

* each call has :data:`API_TIMEOUT_S` (a file download :data:`DOWNLOAD_TIMEOUT_S`), end to end;
* a ``429`` is retried up to :data:`RETRIES` times after the ``retry_after`` Telegram sends, when
  that is at most :data:`FLOOD_WAIT_MAX_S` (a longer flood ban fails at once, visibly);
* a network failure or a ``5xx`` is retried (1 s, 2 s, 4 s) only where repeating cannot duplicate
  anything: the request never left (a refused connection), or the method is idempotent. A
  ``sendMessage`` whose answer was lost is not repeated: it may have been delivered;
* success is the body's own ``ok: true``;
* every failure is a :class:`TelegramApiError` naming the method; the bot token never appears in
  a message.

The base URL is ``api_base_url=``, else ``TELEGRAM_API_BASE_URL``, else ``https://api.telegram.org``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from fastagent_cli.channels.telegram.html import MAX_MESSAGE, split_message, telegram_html
from fastagent_cli.errors import one_line

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
    "resolve_api_base",
]

log = logging.getLogger("fastagent.channel")

DEFAULT_API_BASE = "https://api.telegram.org"
API_BASE_ENV = "TELEGRAM_API_BASE_URL"
BOT_TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
SECRET_TOKEN_ENV = "TELEGRAM_SECRET_TOKEN"
API_TIMEOUT_S = 30.0
DOWNLOAD_TIMEOUT_S = 120.0
RETRIES = 3
FLOOD_WAIT_MAX_S = 30.0
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


def resolve_api_base(explicit: str | None = None) -> str:
    return (explicit or os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE).rstrip("/")


class TelegramApiError(Exception):
    """A failed Bot API call. ``status`` 0: the request got no HTTP answer (network, timeout)."""

    def __init__(self, method: str, status: int, description: str) -> None:
        self.method = method
        self.status = status
        self.description = description
        text = (
            f"telegram {method}: {description}"
            if status == 0
            else f"telegram {method} failed: {status} {description}"
        )
        super().__init__(text.strip())

    @property
    def is_parse_error(self) -> bool:
        return self.status == 400 and bool(_PARSE_ERROR.search(self.description))


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reply goes: a chat, maybe a thread, maybe quoting a message (first part only)."""

    chat_id: int | str
    thread_id: int | None = None
    reply_to: int | None = None


class BotApi:
    def __init__(
        self,
        token: str,
        api_base_url: str | None = None,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.token = token
        self.base = resolve_api_base(api_base_url)
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(API_TIMEOUT_S))
        self._owns_client = client is None
        self._sleep = sleep

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def _scrub(self, text: str) -> str:
        return one_line(text.replace(self.token, "<token>"), 500)

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
        timeout = DOWNLOAD_TIMEOUT_S if upload else API_TIMEOUT_S
        attempt = 0
        while True:
            try:
                async with asyncio.timeout(timeout):
                    if upload is None:
                        response = await self._client.post(url, json=body)
                    else:
                        field, name, content = upload
                        form = {k: v if isinstance(v, str) else json_text(v) for k, v in body.items()}
                        response = await self._client.post(url, data=form, files={field: (name, content)})
            except (httpx.TransportError, TimeoutError) as exc:
                never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                if attempt < RETRIES and (never_sent or method in _IDEMPOTENT):
                    await self._backoff(method, attempt, self._describe(exc))
                    attempt += 1
                    continue
                raise TelegramApiError(method, 0, self._describe(exc)) from None
            data = _json(response)
            if response.status_code == 200 and data.get("ok") is True:
                return data.get("result")
            description = str(data.get("description") or "the Bot API answer was not the expected JSON")
            if response.status_code == 429:
                wait = _retry_after(data, attempt)
                if wait > FLOOD_WAIT_MAX_S:
                    raise TelegramApiError(
                        method,
                        429,
                        f"{description} (retry_after {wait:g} s is over the {FLOOD_WAIT_MAX_S:g} s cap)",
                    )
                if attempt < RETRIES:
                    log.warning(
                        "[telegram] %s: 429 Too Many Requests; retrying in %g s (%d/%d)",
                        method,
                        wait,
                        attempt + 1,
                        RETRIES,
                    )
                    await self._sleep(wait)
                    attempt += 1
                    continue
                raise TelegramApiError(method, 429, f"{description} (gave up after {RETRIES} retries)")
            if response.status_code >= 500 and attempt < RETRIES and method in _IDEMPOTENT:
                await self._backoff(method, attempt, f"{response.status_code} {description}")
                attempt += 1
                continue
            raise TelegramApiError(method, response.status_code, self._scrub(description))

    async def _backoff(self, method: str, attempt: int, why: str) -> None:
        delay = float(2**attempt)
        log.warning(
            "[telegram] %s failed (%s); retrying in %g s (%d/%d)", method, why, delay, attempt + 1, RETRIES
        )
        await self._sleep(delay)

    def _describe(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError | httpx.TimeoutException):
            return f"no answer within {API_TIMEOUT_S:g} s"
        return self._scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

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
                if not (html and exc.is_parse_error):
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
            if not (html and exc.is_parse_error):
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
            raise TelegramApiError("getFile", 200, "no file_path in the answer (the file may be over 20 MB)")
        if int(meta.get("file_size") or 0) > max_bytes:
            raise TelegramApiError("getFile", 200, f"the file is too large (max {_size(max_bytes)})")
        url = f"{self.base}/file/bot{self.token}/{remote}"
        chunks: list[bytes] = []
        received = 0
        try:
            async with asyncio.timeout(DOWNLOAD_TIMEOUT_S), self._client.stream("GET", url) as response:
                if response.status_code != 200:
                    await response.aread()
                    description = str(_json(response).get("description") or response.reason_phrase)
                    raise TelegramApiError("file download", response.status_code, self._scrub(description))
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    if received > max_bytes:
                        raise TelegramApiError(
                            "file download",
                            200,
                            f"the file is too large (max {_size(max_bytes)})",
                        )
                    chunks.append(chunk)
        except TimeoutError:
            raise TelegramApiError(
                "file download", 0, f"no complete answer within {DOWNLOAD_TIMEOUT_S:g} s"
            ) from None
        except httpx.TransportError as exc:
            raise TelegramApiError("file download", 0, self._describe(exc)) from None
        return b"".join(chunks), remote


def json_text(value: Any) -> str:
    """A form field's value: JSON for anything that is not a string (ids, objects)."""
    return json.dumps(value, separators=(",", ":"))


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MB" if count >= 1024 * 1024 else f"{count} bytes"


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _retry_after(data: dict[str, Any], attempt: int) -> float:
    parameters = data.get("parameters")
    value = parameters.get("retry_after") if isinstance(parameters, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return float(attempt + 1)


def _plain(part: str) -> str:
    """An HTML part as the text it shows (tags dropped, entities decoded)."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", part))
