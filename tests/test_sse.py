from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fastagent_cli.sse import SSEDecoder, SSEEvent, aiter_sse, iter_sse


def events(*chunks: bytes) -> list[SSEEvent]:
    return list(iter_sse(chunks))


def test_single_data_event() -> None:
    assert events(b"data: hello\n\n") == [SSEEvent(None, "hello")]


def test_event_name_and_multiline_data() -> None:
    stream = b"event: content_block_delta\ndata: line one\ndata: line two\n\n"
    assert events(stream) == [SSEEvent("content_block_delta", "line one\nline two")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    stream = b": ping\n\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n: another\n\n"
    decoder = SSEDecoder()
    assert decoder.feed(stream) == [SSEEvent(None, "x")]
    assert decoder.last_event_id == "7"
    assert decoder.retry_ms == 100


def test_only_one_leading_space_is_stripped_and_no_space_is_fine() -> None:
    assert events(b"data:x\n\ndata:  two spaces\n\n") == [SSEEvent(None, "x"), SSEEvent(None, " two spaces")]


def test_field_without_colon_and_empty_data_line() -> None:
    # "data" alone is a data field with an empty value: the event is dispatched with data "".
    assert events(b"data\n\n") == [SSEEvent(None, "")]
    assert events(b"data:\ndata:\n\n") == [SSEEvent(None, "\n")]


def test_event_without_data_is_not_dispatched_and_name_resets() -> None:
    assert events(b"event: ping\n\ndata: after\n\n") == [SSEEvent(None, "after")]


def test_crlf_and_cr_line_endings() -> None:
    assert events(b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\rdata: 3\n\n") == [
        SSEEvent("a", "1"),
        SSEEvent(None, "2"),
        SSEEvent(None, "3"),
    ]


def test_crlf_split_across_chunks_does_not_make_an_extra_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n\r\n") == [SSEEvent(None, "a\nb")]


def test_byte_by_byte_including_multibyte_utf8() -> None:
    stream = "data: héllo → ✓\n\nevent: x\ndata: 2\n\n".encode()
    assert events(*[stream[i : i + 1] for i in range(len(stream))]) == [
        SSEEvent(None, "héllo → ✓"),
        SSEEvent("x", "2"),
    ]


def test_leading_bom_is_ignored() -> None:
    assert events(b"\xef\xbb\xbfdata: x\n\n") == [SSEEvent(None, "x")]


def test_complete_last_event_without_blank_line_is_dispatched_at_eof() -> None:
    assert events(b"data: 1\n\ndata: [DONE]\n") == [SSEEvent(None, "1"), SSEEvent(None, "[DONE]")]
    assert events(b"data: [DONE]\r") == [SSEEvent(None, "[DONE]")]


def test_truncated_last_line_is_dropped_at_eof() -> None:
    assert events(b'data: 1\n\ndata: {"cho') == [SSEEvent(None, "1")]
    assert events(b'data: a\ndata: {"cho') == []


def test_events_are_tuples() -> None:
    event, data = events(b"event: e\ndata: d\n\n")[0]
    assert (event, data) == ("e", "d")


async def test_aiter_sse_over_async_bytes() -> None:
    closed = False

    async def source() -> AsyncIterator[bytes]:
        nonlocal closed
        try:
            for piece in (b"data: a", b"\n\nevent: x\nda", b"ta: b\n\n", b": c\n\n"):
                yield piece
        finally:
            closed = True

    result = [event async for event in aiter_sse(source())]
    assert result == [SSEEvent(None, "a"), SSEEvent("x", "b")]
    assert closed


async def test_aiter_sse_closes_its_source_when_closed_early() -> None:
    closed = False

    async def source() -> AsyncIterator[bytes]:
        nonlocal closed
        try:
            while True:
                yield b"data: tick\n\n"
        finally:
            closed = True

    stream = aiter_sse(source())
    assert await anext(stream) == SSEEvent(None, "tick")
    await stream.aclose()
    assert closed


@pytest.mark.parametrize("split", [1, 2, 3, 5, 7])
def test_any_chunking_gives_the_same_events(split: int) -> None:
    stream = b': hi\r\nevent: one\r\ndata: {"a": 1}\r\n\r\ndata: x\ndata: y\n\nevent: e\rdata: z\r\r'
    pieces = [stream[i : i + split] for i in range(0, len(stream), split)]
    assert events(*pieces) == [SSEEvent("one", '{"a": 1}'), SSEEvent(None, "x\ny"), SSEEvent("e", "z")]
