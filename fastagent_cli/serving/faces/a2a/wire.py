"""The A2A JSON shapes, in the two revisions clients speak.

* **1.0** (what ``a2a-sdk`` 1.x sends): methods ``SendMessage``, ``SendStreamingMessage``,
  ``GetTask``, ``CancelTask``; the protobuf JSON mapping (``TASK_STATE_COMPLETED``,
  ``ROLE_AGENT``, parts ``{"text": ...}``, a send answered ``{"task": {...}}``, stream items
  ``{"statusUpdate": ...}`` / ``{"artifactUpdate": ...}``).
* **0.3** (the method names of the JSON-RPC binding before 1.0, still spoken by many clients):
  ``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``; objects tagged with
  ``kind``, lower-case states (``completed``), parts ``{"kind": "text", "text": ...}``, a send
  answered with the task itself, ``final`` on the last status update.

The revision is chosen by the method name, so one endpoint serves both.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from fastagent_cli.serving.faces.a2a.tasks import Status, TaskRecord

__all__ = ["DIALECTS", "Dialect", "IncomingMessage", "MessageError", "parse_message"]

Json = dict[str, Any]


class MessageError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    message_id: str
    text: str
    context_id: str | None
    task_id: str | None


def parse_message(params: Any) -> IncomingMessage:
    """The user message of a send's ``params`` (either revision); MessageError if unusable."""
    message = params.get("message") if isinstance(params, dict) else None
    if not isinstance(message, dict):
        raise MessageError(-32602, 'Invalid params: "message" must be an object')
    message_id = message.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        raise MessageError(-32602, 'Invalid params: "message.messageId" must be a non-empty string')
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise MessageError(-32602, 'Invalid params: "message.parts" must be a non-empty array')
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            raise MessageError(-32602, "Invalid params: each part must be an object")
        text = part.get("text")
        if not isinstance(text, str):
            kind = part.get("kind") or next(
                (k for k in ("raw", "url", "data", "file") if k in part), "unknown"
            )
            raise MessageError(-32005, f"Content type not supported: {kind} parts (this agent takes text)")
        texts.append(text)
    text = "\n".join(texts)
    if not text.strip():
        raise MessageError(-32602, "Invalid params: the message has no text")
    context_id = _optional_id(message, "contextId")
    task_id = _optional_id(message, "taskId")
    return IncomingMessage(message_id, text, context_id, task_id)


def _optional_id(message: Json, key: str) -> str | None:
    value = message.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MessageError(-32602, f'Invalid params: "message.{key}" must be a string')
    return value


def _timestamp(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Dialect:
    """The 1.0 shapes (:class:`Legacy` overrides what 0.3 spells differently)."""

    version = "1.0"

    def state(self, state: str) -> str:
        return f"TASK_STATE_{state.upper().replace('-', '_')}"

    def role(self, role: str) -> str:
        return f"ROLE_{role.upper()}"

    def part(self, text: str) -> Json:
        return {"text": text}

    def tag(self, obj: Json, kind: str) -> Json:
        return obj

    def message(self, record: TaskRecord, role: str, text: str, message_id: str) -> Json:
        body = {
            "messageId": message_id,
            "contextId": record.context_id,
            "taskId": record.id,
            "role": self.role(role),
            "parts": [self.part(text)],
        }
        return self.tag(body, "message")

    def status(self, record: TaskRecord, status: Status | None = None) -> Json:
        current = status or record.status
        body: Json = {"state": self.state(current.state), "timestamp": _timestamp(current.at)}
        if current.note:
            body["message"] = self.message(record, "agent", current.note, f"{record.id}-status")
        return body

    def artifact(self, record: TaskRecord, text: str) -> Json:
        return {"artifactId": f"{record.id}-answer", "name": "answer", "parts": [self.part(text)]}

    def task(self, record: TaskRecord, history_length: int | None = None) -> Json:
        history = [self.message(record, "user", record.text, record.message_id)]
        if record.state == "completed":
            history.append(self.message(record, "agent", record.answer, f"{record.id}-reply"))
        if history_length is not None:
            history = history[len(history) - history_length :] if history_length > 0 else []
        body: Json = {"id": record.id, "contextId": record.context_id, "status": self.status(record)}
        if record.answer:
            body["artifacts"] = [self.artifact(record, record.answer)]
        if history:
            body["history"] = history
        return self.tag(body, "task")

    def send_result(self, record: TaskRecord) -> Json:
        return {"task": self.task(record)}

    def stream_task(self, record: TaskRecord) -> Json:
        return {"task": self.task(record)}

    def status_update(self, record: TaskRecord, status: Status) -> Json:
        update = {"taskId": record.id, "contextId": record.context_id, "status": self.status(record, status)}
        return {"statusUpdate": update}

    def artifact_update(self, record: TaskRecord, delta: str, *, append: bool, last: bool) -> Json:
        update = {
            "taskId": record.id,
            "contextId": record.context_id,
            "artifact": self.artifact(record, delta),
            "append": append,
            "lastChunk": last,
        }
        return {"artifactUpdate": update}


class Legacy(Dialect):
    version = "0.3"

    def state(self, state: str) -> str:
        return state

    def role(self, role: str) -> str:
        return role

    def part(self, text: str) -> Json:
        return {"kind": "text", "text": text}

    def tag(self, obj: Json, kind: str) -> Json:
        return {"kind": kind, **obj}

    def send_result(self, record: TaskRecord) -> Json:
        return self.task(record)

    def stream_task(self, record: TaskRecord) -> Json:
        return self.task(record)

    def status_update(self, record: TaskRecord, status: Status) -> Json:
        update = {
            "taskId": record.id,
            "contextId": record.context_id,
            "status": self.status(record, status),
            "final": status.terminal,
        }
        return self.tag(update, "status-update")

    def artifact_update(self, record: TaskRecord, delta: str, *, append: bool, last: bool) -> Json:
        update = {
            "taskId": record.id,
            "contextId": record.context_id,
            "artifact": self.artifact(record, delta),
            "append": append,
            "lastChunk": last,
        }
        return self.tag(update, "artifact-update")


_V1 = Dialect()
_V03 = Legacy()

DIALECTS: dict[str, tuple[str, Dialect]] = {
    "SendMessage": ("send", _V1),
    "SendStreamingMessage": ("stream", _V1),
    "GetTask": ("get", _V1),
    "CancelTask": ("cancel", _V1),
    "message/send": ("send", _V03),
    "message/stream": ("stream", _V03),
    "tasks/get": ("get", _V03),
    "tasks/cancel": ("cancel", _V03),
}
"""JSON-RPC method -> (operation, the revision its answer is spelled in)."""
