"""``POST /v1/responses``: a turn as a Responses API ``response``, or its streaming events.

A stream is named SSE events (``event: <type>`` + ``data: {..., "type", "sequence_number"}``):
``response.created``, ``response.in_progress``, then per output item
``response.output_item.added``; for the answer (a ``message`` item)
``response.content_part.added``, ``response.output_text.delta`` ... ``response.output_text.done``,
``response.content_part.done``; for reasoning (a ``reasoning`` item, its ``content`` of
``reasoning_text``) ``response.reasoning_text.delta`` ... ``response.reasoning_text.done``;
``response.output_item.done``; and last ``response.completed`` (the whole response, with usage)
or ``response.failed`` (``status: "failed"`` and ``error: {code, message}``). Reasoning that
comes back after answer text (a tool round in between) opens a new item, so the items stay in the
order the model produced them. The agent's tool calls are its own and are not output items.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from fastagent_cli.contract import AgentEvent, Completed, Failed, Text, Thinking, json_text
from fastagent_cli.serving.faces.openai.chat import json_string
from fastagent_cli.serving.faces.openai.errors import failure_error
from fastagent_cli.serving.faces.openai.turn import responses_usage

__all__ = ["ResponseBuilder", "new_response_id"]


def new_response_id() -> str:
    return f"resp_{uuid.uuid4().hex}"


class ResponseBuilder:
    """Folds a turn's events into a response, saying each step as Responses API events."""

    def __init__(
        self,
        response_id: str,
        model: str,
        *,
        instructions: str | None,
        previous_response_id: str | None,
        store: bool,
        session: str,
    ) -> None:
        self.id = response_id
        self.model = model
        self.created_at = int(time.time())
        self.instructions = instructions
        self.previous_response_id = previous_response_id
        self.store = store
        self.session = session
        self.status = "in_progress"
        self.output: list[dict[str, Any]] = []
        self.usage: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self._open: dict[str, Any] | None = None
        self._parts: list[str] = []
        self._sequence = 0
        self._opened = False

    # --- the response object ------------------------------------------------------------------

    def response(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "error": self.error,
            "incomplete_details": None,
            "instructions": self.instructions,
            "max_output_tokens": None,
            "model": self.model,
            "output": self.output,
            "parallel_tool_calls": False,
            "previous_response_id": self.previous_response_id,
            "reasoning": {"effort": None, "summary": None},
            "store": self.store,
            "temperature": None,
            "text": {"format": {"type": "text"}},
            "tool_choice": "none",
            "tools": [],
            "top_p": None,
            "truncation": "disabled",
            "usage": self.usage,
            "user": None,
            "metadata": {"session": self.session},
        }

    # --- events -------------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\ndata: {json_text(payload)}\n\n"

    def opening(self) -> str:
        snapshot = self.response()
        return self._event("response.created", response=snapshot) + self._event(
            "response.in_progress", response=snapshot
        )

    def _open_item(self, kind: str) -> str:
        out = self._close_item()
        index = len(self.output)
        if kind == "message":
            item: dict[str, Any] = {
                "id": f"msg_{uuid.uuid4().hex}",
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
        else:
            item = {
                "id": f"rs_{uuid.uuid4().hex}",
                "type": "reasoning",
                "summary": [],
                "content": [],
                "status": "in_progress",
            }
        self.output.append(item)
        self._open = item
        self._parts = []
        out += self._event("response.output_item.added", output_index=index, item=dict(item, content=[]))
        if kind == "message":
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            out += self._event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
        return out

    def _close_item(self) -> str:
        item = self._open
        if item is None:
            return ""
        self._open = None
        index = len(self.output) - 1
        text = "".join(self._parts)
        item["status"] = "completed"
        if item["type"] == "message":
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            item["content"] = [part]
            out = self._event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            out += self._event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
        else:
            item["content"] = [{"type": "reasoning_text", "text": text}]
            out = self._event(
                "response.reasoning_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
        return out + self._event("response.output_item.done", output_index=index, item=item)

    def _delta(self, kind: str, delta: str) -> str:
        out = ""
        if self._open is None or self._open["type"] != kind:
            out = self._open_item(kind)
        self._parts.append(delta)
        assert self._open is not None
        # written directly (the same JSON _event writes): nearly every event of a stream is one
        if kind == "message":
            event, extra = "response.output_text.delta", ',"logprobs":[]'
        else:
            event, extra = "response.reasoning_text.delta", ""
        sequence = self._sequence
        self._sequence += 1
        return (
            f'{out}event: {event}\ndata: {{"type":"{event}","sequence_number":{sequence},'
            f'"item_id":"{self._open["id"]}","output_index":{len(self.output) - 1},"content_index":0,'
            f'"delta":{json_string(delta)}{extra}}}\n\n'
        )

    def __call__(self, event: AgentEvent) -> str:
        if not self._opened:
            self._opened = True
            return self.opening() + self(event)
        if isinstance(event, Text):
            return self._delta("message", event.delta)
        if isinstance(event, Thinking):
            return self._delta("reasoning", event.delta)
        if isinstance(event, Completed):
            out = self._close_item()
            if not any(item["type"] == "message" for item in self.output):
                out += self._open_item("message") + self._close_item()  # an empty answer is still one
            self.status = "completed"
            self.usage = responses_usage(event.data)
            return out + self._event("response.completed", response=self.response())
        if isinstance(event, Failed):
            out = self._close_item()
            self.status = "failed"
            _status, body = failure_error(event)
            self.error = {"code": body["error"]["code"], "message": body["error"]["message"]}
            return out + self._event("response.failed", response=self.response())
        return ""
