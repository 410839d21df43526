"""The attach transcript: live events and durable entries overlap and leave gaps; every entry is
shown exactly once, in order, and a cut-off answer continues where the screen left it."""

from __future__ import annotations

from typing import Any

from fastagent_cli.chat.tool_lines import ToolRecord
from fastagent_cli.chat.transcript import Transcript, active_path
from fastagent_cli.chat.turns import CUT_OFF_MARK
from fastagent_cli.contract import Failed, Retrying
from fastagent_cli.control import EntryView, SessionEntries, SessionEvent


class Screen:
    """A sink that keeps what a user would read: one line per prompt, answer, tool and note."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._open: list[str] | None = None
        self.streamed: list[str] = []

    def _close(self) -> None:
        if self._open is not None:
            self.lines.append("A: " + "".join(self._open))
            self._open = None

    def user_prompt(self, text: str) -> None:
        self._close()
        self.lines.append(f"> {text}")

    def text(self, delta: str) -> None:
        self.streamed.append(delta)
        if self._open is None:
            self._open = []
        self._open.append(delta)

    def thinking(self, delta: str) -> None:
        self._close()
        self.lines.append(f"(thinking) {delta}")

    def end_message(self) -> None:
        self._close()

    def tool_started(self, record: ToolRecord) -> None:
        self._close()

    def tool_ended(self, record: ToolRecord) -> None:
        self._close()
        self.lines.append(f"tool {record.name} {record.status} {record.duration(0):.1f}s")

    def retrying(self, event: Retrying) -> None:
        self.lines.append(f"retry {event.attempt}/{event.max_attempts}")

    def failed(self, event: Failed) -> None:
        self._close()
        self.lines.append(f"failed: {event.details}")

    def note(self, text: str, style: str = "cyan") -> None:
        self._close()
        self.lines.append(f"note: {text}")


def entry(id: str, kind: str, parent: str | None = None, ts: int = 1000, **data: Any) -> EntryView:
    return EntryView(id, ts, kind, data, parent)


def ev(kind: str, **data: Any) -> SessionEvent:
    return SessionEvent(kind, data, "run-1", 1)


def message(text: str, entry_id: str | None, *, start: bool = True) -> list[SessionEvent]:
    events = [ev("message_started")] if start else []
    events += [ev("message_delta", channel="text", delta=text[i : i + 3]) for i in range(0, len(text), 3)]
    finished = {"stopReason": "stop"} if entry_id is None else {"entryId": entry_id, "stopReason": "stop"}
    return [*events, ev("message_finished", **finished)]


HISTORY = [
    entry("u1", "user", text="hello"),
    entry("a1", "assistant", "u1", text="Hi there."),
]


def make(history: int | None = None) -> tuple[Transcript, Screen]:
    screen = Screen()
    return Transcript(screen, lambda: 0.0, history=history), screen


def test_the_backfill_and_the_live_stream_overlap_without_duplicates() -> None:
    transcript, screen = make()
    # subscribed, then read: u2/a2 were appended in between, so they are in both
    read = SessionEntries(
        (
            *HISTORY,
            entry("u2", "user", "a1", text="again"),
            entry("a2", "assistant", "u2", text="Once more."),
        ),
        "a2",
    )
    transcript.show_entries(read, first=True)
    live = [ev("user_message", entryId="u2", text="again"), *message("Once more.", "a2")]
    live += [ev("user_message", entryId="u3", text="third"), *message("Third answer.", "a3")]
    live += message("Fourth, streamed.", "a4")
    for event in live:
        assert transcript.feed(event) is False
    assert screen.lines == [
        "> hello",
        "A: Hi there.",
        "> again",
        "A: Once more.",
        "> third",
        "A: Third answer.",
        "A: Fourth, streamed.",
    ]
    assert transcript.cursor == "a4"


def test_a_held_message_already_read_is_dropped_and_the_next_one_streams() -> None:
    transcript, screen = make()
    transcript.show_entries(SessionEntries(HISTORY, "a1"), first=True)
    for event in message("Hi there.", "a1"):  # appended before the read, published after
        transcript.feed(event)
    assert screen.streamed == ["Hi there."]  # held, then dropped: never streamed twice
    transcript.feed(ev("message_started"))  # a1 proved nothing: the next one is held too...
    transcript.feed(ev("message_delta", channel="text", delta="Next"))
    assert screen.streamed == ["Hi there."]
    transcript.feed(ev("message_finished", entryId="a2", stopReason="stop"))
    assert screen.lines == ["> hello", "A: Hi there.", "A: Next"]  # ...and shown at its finish


def test_messages_are_held_until_the_stream_proves_it_is_past_the_read() -> None:
    transcript, screen = make()
    read = SessionEntries(
        (*HISTORY, entry("a2", "assistant", "a1", text="", toolCalls=[{"id": "c1", "name": "nap"}])), "a2"
    )
    transcript.show_entries(read, first=True)
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_delta", channel="text", delta="held"))
    assert screen.streamed == ["Hi there."]
    transcript.feed(ev("message_finished", entryId="a3", stopReason="toolUse"))
    assert screen.lines[-1] == "A: held"  # a3 was not in the read: shown at its finish
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_delta", channel="text", delta="live"))
    assert screen.streamed[-1] == "live"  # proven: streamed as it comes


def test_a_tool_result_after_the_read_proves_the_stream_is_past_it() -> None:
    transcript, screen = make()
    call = {"id": "c1", "name": "nap"}
    read = SessionEntries((*HISTORY, entry("a2", "assistant", "a1", text="", toolCalls=[call])), "a2")
    transcript.show_entries(read, first=True)
    transcript.feed(ev("tool_started", id="c1", name="nap", args={}))  # announced by a2: no proof
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_delta", channel="text", delta="x"))
    assert screen.streamed == ["Hi there."]
    transcript = Transcript(screen, lambda: 0.0)
    transcript.show_entries(read, first=True)
    transcript.feed(ev("tool_started", id="c1", name="nap", args={}))
    transcript.feed(ev("tool_finished", id="c1", isError=False, content="slept"))
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_delta", channel="text", delta="after"))
    assert screen.streamed[-1] == "after"


def test_a_message_whose_start_was_missed_comes_from_the_record() -> None:
    transcript, screen = make()
    transcript.show_entries(SessionEntries((HISTORY[0],), "u1"), first=True)
    transcript.feed(ev("message_started"))  # proof arrives with its finish: a1 not in the read
    for event in message("Hi there.", "a1", start=False)[:-1]:
        transcript.feed(event)
    # a new subscription mid-answer: deltas without their start
    transcript.connection_lost()
    transcript.show_entries(SessionEntries((), None))
    for event in message("rest of it", "a1", start=False)[:-1]:
        transcript.feed(event)
    assert transcript.feed(ev("message_finished", entryId="a1", stopReason="stop")) is True
    transcript.show_entries(SessionEntries((HISTORY[1],), "a1"))
    assert screen.lines == ["> hello", "A: Hi there."]


def test_an_answer_cut_by_a_disconnect_continues_where_the_screen_left_it() -> None:
    transcript, screen = make()
    transcript.show_entries(SessionEntries((HISTORY[0],), "u1"), first=True)
    transcript.feed(ev("user_message", entryId="u2", text="tell me"))  # proves the stream is past the read
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_delta", channel="text", delta="Hello wo"))
    transcript.connection_lost()
    # the reconnect's read has the finished answer: only the rest is shown
    after = SessionEntries((entry("a2", "assistant", "u2", text="Hello world."),), "a2")
    transcript.show_entries(after)
    assert screen.lines == ["> hello", "> tell me", "A: Hello world."]
    assert screen.streamed == ["Hello wo", "rld."]


def test_an_answer_cut_by_a_run_that_died_says_so() -> None:
    transcript, screen = make()
    transcript.show_entries(SessionEntries((), None), first=True)
    transcript.feed(ev("user_message", entryId="u1", text="go"))
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_delta", channel="text", delta="Half an ans"))
    transcript.connection_lost()
    transcript.show_entries(SessionEntries((entry("u1", "user", text="go"),), "u1"))
    transcript.run_gone()
    assert screen.lines == [
        "> go",
        "A: Half an ans",
        "note: ⋯ (the rest of that answer was lost with the connection)",
    ]


def test_tools_finished_while_away_end_their_live_line_once() -> None:
    transcript, screen = make()
    transcript.show_entries(SessionEntries((), None), first=True)
    transcript.feed(ev("user_message", entryId="u1", text="nap"))
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_finished", entryId="a1", stopReason="toolUse"))
    transcript.feed(ev("tool_started", id="c1", name="nap", args={}))
    transcript.feed(ev("tool_started", id="c2", name="other", args={}))
    transcript.feed(ev("tool_finished", id="c2", isError=False, content="ok"))
    transcript.connection_lost()
    read = SessionEntries(
        (
            entry("t1", "tool", "a1", ts=5000, toolCallId="c1", toolName="nap", isError=False, text="slept"),
            entry("t2", "tool", "t1", ts=5000, toolCallId="c2", toolName="other", isError=False, text="ok"),
            entry("a2", "assistant", "t2", text="Rested."),
        ),
        "a2",
    )
    transcript.show_entries(read)
    tools = [line for line in screen.lines if line.startswith("tool ")]
    assert [t.rsplit(" ", 1)[0] for t in tools] == ["tool other ok", "tool nap ok"]
    assert screen.lines[-1] == "A: Rested."
    transcript.feed(ev("tool_finished", id="c1", isError=False, content="slept"))  # a late duplicate
    assert [line for line in screen.lines if line.startswith("tool ")] == tools


def test_backfilled_tools_take_their_duration_from_the_record() -> None:
    transcript, screen = make()
    read = SessionEntries(
        (
            entry("u1", "user", text="nap"),
            entry("a1", "assistant", "u1", ts=1000, text="", toolCalls=[{"id": "c1", "name": "nap"}]),
            entry("t1", "tool", "a1", ts=3500, toolCallId="c1", toolName="nap", isError=True, text="no"),
        ),
        "t1",
    )
    transcript.show_entries(read, first=True)
    assert screen.lines == ["> nap", "tool nap error 2.5s"]


def test_the_first_read_is_cut_to_the_history_limit_and_branches_are_left_out() -> None:
    transcript, screen = make(history=2)
    read = SessionEntries(
        (
            *HISTORY,
            entry("u2", "user", "a1", text="abandoned branch"),
            entry("a2", "assistant", "u2", text="old answer"),
            entry("u3", "user", "a1", text="kept branch"),
            entry("a3", "assistant", "u3", text="new answer"),
            entry("c", "model_change", "a3"),
        ),
        "c",
    )
    transcript.show_entries(read, first=True)
    assert screen.lines == [
        "note: … 2 earlier entries not shown (--history N shows more)",
        "> kept branch",
        "A: new answer",
    ]
    assert transcript.cursor == "c"
    assert active_path(read.entries, "a1") == {"u1", "a1"}
    assert active_path(read.entries, "gone") == set()


def test_run_outcomes_and_other_events() -> None:
    transcript, screen = make()
    transcript.show_entries(SessionEntries((), None), first=True)
    transcript.feed(ev("model_retry_scheduled", attempt=1, maxAttempts=3, delayMs=10, error="x"))
    transcript.feed(ev("tool_started", id="c9", name="slow", args={}))
    transcript.feed(ev("run_settled", status="aborted"))
    transcript.feed(ev("run_settled", status="failed", error={"message": "boom", "retryable": False}))
    transcript.feed(ev("compaction_finished", aborted=True))
    transcript.feed(ev("serving_error", message="crashed"))
    transcript.feed(ev("something_new", whatever=1))  # unknown types are ignored
    assert screen.lines == [
        "retry 1/3",
        "tool slow interrupted 0.0s",
        "note: ⏹ the run was aborted",
        "failed: boom",
        "note: ⋯ compaction aborted; the history is unchanged",
        "note: ✗ server error: crashed",
    ]


def test_tool_call_ids_that_repeat_across_runs_are_told_apart_by_their_entry() -> None:
    transcript, screen = make()
    call = [{"id": "call_0_0", "name": "nap"}]
    read = SessionEntries(
        (
            entry("u1", "user", text="first"),
            entry("a1", "assistant", "u1", text="", toolCalls=call),
            entry("t1", "tool", "a1", toolCallId="call_0_0", toolName="nap", isError=False, text="slept"),
            entry("a2", "assistant", "t1", text="done"),
        ),
        "a2",
    )
    transcript.show_entries(read, first=True)
    transcript.feed(ev("user_message", entryId="u2", text="second"))
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_finished", entryId="a3", stopReason="toolUse"))
    transcript.feed(ev("tool_started", id="call_0_0", name="nap", args={"seconds": 30}))
    transcript.feed(ev("tool_finished", id="call_0_0", isError=True, content="Operation aborted"))
    tools = [line.rsplit(" ", 1)[0] for line in screen.lines if line.startswith("tool ")]
    assert tools == ["tool nap ok", "tool nap error"]


def test_a_subscription_that_begins_mid_batch_keys_its_tools_by_the_read() -> None:
    transcript, screen = make()
    call = [{"id": "call_0_0", "name": "nap"}]
    transcript.show_entries(SessionEntries((entry("u1", "user", text="x"),), "u1"), first=True)
    transcript.connection_lost()  # away while a1 was answered and its tool ran
    read = SessionEntries(
        (
            entry("a1", "assistant", "u1", text="", toolCalls=call),
            entry("t1", "tool", "a1", toolCallId="call_0_0", toolName="nap", isError=False, text="slept"),
        ),
        "t1",
    )
    transcript.show_entries(read)
    transcript.feed(
        ev("tool_finished", id="call_0_0", isError=False, content="slept")
    )  # buffered before the read
    assert [line for line in screen.lines if line.startswith("tool ")] == ["tool nap ok 0.0s"]


def test_an_answer_cut_off_at_the_output_limit_says_so_after_its_text() -> None:
    """The one renderer: chat's runs and attach's show the output-limit mark from the session's
    ``message_finished {stopReason: "length"}``, after the text it cut."""
    transcript, screen = make()
    for event in [ev("user_message", entryId="u1", text="long please"), *message("Part", None)][:-1]:
        transcript.feed(event)
    transcript.feed(ev("message_finished", entryId="a1", stopReason="length"))
    assert screen.lines == ["> long please", "A: Part", f"note: {CUT_OFF_MARK}"]


def test_the_prompt_typed_in_place_and_the_tools_an_interrupt_cuts_short() -> None:
    """Chat's own run: its opening prompt is on the screen where it was typed (shown once); after
    its Ctrl+C the tool the engine ends with an error result reads as interrupted, and the run's
    end is chat's line; a steer the run takes in later is shown where it joined."""
    transcript, screen = make()
    transcript.aborted = "⏹ interrupted"
    transcript.prompt_typed()
    transcript.feed(ev("user_message", entryId="u1", text="slow"))
    transcript.feed(ev("user_message", entryId="u2", text="steered"))
    transcript.feed(ev("message_started"))
    transcript.feed(ev("message_finished", entryId="a1", stopReason="toolUse"))
    transcript.feed(ev("tool_started", id="c1", name="nap", args={}))
    transcript.interrupting()
    transcript.feed(ev("tool_finished", id="c1", isError=True, content="Operation aborted"))
    transcript.feed(ev("run_settled", status="aborted"))
    assert screen.lines == ["> steered", "tool nap interrupted 0.0s", "note: ⏹ interrupted"]


def test_a_summary_retry_names_its_operation_and_compactions_read_as_in_chat() -> None:
    transcript, screen = make()
    transcript.feed(
        ev("retry_scheduled", operation="compaction", attempt=1, maxAttempts=2, delayMs=5, error="x")
    )
    transcript.feed(ev("compaction_started", reason="threshold", tokens=12000))
    transcript.feed(ev("compaction_finished", summary="s" * 40, tokensBefore=12000, tokensAfter=900))
    assert screen.lines == [
        "retry 1/2",
        "note: ⋯ compacting the conversation (12,000 tokens)...",
        "note: ⋯ compacted the conversation: 12,000 -> about 900 tokens; older history is now a "
        "40-character summary",
    ]


def test_a_prompt_read_from_the_record_names_its_images_and_documents() -> None:
    transcript, screen = make()
    pdf = {"mimeType": "application/pdf", "name": "report.pdf", "bytes": 600}
    image = {"mimeType": "image/png", "data": "iVBORw0KGgo="}
    read = SessionEntries(
        (
            entry("u1", "user", text="read", documents=[pdf], images=[image, image]),
            entry("a1", "assistant", "u1", text="Read."),
            entry("u2", "user", "a1", text="one more", images=[image]),
        ),
        "u2",
    )
    transcript.show_entries(read, first=True)
    assert screen.lines == ["> read  📎 2 images · 📄 report.pdf", "A: Read.", "> one more  📎 1 image"]
