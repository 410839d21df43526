"""OTLP/HTTP protobuf bodies, encoded by hand: ``ExportTraceServiceRequest`` and
``ExportMetricsServiceRequest`` (opentelemetry-proto ``v1``), the fields fastagent fills.

A few varints and length-delimited fields are all the OTLP messages need, so telemetry costs no
dependency and no import time (the SDK with its protobuf exporter is ~10 packages and ~0.2 s of
imports). The tests decode these bodies with the official ``opentelemetry-proto`` messages.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Histogram", "MetricPoint", "encode_metrics", "encode_spans"]

SCOPE = ("fastagent", "")


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL[value]
    value &= (1 << 64) - 1  # negative int64s as two's complement, as protobuf does
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL = [bytes((n,)) for n in range(0x80)]


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode("utf-8")) if text else b""


def _uint(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value) if value else b""


def _fixed64(field: int, value: int) -> bytes:
    return _key(field, 1) + struct.pack("<Q", value)


def _double(field: int, value: float) -> bytes:
    return _key(field, 1) + struct.pack("<d", value)


def _any(value: Any) -> bytes:
    if isinstance(value, bool):
        return _key(2, 0) + _varint(int(value))
    if isinstance(value, int):
        return _key(3, 0) + _varint(value)
    if isinstance(value, float):
        return _double(4, value)
    if isinstance(value, list | tuple):
        return _bytes(5, b"".join(_bytes(1, _any(v)) for v in value))
    return _bytes(1, str(value).encode("utf-8"))


_KEYS: dict[str, bytes] = {}
"""A ``KeyValue``'s encoded key field, by attribute name (a few dozen names in all)."""
_PAIRS: dict[tuple[str, type, Any], bytes] = {}
"""Encoded ``KeyValue`` messages of string and boolean attributes: most values repeat (operation
names, models, providers, triggers), so each is encoded once. Emptied past :data:`_PAIRS_MAX`."""
_PAIRS_MAX = 4096
_CACHED = (str, bool)


def _pair(key: str, value: Any) -> bytes:
    kind = type(value)
    if kind in _CACHED:
        cached = _PAIRS.get((key, kind, value))
        if cached is not None:
            return cached
    name = _KEYS.get(key)
    if name is None:
        name = _KEYS[key] = _str(1, key)
    encoded = name + _bytes(2, _any(value))
    if kind in _CACHED:
        if len(_PAIRS) >= _PAIRS_MAX:
            _PAIRS.clear()
        _PAIRS[(key, kind, value)] = encoded
    return encoded


def _attributes(field: int, attributes: Mapping[str, Any]) -> bytes:
    tag = _key(field, 2)
    out = []
    for key, value in attributes.items():
        if value is not None:
            pair = _pair(key, value)
            out.append(tag + _varint(len(pair)) + pair)
    return b"".join(out)


def _resource(attributes: Mapping[str, Any]) -> bytes:
    return _bytes(1, _attributes(1, attributes))


def _scope() -> bytes:
    return _bytes(1, _str(1, SCOPE[0]) + _str(2, SCOPE[1]))


def encode_spans(resource: Mapping[str, Any], spans: Iterable[Any]) -> bytes:
    """One ``ExportTraceServiceRequest`` of finished spans (:class:`~.spans.Span`)."""
    body = b"".join([_SPAN_TAG + _varint(len(encoded)) + encoded for encoded in map(_span, spans)])
    return _bytes(1, _resource(resource) + _bytes(2, _scope() + body))


_SPAN_TAG = _key(2, 2)
_TRACE_ID, _SPAN_ID, _PARENT_ID = _key(1, 2) + b"\x10", _key(2, 2) + b"\x08", _key(4, 2) + b"\x08"
_KIND, _START, _END = _key(6, 0), _key(7, 1), _key(8, 1)
_FLAGS = _key(16, 5) + struct.pack("<I", 1)  # W3C trace flags: sampled
_TIMES = struct.Struct("<Q")


def _span(span: Any) -> bytes:
    out = [_TRACE_ID, span.trace_id, _SPAN_ID, span.span_id]
    if span.parent_id:
        out += (_PARENT_ID, span.parent_id)
    out += (
        _str(5, span.name),
        _KIND + _SMALL[span.kind] if span.kind else b"",
        _START + _TIMES.pack(span.start_ns),
        _END + _TIMES.pack(span.end_ns),
        _attributes(9, span.attributes),
    )
    for at, name, attributes in span.events:
        out.append(_bytes(11, _fixed64(1, at) + _str(2, name) + _attributes(3, attributes)))
    if span.status_code:
        out.append(_bytes(15, _str(2, span.status_message) + _uint(3, span.status_code)))
    out.append(_FLAGS)
    return b"".join(out)


class MetricPoint:
    """One data point: a counter's or gauge's value for one attribute set."""

    __slots__ = ("attributes", "value")

    def __init__(self, attributes: Mapping[str, Any], value: float) -> None:
        self.attributes = attributes
        self.value = value


class Histogram:
    """One histogram data point: counts per bucket of ``bounds``."""

    __slots__ = ("attributes", "bounds", "count", "counts", "total")

    def __init__(self, attributes: Mapping[str, Any], bounds: Sequence[float]) -> None:
        self.attributes = attributes
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(bounds) + 1)
        self.count = 0
        self.total = 0.0

    def record(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # the first bucket whose bound is >= value
        self.count += 1
        self.total += value

    def copy(self) -> Histogram:
        made = Histogram(self.attributes, self.bounds)
        made.counts, made.count, made.total = list(self.counts), self.count, self.total
        return made


def encode_metrics(
    resource: Mapping[str, Any],
    start_ns: int,
    now_ns: int,
    metrics: Sequence[tuple[str, str, str, str, Sequence[Any]]],
) -> bytes:
    """One ``ExportMetricsServiceRequest``: ``(name, description, unit, kind, points)`` with kind
    ``counter`` (a monotonic cumulative sum), ``updown`` (a non-monotonic one), ``gauge`` or
    ``histogram``."""
    encoded = b"".join(_bytes(2, _metric(m, start_ns, now_ns)) for m in metrics if m[4])
    return _bytes(1, _resource(resource) + _bytes(2, _scope() + encoded))


def _metric(metric: tuple[str, str, str, str, Sequence[Any]], start_ns: int, now_ns: int) -> bytes:
    name, description, unit, kind, points = metric
    head = _str(1, name) + _str(2, description) + _str(3, unit)
    if kind == "histogram":
        data = b"".join(_bytes(1, _histogram_point(p, start_ns, now_ns)) for p in points)
        return head + _bytes(9, data + _uint(2, 2))
    data = b"".join(_bytes(1, _number_point(p, start_ns, now_ns)) for p in points)
    if kind == "gauge":
        return head + _bytes(5, data)
    monotonic = _uint(3, 1) if kind == "counter" else b""
    return head + _bytes(7, data + _uint(2, 2) + monotonic)  # cumulative


def _number_point(point: MetricPoint, start_ns: int, now_ns: int) -> bytes:
    return (
        _fixed64(2, start_ns)
        + _fixed64(3, now_ns)
        + _double(4, float(point.value))
        + _attributes(7, point.attributes)
    )


def _histogram_point(point: Histogram, start_ns: int, now_ns: int) -> bytes:
    counts = b"".join(struct.pack("<Q", c) for c in point.counts)
    bounds = b"".join(struct.pack("<d", b) for b in point.bounds)
    return (
        _fixed64(2, start_ns)
        + _fixed64(3, now_ns)
        + _fixed64(4, point.count)
        + _double(5, point.total)
        + _bytes(6, counts)
        + _bytes(7, bounds)
        + _attributes(9, point.attributes)
    )
