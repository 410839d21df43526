"""A fake provider that checks API keys, on 127.0.0.1 in a background thread (so subprocesses and
sync tests can use it as well as async ones).

* ``GET /v1/models`` (OpenAI shape, ``Authorization: Bearer``; base URL :attr:`openai_base`) and
  ``GET /anthropic/v1/models`` (Anthropic shape, ``x-api-key``; base URL :attr:`anthropic_base`);
* a key in ``good`` gets 200 and a model list; ``sk-close`` gets the connection closed without an
  answer; ``sk-quota`` a 429 with a provider message; ``sk-forbidden`` a 403; ``sk-down`` a 503;
  any other key a 401;
* ``POST /v1/chat/completions`` streams a short answer (:data:`ANSWER`) for end-to-end runs.

Every request is recorded as ``(method, path, lower-cased headers)``.
"""

from __future__ import annotations

import json

from aiohttp import web

from tests.fakes.threaded_app import ThreadedApp

__all__ = ["ANSWER", "KeyServer"]

ANSWER = "hello from the fake"


class KeyServer(ThreadedApp):
    def __init__(self, good: tuple[str, ...] = ("sk-good",)) -> None:
        super().__init__("key-server")
        self.good = set(good)
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    @property
    def openai_base(self) -> str:
        return f"{self.origin}/v1"

    @property
    def anthropic_base(self) -> str:
        return f"{self.origin}/anthropic"

    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/anthropic/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        return app

    def _key(self, request: web.Request) -> str:
        self.requests.append(
            (request.method, request.path, {k.lower(): v for k, v in request.headers.items()})
        )
        auth = request.headers.get("Authorization", "")
        return auth.removeprefix("Bearer ") if auth else request.headers.get("x-api-key", "")

    async def _models(self, request: web.Request) -> web.StreamResponse:
        key = self._key(request)
        if key in self.good:
            return web.json_response({"object": "list", "data": [{"id": "fake-model"}]})
        if key == "sk-close":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if key == "sk-quota":
            return web.json_response(
                {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}},
                status=429,
            )
        if key == "sk-forbidden":
            return web.json_response({"error": {"message": "This key is not allowed here"}}, status=403)
        if key == "sk-down":
            return web.json_response({"error": {"message": "upstream is down"}}, status=503)
        return web.json_response(
            {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}, status=401
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if self._key(request) not in self.good:
            return web.json_response({"error": {"message": "Incorrect API key provided"}}, status=401)
        chunks = [
            {"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return web.Response(body=body.encode(), content_type="text/event-stream")
