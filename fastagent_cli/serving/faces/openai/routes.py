"""The ``/v1`` mount: routing, the request preamble and the two turn endpoints.

Preamble of every request, in order (each answered in OpenAI's error JSON): the bearer token when
one is set (401 ``invalid_api_key``, before the body is read), the path and method (404
``unknown_url``, 405), ``Content-Type: application/json`` (415: a browser cannot send it across
origins without asking first), the one body cap (413, the connection closed after it), JSON
(400), the fields (400 naming the field), the model id (404 ``model_not_found``: the agent's name,
as ``GET /v1/models`` lists it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from fastagent_cli import telemetry
from fastagent_cli.contract import AgentEvent, Completed, Failed, Json, closing, json_text
from fastagent_cli.errors import FastagentError
from fastagent_cli.serving.body import read_body_capped
from fastagent_cli.serving.faces import FaceContext
from fastagent_cli.serving.faces.openai.chat import ChunkEncoder, collect_completion
from fastagent_cli.serving.faces.openai.content import RequestError
from fastagent_cli.serving.faces.openai.conversation import (
    ONE_OFF_PREFIX,
    RESPONSE_PREFIX,
    Planned,
    ResponseIndex,
    continue_response,
    plan_turn,
)
from fastagent_cli.serving.faces.openai.errors import error_response, failure_response, not_found
from fastagent_cli.serving.faces.openai.requests import parse_chat, parse_responses
from fastagent_cli.serving.faces.openai.responses import ResponseBuilder, new_response_id
from fastagent_cli.serving.faces.openai.structured import typed_answer
from fastagent_cli.serving.faces.openai.turn import start_turn
from fastagent_cli.serving.invoke_auth import is_authorized
from fastagent_cli.serving.router import path_of
from fastagent_cli.serving.sse import stream_events

__all__ = ["PREFIX", "OpenAIFace"]

log = logging.getLogger("fastagent.host")

PREFIX = "/v1"
_DISCARD_TRIES = 50


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(text=json_text(body), status=status, content_type="application/json")


class OpenAIFace:
    """The handlers of one served agent's ``/v1``."""

    def __init__(self, ctx: FaceContext) -> None:
        self.ctx = ctx
        self.model = ctx.opened.name
        self.created = int(time.time())
        self.sessions = ctx.opened.sessions
        self.index = ResponseIndex(ctx.opened.state_root.resolve() / "openai" / "responses.jsonl")
        self._cleanup: set[asyncio.Task[None]] = set()

    # --- dispatch -----------------------------------------------------------------------------

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        token = self.ctx.token
        if token is not None and not is_authorized(request, token):
            refused = error_response(401, "Incorrect API key provided.", code="invalid_api_key")
            refused.headers["WWW-Authenticate"] = 'Bearer realm="fastagent"'
            return refused
        path = path_of(request)
        method = request.method
        if path == f"{PREFIX}/models":
            return self._method(request, "GET") or self.models()
        if path.startswith(f"{PREFIX}/models/"):
            return self._method(request, "GET") or self.model_info(unquote(path[len(PREFIX) + 8 :]))
        if path == f"{PREFIX}/chat/completions":
            return self._method(request, "POST") or await self._turn(request, self.chat)
        if path == f"{PREFIX}/responses":
            return self._method(request, "POST") or await self._turn(request, self.responses)
        return not_found(method, path)

    @staticmethod
    def _method(request: web.BaseRequest, allowed: str) -> web.Response | None:
        if request.method == allowed or (allowed == "GET" and request.method == "HEAD"):
            return None
        refused = error_response(
            405, f"{request.method} is not allowed here: use {allowed}", code="method_not_allowed"
        )
        refused.headers["Allow"] = allowed
        return refused

    # --- models -------------------------------------------------------------------------------

    def _model_object(self) -> dict[str, Any]:
        return {"id": self.model, "object": "model", "created": self.created, "owned_by": "fastagent"}

    def models(self) -> web.Response:
        return _json({"object": "list", "data": [self._model_object()]})

    def model_info(self, name: str) -> web.Response:
        if name != self.model:
            return self._unknown_model(name)
        return _json(self._model_object())

    def _unknown_model(self, name: str) -> web.Response:
        return error_response(
            404,
            f"The model `{name}` does not exist or you do not have access to it "
            f'(this server serves "{self.model}").',
            param="model",
            code="model_not_found",
        )

    # --- turns --------------------------------------------------------------------------------

    async def _turn(self, request: web.BaseRequest, answer: Any) -> web.StreamResponse:
        if request.content_type != "application/json":
            return error_response(415, "Content-Type must be application/json", code="unsupported_media_type")
        raw = await read_body_capped(request, self.ctx.max_body)
        if raw is None:
            refused = error_response(
                413, f"the request body is over {self.ctx.max_body} bytes", code="request_too_large"
            )
            refused.force_close()
            return refused
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            return error_response(
                400, "We could not parse the JSON body of your request: it must be a JSON object."
            )
        try:
            with telemetry.root_span(
                f"POST {request.path}",
                trigger="openai",
                traceparent=request.headers.get("traceparent"),
                attributes={"http.request.method": "POST", "url.path": request.path},
            ):
                response: web.StreamResponse = await answer(request, body)
            return response
        except RequestError as exc:
            return error_response(400, exc.message, param=exc.param, code=exc.code)
        except FastagentError as exc:  # the session store refused the seed or the fork
            log.warning("[host] /v1 could not prepare the session: %s", exc.message)
            return error_response(500, exc.message, "server_error", None, "session_store_error")

    async def chat(self, request: web.BaseRequest, body: dict[str, Any]) -> web.StreamResponse:
        parsed = parse_chat(body, request.headers)
        if parsed.model != self.model:
            return self._unknown_model(parsed.model)
        planned = await plan_turn(
            self.sessions, parsed.session, parsed.system, parsed.turns, prefix=ONE_OFF_PREFIX, keep=False
        )
        try:
            events = await self._start(planned, parsed.schema)
            if isinstance(events, web.Response):
                return events
            if not parsed.stream:
                return await collect_completion(self.model, events)
            encoder = ChunkEncoder(self.model, parsed.include_usage)
            with self.ctx.streams.holding(planned.scope.session, request) as stop:
                return await stream_events(request, events, encode=encoder, framed=True, stop=stop)
        finally:
            if planned.one_off:
                self._discard_later(planned.scope.session)

    async def responses(self, request: web.BaseRequest, body: dict[str, Any]) -> web.StreamResponse:
        parsed = parse_responses(body, request.headers)
        if parsed.model != self.model:
            return self._unknown_model(parsed.model)
        if parsed.session is None and parsed.previous_response_id is not None:
            planned = await continue_response(
                self.sessions, self.index, parsed.previous_response_id, parsed.system, parsed.turns
            )
        else:
            planned = await plan_turn(
                self.sessions,
                parsed.session,
                parsed.system,
                parsed.turns,
                prefix=RESPONSE_PREFIX,
                keep=parsed.store,
            )
        builder = ResponseBuilder(
            new_response_id(),
            self.model,
            instructions=body.get("instructions") if isinstance(body.get("instructions"), str) else None,
            previous_response_id=parsed.previous_response_id,
            store=parsed.store,
            session=planned.scope.session,
        )
        try:
            started = await self._start(planned, parsed.schema)
            if isinstance(started, web.Response):
                return started
            events = self._recorded(started, builder.id, planned)
            if not parsed.stream:
                async with closing(events) as folded:
                    async for event in folded:
                        builder(event)
                        if isinstance(event, Failed):
                            return failure_response(event)
                return _json(builder.response())
            with self.ctx.streams.holding(planned.scope.session, request) as stop:
                return await stream_events(request, events, encode=builder, framed=True, stop=stop)
        finally:
            if planned.one_off:
                self._discard_later(planned.scope.session)

    async def _start(
        self, planned: Planned, schema: dict[str, Json] | None
    ) -> AsyncIterator[AgentEvent] | web.Response:
        await self.ctx.streams.reclaim(planned.scope.session)
        if schema is None:
            return await start_turn(self.ctx.agent, planned.scope, planned.prompt)
        prompt = dataclasses.replace(planned.prompt, output_schema=schema)
        started = await start_turn(self.ctx.agent, planned.scope, prompt)
        return started if isinstance(started, web.Response) else typed_answer(started)

    async def _recorded(
        self, events: AsyncIterator[AgentEvent], response_id: str, planned: Planned
    ) -> AsyncIterator[AgentEvent]:
        """``events``, the response's session position recorded before ``completed`` is passed on
        (a client that continues at once finds it)."""
        try:
            async for event in events:
                if isinstance(event, Completed) and not planned.one_off:
                    await self._remember(response_id, planned.scope.session)
                yield event
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _remember(self, response_id: str, session: str) -> None:
        try:
            view = await self.sessions.read(session)
            await self.index.record(response_id, session, view.leaf_id if view is not None else None)
        except (OSError, FastagentError) as exc:  # the answer stands; only its id cannot be continued
            reason = exc.message if isinstance(exc, FastagentError) else f"{type(exc).__name__}: {exc}"
            log.warning("[host] could not record response %s of session %s: %s", response_id, session, reason)

    # --- one-off sessions ---------------------------------------------------------------------

    def _discard_later(self, session: str) -> None:
        task = asyncio.ensure_future(self._discard(session))
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup.discard)

    async def _discard(self, session: str) -> None:
        """Delete a one-off session once its turn let go of it (an aborted turn takes a moment)."""
        for _ in range(_DISCARD_TRIES):
            result = await self.sessions.discard(session)
            if result.ok or (result.error is not None and result.error.code == "no_such_session"):
                return
            await asyncio.sleep(0.1)
        log.warning("[host] could not delete the one-off session %s (still busy)", session)

    async def aclose(self) -> None:
        if self._cleanup:
            await asyncio.wait(set(self._cleanup), timeout=5)
