"""The Feishu/Lark long-connection frame (``pbbp2.Frame``), encoded and decoded by hand. Pure.

The official SDKs speak protobuf over a WebSocket::

    message Header { required string key = 1; required string value = 2; }
    message Frame {
      required uint64 SeqID = 1;  required uint64 LogID = 2;
      required int32 service = 3; required int32 method = 4;     // method: 0 control, 1 data
      repeated Header headers = 5;
      optional string payload_encoding = 6; optional string payload_type = 7;
      optional bytes payload = 8; optional string LogIDNew = 9;
    }

Control frames carry ``type: ping`` / ``type: pong`` (a pong's payload may be the client config);
data frames carry ``type: event`` (or ``card``: a card callback), ``message_id``, ``sum``/``seq`` (a
payload split in parts) and ``trace_id``, and are answered with the same frame whose payload is
``{"code": 200, "headers": null, "data": null}`` (or 500; a card's answer as base64 JSON ``data``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CONTROL", "DATA", "Frame", "decode_frame", "encode_frame"]

CONTROL = 0
DATA = 1


@dataclass(slots=True)
class Frame:
    seq_id: int = 0
    log_id: int = 0
    service: int = 0
    method: int = CONTROL
    headers: list[tuple[str, str]] = field(default_factory=list)
    payload_encoding: str | None = None
    payload_type: str | None = None
    payload: bytes | None = None
    log_id_new: str | None = None

    def header(self, key: str) -> str | None:
        return next((value for name, value in self.headers if name == key), None)


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32 values travel as 10-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _bytes_field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def encode_frame(frame: Frame) -> bytes:
    out = bytearray()
    out += _int_field(1, frame.seq_id)
    out += _int_field(2, frame.log_id)
    out += _int_field(3, frame.service)
    out += _int_field(4, frame.method)
    for key, value in frame.headers:
        out += _bytes_field(5, _bytes_field(1, key.encode()) + _bytes_field(2, value.encode()))
    for number, text in ((6, frame.payload_encoding), (7, frame.payload_type)):
        if text is not None:
            out += _bytes_field(number, text.encode())
    if frame.payload is not None:
        out += _bytes_field(8, frame.payload)
    if frame.log_id_new is not None:
        out += _bytes_field(9, frame.log_id_new.encode())
    return bytes(out)


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def decode_frame(data: bytes) -> Frame:
    """A frame from its bytes; :class:`ValueError` when they are not one."""
    frame = Frame()
    for number, value in _fields(data):
        if isinstance(value, int):
            if number == 1:
                frame.seq_id = value
            elif number == 2:
                frame.log_id = value
            elif number == 3:
                frame.service = _signed32(value)
            elif number == 4:
                frame.method = _signed32(value)
        elif number == 5:
            parts = dict(_fields(value))
            key, val = parts.get(1, b""), parts.get(2, b"")
            if isinstance(key, bytes) and isinstance(val, bytes):
                frame.headers.append((key.decode(), val.decode()))
        elif number == 6:
            frame.payload_encoding = value.decode()
        elif number == 7:
            frame.payload_type = value.decode()
        elif number == 8:
            frame.payload = value
        elif number == 9:
            frame.log_id_new = value.decode()
    return frame
