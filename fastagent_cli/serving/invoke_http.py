"""``POST /invoke``: the built-in HTTP/SSE entry to an agent.

Request: ``{"session": "s1", "text": "hello"}`` plus optional ``parentSession`` (string) and
``branchHints`` (array of strings), read only when the session is first created, and ``schema``
(a JSON Schema object): the answer is then the validated object, in ``completed.data.output``
(``failed{code: "invalid_output"}`` when none came back, ``invalid_schema`` for a schema that is
not usable).
``images`` (the contract's ``[{mimeType, data}]``, base64) go with the text; the engine fits them
to the providers' limits, and one that is not an image this agent takes is a 400 naming it
(:mod:`~fastagent_cli.control.image_wire`). ``documents`` (PDFs, ``[{mimeType: "application/pdf",
data, name?}]``) likewise (:mod:`~fastagent_cli.control.document_wire`): sent as documents where
the model takes them, as their text otherwise.

Answers (features G7-G12):

* 200 ``text/event-stream``: one ``data: <AgentEvent JSON>`` per event, ``: ping`` comments every
  30 s. A turn on a session that is already busy is still a 200 holding one
  ``failed{code:"session_busy"}``. A client that disconnects cancels the turn.
* 405 ``POST only``; 415 ``Content-Type must be application/json`` (a browser sends a form or
  ``text/plain`` cross-origin without asking, JSON only after a preflight); 413 ``body too
  large`` (over 1 MiB actually received); 400 ``invalid json``; 400 with what the body needs;
  500 ``internal error`` when the agent fails before the stream starts (after it started, the
  stream is cut, never left hanging).
* With a token (see :mod:`~fastagent_cli.serving.invoke_auth`): 401 ``unauthorized`` unless the
  request carries ``Authorization: Bearer <token>``, checked before the body is read.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from fastagent_cli import telemetry
from fastagent_cli.contract import Agent, Prompt, Scope
from fastagent_cli.control.document_wire import parse_documents
from fastagent_cli.control.image_wire import parse_images
from fastagent_cli.serving.body import (
    MAX_BODY_BYTES,
    parse_off_loop,
    read_body_capped,
    read_body_or_413,
    refuse_method,
    text_response,
)
from fastagent_cli.serving.invoke_auth import InvokeToken, is_authorized, unauthorized
from fastagent_cli.serving.router import Handler
from fastagent_cli.serving.sse import KeyedStreams, stream_events

__all__ = [
    "INVOKE_USAGE",
    "create_invoke_handler",
    "parse_invoke_body",
    "read_body_capped",
    "text_response",
]

log = logging.getLogger("fastagent.host")

INVOKE_USAGE = 'need { "session": string, "text": string }\n'
_PARENT_TYPE = '"parentSession" must be a string\n'
_JSON_ONLY = "Content-Type must be application/json\n"
_HINTS_TYPE = '"branchHints" must be an array of strings\n'
SCHEMA_TYPE = '"schema" must be a JSON Schema object\n'


def parse_invoke_body(raw: bytes) -> tuple[Scope, Prompt] | str:
    """The scope and prompt of an ``/invoke`` body, or the 400 message saying what is wrong."""
    try:
        body: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return "invalid json\n"
    if not isinstance(body, dict):
        return INVOKE_USAGE
    session = body.get("session")
    text = body.get("text")
    if not isinstance(session, str) or not isinstance(text, str):
        return INVOKE_USAGE
    parent = body.get("parentSession")
    if parent is not None and not isinstance(parent, str):
        return _PARENT_TYPE
    hints = body.get("branchHints")
    if hints is None:
        hints = []
    if not isinstance(hints, list) or not all(isinstance(h, str) for h in hints):
        return _HINTS_TYPE
    schema = body.get("schema")
    if schema is not None and not isinstance(schema, dict):
        return SCHEMA_TYPE
    images = parse_images(body.get("images"))
    if isinstance(images, str):
        return images + "\n"
    documents = parse_documents(body.get("documents"))
    if isinstance(documents, str):
        return documents + "\n"
    return Scope(session, parent, tuple(hints)), Prompt(text, images, schema, documents)


def create_invoke_handler(
    agent: Agent, token: InvokeToken | None = None, streams: KeyedStreams | None = None
) -> Handler:
    """The ``/invoke`` handler for ``agent`` (mount it as ``"/invoke"``; it answers non-POST with
    405 itself). Works under :func:`~fastagent_cli.serving.host.serve` or any aiohttp server.
    ``token``: require it as a bearer token.

    A turn on a session whose previous stream's client already left first stops that stream and
    waits for it to close (:meth:`~fastagent_cli.serving.sse.KeyedStreams.reclaim`), so a client
    that drops a turn and asks again at once is not answered ``session_busy``. ``streams``: the
    registry shared with the protocol faces (:mod:`~fastagent_cli.serving.faces`), so the reclaim
    works whichever entry the client comes back through."""
    streams = KeyedStreams() if streams is None else streams

    async def invoke(request: web.BaseRequest) -> web.StreamResponse:
        refused = refuse_method(request)
        if refused is not None:
            return refused
        if token is not None and not is_authorized(request, token):
            return unauthorized()
        if request.content_type != "application/json":
            return text_response(_JSON_ONLY, 415)
        raw = await read_body_or_413(request, MAX_BODY_BYTES, "body too large\n")
        if isinstance(raw, web.Response):
            return raw
        parsed = await parse_off_loop(parse_invoke_body, raw)
        if isinstance(parsed, str):
            return text_response(parsed, 400)
        scope, prompt = parsed
        await streams.reclaim(scope.session)
        with telemetry.root_span(
            "POST /invoke",
            trigger="http",
            traceparent=request.headers.get("traceparent"),
            attributes={
                "http.request.method": "POST",
                "url.path": "/invoke",
                "gen_ai.conversation.id": scope.session,
            },
        ):
            try:
                events = agent.invoke(scope, prompt)
            except Exception:
                log.exception("[host] the agent failed to start a turn for session %s", scope.session)
                return text_response("internal error\n", 500)
            with streams.holding(scope.session, request) as stop:
                return await stream_events(request, events, stop=stop)

    return invoke
