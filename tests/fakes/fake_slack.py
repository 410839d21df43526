"""A fake Slack Web API and Events API sender on 127.0.0.1 (aiohttp), speaking the real wire format.

``POST /api/<method>`` (bearer token) answers ``{"ok": true, ...}`` or ``{"ok": false, "error": ...}``.
Implemented: auth.test, chat.postMessage/update/delete, chat.startStream/appendStream/stopStream
(``chunks`` of ``markdown_text`` and ``task_update``), assistant.threads.setStatus/setTitle,
reactions.add/remove, files.info (+ ``GET /files/<id>``), oauth.v2.access, apps.manifest.*.
``fail(method, error)`` injects failures. :meth:`FakeSlack.event` builds a signed Events API delivery.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from fastagent_cli.channels.slack.verify import sign_slack_request


@dataclass
class Posted:
    channel: str
    ts: str
    thread_ts: str | None
    text: str
    kind: str = "message"
    writes: list[tuple[float, str]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    stopped: bool = False
    deleted: bool = False
    blocks: list[dict[str, Any]] | None = None


class FakeSlack:
    def __init__(self, *, team: str = "T1", bot_user: str = "UBOT") -> None:
        self.team = team
        self.bot_user = bot_user
        self.messages: list[Posted] = []
        self.responses: list[dict[str, Any]] = []
        self.calls: list[tuple[float, str, dict[str, Any]]] = []
        self.failures: dict[str, list[str]] = {}
        self.apps: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, str] = {}
        self._ts = 1_700_000_000.0
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeSlack:
        app = web.Application()
        app.router.add_post("/api/{method}", self._method)
        app.router.add_get("/api/{method}", self._method)
        app.router.add_get("/oauth/v2/authorize", self._authorize)
        app.router.add_post("/actions/{key}", self._response_url)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return self.base_url + "/api"

    def fail(self, method: str, error: str, times: int = 1) -> None:
        self.failures.setdefault(method, []).extend([error] * times)

    def next_ts(self) -> str:
        self._ts += 1
        return f"{self._ts:.6f}"

    def in_thread(self, channel: str, thread_ts: str) -> list[Posted]:
        return [
            m for m in self.messages if m.channel == channel and m.thread_ts == thread_ts and not m.deleted
        ]

    def methods(self, name: str) -> list[dict[str, Any]]:
        return [params for _, method, params in self.calls if method == name]

    async def wait_until(self, check: Callable[[], Any], within: float = 30, what: str = "condition") -> Any:
        deadline = time.monotonic() + within
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what} not met within {within} s; messages: "
                    f"{[(m.channel, m.thread_ts, m.text[:60]) for m in self.messages]}"
                )
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), 0.5)
            except TimeoutError:
                pass

    async def wait_for_text(self, channel: str, contains: str, within: float = 30) -> Posted:
        return await self.wait_until(
            lambda: next(
                (m for m in self.messages if m.channel == channel and contains in m.text and not m.deleted),
                None,
            ),
            within,
            f"a message in {channel} containing {contains!r}",
        )

    # --- the API --------------------------------------------------------------------------------

    async def _method(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.method == "GET":
            params: dict[str, Any] = dict(request.query)
        elif request.content_type == "application/x-www-form-urlencoded":
            params = dict(await request.post())  # type: ignore[arg-type]
        else:
            params = await request.json() if request.can_read_body else {}
        self.calls.append((time.monotonic(), method, params))
        self._changed.set()
        if not request.headers.get("authorization"):
            return web.json_response({"ok": False, "error": "not_authed"})
        queued = self.failures.get(method)
        if queued:
            return web.json_response({"ok": False, "error": queued.pop(0)})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        try:
            result = handler(params)
            if asyncio.iscoroutine(result):
                result = await result
            return web.json_response({"ok": True, **result})
        except _Error as exc:
            return web.json_response({"ok": False, "error": exc.error})

    def _m_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"team_id": self.team, "user_id": self.bot_user, "bot_id": "B1"}

    def _m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        text = p.get("markdown_text") or p.get("text") or ""
        if not text:
            raise _Error("no_text")
        if len(text) > 12000:
            raise _Error("msg_too_long")
        message = Posted(
            p["channel"], self.next_ts(), p.get("thread_ts"), text, blocks=_blocks(p.get("blocks"))
        )
        message.writes.append((time.monotonic(), text))
        self.messages.append(message)
        return {"ts": message.ts, "channel": message.channel}

    def _find(self, p: dict[str, Any]) -> Posted:
        for m in self.messages:
            if m.channel == p.get("channel") and m.ts == p.get("ts") and not m.deleted:
                return m
        raise _Error("message_not_found")

    def _m_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        m = self._find(p)
        text = p.get("markdown_text") or p.get("text") or ""
        m.text = text
        if "blocks" in p:
            m.blocks = _blocks(p["blocks"])
        m.writes.append((time.monotonic(), text))
        return {"ts": m.ts}

    def _m_chat_delete(self, p: dict[str, Any]) -> dict[str, Any]:
        self._find(p).deleted = True
        return {}

    def _append(self, m: Posted, p: dict[str, Any]) -> None:
        text = p.get("markdown_text") or ""
        for chunk in p.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                if len(chunk["text"]) > 12000:
                    raise _Error("msg_too_long")
                text += chunk["text"]
            elif chunk.get("type") == "task_update":
                m.tasks.append(chunk)
        m.text += text
        m.writes.append((time.monotonic(), text))

    def _m_chat_startStream(self, p: dict[str, Any]) -> dict[str, Any]:
        if not p.get("thread_ts"):
            raise _Error("invalid_arguments")
        if not str(p["channel"]).startswith("D") and not (
            p.get("recipient_user_id") and p.get("recipient_team_id")
        ):
            raise _Error("invalid_arguments")
        m = Posted(p["channel"], self.next_ts(), p["thread_ts"], "", kind="stream")
        self.messages.append(m)
        self._append(m, p)
        return {"ts": m.ts, "channel": m.channel}

    def _m_chat_appendStream(self, p: dict[str, Any]) -> dict[str, Any]:
        m = self._find(p)
        if m.stopped:
            raise _Error("message_not_in_streaming_state")
        self._append(m, p)
        return {"ts": m.ts}

    def _m_chat_stopStream(self, p: dict[str, Any]) -> dict[str, Any]:
        m = self._find(p)
        self._append(m, p)
        m.stopped = True
        return {"ts": m.ts}

    def _m_assistant_threads_setStatus(self, p: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _m_assistant_threads_setTitle(self, p: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _m_reactions_add(self, p: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _m_reactions_remove(self, p: dict[str, Any]) -> dict[str, Any]:
        return {}

    # --- app configuration and OAuth -----------------------------------------------------------

    async def _m_apps_manifest_create(self, p: dict[str, Any]) -> dict[str, Any]:
        manifest = json.loads(p["manifest"])
        await self._verify_request_url(manifest)
        app_id = f"A{len(self.apps) + 1:04d}"
        self.apps[app_id] = {"manifest": manifest, "updates": 0}
        return {
            "app_id": app_id,
            "credentials": {
                "client_id": f"cid-{app_id}",
                "client_secret": "csecret",
                "signing_secret": "ssecret",
            },
            "oauth_authorize_url": f"{self.base_url}/oauth/v2/authorize",
        }

    async def _m_apps_manifest_update(self, p: dict[str, Any]) -> dict[str, Any]:
        app = self.apps.get(p.get("app_id", ""))
        if app is None:
            raise _Error("invalid_app_id")
        manifest = json.loads(p["manifest"])
        await self._verify_request_url(manifest)
        app["manifest"] = manifest
        app["updates"] += 1
        return {"app_id": p["app_id"]}

    async def _verify_request_url(self, manifest: dict[str, Any]) -> None:
        url = ((manifest.get("settings") or {}).get("event_subscriptions") or {}).get("request_url")
        if not url:
            return
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, json={"type": "url_verification", "challenge": "chal", "token": "t"}) as response,
        ):
            body = await response.json(content_type=None) if response.status == 200 else {}
        if body.get("challenge") != "chal":
            raise _Error("invalid_manifest")

    def _m_tooling_tokens_rotate(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "token": "xoxe.xoxp-rotated",
            "refresh_token": "xoxe-rotated",
            "exp": int(time.time()) + 43200,
            "team_id": self.team,
        }

    def _m_oauth_v2_access(self, p: dict[str, Any]) -> dict[str, Any]:
        if p.get("grant_type") == "refresh_token":
            return {"access_token": "xoxb-refreshed", "refresh_token": "xoxe-1-new", "expires_in": 43200}
        app_id = self.codes.pop(str(p.get("code")), None)
        if app_id is None:
            raise _Error("invalid_code")
        scopes = ",".join(self.apps[app_id]["manifest"]["oauth_config"]["scopes"]["bot"])
        return {
            "access_token": "xoxb-installed",
            "refresh_token": "xoxe-1-refresh",
            "expires_in": 43200,
            "app_id": app_id,
            "scope": scopes,
            "bot_user_id": self.bot_user,
            "team": {"id": self.team, "name": "Test Team"},
        }

    async def _authorize(self, request: web.Request) -> web.Response:
        client_id = request.query["client_id"]
        app_id = client_id.removeprefix("cid-")
        code = f"code-{len(self.codes) + 1}"
        self.codes[code] = app_id
        target = f"{request.query['redirect_uri']}?code={code}&state={request.query['state']}"
        raise web.HTTPFound(target)

    # --- the Events API sender -----------------------------------------------------------------

    def event(
        self, event: dict[str, Any], *, secret: str, event_id: str | None = None, timestamp: int | None = None
    ) -> tuple[bytes, dict[str, str]]:
        body = json.dumps(
            {
                "token": "deprecated",
                "team_id": self.team,
                "api_app_id": "A1",
                "event": event,
                "type": "event_callback",
                "event_id": event_id or f"Ev{int(time.time() * 1000)}",
                "event_time": int(time.time()),
                "authorizations": [{"team_id": self.team, "user_id": self.bot_user, "is_bot": True}],
            }
        ).encode()
        return body, self.signed_headers(body, secret, timestamp)

    # --- interactivity -------------------------------------------------------------------------

    async def _response_url(self, request: web.Request) -> web.Response:
        """A ``response_url`` of an interaction payload: what the app answered the presser."""
        self.responses.append(await request.json())
        self._changed.set()
        return web.Response(text="ok")

    def interaction(
        self, posted: Posted, action_id: str, *, user: str, secret: str, timestamp: int | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """A ``block_actions`` press on a button of ``posted``, form-encoded and signed as Slack
        posts it to the Interactivity Request URL."""
        button = next(
            e
            for b in posted.blocks or []
            if b.get("type") == "actions"
            for e in b.get("elements", [])
            if e.get("action_id") == action_id
        )
        payload = {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": self.team},
            "api_app_id": "A1",
            "token": "deprecated",
            "container": {"type": "message", "message_ts": posted.ts, "channel_id": posted.channel},
            "trigger_id": f"{int(time.time())}.1.abc",
            "team": {"id": self.team},
            "channel": {"id": posted.channel},
            "message": {"ts": posted.ts, "text": posted.text, "blocks": posted.blocks},
            "response_url": f"{self.base_url}/actions/{posted.ts}",
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "b",
                    "value": button["value"],
                    "action_ts": str(time.time()),
                }
            ],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        headers = self.signed_headers(body, secret, timestamp)
        headers["content-type"] = "application/x-www-form-urlencoded"
        return body, headers

    @staticmethod
    def signed_headers(body: bytes, secret: str, timestamp: int | None = None) -> dict[str, str]:
        ts = str(timestamp if timestamp is not None else int(time.time()))
        return {
            "content-type": "application/json",
            "x-slack-request-timestamp": ts,
            "x-slack-signature": sign_slack_request(secret, ts, body),
        }


def _blocks(value: Any) -> list[dict[str, Any]] | None:
    """Blocks as Slack takes them: a list of objects, or the same as JSON text."""
    if value is None:
        return None
    blocks = json.loads(value) if isinstance(value, str) else value
    if not isinstance(blocks, list) or not all(isinstance(b, dict) and "type" in b for b in blocks):
        raise _Error("invalid_blocks")
    return blocks


class _Error(Exception):
    def __init__(self, error: str) -> None:
        self.error = error


def message(
    text: str,
    *,
    channel: str = "D1",
    user: str = "U1",
    ts: str,
    thread_ts: str | None = None,
    kind: str = "message",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": kind,
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "team": "T1",
    }
    if kind == "message":
        event["channel_type"] = "im" if channel.startswith("D") else "channel"
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event
