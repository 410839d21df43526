"""pi's session layout: where a record lives, what it is called, and which id its header carries.

New records are written in the spec's layout, as the original writes them after 0.18 (its
``piSessionRecordStore``)::

    <sessions dir>/agent-session/<ISO timestamp, ":" "." as "->_<spec id>.jsonl

one directory for every workspace (a record belongs to the workspace its header's ``cwd`` names),
the header's ``id`` the spec's spelling of the caller id (:func:`spec_id`): ``s``, then
``[A-Za-z0-9.-]`` as themselves and every other UTF-16 code unit as ``_XX`` (below 0x100) or
``_uXXXX``, upper-case hex, a trailing ``.`` or ``-`` escaped too (``-1001234567890`` ->
``s-1001234567890``, ``telegram:-100123`` -> ``stelegram_3A-100123``). It is injective within its
directory; the older spelling below draws from the same characters (a room called ``s42`` is
``s42`` there, and ``42`` is ``s42`` here), which is why the two never share a directory and a
record's id is decoded by the directory it is in.

Records written before (by the original 0.18 and by this package until the spec's layout) stay
where they are and are continued in place, so a 0.18 original still reads them back::

    <sessions dir>/--<workspace, "/" "\\" ":" as "-">--/<ISO timestamp, ":" "." as "->_<id>.jsonl

e.g. ``/home/u/proj`` and ``telegram:-100123`` at ``2026-03-15T10:00:00.000Z`` is
``--home-u-proj--/2026-03-15T10-00-00-000Z_telegram%3A-100123.jsonl``, and the header's ``id`` is
the *encoded* caller id (``telegram%3A-100123``), which is what the original matches when it looks
a session up. The encoding is the original's, so both find each other's records:

* ``[A-Za-z0-9._-]`` stand for themselves; every other UTF-16 code unit becomes ``%XX`` (below
  0x100) or ``%uXXXX``, upper-case hex (an emoji is two ``%u`` escapes, as in JavaScript);
* it is injective (``%`` escapes itself, ``u`` is not a hex digit), so the caller id is decoded
  back from the header; a name that is not a canonical encoding (pi's own UUIDs are) stands for
  itself.

An encoded id too long for a file name (over 200 characters) is shortened *in the file name
only* to a readable prefix, ``~`` and the SHA-256 of the encoded id (``~`` never occurs in an
encoding); the header keeps the whole id.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "MAX_KEY",
    "OWN_RECORDS_DIR",
    "caller_id",
    "decode_id",
    "decode_spec_id",
    "encode_id",
    "file_stamp",
    "record_key",
    "record_name",
    "shortened",
    "spec_id",
    "spec_key",
    "spec_record_name",
    "stamp_of",
    "workspace_dirname",
]

OWN_RECORDS_DIR = "agent-session"
"""The directory of the sessions directory that holds the records of the spec's layout."""

MAX_KEY = 200
"""Longest encoded id kept whole in a file name (24 + 1 + 200 + 6 characters, under 255 bytes)."""

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_HEX = frozenset("0123456789ABCDEF")
_SPEC_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")


def workspace_dirname(cwd: str) -> str:
    """``/home/u/proj`` -> ``--home-u-proj--`` (pi's per-workspace directory)."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def file_stamp(iso: str) -> str:
    """``2026-03-15T10:00:00.000Z`` -> ``2026-03-15T10-00-00-000Z``."""
    return iso.replace(":", "-").replace(".", "-")


def stamp_of(header: dict[str, Any], fallback: float) -> str:
    """The header's creation time if it is an ISO timestamp as pi writes them, else ``fallback``
    (seconds since the epoch) in that form."""
    stamp = header.get("timestamp")
    if isinstance(stamp, str) and _ISO.fullmatch(stamp):
        return stamp
    moment = datetime.fromtimestamp(fallback, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _units(text: str) -> list[int]:
    out: list[int] = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out += [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]
        else:
            out.append(code)
    return out


def encode_id(session: str) -> str:
    """The original's file-safe spelling of a caller id (what its headers carry)."""
    out: list[str] = []
    for unit in _units(session):
        ch = chr(unit)
        if ch in _SAFE:
            out.append(ch)
        elif unit < 0x100:
            out.append(f"%{unit:02X}")
        else:
            out.append(f"%u{unit:04X}")
    return "".join(out)


def decode_id(encoded: str) -> str | None:
    """The caller id ``encoded`` spells; ``None`` when it is not a canonical encoding."""
    units: list[int] = []
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch in _SAFE:
            units.append(ord(ch))
            i += 1
            continue
        if ch != "%":
            return None
        width, start = (4, i + 2) if encoded.startswith("u", i + 1) else (2, i + 1)
        digits = encoded[start : start + width]
        if len(digits) != width or not set(digits) <= _HEX:
            return None
        units.append(int(digits, 16))
        i = start + width
    raw = b"".join(unit.to_bytes(2, "little") for unit in units)
    decoded = raw.decode("utf-16-le", "surrogatepass")
    return decoded if encode_id(decoded) == encoded else None


def spec_id(session: str) -> str:
    """The spec's spelling of a caller id (the original's ``piSessionId``): what the header of a
    record in :data:`OWN_RECORDS_DIR` carries."""
    out = ["s"]
    for unit in _units(session):
        ch = chr(unit)
        out.append(ch if ch in _SPEC_SAFE else f"_{unit:02X}" if unit < 0x100 else f"_u{unit:04X}")
    if out[-1] in (".", "-"):
        out[-1] = f"_{ord(out[-1]):02X}"
    return "".join(out)


def decode_spec_id(encoded: str) -> str | None:
    """The caller id ``encoded`` spells in the spec's layout; ``None`` when it is not one."""
    if not encoded.startswith("s"):
        return None
    units: list[int] = []
    i = 1
    while i < len(encoded):
        ch = encoded[i]
        if ch != "_":
            units.append(ord(ch))
            i += 1
            continue
        width, start = (4, i + 2) if encoded.startswith("u", i + 1) else (2, i + 1)
        digits = encoded[start : start + width]
        if len(digits) != width or not set(digits) <= _HEX:
            return None
        units.append(int(digits, 16))
        i = start + width
    raw = b"".join(unit.to_bytes(2, "little") for unit in units)
    decoded = raw.decode("utf-16-le", "surrogatepass")
    return decoded if spec_id(decoded) == encoded else None


def shortened(key: str) -> str:
    """``key`` as the id part of a file name: whole up to :data:`MAX_KEY` characters, else a
    readable prefix, ``~`` and its SHA-256 (the header keeps the whole id)."""
    if len(key) <= MAX_KEY:
        return key
    return key[:100] + "~" + hashlib.sha256(key.encode("ascii")).hexdigest()


def record_key(session: str) -> str:
    """The id part of a record's file name in the older layout: the encoded id, shortened when
    it is too long."""
    return shortened(encode_id(session))


def spec_key(session: str) -> str:
    """The id part of a record's file name in the spec's layout."""
    return shortened(spec_id(session))


def record_name(iso: str, session: str) -> str:
    return f"{file_stamp(iso)}_{record_key(session)}.jsonl"


def spec_record_name(iso: str, session: str) -> str:
    return f"{file_stamp(iso)}_{spec_key(session)}.jsonl"


def caller_id(header: dict[str, Any], *, spec: bool = False) -> str | None:
    """The caller's id of a record, from its header: the id decoded (``spec``: a record of the
    spec's layout, else the older spelling; a pi UUID is itself); the ``fastagentSession`` field
    of a record written before pi's layout."""
    legacy = header.get("fastagentSession")
    if isinstance(legacy, str):
        return legacy
    ident = header.get("id")
    if not isinstance(ident, str) or not ident:
        return None
    decoded = decode_spec_id(ident) if spec else decode_id(ident)
    return ident if decoded is None else decoded
