"""The session hub's values on the wire: every type survives ``to_json`` -> ``from_json`` (what a
remote client relies on), results carry each code's ``retryable``, and the parsers refuse what is
not a call."""

from __future__ import annotations

import json

import pytest

from fastagent_cli.contract import ImageRef, Prompt
from fastagent_cli.control import (
    RETRYABLE,
    ActionResult,
    AgentCommand,
    Capabilities,
    EntryView,
    PendingPrompts,
    SessionEntries,
    SessionEvent,
    SessionListing,
    SessionState,
    SessionUpdate,
    SessionUsage,
    envelope,
    parse_action,
    parse_update,
    rejected,
)


@pytest.mark.parametrize(
    "value",
    [
        Capabilities(model_selection=("a/b",), updatable=("name",), fork=True),
        Capabilities(),
        AgentCommand("triage", "Sort an inbox"),
        AgentCommand("bare"),
        SessionListing("tg:-1/x", 1, 2, 3, "Name", "preview"),
        SessionListing("s", 1, 2, 0),
        SessionState(
            "running",
            "n",
            "run",
            "a/b",
            "low",
            ("off", "low"),
            PendingPrompts(("s",), ("f1", "f2")),
            SessionUsage(1, 2, 3, 4, 0.5, 9, 100),
            "leaf",
        ),
        SessionState(),
        SessionEntries(
            (EntryView("e1", 5, "user", {"text": "hi"}), EntryView("e2", 6, "tool", {}, "e1")), "e2"
        ),
        SessionEntries(),
        ActionResult(True, "run-1"),
        rejected("session_busy", "busy"),
    ],
)
def test_values_round_trip_through_json(value: object) -> None:
    wire = json.loads(json.dumps(value.to_json()))  # type: ignore[attr-defined]
    assert type(value).from_json(wire) == value  # type: ignore[attr-defined]


def test_capabilities_wire_shape() -> None:
    assert Capabilities().to_json() == {
        "steering": True,
        "followUp": True,
        "manualCompaction": False,
        "modelSelection": False,
        "thinkingLevel": False,
        "navigate": False,
        "toolProgress": True,
        "usage": True,
        "updatable": [],
        "fork": False,
        "delete": False,
    }


def test_every_code_has_its_retryable_flag() -> None:
    assert {code for code, flag in RETRYABLE.items() if flag} == {
        "boundary_command_failed",
        "session_busy",
        "sessions_unavailable",
    }
    assert rejected("no_active_run", "x").to_json() == {
        "ok": False,
        "error": {"code": "no_active_run", "message": "x", "retryable": False},
    }


def test_events_and_the_envelope() -> None:
    event = SessionEvent("message_delta", {"channel": "text", "delta": "hé"}, "run-1", 42)
    assert SessionEvent.from_json(json.loads(event.wire())) == event
    line = envelope("a/b", "epoch-1", 7, event)
    assert json.loads(line) == {"sessionId": "a/b", "epoch": "epoch-1", "seq": 7, "event": event.to_json()}
    assert SessionEvent.from_json({"type": "future_kind", "timestamp": 1}).data == {}  # additive vocabulary


def test_parse_action_and_parse_update() -> None:
    image = {"mimeType": "image/png", "data": "iVBO"}
    steer = parse_action({"type": "steer", "prompt": {"text": "x", "images": [image]}, "extra": 1})
    assert steer is not None and steer.prompt == Prompt("x", (ImageRef("image/png", "iVBO"),))
    assert parse_action({"type": "compact"}) is not None
    for bad in (
        None,
        [],
        {"type": "steer"},
        {"type": "steer", "prompt": {"text": "x", "images": [1]}},
        {"type": "compact", "instructions": 1},
        {"type": "jump"},
    ):
        assert parse_action(bad) is None
    assert parse_update({"leafEntryId": "e1"}) == SessionUpdate(leaf_entry_id="e1")
    refused = parse_update({"name": "x", "color": "red"})
    assert isinstance(refused, ActionResult) and refused.code == "unsupported_capability"
    assert "color" in refused.error.message  # type: ignore[union-attr]
    wrong = parse_update({"thinkingLevel": 3})
    assert isinstance(wrong, ActionResult) and wrong.error.message == "thinkingLevel must be a string"  # type: ignore[union-attr]
