"""Structured output on the OpenAI face: ``response_format`` (chat completions) and
``text.format`` (the Responses API) as the contract's ``Prompt.output_schema``.

``{"type": "json_schema", "json_schema": {"name", "schema"}}`` (chat) or ``{"type": "json_schema",
"name", "schema"}`` (responses) asks for an object matching the schema; ``{"type":
"json_object"}`` for any JSON object; ``{"type": "text"}`` for plain text. With a schema the turn's
text deltas are only its attempts (a retried attempt streams again), so the face passes none of
them on: the answer is the validated object, ``completed.data["output"]``, sent as the message
content (one delta when streaming) just before the turn completes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastagent_cli.contract import AgentEvent, Completed, Json, Text
from fastagent_cli.serving.faces.openai.content import RequestError

__all__ = ["output_schema", "typed_answer"]


def output_schema(body: Mapping[str, Any]) -> dict[str, Json] | None:
    """The JSON Schema a request asks the answer to match (``None``: plain text)."""
    responses = isinstance(body.get("text"), dict) and "format" in body["text"]
    fmt = body["text"]["format"] if responses else body.get("response_format")
    param = "text.format" if responses else "response_format"
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or not isinstance(fmt.get("type"), str):
        raise RequestError(f"{param} must be an object with a type", param)
    kind = fmt["type"]
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        raise RequestError(
            f"{param}.type must be text, json_object or json_schema, not {kind!r}",
            f"{param}.type",
            "unsupported_value",
        )
    spec = fmt if responses else fmt.get("json_schema")
    where = param if responses else f"{param}.json_schema"
    if not isinstance(spec, dict):
        raise RequestError(f"{where} must be an object with name and schema", where)
    name, schema = spec.get("name"), spec.get("schema")
    if not isinstance(name, str) or not name:
        raise RequestError(f"{where}.name must be a non-empty string", f"{where}.name")
    if not isinstance(schema, dict):
        raise RequestError(f"{where}.schema must be a JSON Schema object", f"{where}.schema")
    return {**schema, "title": name}


async def typed_answer(events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
    """``events`` with the attempts' text left out and the validated object as the answer text."""
    try:
        async for event in events:
            if isinstance(event, Text):
                continue
            if isinstance(event, Completed) and isinstance(event.data, dict) and "output" in event.data:
                yield Text(json.dumps(event.data["output"], ensure_ascii=False))
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
