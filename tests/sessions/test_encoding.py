from __future__ import annotations

import random
from pathlib import Path

import pytest

from fastagent_cli.sessions.encoding import decode_session_id, encode_session_id

CASES = {
    "-1001234567890": "s-1001234567890",
    "abc": "sabc",
    "a_b": "sa_5fb",
    "feishu:oc_1/thread": "sfeishu_3aoc_5f1_2fthread",
    "..": "s._2e",
    "../../etc/passwd": "s.._2f.._2fetc_2fpasswd",
    "x\x00y": "sx_00y",
    "é": "s_e9",
    "日本": "s_u65e5_u672c",
    "🙂": "s_U0001f642",
    "\ud800": "s_ud800",
    "ends-": "sends_2d",
    "ends.": "sends_2e",
    "": "s",
}


@pytest.mark.parametrize(("raw", "encoded"), sorted(CASES.items()))
def test_known_encodings_round_trip(raw: str, encoded: str) -> None:
    assert encode_session_id(raw) == encoded
    assert decode_session_id(encoded) == raw


def test_encoding_is_injective_on_random_ids() -> None:
    rng = random.Random(7)
    alphabet = "aZ09._-:/\\ \x00é日🙂_\ud800%"
    seen: dict[str, str] = {}
    for _ in range(20_000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        name = encode_session_id(raw)
        assert seen.setdefault(name, raw) == raw, f"{raw!r} and {seen[name]!r} collide as {name}"
        assert decode_session_id(name) == raw


def test_names_stay_inside_the_directory(tmp_path: Path) -> None:
    for raw in ("..", "../x", "/abs", "a/../../b", ".hidden", "\x00"):
        name = encode_session_id(raw)
        assert "/" not in name and "\x00" not in name and not name.startswith(".")
        assert (tmp_path / f"{name}.jsonl").resolve().parent == tmp_path.resolve()


def test_long_ids_are_shortened_with_a_hash() -> None:
    long_a = "x" * 500
    long_b = "x" * 499 + "y"
    name_a, name_b = encode_session_id(long_a), encode_session_id(long_b)
    assert name_a != name_b
    assert len(name_a) < 200 and "~" in name_a
    assert decode_session_id(name_a) is None
