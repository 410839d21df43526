"""A fake Telegram Bot API on 127.0.0.1 (aiohttp), speaking the real wire format.

::

    async with FakeTelegram(username="fa_test_bot") as telegram:
        env = {"TELEGRAM_API_BASE_URL": telegram.base_url}
        ...
        message = await telegram.wait_for_text(chat_id=42, contains="echo")

``POST /bot<token>/<method>`` answers ``{"ok": true, "result": ...}`` or
``{"ok": false, "error_code": N, "description": "...", "parameters": {"retry_after": S}}``.
Implemented: getMe, sendMessage, editMessageText, deleteMessage, getFile, setWebhook,
sendDocument, sendPhoto, answerCallbackQuery (inline keyboards are kept as ``reply_markup``; an
edit without one removes it, as Telegram does). Text is checked as Telegram checks it: at most
4 096 characters after entity parsing, and with ``parse_mode=HTML`` only Telegram's tags and entities
(``Bad Request: can't parse entities: ...``). ``fail(method, ...)`` injects failures (a 429 with
``retry_after``...). Files for ``getFile`` are added with :meth:`FakeTelegram.add_file`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

ALLOWED_TAGS = {
    "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "code", "pre",
    "blockquote", "tg-emoji",
}  # fmt: skip


class HtmlError(Exception):
    pass


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.visible: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            raise HtmlError(f'Unsupported start tag "{tag}"')
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            raise HtmlError(f'Unmatched end tag "{tag}"')
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if "<" in data or "&" in data:
            raise HtmlError("Can't find end of the entity")
        self.visible.append(data)

    def handle_entityref(self, name: str) -> None:
        if name not in {"lt", "gt", "amp", "quot"}:
            raise HtmlError(f'Unsupported HTML entity "&{name};"')
        self.visible.append({"lt": "<", "gt": ">", "amp": "&", "quot": '"'}[name])

    def handle_charref(self, name: str) -> None:
        self.visible.append(chr(int(name[1:], 16) if name[:1] in "xX" else int(name)))


def visible_text(text: str, parse_mode: str | None) -> str:
    """What Telegram shows for ``text``; :class:`HtmlError` when it would reject the markup."""
    if parse_mode != "HTML":
        return text
    checker = _Checker()
    checker.feed(text)
    checker.close()
    if checker.stack:
        raise HtmlError(f'Unclosed start tag "{checker.stack[-1]}"')
    return "".join(checker.visible)


@dataclass
class Message:
    chat_id: int | str
    message_id: int
    text: str
    parse_mode: str | None
    thread_id: int | None = None
    reply_to: int | None = None
    deleted: bool = False
    edits: list[tuple[float, str, str | None]] = field(default_factory=list)
    sent_at: float = 0.0
    reply_markup: dict[str, Any] | None = None
    """The inline keyboard, as sent (``{"inline_keyboard": [[{text, callback_data}]]}``)."""

    @property
    def shown(self) -> str:
        return visible_text(self.text, self.parse_mode)


@dataclass
class Call:
    at: float
    method: str
    params: dict[str, Any]
    status: int


@dataclass
class _Failure:
    status: int
    description: str
    retry_after: float | None
    times: int


class FakeTelegram:
    def __init__(
        self, *, username: str = "fa_test_bot", privacy: bool = False, bot_id: int | None = None
    ) -> None:
        self.username = username
        self.privacy = privacy
        self.bot_id = bot_id
        self.messages: list[Message] = []
        self.calls: list[Call] = []
        self.webhooks: list[dict[str, Any]] = []
        self.uploads: list[dict[str, Any]] = []
        self.files: dict[str, tuple[str, bytes]] = {}
        self.failures: dict[str, list[_Failure]] = {}
        self.tokens: set[str] = set()
        self.callback_answers: list[dict[str, Any]] = []
        self._next_id = 1000
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeTelegram:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/bot{token}/{method}", self._method)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- test controls --------------------------------------------------------------------------

    def fail(
        self, method: str, status: int, description: str, *, retry_after: float | None = None, times: int = 1
    ) -> None:
        self.failures.setdefault(method, []).append(_Failure(status, description, retry_after, times))

    def add_file(self, file_id: str, path: str, content: bytes) -> None:
        self.files[file_id] = (path, content)

    def of_chat(self, chat_id: int | str) -> list[Message]:
        return [m for m in self.messages if str(m.chat_id) == str(chat_id)]

    def shown(self, chat_id: int | str) -> list[str]:
        """The visible texts of the chat's messages that were not deleted, in order."""
        return [m.shown for m in self.of_chat(chat_id) if not m.deleted]

    def methods(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.method == name]

    async def wait_until(self, check: Callable[[], Any], within: float = 30, what: str = "condition") -> Any:
        deadline = time.monotonic() + within
        while True:
            result = check()
            if result:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{what} not met within {within} s; messages: {self.debug()}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.5))
            except TimeoutError:
                pass

    async def wait_for_text(self, chat_id: int | str, contains: str, within: float = 30) -> Message:
        def found() -> Message | None:
            return next((m for m in self.of_chat(chat_id) if not m.deleted and contains in m.shown), None)

        return await self.wait_until(found, within, f"a message in chat {chat_id} containing {contains!r}")

    def debug(self) -> str:
        return "; ".join(
            f"[{m.chat_id}#{m.message_id}{' deleted' if m.deleted else ''}] {m.text[:80]!r}"
            for m in self.messages
        )

    # --- the API --------------------------------------------------------------------------------

    def _ok(self, result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    def _error(self, status: int, description: str, retry_after: float | None = None) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        return web.json_response(body, status=status)

    async def _method(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        token = request.match_info["token"]
        self.tokens.add(token)
        if request.content_type == "multipart/form-data":
            params: dict[str, Any] = {}
            async for part in await request.multipart():
                if part.filename:  # type: ignore[union-attr]
                    params[part.name] = (part.filename, await part.read())  # type: ignore[union-attr]
                else:
                    params[part.name] = await part.text()  # type: ignore[union-attr]
        else:
            params = await request.json() if request.can_read_body else {}
        response = self._dispatch(method, token, params)
        self.calls.append(Call(time.monotonic(), method, params, response.status))
        self._changed.set()
        return response

    def _dispatch(self, method: str, token: str, params: dict[str, Any]) -> web.Response:
        queued = self.failures.get(method)
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            return self._error(failure.status, failure.description, failure.retry_after)
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return self._error(404, "Not Found: method not found")
        try:
            result = handler(token, params)
        except HtmlError as exc:
            return self._error(400, f"Bad Request: can't parse entities: {exc}")
        except _ApiError as exc:
            return self._error(exc.status, exc.description)
        return self._ok(result)

    def _m_getMe(self, token: str, params: dict[str, Any]) -> Any:
        bot_id = self.bot_id or int(token.split(":")[0])
        return {
            "id": bot_id,
            "is_bot": True,
            "first_name": "Test",
            "username": self.username,
            "can_join_groups": True,
            "can_read_all_group_messages": not self.privacy,
            "supports_inline_queries": False,
        }

    def _check_text(self, text: Any, parse_mode: str | None) -> None:
        if not isinstance(text, str) or not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if len(visible_text(text, parse_mode).encode("utf-16-le")) // 2 > 4096:
            raise _ApiError(400, "Bad Request: message is too long")

    def _m_sendMessage(self, token: str, params: dict[str, Any]) -> Any:
        parse_mode = params.get("parse_mode")
        self._check_text(params.get("text"), parse_mode)
        self._next_id += 1
        reply = params.get("reply_parameters") or {}
        message = Message(
            params["chat_id"],
            self._next_id,
            params["text"],
            parse_mode,
            params.get("message_thread_id"),
            reply.get("message_id"),
            sent_at=time.monotonic(),
            reply_markup=_keyboard(params.get("reply_markup")),
        )
        self.messages.append(message)
        return {"message_id": message.message_id, "chat": {"id": message.chat_id}, "date": int(time.time())}

    def _find(self, params: dict[str, Any]) -> Message:
        for message in self.messages:
            if str(message.chat_id) == str(params.get("chat_id")) and message.message_id == params.get(
                "message_id"
            ):
                if message.deleted:
                    break
                return message
        raise _ApiError(400, "Bad Request: message to edit not found")

    def _m_editMessageText(self, token: str, params: dict[str, Any]) -> Any:
        message = self._find(params)
        parse_mode = params.get("parse_mode")
        self._check_text(params.get("text"), parse_mode)
        markup = _keyboard(params.get("reply_markup"))
        if (
            params["text"] == message.text
            and parse_mode == message.parse_mode
            and markup == message.reply_markup
        ):
            raise _ApiError(
                400,
                "Bad Request: message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message",
            )
        message.edits.append((time.monotonic(), params["text"], parse_mode))
        message.text, message.parse_mode = params["text"], parse_mode
        message.reply_markup = markup  # an edit without reply_markup removes the keyboard
        return {"message_id": message.message_id}

    def _m_answerCallbackQuery(self, token: str, params: dict[str, Any]) -> Any:
        if not isinstance(params.get("callback_query_id"), str):
            raise _ApiError(
                400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
            )
        self.callback_answers.append(params)
        return True

    def _m_deleteMessage(self, token: str, params: dict[str, Any]) -> Any:
        try:
            message = self._find(params)
        except _ApiError:
            raise _ApiError(400, "Bad Request: message to delete not found") from None
        message.deleted = True
        return True

    def _m_setWebhook(self, token: str, params: dict[str, Any]) -> Any:
        self.webhooks.append(params)
        return True

    def _m_getFile(self, token: str, params: dict[str, Any]) -> Any:
        found = self.files.get(params.get("file_id", ""))
        if found is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        return {"file_id": params["file_id"], "file_size": len(found[1]), "file_path": found[0]}

    def _upload(self, params: dict[str, Any], field_name: str) -> Any:
        self.uploads.append(params)
        self._next_id += 1
        name, _ = params[field_name]
        message = Message(
            params["chat_id"], self._next_id, f"[{field_name}: {name}]", None, sent_at=time.monotonic()
        )
        self.messages.append(message)
        return {"message_id": message.message_id}

    def _m_sendDocument(self, token: str, params: dict[str, Any]) -> Any:
        return self._upload(params, "document")

    def _m_sendPhoto(self, token: str, params: dict[str, Any]) -> Any:
        return self._upload(params, "photo")

    async def _file(self, request: web.Request) -> web.Response:
        path = request.match_info["path"]
        for stored_path, content in self.files.values():
            if stored_path == path:
                return web.Response(body=content)
        return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)


class _ApiError(Exception):
    def __init__(self, status: int, description: str) -> None:
        self.status = status
        self.description = description


# --- building updates ----------------------------------------------------------------------------


class Updates:
    """Bot API ``Update`` objects with increasing ``update_id`` and message ids."""

    def __init__(self, first_update: int = 100) -> None:
        self.update_id = first_update
        self.message_id = 0

    def message(
        self,
        text: str | None,
        *,
        chat_id: int = 42,
        chat_type: str = "private",
        sender: dict[str, Any] | None = None,
        reply_to: dict[str, Any] | None = None,
        entities: list[dict[str, Any]] | None = None,
        thread_id: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        self.update_id += 1
        self.message_id += 1
        message: dict[str, Any] = {
            "message_id": self.message_id,
            "date": int(time.time()),
            "chat": {
                "id": chat_id,
                "type": chat_type,
                **({"title": "Team"} if chat_type != "private" else {}),
            },
            "from": sender or {"id": 7, "is_bot": False, "first_name": "Alice", "username": "alice"},
        }
        if text is not None:
            message["text"] = text
        if entities:
            message["entities"] = entities
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        message.update(extra)
        return {"update_id": self.update_id, "message": message}

    def callback(
        self, message: Message, data: str, *, sender: dict[str, Any] | None = None, chat_type: str = "private"
    ) -> dict[str, Any]:
        """The ``callback_query`` update of a press on an inline button of ``message``."""
        self.update_id += 1
        return {
            "update_id": self.update_id,
            "callback_query": {
                "id": f"cbq-{self.update_id}",
                "from": sender or {"id": 7, "is_bot": False, "first_name": "Alice", "username": "alice"},
                "message": {
                    "message_id": message.message_id,
                    "date": int(time.time()),
                    "chat": {"id": message.chat_id, "type": chat_type},
                    "text": message.shown,
                },
                "chat_instance": "-4211",
                "data": data,
            },
        }


def _keyboard(markup: Any) -> dict[str, Any] | None:
    """An inline keyboard checked as Telegram checks it: ``callback_data`` of 1-64 bytes."""
    if markup is None:
        return None
    if isinstance(markup, str):  # a multipart form sends it as JSON text
        import json

        markup = json.loads(markup)
    for row in markup.get("inline_keyboard", []):
        for button in row:
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                raise _ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return dict(markup)


def mention(text: str, username: str) -> list[dict[str, Any]]:
    """The ``mention`` entity Telegram would send for ``@username`` in ``text`` (UTF-16 offsets)."""
    handle = f"@{username}"
    prefix = text[: text.index(handle)]
    return [{"type": "mention", "offset": len(prefix.encode("utf-16-le")) // 2, "length": len(handle)}]
