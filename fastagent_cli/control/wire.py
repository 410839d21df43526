"""Parsing what crosses the wire into typed calls (parse, don't validate: a remote client may send
any JSON, and nothing it sent reaches the hub unless rebuilt here).

* :func:`parse_action`: the body of ``POST /control/sessions/{id}/actions``
  (:func:`parse_action_or_reason` with what is wrong);
* :func:`parse_update`: the body of ``PATCH /control/sessions/{id}``;
* :func:`prompt_to_json` / :func:`prompt_from_json`: a full :class:`~fastagent_cli.contract.Prompt`
  (text, base64 images and documents);
* :func:`envelope` / :func:`envelopes`: the SSE messages of ``GET /control/sessions/{id}/events``;
* :func:`run_action` / :func:`dispatch`: an action applied to a session (what the HTTP route and
  in-process callers such as a channel's stop command share).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from fastagent_cli.contract import Prompt
from fastagent_cli.control.document_wire import parse_documents
from fastagent_cli.control.events import SessionEvent
from fastagent_cli.control.image_wire import parse_images
from fastagent_cli.control.protocol import Session, SessionControl
from fastagent_cli.control.results import (
    INVALID_COMMAND,
    UNSUPPORTED_CAPABILITY,
    ActionResult,
    rejected,
)
from fastagent_cli.control.types import UPDATE_FIELDS, SessionUpdate

__all__ = [
    "ACTION_TYPES",
    "MALFORMED",
    "Action",
    "dispatch",
    "envelope",
    "envelopes",
    "parse_action",
    "parse_action_or_reason",
    "parse_prompt",
    "parse_update",
    "prompt_from_json",
    "prompt_to_json",
    "run_action",
]

ActionType: TypeAlias = Literal["steer", "follow_up", "abort", "compact"]
ACTION_TYPES: tuple[ActionType, ...] = ("steer", "follow_up", "abort", "compact")
MALFORMED = "malformed command"


@dataclass(frozen=True, slots=True)
class Action:
    """A run action: ``steer`` / ``follow_up`` carry a prompt, ``compact`` optional instructions."""

    type: ActionType
    prompt: Prompt | None = None
    instructions: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.prompt is not None:
            out["prompt"] = prompt_to_json(self.prompt)
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out


def prompt_to_json(prompt: Prompt) -> dict[str, Any]:
    out: dict[str, Any] = {"text": prompt.text}
    if prompt.images:
        out["images"] = [image.to_json() for image in prompt.images]
    if prompt.documents:
        out["documents"] = [document.to_json() for document in prompt.documents]
    return out


def prompt_from_json(raw: Any) -> Prompt | None:
    """A prompt rebuilt from ``{text, images?: [{data, mimeType}], documents?: [{data, mimeType,
    name?}]}``; ``None`` if malformed."""
    prompt = parse_prompt(raw)
    return prompt if isinstance(prompt, Prompt) else None


def parse_prompt(raw: Any, where: str = "prompt") -> Prompt | str:
    """A prompt rebuilt from ``{text, images?, documents?}``, or what is wrong with it (images are
    checked by :func:`~fastagent_cli.control.image_wire.parse_images`, documents by
    :func:`~fastagent_cli.control.document_wire.parse_documents`)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
        return (
            f'"{where}" must be an object {{text: string, images?: [{{mimeType, data}}], '
            "documents?: [{mimeType, data, name?}]}"
        )
    images = parse_images(raw.get("images"), f"{where}.images")
    if isinstance(images, str):
        return images
    documents = parse_documents(raw.get("documents"), f"{where}.documents")
    if isinstance(documents, str):
        return documents
    return Prompt(raw["text"], images, documents=documents)


def parse_action(raw: Any) -> Action | None:
    """The action a body names, or ``None`` (answered ``invalid_command`` "malformed command")."""
    action = parse_action_or_reason(raw)
    return action if isinstance(action, Action) else None


def parse_action_or_reason(raw: Any) -> Action | str:
    """The action a body names, or the ``invalid_command`` message: "malformed command", with what
    is wrong when it is a prompt's image or document."""
    if not isinstance(raw, Mapping):
        return MALFORMED
    kind = raw.get("type")
    if kind in ("steer", "follow_up"):
        prompt = parse_prompt(raw.get("prompt"))
        if isinstance(prompt, str):
            attached = ".images" in prompt or ".documents" in prompt
            return f"{MALFORMED}: {prompt}" if attached else MALFORMED
        return Action(kind, prompt=prompt)
    if kind == "abort":
        return Action("abort")
    if kind == "compact":
        instructions = raw.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            return MALFORMED
        return Action("compact", instructions=instructions)
    return MALFORMED


def parse_update(raw: Any) -> SessionUpdate | ActionResult:
    """The patch a body names, or the refusal to answer: an unknown field is
    ``unsupported_capability`` naming it (a newer client talking to an older serve learns which
    field to drop); a value of the wrong type is ``invalid_command``."""
    if not isinstance(raw, Mapping):
        return rejected(INVALID_COMMAND, "expected an object of session properties")
    unknown = [str(key) for key in raw if key not in UPDATE_FIELDS]
    if unknown:
        return rejected(
            UNSUPPORTED_CAPABILITY,
            f"update field(s) {', '.join(unknown)} — capabilities().updatable lists what this serve sets",
        )
    values: dict[str, str | None] = {}
    for key in UPDATE_FIELDS:
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            return rejected(INVALID_COMMAND, f"{key} must be a string")
        values[key] = value
    return SessionUpdate(values["name"], values["model"], values["thinkingLevel"], values["leafEntryId"])


def envelope(session: str, epoch: str, seq: int, event: SessionEvent) -> str:
    """``{sessionId, epoch, seq, event}`` as compact JSON (the event encoded once, shared)."""
    return envelopes(session, epoch, seq, (event,))[0]


def envelopes(session: str, epoch: str, seq: int, events: Iterable[SessionEvent]) -> list[str]:
    """The envelopes of ``events`` numbered on from ``seq`` (what one write to a watcher sends)."""
    head = f'{{"sessionId":{json.dumps(session, ensure_ascii=False)},"epoch":"{epoch}","seq":'
    return [f'{head}{seq + i},"event":{event.wire()}}}' for i, event in enumerate(events)]


async def run_action(session: Session, action: Action) -> ActionResult:
    """Call the :class:`Session` method an action names."""
    if action.type == "steer":
        assert action.prompt is not None
        return await session.steer(action.prompt)
    if action.type == "follow_up":
        assert action.prompt is not None
        return await session.follow_up(action.prompt)
    if action.type == "abort":
        return await session.abort()
    return await session.compact(action.instructions)


async def dispatch(control: SessionControl, session: str, command: Any) -> dict[str, Any]:
    """The ``/actions`` wire shape in process: ``await dispatch(control, "s1", {"type": "abort"})``
    answers ``{"ok": true, "runId": ...}`` or ``{"ok": false, "error": {...}}``."""
    action = parse_action_or_reason(command)
    if isinstance(action, str):
        return rejected(INVALID_COMMAND, action).to_json()
    return (await run_action(control.sessions.get(session), action)).to_json()
