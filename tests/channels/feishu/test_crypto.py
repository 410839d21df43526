"""Feishu/Lark webhook crypto against the platform's documented examples, and the frame codec."""

from __future__ import annotations

import hashlib
import json

import pytest

from fastagent_cli.channels.feishu.crypto import (
    DecryptError,
    decrypt_event,
    encrypt_event,
    event_signature,
    verify_signature,
)
from fastagent_cli.channels.feishu.frames import CONTROL, DATA, Frame, decode_frame, encode_frame


def test_the_documented_decryption_example() -> None:
    # open.feishu.cn "Encrypt Key encryption configuration case": key "test key".
    assert decrypt_event("test key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=") == "hello world"


def test_round_trip_wrong_key_and_garbage() -> None:
    body = json.dumps({"schema": "2.0", "header": {"event_type": "im.message.receive_v1"}})
    encrypted = encrypt_event("k3y", body, b"0123456789abcdef")
    assert decrypt_event("k3y", encrypted) == body
    with pytest.raises(DecryptError):
        decrypt_event("another key", encrypted)
    for garbage in ("not base64!!", "AAAA", "QUJDREVGR0hJSktMTU5PUA=="):
        with pytest.raises(DecryptError):
            decrypt_event("k3y", garbage)


def test_the_signature_is_sha256_of_timestamp_nonce_key_and_the_raw_body() -> None:
    raw = b'{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}'
    expected = hashlib.sha256(b"1700000000" + b"n0nce" + b"test key" + raw).hexdigest()
    assert event_signature("test key", "1700000000", "n0nce", raw) == expected
    assert verify_signature("test key", "1700000000", "n0nce", expected, raw)
    assert verify_signature("test key", "1700000000", "n0nce", expected.upper(), raw)
    assert not verify_signature("test key", "1700000001", "n0nce", expected, raw)
    assert not verify_signature("test key", "1700000000", "n0nce", expected, raw + b" ")


def test_frames_round_trip_and_decode_what_the_sdk_writes() -> None:
    frame = Frame(
        seq_id=7, log_id=9, service=-1, method=DATA, headers=[("type", "event"), ("sum", "1")], payload=b"{}"
    )
    back = decode_frame(encode_frame(frame))
    assert (back.seq_id, back.log_id, back.service, back.method) == (7, 9, -1, DATA)
    assert back.header("type") == "event" and back.payload == b"{}"
    # A ping as lark-oapi's protobuf serializer writes it (service 42).
    sdk_ping = bytes.fromhex("08001000182a20002a0c0a0474797065120470696e67")
    ping = decode_frame(sdk_ping)
    assert (ping.service, ping.method, ping.header("type")) == (42, CONTROL, "ping")
    assert encode_frame(ping) == sdk_ping
    with pytest.raises(ValueError):
        decode_frame(b"\x08")
