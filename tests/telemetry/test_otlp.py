"""The hand-written OTLP encoder against the official ``opentelemetry-proto`` messages: every
attribute kind, the pair cache (a bool and an int of one key stay apart), events, status, parents."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from fastagent_cli.telemetry.otlp import Histogram, encode_spans
from fastagent_cli.telemetry.spans import Span
from tests.serving.otlp_receiver import attributes


def decoded(spans: list[Span]) -> list[object]:
    body = encode_spans({"service.name": "svc"}, spans)
    message = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    [resource_spans] = message.resource_spans
    assert attributes(resource_spans.resource.attributes) == {"service.name": "svc"}
    return list(resource_spans.scope_spans[0].spans)


def test_spans_decode_with_the_official_messages_and_cached_pairs_stay_exact() -> None:
    first = Span(b"\x01" * 16, b"\x02" * 8, None, "chat m", 3, 10, 20)
    first.update({"a": "x", "flag": True, "n": 1, "neg": -5, "f": 0.5, "list": ["s", 2], "none": None})
    first.event("retry", {"attempt": 1})
    first.fail("boom", "model_error")
    second = Span(b"\x01" * 16, b"\x03" * 8, b"\x02" * 8, "execute_tool t", 1, 11, 19)
    second.update({"a": "x", "flag": 1, "n": True, "big": 2**40})  # same keys, other types
    for _ in range(2):  # the second time from the pair cache
        one, two = decoded([first, second])
        assert attributes(one.attributes) == {
            "a": "x",
            "flag": True,
            "n": 1,
            "neg": -5,
            "f": 0.5,
            "list": ["s", 2],
            "error.type": "model_error",
        }
        assert attributes(two.attributes) == {"a": "x", "flag": 1, "n": True, "big": 2**40}
        assert type(attributes(two.attributes)["flag"]) is int
        assert (one.name, one.kind, one.start_time_unix_nano, one.end_time_unix_nano) == ("chat m", 3, 10, 20)
        assert one.parent_span_id == b"" and two.parent_span_id == b"\x02" * 8
        assert one.status.code == 2 and one.status.message == "boom" and two.status.code == 0
        assert [(e.name, attributes(e.attributes)) for e in one.events] == [("retry", {"attempt": 1})]
        assert one.flags == 1 and two.trace_id == b"\x01" * 16


def test_histogram_buckets_take_the_first_bound_at_or_above() -> None:
    point = Histogram({}, (1.0, 4.0))
    for value in (0.5, 1.0, 1.5, 4.0, 9.0):
        point.record(value)
    copy = point.copy()
    point.record(0.1)
    assert copy.counts == [2, 2, 1] and copy.count == 5 and point.counts == [3, 2, 1]
