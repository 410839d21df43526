"""``fastagent chat --json``: a conversation driven by stdin lines, every event one JSON line out.

asyncai's orchestrator loop, for scripts and other programs. Each non-empty stdin line is a user
message *as it arrives* (a line is never held back until the previous answer is done): on an
idle session it starts a run; lines that arrive during a run join it and cause exactly one
follow-up turn together, after the answer they arrived during. Stdout carries NDJSON:

* ``{"type": "session", "session": "<id>"}`` first;
* ``{"type": "user_message", "text": ...}`` when a line enters the conversation (several in a row
  are the lines one follow-up turn answers);
* every event of the runs exactly as ``fastagent invoke --json`` prints them (``text``,
  ``thinking``, ``tool_started``, ``tool_ended``, ``retrying``; each run ends with one
  ``completed`` or ``failed``).

At end of input the running turn is awaited; the exit status is 1 if any run failed, else 0.
Stderr carries only the startup line and problems. Lines are taken verbatim (no slash commands).
"""

from __future__ import annotations

import asyncio
import io
import threading
import uuid
from collections.abc import Mapping
from typing import Any, TextIO

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.chat.plain import read_lines
from fastagent_cli.contract import AgentEvent, Failed, Prompt, event_to_wire, json_text

__all__ = ["run_json"]


class _Lines:
    """The :class:`~fastagent_cli.control.InboxSink` writing NDJSON to stdout."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.failed = False

    def write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def on_input(self, session: str, kind: str, data: Mapping[str, Any]) -> None:
        record = {"type": kind, **{k: v for k, v in data.items() if k != "entryId"}}
        self.write(json_text(record))

    def on_event(self, session: str, event: AgentEvent) -> None:
        if isinstance(event, Failed):
            self.failed = True
        self.write(event_to_wire(event))

    def on_reply(self, session: str, text: str) -> None:
        return None  # the answer streamed as text events already


async def run_json(
    opened: OpenedAgent, session: str | None, stdin: TextIO, stdout: TextIO, stderr: TextIO
) -> int:
    """Serve stdin lines to ``session`` (a new one when ``None``) until end of input."""
    if isinstance(stdout, io.TextIOWrapper):
        stdout.reconfigure(errors="backslashreplace")
    session = session or str(uuid.uuid4())
    sink = _Lines(stdout)
    inbox = opened.inbox(sink)
    stderr.write(f"[chat] {opened.agent_dir} · {opened.model_spec} · session {session} (NDJSON on stdout)\n")
    stderr.flush()
    sink.write(json_text({"type": "session", "session": session}))
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    # A daemon thread: a blocked read never holds up the exit (an executor thread would).
    reader = threading.Thread(target=read_lines, args=(stdin, asyncio.get_running_loop(), queue), daemon=True)
    reader.start()
    try:
        while (line := await queue.get()) is not None:
            text = line.rstrip("\r\n")
            if text.strip():
                inbox.post(session, Prompt(text))
        await inbox.drain()
    finally:
        await inbox.aclose()
    return 1 if sink.failed else 0
