"""Incremental Server-Sent Events parsing over an HTTP byte stream.

Follows the WHATWG event-stream rules: lines end in ``\\r\\n``, ``\\n`` or ``\\r``; ``data:`` lines
accumulate (joined by ``\\n``); ``event:`` names the event; lines starting with ``:`` are comments;
a blank line dispatches; an event without any ``data`` line is not dispatched; one space after the
colon is dropped; a leading byte-order mark is ignored.

One deliberate leniency: at end of stream the spec discards an event that was never followed by a
blank line. Several servers end with ``data: [DONE]\\n`` and no blank line, so an event whose lines
all arrived complete is still dispatched; an event whose last line was cut off mid-line is dropped
(its data would be truncated).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Iterator
from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEEvent", "aiter_sse", "iter_sse"]

_EOL = re.compile(r"\r\n|\r|\n")


class SSEEvent(NamedTuple):
    """One dispatched event: ``event`` is ``None`` when the server sent no ``event:`` field."""

    event: str | None
    data: str


class SSEDecoder:
    """Feed raw bytes in arbitrary pieces; get complete events back."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._started = False
        self.last_event_id = ""
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completes (possibly none)."""
        return self._feed_text(self._decoder.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """Signal end of stream; return the last event if it arrived complete (see module doc)."""
        events = self._feed_text(self._decoder.decode(b"", final=True))
        tail, self._buffer = self._buffer, ""
        if tail.endswith("\r"):  # a final CR is a complete line end
            event = self._process_line(tail[:-1])
            if event is not None:
                events.append(event)
        elif tail:  # the last line was cut off: its event is incomplete
            self._reset()
            return events
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        buf = self._buffer + text
        if "\r" not in buf:
            return self._feed_lines(buf)
        events: list[SSEEvent] = []
        pos = 0
        for match in _EOL.finditer(buf):
            if match.group() == "\r" and match.end() == len(buf):
                break  # may be the first half of a CRLF split across chunks
            event = self._process_line(buf[pos : match.start()])
            pos = match.end()
            if event is not None:
                events.append(event)
        self._buffer = buf[pos:]
        return events

    def _feed_lines(self, buf: str) -> list[SSEEvent]:
        """``_feed_text`` for text with ``\n`` line ends only (nearly every server): one split,
        and ``data:`` lines, nearly all of them, handled inline."""
        lines = buf.split("\n")
        self._buffer = lines.pop()  # the unfinished last line ("" after a final newline)
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
                continue
            event = self._process_line(line)
            if event is not None:
                events.append(event)
                data = self._data  # a dispatch starts a new list
        return events

    def _process_line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(self._event or None, "\n".join(self._data))
        self._reset()
        return event

    def _reset(self) -> None:
        self._data = []
        self._event = ""


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncGenerator[SSEEvent, None]:
    """Events from an async byte stream such as ``httpx.Response.aiter_bytes()``."""
    decoder = SSEDecoder()
    iterator = aiter(chunks)
    try:
        async for chunk in iterator:
            for event in decoder.feed(chunk):
                yield event
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()
    for event in decoder.close():
        yield event


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Events from a synchronous byte iterable (tests, recorded streams)."""
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()
