"""Fake authorization servers and subscription model endpoints on 127.0.0.1, in a background thread
(so ``fastagent`` subprocesses and sync tests can use them), speaking the providers' wire formats.

Mounts (point fastagent at them with :meth:`OAuthServer.env` and :meth:`OAuthServer.models_json`):

* ``/anthropic``: ``GET /oauth/authorize`` (answers the page text ``<code>#<state>``, as the real
  callback page shows it) and ``POST /v1/oauth/token`` (JSON body);
* ``/openai``: ``GET /oauth/authorize`` (302 to the ``redirect_uri`` with ``code`` and ``state``)
  and ``POST /oauth/token`` (form body; access tokens are JWTs naming account ``acct-fake``);
* ``/github``: ``POST /login/device/code``, ``POST /login/oauth/access_token`` (pending until
  :meth:`approve_device`), ``GET /copilot_internal/v2/token``;
* model endpoints checking the bearer token: ``/anthropic-api/v1/messages``,
  ``/chatgpt/backend-api/codex/responses``, ``/copilot/chat/completions`` and
  ``/copilot/models/<id>/policy``.

Authorization codes are checked against the PKCE challenge of their authorize call. Refresh tokens
are single-use: a spent or revoked one gets ``400 invalid_grant``. ``refresh_delay`` holds every
refresh answer back, so concurrent refreshes really overlap. Access tokens are valid once issued
(or added with :meth:`grant`); model endpoints answer 401 to any other.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import threading
import time
from collections import Counter
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from .responses_builders import as_sse, responses_reply
from .threaded_app import ThreadedApp
from .tokens import codex_jwt, copilot_token

__all__ = ["ANSWER", "OAuthServer"]

ANSWER = "hello from your subscription"


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class OAuthServer(ThreadedApp):
    def __init__(self, *, access_lifetime_s: int = 3600) -> None:
        super().__init__("oauth-server")
        self.access_lifetime_s = access_lifetime_s
        self.refresh_delay = 0.0
        self.token_status: int | None = None
        """When set, every token endpoint answers with this status (e.g. 500)."""
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.refreshes: Counter[str] = Counter()
        self.valid_access: set[str] = set()
        self.valid_refresh: dict[str, str] = {}
        """refresh token -> provider"""
        self.model_tokens: list[str] = []
        """The bearer token of every model request, in order."""
        self.device_answers: list[dict[str, Any]] = []
        """Answers the device-token endpoint gives first (``slow_down``, ``access_denied``...)."""
        self.device_interval: float = 1
        self._codes: dict[str, tuple[str, str]] = {}
        self._device_approved = threading.Event()
        self._counter = itertools.count(1)

    def env(self) -> dict[str, str]:
        """The variables that point fastagent's logins here."""
        return {
            "FASTAGENT_ANTHROPIC_OAUTH_URL": f"{self.origin}/anthropic",
            "FASTAGENT_OPENAI_CODEX_OAUTH_URL": f"{self.origin}/openai",
            "FASTAGENT_OPENAI_CODEX_CALLBACK_PORT": "0",
            "FASTAGENT_GITHUB_COPILOT_OAUTH_URL": f"{self.origin}/github",
        }

    def models_json(self) -> dict[str, Any]:
        """A ``models.json`` that points the three subscription providers' models here."""
        return {
            "providers": {
                "anthropic": {"baseUrl": f"{self.origin}/anthropic-api"},
                "openai-codex": {"baseUrl": f"{self.origin}/chatgpt/backend-api"},
                "github-copilot": {"baseUrl": f"{self.origin}/copilot"},
            }
        }

    # -- scripting
    def grant(self, provider: str, *, access: str, refresh: str) -> None:
        self.valid_access.add(access)
        self.valid_refresh[refresh] = provider

    def revoke(self, refresh: str) -> None:
        self.valid_refresh.pop(refresh, None)

    def approve_device(self) -> None:
        self._device_approved.set()

    def paths(self, method: str | None = None) -> list[str]:
        return [path for m, path, _, _ in self.requests if method is None or m == method]

    # -- serving
    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        add = app.router
        add.add_get("/anthropic/oauth/authorize", self._anthropic_authorize)
        add.add_post("/anthropic/v1/oauth/token", self._anthropic_token)
        add.add_get("/openai/oauth/authorize", self._openai_authorize)
        add.add_post("/openai/oauth/token", self._openai_token)
        add.add_post("/github/login/device/code", self._device_code)
        add.add_post("/github/login/oauth/access_token", self._device_token)
        add.add_get("/github/copilot_internal/v2/token", self._copilot_token)
        add.add_post("/anthropic-api/v1/messages", self._messages)
        add.add_post("/chatgpt/backend-api/codex/responses", self._codex)
        add.add_post("/copilot/chat/completions", self._chat)
        add.add_post("/copilot/models/{model}/policy", self._policy)
        return app

    @staticmethod
    async def _body(request: web.Request) -> Any:
        raw = await request.read()  # cached by aiohttp: every handler may read it again
        if request.content_type == "application/x-www-form-urlencoded":
            return dict(await request.post())
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append((request.method, request.path, headers, await self._body(request)))
        response: web.StreamResponse = await handler(request)
        return response

    def _issue(self, provider: str) -> dict[str, Any]:
        n = next(self._counter)
        if provider == "anthropic":
            access, refresh = f"sk-ant-oat01-fake-{n}", f"sk-ant-ort01-fake-{n}"
        else:
            access, refresh = codex_jwt("acct-fake", marker=str(n)), f"rt-fake-{n}"
        self.grant(provider, access=access, refresh=refresh)
        return {"access_token": access, "refresh_token": refresh, "expires_in": self.access_lifetime_s}

    def _authorize(self, request: web.Request, redirect: str) -> tuple[str, str]:
        query = request.query
        assert query["response_type"] == "code" and query["code_challenge_method"] == "S256", query
        assert query["redirect_uri"] == redirect or redirect == "*", query
        code = f"code-{next(self._counter)}"
        self._codes[code] = (query["code_challenge"], query["redirect_uri"])
        return code, query["state"]

    async def _anthropic_authorize(self, request: web.Request) -> web.Response:
        assert request.query["code"] == "true" and "user:inference" in request.query["scope"]
        code, state = self._authorize(request, "https://platform.claude.com/oauth/code/callback")
        return web.Response(text=f"{code}#{state}")

    async def _openai_authorize(self, request: web.Request) -> web.Response:
        assert (
            "offline_access" in request.query["scope"]
            and request.query["codex_cli_simplified_flow"] == "true"
        )
        code, state = self._authorize(request, "*")
        location = request.query["redirect_uri"] + "?" + urlencode({"code": code, "state": state})
        raise web.HTTPFound(location)

    async def _token(self, provider: str, body: dict[str, Any]) -> web.Response:
        if self.token_status is not None:
            return web.json_response({"error": "server_error"}, status=self.token_status)
        if body.get("grant_type") == "authorization_code":
            challenge, redirect = self._codes.pop(str(body.get("code")), ("", ""))
            if not challenge or _s256(str(body.get("code_verifier"))) != challenge:
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "bad code"}, status=400
                )
            if body.get("redirect_uri") != redirect:
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "redirect_uri"}, status=400
                )
            return web.json_response(self._issue(provider))
        if body.get("grant_type") == "refresh_token":
            self.refreshes[provider] += 1
            await asyncio.sleep(self.refresh_delay)
            token = str(body.get("refresh_token"))
            if self.valid_refresh.pop(token, None) != provider:
                detail = "Refresh token has already been used or was revoked"
                return web.json_response({"error": "invalid_grant", "error_description": detail}, status=400)
            return web.json_response(self._issue(provider))
        return web.json_response({"error": "unsupported_grant_type"}, status=400)

    async def _anthropic_token(self, request: web.Request) -> web.Response:
        return await self._token("anthropic", await self._body(request) or {})

    async def _openai_token(self, request: web.Request) -> web.Response:
        return await self._token("openai-codex", await self._body(request) or {})

    async def _device_code(self, request: web.Request) -> web.Response:
        assert (await self._body(request))["client_id"] == "Iv1.b507a08c87ecfe98"
        device = {
            "device_code": "dev-1",
            "user_code": "ABCD-1234",
            "expires_in": 900,
            "interval": self.device_interval,
        }
        return web.json_response({**device, "verification_uri": f"{self.origin}/github/login/device"})

    async def _device_token(self, request: web.Request) -> web.Response:
        if self.device_answers:
            return web.json_response(self.device_answers.pop(0))
        if not self._device_approved.is_set():
            return web.json_response({"error": "authorization_pending"})
        token = f"gho_fake{next(self._counter)}"
        self.valid_refresh[token] = "github"
        return web.json_response({"access_token": token, "token_type": "bearer", "scope": "read:user"})

    async def _copilot_token(self, request: web.Request) -> web.Response:
        github = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.valid_refresh.get(github) != "github":
            return web.json_response({"message": "Bad credentials"}, status=401)
        self.refreshes["github-copilot"] += 1
        token = copilot_token("proxy.individual.githubcopilot.com", marker=str(next(self._counter)))
        self.valid_access.add(token)
        return web.json_response({"token": token, "expires_at": int(time.time()) + self.access_lifetime_s})

    def _bearer(self, request: web.Request) -> str | None:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.model_tokens.append(token)
        return token if token in self.valid_access else None

    async def _messages(self, request: web.Request) -> web.Response:
        if self._bearer(request) is None:
            return web.json_response({"type": "error", "error": {"type": "authentication_error"}}, status=401)
        assert (await self._body(request))["system"][0]["text"].startswith("You are Claude Code")
        events = [
            {"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ANSWER}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}},
            {"type": "message_stop"},
        ]
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return web.Response(text=body, content_type="text/event-stream")

    async def _codex(self, request: web.Request) -> web.Response:
        if self._bearer(request) is None or request.headers.get("chatgpt-account-id") != "acct-fake":
            return web.json_response(
                {"error": {"message": "Unauthorized", "code": "token_expired"}}, status=401
            )
        return web.Response(text=as_sse(responses_reply(ANSWER)), content_type="text/event-stream")

    async def _chat(self, request: web.Request) -> web.Response:
        if self._bearer(request) is None:
            return web.json_response({"error": {"message": "unauthorized: token expired"}}, status=401)
        assert (
            request.headers["Copilot-Integration-Id"] == "vscode-chat"
            and request.headers["X-Initiator"] == "user"
        )
        chunks = [
            {"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return web.Response(text=body, content_type="text/event-stream")

    async def _policy(self, request: web.Request) -> web.Response:
        if self._bearer(request) is None:
            return web.json_response({"message": "unauthorized"}, status=401)
        return web.json_response({"state": "enabled"})
