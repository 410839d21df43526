"""A fake Feishu/Lark Open Platform on 127.0.0.1 (aiohttp): the Open API, the event sender (plain
and encrypted, signed), the WebSocket long-connection endpoint (protobuf frames), and the
scan-to-create registration endpoint, all speaking the real wire formats.

``fail(call, code, msg)`` makes the next call of that kind answer ``{"code": code, "msg": msg}``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from fastagent_cli.channels.feishu.crypto import encrypt_event, event_signature
from fastagent_cli.channels.feishu.frames import CONTROL, DATA, Frame, decode_frame, encode_frame

BOT_OPEN_ID = "ou_bot"


@dataclass
class Message:
    message_id: str
    chat_id: str
    msg_type: str
    content: str
    reply_to: str | None = None
    thread_id: str | None = None
    deleted: bool = False
    edits: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        body = json.loads(self.content)
        return str(body.get("text") or body)


@dataclass
class Card:
    card_id: str
    elements: dict[str, str]
    streaming: bool = True
    sequences: list[int] = field(default_factory=list)
    writes: list[float] = field(default_factory=list)


class FakeFeishu:
    def __init__(
        self, *, app_id: str = "cli_0123456789abcdef", app_secret: str = "s3cret", token: str = "vtoken"
    ) -> None:
        self.app_id, self.app_secret, self.verification_token = app_id, app_secret, token
        self.messages: list[Message] = []
        self.cards: dict[str, Card] = {}
        self.failures: dict[str, list[tuple[int, str]]] = {}
        self.config_patches: list[dict[str, Any]] = []
        self.acks: list[dict[str, Any]] = []
        self.ws: web.WebSocketResponse | None = None
        self.ws_connected = asyncio.Event()
        self.registration: dict[str, Any] = {"polls": 0, "confirm_after": 1}
        self.chats: dict[str, str] = {}
        self.referents: dict[str, dict[str, Any]] = {}
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeFeishu:
        app = web.Application()
        r = app.router
        r.add_post("/open-apis/auth/v3/tenant_access_token/internal", self._token)
        r.add_get("/open-apis/bot/v3/info", self._bot)
        r.add_get("/open-apis/application/v6/scopes", self._scopes)
        r.add_patch("/open-apis/application/v7/applications/{app}/config", self._config)
        r.add_post("/open-apis/im/v1/messages", self._send)
        r.add_post("/open-apis/im/v1/messages/{id}/reply", self._reply)
        r.add_put("/open-apis/im/v1/messages/{id}", self._edit)
        r.add_delete("/open-apis/im/v1/messages/{id}", self._delete)
        r.add_get("/open-apis/im/v1/messages/{id}", self._get)
        r.add_post("/open-apis/cardkit/v1/cards", self._create_card)
        r.add_put("/open-apis/cardkit/v1/cards/{card}/elements/{element}/content", self._element)
        r.add_put("/open-apis/cardkit/v1/cards/{card}", self._settle)
        r.add_post("/callback/ws/endpoint", self._endpoint)
        r.add_get("/ws", self._websocket)
        r.add_post("/oauth/v1/app/registration", self._registration)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def fail(self, call: str, code: int, msg: str, times: int = 1) -> None:
        self.failures.setdefault(call, []).extend([(code, msg)] * times)

    def _failure(self, call: str) -> web.Response | None:
        queued = self.failures.get(call)
        if queued:
            code, msg = queued.pop(0)
            return web.json_response({"code": code, "msg": msg}, status=429 if code == 99991400 else 400)
        return None

    def _ok(self, data: Any = None, **top: Any) -> web.Response:
        self._changed.set()
        return web.json_response(
            {"code": 0, "msg": "success", **({"data": data} if data is not None else {}), **top}
        )

    async def wait_until(self, check: Callable[[], Any], within: float = 30, what: str = "condition") -> Any:
        deadline = time.monotonic() + within
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what} not met within {within} s; messages: "
                    f"{[(m.chat_id, m.msg_type, m.content[:80]) for m in self.messages]}; cards: {self.cards}"
                )
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), 0.5)
            except TimeoutError:
                pass

    def shown(self, chat_id: str) -> list[str]:
        """What the chat shows: texts, and each card's settled answer."""
        out = []
        for m in self.messages:
            if m.chat_id != chat_id or m.deleted:
                continue
            if m.msg_type == "interactive":
                content = json.loads(m.content)
                if "data" not in content:  # a card sent whole (JSON 2.0), not a cardkit entity
                    elements = (content.get("body") or {}).get("elements", [])
                    out.append(
                        "\n".join(e.get("content", "") for e in elements if e.get("tag") == "markdown")
                    )
                    continue
                card = self.cards.get(content["data"]["card_id"])
                out.append("" if card is None else card.elements.get("answer", ""))
            else:
                out.append(m.text)
        return out

    # --- Open API -------------------------------------------------------------------------------

    def _authed(self, request: web.Request) -> bool:
        return request.headers.get("authorization") == "Bearer t-tenant"

    async def _token(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("app_id") != self.app_id or body.get("app_secret") != self.app_secret:
            return web.json_response({"code": 10014, "msg": "app secret invalid"})
        return web.json_response({"code": 0, "msg": "ok", "tenant_access_token": "t-tenant", "expire": 7200})

    async def _bot(self, request: web.Request) -> web.Response:
        return self._ok(bot={"open_id": BOT_OPEN_ID, "app_name": "Test"})

    async def _scopes(self, request: web.Request) -> web.Response:
        return self._ok(
            {"scopes": [{"scope_name": "im:message.group_msg", "grant_status": 1, "scope_type": "tenant"}]}
        )

    async def _config(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.config_patches.append(body)
        url = (body.get("event") or {}).get("request_url")
        if url:
            challenge = uuid.uuid4().hex
            async with (
                aiohttp.ClientSession() as http,
                http.post(
                    url,
                    json={
                        "type": "url_verification",
                        "challenge": challenge,
                        "token": self.verification_token,
                    },
                ) as response,
            ):
                echoed = await response.json(content_type=None)
            if echoed.get("challenge") != challenge:
                return web.json_response({"code": 210042, "msg": "request_url validation failed"})
        return self._ok({})

    def _store(
        self, chat: str, body: dict[str, Any], reply_to: str | None = None, thread: str | None = None
    ) -> web.Response:
        message = Message(
            f"om_{uuid.uuid4().hex[:12]}", chat, body["msg_type"], body["content"], reply_to, thread
        )
        if message.msg_type == "text" and len(message.content.encode()) > 150 * 1024:
            return web.json_response({"code": 230025, "msg": "message too long"}, status=400)
        self.messages.append(message)
        return self._ok({"message_id": message.message_id, "chat_id": chat, "thread_id": thread})

    async def _send(self, request: web.Request) -> web.Response:
        failed = self._failure("sendMessage")
        if failed or not self._authed(request):
            return failed or web.json_response({"code": 99991663, "msg": "token invalid"})
        body = await request.json()
        return self._store(body["receive_id"], body)

    async def _reply(self, request: web.Request) -> web.Response:
        body = await request.json()
        parent = next((m for m in self.messages if m.message_id == request.match_info["id"]), None)
        chat = parent.chat_id if parent else self.chats.get(request.match_info["id"], "oc_unknown")
        thread = (
            (parent.thread_id if parent and parent.thread_id else f"omt_{request.match_info['id']}")
            if body.get("reply_in_thread")
            else None
        )
        return self._store(chat, body, request.match_info["id"], thread)

    async def _edit(self, request: web.Request) -> web.Response:
        body = await request.json()
        for m in self.messages:
            if m.message_id == request.match_info["id"] and m.msg_type == "text":
                m.edits.append(m.content)
                m.content = body["content"]
                return self._ok({})
        return web.json_response({"code": 230001, "msg": "not found"}, status=400)

    async def _delete(self, request: web.Request) -> web.Response:
        for m in self.messages:
            if m.message_id == request.match_info["id"]:
                m.deleted = True
        return self._ok({})

    async def _get(self, request: web.Request) -> web.Response:
        found = self.referents.get(request.match_info["id"])
        return self._ok({"items": [found] if found else []})

    async def _create_card(self, request: web.Request) -> web.Response:
        failed = self._failure("createCard")
        if failed:
            return failed
        body = await request.json()
        card = json.loads(body["data"])
        elements = {e["element_id"]: e["content"] for e in card["body"]["elements"]}
        card_id = f"card_{uuid.uuid4().hex[:8]}"
        self.cards[card_id] = Card(card_id, elements)
        return self._ok({"card_id": card_id})

    def _sequence(self, card: Card, sequence: int) -> web.Response | None:
        if card.sequences and sequence <= card.sequences[-1]:
            return web.json_response({"code": 300317, "msg": "sequence number compare failed"}, status=400)
        card.sequences.append(sequence)
        card.writes.append(time.monotonic())
        return None

    async def _element(self, request: web.Request) -> web.Response:
        failed = self._failure("updateCardElement")
        if failed:
            return failed
        card = self.cards[request.match_info["card"]]
        body = await request.json()
        problem = self._sequence(card, body["sequence"])
        if problem:
            return problem
        card.elements[request.match_info["element"]] = body["content"]
        return self._ok({})

    async def _settle(self, request: web.Request) -> web.Response:
        card = self.cards[request.match_info["card"]]
        body = await request.json()
        problem = self._sequence(card, body["sequence"])
        if problem:
            return problem
        data = json.loads(body["card"]["data"])
        card.elements = {e["element_id"]: e["content"] for e in data["body"]["elements"]}
        card.streaming = data["config"]["streaming_mode"]
        return self._ok({})

    # --- the WebSocket endpoint -----------------------------------------------------------------

    async def _endpoint(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("AppID") != self.app_id or body.get("AppSecret") != self.app_secret:
            return web.json_response({"code": 1000040344, "msg": "app credentials invalid"})
        url = self.base_url.replace("http://", "ws://") + "/ws?device_id=d1&service_id=7"
        config = {"PingInterval": 1, "ReconnectCount": 3, "ReconnectInterval": 1, "ReconnectNonce": 0}
        return web.json_response({"code": 0, "msg": "ok", "data": {"URL": url, "ClientConfig": config}})

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.ws = ws
        self.ws_connected.set()
        async for message in ws:
            if message.type != aiohttp.WSMsgType.BINARY:
                continue
            frame = decode_frame(message.data)
            if frame.method == CONTROL and frame.header("type") == "ping":
                pong = Frame(service=7, method=CONTROL, headers=[("type", "pong")])
                await ws.send_bytes(encode_frame(pong))
            elif frame.method == DATA:
                ack = {"message_id": frame.header("message_id"), **json.loads(frame.payload or b"{}")}
                if isinstance(ack.get("data"), str):  # a card callback's answer: base64 JSON
                    ack["answer"] = json.loads(base64.b64decode(ack["data"]))
                self.acks.append(ack)
                self._changed.set()
        return ws

    async def push(self, envelope: dict[str, Any], *, parts: int = 1, kind: str = "event") -> str:
        """Send an event frame (``kind="card"``: a card callback's) over the long connection (split
        in ``parts``); its frame message id."""
        await asyncio.wait_for(self.ws_connected.wait(), 30)
        assert self.ws is not None
        payload = json.dumps(envelope).encode()
        frame_id = uuid.uuid4().hex
        size = -(-len(payload) // parts)
        for seq in range(parts):
            headers = [
                ("type", kind),
                ("message_id", frame_id),
                ("sum", str(parts)),
                ("seq", str(seq)),
                ("trace_id", "t"),
            ]
            frame = Frame(
                seq_id=seq,
                service=7,
                method=DATA,
                headers=headers,
                payload=payload[seq * size : (seq + 1) * size],
            )
            await self.ws.send_bytes(encode_frame(frame))
        return frame_id

    # --- scan-to-create ------------------------------------------------------------------------

    async def _registration(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("action") == "begin":
            return web.json_response(
                {
                    "device_code": "dev-1",
                    "verification_uri_complete": f"{self.base_url}/confirm?code=dev-1",
                    "interval": 0,
                    "expires_in": 600,
                }
            )
        self.registration["polls"] += 1
        if self.registration["polls"] <= self.registration["confirm_after"]:
            return web.json_response({"error": "authorization_pending"}, status=400)
        return web.json_response(
            {
                "client_id": self.app_id,
                "client_secret": self.app_secret,
                "user_info": {"open_id": "ou_user", "tenant_brand": "feishu"},
            }
        )

    # --- the event sender ----------------------------------------------------------------------

    def envelope(
        self,
        text: str,
        *,
        chat_id: str = "oc_p2p",
        chat_type: str = "p2p",
        sender: str = "ou_alice",
        message_id: str | None = None,
        mentions: list[dict[str, Any]] | None = None,
        root_id: str | None = None,
        thread_id: str | None = None,
        parent_id: str | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "message_id": message_id or f"om_{uuid.uuid4().hex[:12]}",
            "chat_id": chat_id,
            "chat_type": chat_type,
            "message_type": "text",
            "content": json.dumps({"text": text}),
            "create_time": str(int(time.time() * 1000)),
        }
        for key, value in (
            ("mentions", mentions),
            ("root_id", root_id),
            ("thread_id", thread_id),
            ("parent_id", parent_id),
        ):
            if value:
                message[key] = value
        self.chats[message["message_id"]] = chat_id
        return {
            "schema": "2.0",
            "header": {
                "event_id": uuid.uuid4().hex,
                "event_type": "im.message.receive_v1",
                "create_time": str(int(time.time() * 1000)),
                "token": self.verification_token,
                "app_id": self.app_id,
                "tenant_key": "tk",
            },
            "event": {
                "sender": {"sender_id": {"open_id": sender}, "sender_type": "user", "tenant_key": "tk"},
                "message": message,
            },
        }

    def card_action(
        self, message_id: str, value: dict[str, Any], *, operator: str = "ou_alice"
    ) -> dict[str, Any]:
        """The ``card.action.trigger`` event (schema 2.0) of a press on a card button."""
        return {
            "schema": "2.0",
            "header": {
                "event_id": uuid.uuid4().hex,
                "event_type": "card.action.trigger",
                "create_time": str(int(time.time() * 1000)),
                "token": self.verification_token,
                "app_id": self.app_id,
                "tenant_key": "tk",
            },
            "event": {
                "operator": {"tenant_key": "tk", "open_id": operator, "union_id": f"on_{operator}"},
                "token": f"c-{uuid.uuid4().hex[:8]}",
                "action": {"tag": "button", "value": value},
                "host": "im_message",
                "context": {"open_message_id": message_id, "open_chat_id": self.chats.get(message_id, "")},
            },
        }

    def buttons(self, chat_id: str) -> list[tuple[str, dict[str, Any]]]:
        """``(message id, callback value)`` of every card button the chat shows."""
        out: list[tuple[str, dict[str, Any]]] = []
        for m in self.messages:
            if m.chat_id != chat_id or m.msg_type != "interactive" or m.deleted:
                continue
            card = json.loads(m.content)
            for element in (card.get("body") or {}).get("elements", []):
                for behavior in element.get("behaviors", []) if element.get("tag") == "button" else []:
                    if behavior.get("type") == "callback":
                        out.append((m.message_id, behavior["value"]))
        return out

    def delivery(
        self,
        envelope: dict[str, Any],
        *,
        encrypt_key: str | None = None,
        sign: bool = True,
        signed_at: float | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        """The HTTP body and headers the platform sends for ``envelope`` (signed now, or at
        ``signed_at``: a captured delivery replayed later)."""
        if encrypt_key is None:
            return json.dumps(envelope).encode(), {"content-type": "application/json"}
        body = json.dumps(
            {"encrypt": encrypt_event(encrypt_key, json.dumps(envelope), uuid.uuid4().bytes)}
        ).encode()
        headers = {"content-type": "application/json"}
        if sign:
            ts, nonce = str(int(time.time() if signed_at is None else signed_at)), uuid.uuid4().hex
            headers.update(
                {
                    "x-lark-request-timestamp": ts,
                    "x-lark-request-nonce": nonce,
                    "x-lark-signature": event_signature(encrypt_key, ts, nonce, body),
                }
            )
        return body, headers


def mention_bot() -> list[dict[str, Any]]:
    return [{"key": "@_user_1", "id": {"open_id": BOT_OPEN_ID}, "name": "Bot", "tenant_key": "tk"}]
