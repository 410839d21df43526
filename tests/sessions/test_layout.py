"""pi's layout, byte for byte: the workspace directory, the file name and the id encoding.

The expected spellings were produced by the original's own functions (its ``encodeSessionId`` and
pi's ``getDefaultSessionDir`` munging, run under Node 20): a record written here must land where
they look, under the id they compare.
"""

from __future__ import annotations

import random

import pytest

from fastagent_cli.sessions.index import name_key
from fastagent_cli.sessions.layout import (
    caller_id,
    decode_id,
    decode_spec_id,
    encode_id,
    record_key,
    record_name,
    spec_id,
    spec_key,
    spec_record_name,
    stamp_of,
    workspace_dirname,
)

SPEC = [
    # what the original after 0.18 spells (its piSessionId, session-store.ts, run under Node 22)
    ("-1001234567890", "s-1001234567890"),
    ("telegram:42", "stelegram_3A42"),
    ("feishu:oc_abc/123", "sfeishu_3Aoc_5Fabc_2F123"),
    ("slack:T1:C2:1700000000.1", "sslack_3AT1_3AC2_3A1700000000.1"),
    ("schedule:digest", "sschedule_3Adigest"),
    ("a b", "sa_20b"),
    ("_", "s_5F"),
    ("%", "s_25"),
    ("é", "s_E9"),
    ("中", "s_u4E2D"),
    ("😀", "s_uD83D_uDE00"),
    ("\ud800", "s_uD800"),
    ("\u0100", "s_u0100"),
    ("\u0010" + "0", "s_100"),
    ("..", "s._2E"),
    ("x/../../etc", "sx_2F.._2F.._2Fetc"),
    ("ends.", "sends_2E"),
    ("ends-", "sends_2D"),
    ("s42", "ss42"),
    ("42", "s42"),
    ("", "s"),
]


@pytest.mark.parametrize(("session", "encoded"), SPEC)
def test_new_ids_are_spelled_as_the_spec_and_the_original_after_018_spell_them(
    session: str, encoded: str
) -> None:
    assert spec_id(session) == encoded
    assert decode_spec_id(encoded) == session
    assert caller_id({"type": "session", "id": encoded}, spec=True) == session
    assert (
        spec_record_name("2026-03-15T10:00:00.000Z", session) == f"2026-03-15T10-00-00-000Z_{encoded}.jsonl"
    )


def test_the_spec_spelling_is_injective_and_decodes_only_canonical_names() -> None:
    rng = random.Random(26)
    alphabet = "aZ09.-_%:/ \u00e9\u0100\u4e2d\U0001f600\ud800s"
    seen: dict[str, str] = {}
    for _ in range(5000):
        session = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        encoded = spec_id(session)
        assert seen.setdefault(encoded, session) == session
        assert decode_spec_id(encoded) == session
        assert not encoded.endswith((".", "-")) and not encoded.startswith(".")
    for foreign in ("telegram%3A42", "s_3a", "s_", "s_u12", "s.", "-100", "0193a6f2-uuid"):
        assert decode_spec_id(foreign) is None
    assert caller_id({"type": "session", "id": "0193a6f2-uuid"}, spec=True) == "0193a6f2-uuid"  # pi's own


def test_a_long_spec_id_is_shortened_in_the_file_name_only() -> None:
    session = "x" * 300
    key = spec_key(session)
    assert len(key) < 200 and key.startswith("s" + "x" * 99 + "~")
    assert spec_key("short") == "sshort"


ORIGINAL = [
    ("-1001234567890", "-1001234567890"),
    ("telegram:42", "telegram%3A42"),
    ("feishu:oc_abc/123", "feishu%3Aoc_abc%2F123"),
    ("slack:T1:C2:1700000000.1", "slack%3AT1%3AC2%3A1700000000.1"),
    ("schedule:digest", "schedule%3Adigest"),
    ("a b", "a%20b"),
    ("%", "%25"),
    ("é", "%E9"),
    ("中", "%u4E2D"),
    ("😀", "%uD83D%uDE00"),
    ("\ud800", "%uD800"),
    ("\u0100", "%u0100"),
    ("\u0010" + "0", "%100"),
    ("..", ".."),
    ("x/../../etc", "x%2F..%2F..%2Fetc"),
]


@pytest.mark.parametrize(("session", "encoded"), ORIGINAL)
def test_ids_encode_as_the_original_encodes_them(session: str, encoded: str) -> None:
    assert encode_id(session) == encoded
    assert decode_id(encoded) == session


@pytest.mark.parametrize(
    ("cwd", "dirname"),
    [
        ("/home/u/proj", "--home-u-proj--"),
        ("C:\\Users\\u\\proj", "--C--Users-u-proj--"),
        ("\\\\server\\share\\x", "---server-share-x--"),
        ("/a:b/c d", "--a-b-c d--"),
    ],
)
def test_the_workspace_directory_is_pis(cwd: str, dirname: str) -> None:
    assert workspace_dirname(cwd) == dirname


def test_the_file_name_is_the_creation_time_and_the_encoded_id() -> None:
    name = record_name("2026-03-15T10:00:05.123Z", "telegram:42")
    assert name == "2026-03-15T10-00-05-123Z_telegram%3A42.jsonl"  # as Node's toISOString() gives it
    assert name_key(name) == "telegram%3A42"
    assert name_key("notes.jsonl") is None
    assert name_key("2026-03-15T10-00-05-123Z_x.json") is None
    assert name_key("2026-03-15T10:00:05.123Z_x.jsonl") is None


def test_decoding_is_strict_and_round_trips() -> None:
    for bad in ["%41", "%e9", "%", "%u12", "%uD83", "a b", "é"]:
        assert decode_id(bad) is None, bad
    rng = random.Random(19)
    alphabet = [
        "a",
        "Z",
        "0",
        ".",
        "-",
        "_",
        ":",
        "/",
        "%",
        "u",
        " ",
        "é",
        "中",
        "😀",
        "\ud83d",
        "\ude00",
        "~",
    ]
    for _ in range(2000):
        session = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        encoded = encode_id(session)
        decoded = decode_id(encoded)
        assert decoded is not None and encode_id(decoded) == encoded


def test_a_surrogate_pair_is_one_character_as_in_javascript() -> None:
    assert encode_id("\ud83d\ude00") == encode_id("😀")  # the same UTF-16 string the original sees
    assert decode_id("%uD83D%uDE00") == "😀"


def test_long_ids_are_shortened_in_the_name_only() -> None:
    long_a, long_b = "中" * 60, "中" * 59 + "文"
    name_a, name_b = (
        record_name("2026-03-15T10:00:05.123Z", long_a),
        record_name("2026-03-15T10:00:05.123Z", long_b),
    )
    assert name_a != name_b and len(name_a.encode()) <= 255 and "~" in name_a
    assert name_key(name_a) == record_key(long_a) != record_key(long_b)
    assert record_key("x" * 200) == "x" * 200  # at the limit: whole


def test_the_caller_id_comes_from_the_header() -> None:
    assert caller_id({"type": "session", "id": "telegram%3A42"}) == "telegram:42"
    assert caller_id({"type": "session", "id": "0199a8f2-7c1e-7a55"}) == "0199a8f2-7c1e-7a55"  # pi's
    assert caller_id({"type": "session", "id": "a b"}) == "a b"  # not an encoding: itself
    assert caller_id({"type": "session", "id": "u", "fastagentSession": "old:1"}) == "old:1"  # before
    assert caller_id({"type": "session"}) is None


def test_the_stamp_falls_back_to_the_file_time() -> None:
    assert stamp_of({"timestamp": "2026-03-15T10:00:05.123Z"}, 0) == "2026-03-15T10:00:05.123Z"
    assert stamp_of({"timestamp": "yesterday"}, 1773568805.123) == "2026-03-15T10:00:05.123Z"
