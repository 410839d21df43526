"""The TypeScript original 0.18's seven session commands (``POST /control/dispatch``), parsed
from the wire and applied to a :class:`~fastagent_cli.control.protocol.Session`.

==================  =====================================  ==============================
command             body                                   applied as
==================  =====================================  ==============================
``steer``           ``{type, prompt: {text, images?}}``    ``session.steer(prompt)``
``follow_up``       ``{type, prompt: {text, images?}}``    ``session.follow_up(prompt)``
``abort``           ``{type}``                             ``session.abort()``
``compact``         ``{type, instructions?}``              ``session.compact(...)``
``set_model``       ``{type, model}``                      ``update(model=...)``
``set_thinking``    ``{type, level}``                      ``update(thinkingLevel=...)``
``navigate``        ``{type, targetId}``                   ``update(leafEntryId=...)``
==================  =====================================  ==============================

Each answers the same result as its call here (``{ok: true, runId?}`` or ``{ok: false, error}``);
a command that is not one of these, or is missing its field, is ``invalid_command`` "malformed
command", as the original answers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastagent_cli.control.protocol import Session
from fastagent_cli.control.results import INVALID_COMMAND, ActionResult, rejected
from fastagent_cli.control.types import SessionUpdate
from fastagent_cli.control.wire import MALFORMED, Action, parse_action, run_action

__all__ = ["COMMAND_TYPES", "Command", "dispatch_command", "parse_command", "run_command"]

COMMAND_TYPES = ("steer", "follow_up", "abort", "compact", "set_model", "set_thinking", "navigate")
_UPDATES = {
    "set_model": ("model", "model"),
    "set_thinking": ("level", "thinking_level"),
    "navigate": ("targetId", "leaf_entry_id"),
}

Command = Action | SessionUpdate
"""A run action, or the one-field update a boundary command is."""


def parse_command(raw: Any) -> Command | None:
    """The command a dispatch body's ``command`` names, or ``None`` (answered "malformed
    command")."""
    if not isinstance(raw, Mapping):
        return None
    kind = raw.get("type")
    if kind in _UPDATES:
        wire, field = _UPDATES[kind]
        value = raw.get(wire)
        if not isinstance(value, str):
            return None
        return SessionUpdate(**{field: value})
    return parse_action(raw)


async def run_command(session: Session, command: Command) -> ActionResult:
    if isinstance(command, Action):
        return await run_action(session, command)
    return await session.update(command)


async def dispatch_command(session: Session, raw: Any) -> ActionResult:
    """Parse and apply one command (``invalid_command`` when malformed)."""
    command = parse_command(raw)
    if command is None:
        return rejected(INVALID_COMMAND, MALFORMED)
    return await run_command(session, command)
