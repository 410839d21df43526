"""What chat and ``attach`` show of a session: its durable entries and its live events, each thing
once. :meth:`Transcript.feed` is the one place a live session event becomes lines on the screen
(chat's own runs and attach's alike); :meth:`Transcript.show_entries` the one for the record.

Two sources describe the same conversation: ``entries(since=...)`` (durable, after the fact) and
``events()`` (live, as it happens). A subscription opens before the entries are read, so the two
overlap, and a reconnect leaves a gap that only the entries can fill. The transcript shows each
entry exactly once by its id:

* every entry read from ``entries()`` is *accounted for* (its id kept, the last one is the cursor
  for the next read), and the ones on the active path are shown;
* a live ``user_message`` or ``message_finished`` names its ``entryId``: one already accounted for
  is not shown again; tool calls are matched by their call id;
* a tool call is known by its call id under the assistant entry that made it (ids repeat across
  a session with some models);
* an assistant message's deltas may belong to an entry the read already showed (it was appended
  between subscribing and reading), which only its ``message_finished`` tells. So after every read
  that returned entries, messages are *held* (not streamed) until the stream proves it is past
  the read: an entry id the read did not contain (a user message, a finished message, a tool
  result or call). A held message whose entry was already shown is dropped, the others are shown
  at their finish;
* a message whose start this subscription missed (it began before a reconnect) is rendered from
  the record at its finish (:meth:`Transcript.feed` asks for a read); an answer that was cut off
  by the disconnect continues where the screen left it when the record's text starts with what
  was shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastagent_cli.chat.tool_lines import ToolLog, ToolRecord
from fastagent_cli.chat.turns import CUT_OFF_MARK
from fastagent_cli.contract import Failed, Retrying, ToolEnded, ToolStarted
from fastagent_cli.control import EntryView, SessionEntries, SessionEvent
from fastagent_cli.control.compaction_notes import compaction_note

__all__ = ["Transcript", "TranscriptSink", "active_path"]


class TranscriptSink(Protocol):
    """Where the transcript goes (the chat's :class:`~fastagent_cli.chat.render.ChatRenderer`)."""

    def user_prompt(self, text: str) -> None: ...

    def text(self, delta: str) -> None: ...

    def thinking(self, delta: str) -> None: ...

    def end_message(self) -> None: ...

    def tool_started(self, record: ToolRecord) -> None: ...

    def tool_ended(self, record: ToolRecord) -> None: ...

    def retrying(self, event: Retrying) -> None: ...

    def failed(self, event: Failed) -> None: ...

    def note(self, text: str, style: str = "cyan") -> None: ...


def active_path(entries: Sequence[EntryView], leaf: str | None) -> set[str]:
    """The ids of ``entries`` on the path to ``leaf`` (all of them without a leaf; none when the
    leaf is not among them: it moved back to an entry read before)."""
    if leaf is None:
        return {e.id for e in entries}
    by_id = {e.id: e for e in entries}
    on_path: set[str] = set()
    current = by_id.get(leaf)
    while current is not None and current.id not in on_path:
        on_path.add(current.id)
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    return on_path


@dataclass(slots=True)
class _Message:
    """A live assistant message of this subscription."""

    held: bool
    orphan: bool = False
    """Its start came before this subscription: only the record has all of it."""
    deltas: list[tuple[str, str]] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    """The text streamed to the sink."""


class Transcript:
    """Feed it entries (:meth:`show_entries`) and live events (:meth:`feed`); it drives ``sink``."""

    def __init__(
        self,
        sink: TranscriptSink,
        clock: Callable[[], float],
        *,
        history: int | None = None,
        tools: ToolLog | None = None,
        aborted: str = "⏹ the run was aborted",
    ) -> None:
        self.sink = sink
        self.clock = clock
        self.history = history
        """How many entries the first read shows at most (``None``: all)."""
        self.aborted = aborted
        """The line an aborted run ends with (chat, whose Ctrl+C aborts it: ``⏹ interrupted``)."""
        self.cursor: str | None = None
        """The last entry accounted for, in append order (``entries(since=cursor)`` reads on)."""
        self.tools = tools if tools is not None else ToolLog()
        """The tool calls shown, numbered (``/expand N`` reads them)."""
        self._typed = False
        """The next ``user_message`` is a prompt the input line left on the screen."""
        self._interrupting = False
        self._accounted: set[str] = set()
        self._owner: str | None = None
        """The latest assistant entry known (append order): the tool results read after it are its."""
        self._live_owner: str | None = None
        """The assistant entry of the live tool events: the latest ``message_finished`` of this
        subscription; before one arrived, the latest entry of the read that made the call, else
        :attr:`_base_owner` (the latest known before the read)."""
        self._base_owner: str | None = None
        self._callers: dict[str, str] = {}
        self._announced: set[tuple[str | None, str]] = set()
        """The tool calls of the assistant entries read."""
        self._tools_done: set[tuple[str | None, str]] = set()
        self._tools_live: dict[tuple[str | None, str], ToolRecord] = {}
        self._synced = True
        self._message: _Message | None = None
        self._partial: str | None = None
        """Answer text shown before a disconnect whose message never finished on screen."""
        self.shown_any = False

    # --- durable entries ------------------------------------------------------------------------

    def show_entries(self, read: SessionEntries, *, first: bool = False) -> None:
        """Show what a read returned that is not on screen yet (``first``: the opening backfill,
        cut to :attr:`history`)."""
        fresh = {e.id for e in read.entries if e.id not in self._accounted}
        on_path = active_path(read.entries, read.leaf_entry_id)
        shown = [e.id for e in read.entries if e.id in fresh and e.id in on_path and _visible(e)]
        if first and self.history is not None and len(shown) > self.history:
            skipped = len(shown) - self.history
            shown = shown[skipped:]
            self.sink.note(f"… {skipped} earlier entries not shown (--history N shows more)", "dim")
        showing = set(shown)
        starts: dict[tuple[str | None, str], float] = {}
        for entry in read.entries:  # append order: tool results follow the entry that called them
            if entry.kind == "assistant":
                self._owner = entry.id
                for call in _calls(entry):
                    starts[(entry.id, str(call["id"]))] = entry.timestamp / 1000
                    self._callers[str(call["id"])] = entry.id
                    if entry.id in fresh:
                        self._announced.add((entry.id, str(call["id"])))
            if entry.id in showing:
                self._show(entry, starts)
            if entry.kind == "tool":
                self._tools_done.add((self._owner, str(entry.data.get("toolCallId", ""))))
            self._accounted.add(entry.id)
        if read.entries:
            self.cursor = read.entries[-1].id
        self.sink.end_message()
        self._synced = not fresh  # until the stream proves it is past this read

    def begin_round(self) -> None:
        """A new subscription: its tool events belong to the batch running when it began."""
        self._live_owner = None
        self._base_owner = self._owner
        self._callers = {}

    def _tool_key(self, call: str) -> tuple[str | None, str]:
        return (self._live_owner or self._callers.get(call) or self._base_owner, call)

    def _show(self, entry: EntryView, starts: Mapping[tuple[str | None, str], float]) -> None:
        data = entry.data
        if entry.kind == "user":
            self._close_partial()
            self.sink.user_prompt(str(data.get("text", "")) + _attached(data))
        elif entry.kind == "assistant":
            text = str(data.get("text", ""))
            if self._partial is not None:
                if text.startswith(self._partial):
                    text = text[len(self._partial) :]
                    self._partial = None
                else:
                    self._close_partial()
            if text:
                self.sink.text(text)
            self.sink.end_message()
        elif entry.kind == "tool":
            self._close_partial()
            call = str(data.get("toolCallId", ""))
            key = (self._owner, call)
            if key in self._tools_done:
                return
            record = self._tools_live.pop(key, None)
            if record is None:
                started = starts.get(key, entry.timestamp / 1000)
                name = str(data.get("toolName", "tool"))
                record = self.tools.start(ToolStarted(call, name, None), started)
            ended = ToolEnded(call, bool(data.get("isError")), data.get("text", ""))
            self.tools.end(ended, entry.timestamp / 1000)
            self.sink.tool_ended(record)
        elif entry.kind == "compaction":
            self._close_partial()
            self.sink.note("⋯ the history before this point was compacted into a summary", "dim")
        self.shown_any = True

    # --- live events ----------------------------------------------------------------------------

    def prompt_typed(self) -> None:
        """The run about to start opens with a prompt still on the screen where it was typed (chat's
        input line): its ``user_message`` is not shown again."""
        self._typed = True

    def interrupting(self) -> None:
        """This app is stopping the run (chat's Ctrl+C): the tool calls it cuts short read
        ``interrupted``, not as the error result the engine records for them."""
        self._interrupting = True

    def feed(self, event: SessionEvent) -> bool:
        """Show one live event; ``True`` when the record must be read to show it (a message whose
        start was missed): read ``entries(since=self.cursor)`` and pass it to :meth:`show_entries`."""
        kind, data = event.type, event.data
        if kind == "user_message":
            entry = data.get("entryId")
            if entry in self._accounted:
                return False
            self._past_the_read(entry)
            self._close_partial()
            if self._typed:
                self._typed = False
            else:
                self.sink.user_prompt(str(data.get("text", "")))
            self._account(entry)
        elif kind == "message_started":
            self._close_partial()  # a new answer: the one cut off by the disconnect is over
            self._message = _Message(held=not self._synced)
        elif kind == "message_delta":
            self._delta(str(data.get("channel", "text")), str(data.get("delta", "")))
        elif kind == "message_finished":
            if self._finished(data.get("entryId")):
                return True
            if data.get("stopReason") == "length":
                self.sink.note(CUT_OFF_MARK, "yellow")
        elif kind == "tool_started":
            self._tool_started(data)
        elif kind == "tool_finished":
            self._tool_finished(data)
        elif kind in ("retry_scheduled", "model_retry_scheduled"):
            reason = str(data.get("error", ""))
            if kind == "retry_scheduled":  # a summary's model call, not the answer's
                reason = f"{data.get('operation')}: {reason}"
            attempt, most, delay = (
                _int(data.get("attempt")),
                _int(data.get("maxAttempts")),
                _int(data.get("delayMs")),
            )
            self.sink.retrying(Retrying(attempt, most, delay, reason))
        elif kind == "run_settled":
            self._settled(data)
        elif (note := compaction_note(event)) is not None:
            failed = kind == "compaction_finished" and "error" in data
            self.sink.note(f"⋯ {note}", "red" if failed else "dim")
        elif kind == "serving_error":
            self.sink.note(f"✗ server error: {data.get('message', '')}", "red")
        return False

    def _delta(self, channel: str, delta: str) -> None:
        message = self._message
        if message is None:  # its start came before this subscription
            message = self._message = _Message(held=True, orphan=True)
        if message.held:
            message.deltas.append((channel, delta))
        else:
            self._stream(message, channel, delta)

    def _stream(self, message: _Message, channel: str, delta: str) -> None:
        if channel == "thinking":
            self.sink.thinking(delta)
        else:
            message.shown.append(delta)
            self.sink.text(delta)

    def _finished(self, entry: Any) -> bool:
        message, self._message = self._message, None
        if isinstance(entry, str):
            self._live_owner = entry
            if entry not in self._accounted:
                self._owner = entry
        if entry is not None and entry in self._accounted:
            return False  # shown from the record already
        if message is None or message.orphan:
            return entry is not None  # only the record has all of it
        self._past_the_read(entry)
        if message.held:
            for channel, delta in message.deltas:
                self._stream(message, channel, delta)
        self.sink.end_message()
        self._account(entry)
        return False

    def _tool_started(self, data: Mapping[str, Any]) -> None:
        call = str(data.get("id", ""))
        key = self._tool_key(call)
        if key in self._tools_done or key in self._tools_live:
            return
        if key not in self._announced:
            self._synced = True  # its assistant entry was not in the read
        self._close_partial()
        started = ToolStarted(call, str(data.get("name", "tool")), data.get("args"))
        record = self.tools.start(started, self.clock())
        self._tools_live[key] = record
        self.sink.tool_started(record)

    def _tool_finished(self, data: Mapping[str, Any]) -> None:
        call = str(data.get("id", ""))
        key = self._tool_key(call)
        if key in self._tools_done:
            return
        self._synced = True  # its result entry was appended after the read
        record = self._tools_live.pop(key, None)
        if record is None:
            record = self.tools.start(ToolStarted(call, "(tool)", None), self.clock())
        self.tools.end(ToolEnded(call, bool(data.get("isError")), data.get("content")), self.clock())
        if self._interrupting and record.status == "error":
            record.status = "interrupted"
        self._tools_done.add(key)
        self.sink.tool_ended(record)

    def _settled(self, data: Mapping[str, Any]) -> None:
        self._message = None
        self._close_partial()
        for record in self.tools.interrupt_running(self.clock()):
            self.sink.tool_ended(record)
        self._tools_live.clear()
        status = data.get("status")
        error = data.get("error") if isinstance(data.get("error"), Mapping) else {}
        assert isinstance(error, Mapping)
        if status == "aborted":
            self.sink.note(self.aborted, "yellow")
        elif status == "failed":
            code = error.get("code")
            self.sink.failed(
                Failed(
                    str(error.get("message", "the run failed")),
                    bool(error.get("retryable")),
                    code if isinstance(code, str) else None,
                )
            )
        self.sink.end_message()

    # --- connection -----------------------------------------------------------------------------

    def connection_lost(self) -> None:
        """The subscription ended: an answer being streamed may continue after the reconnect."""
        self.begin_round()
        message, self._message = self._message, None
        if message is not None and not message.held:
            self._partial = "".join(message.shown)

    def run_gone(self) -> None:
        """The reconnect found no run: an answer cut off by the disconnect stays cut off."""
        self._message = None
        self._close_partial()

    def _close_partial(self) -> None:
        if self._partial is not None:
            self._partial = None
            self.sink.end_message()
            self.sink.note("⋯ (the rest of that answer was lost with the connection)", "dim")

    def _past_the_read(self, entry: Any) -> None:
        if entry is not None and entry not in self._accounted:
            self._synced = True

    def _account(self, entry: Any) -> None:
        if isinstance(entry, str):
            self._accounted.add(entry)
            self.cursor = entry
        self.shown_any = True


def _visible(entry: EntryView) -> bool:
    return entry.kind in ("user", "assistant", "tool", "compaction")


def _calls(entry: EntryView) -> Iterable[Mapping[str, Any]]:
    calls = entry.data.get("toolCalls") if entry.kind == "assistant" else None
    return [c for c in calls if isinstance(c, Mapping) and "id" in c] if isinstance(calls, list) else []


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _attached(data: Mapping[str, Any]) -> str:
    """What a user entry carried besides its text, as chat's chip names it: ``  📎 2 images ·
    📄 report.pdf`` (empty without any)."""
    images = data.get("images")
    documents = data.get("documents")
    count = len(images) if isinstance(images, list) else 0
    names = [f"{count} image{'s' if count != 1 else ''}"] if count else []
    if isinstance(documents, list):
        names += [f"📄 {d.get('name') or 'document.pdf'}" for d in documents if isinstance(d, Mapping)]
    return "  📎 " + " · ".join(names) if names else ""
