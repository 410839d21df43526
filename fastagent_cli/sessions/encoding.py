"""Injective file names for arbitrary caller session ids.

Caller ids are opaque: a Telegram group is ``-1001234567890``, a Feishu thread carries ``:`` and
``/``. On disk every id becomes ``s`` + an escaped form:

* ``[A-Za-z0-9.-]`` stand for themselves (``-1001234567890`` -> ``s-1001234567890``);
* ``_`` and every other character are escaped: ``_xx`` (code point < 0x100, lowercase hex),
  ``_uxxxx`` (BMP, lone surrogates included) or ``_Uxxxxxxxx``;
* a trailing ``.`` or ``-`` is escaped too, so no name ends in one;
* the ``s`` prefix means no name starts with ``.``: ``..`` and ``/`` can never escape the directory.

The escape is a prefix code (``u`` and ``U`` are not hex digits), so decoding is unambiguous and
the mapping is injective. An id whose escaped form would exceed a file system's name limit is
shortened to a readable prefix plus ``~`` and the SHA-256 of the id (``~`` never appears in the
escaped form); the full id is kept in the record's header.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["decode_session_id", "encode_session_id"]

_SAFE = re.compile(r"[A-Za-z0-9.\-]")
_MAX_NAME = 200


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"_{code:02x}"
    if code < 0x10000:
        return f"_u{code:04x}"
    return f"_U{code:08x}"


def encode_session_id(session: str) -> str:
    """The file stem for ``session`` (without the ``.jsonl`` extension)."""
    parts = [ch if _SAFE.match(ch) else _escape(ch) for ch in session]
    if parts and parts[-1] in (".", "-"):
        parts[-1] = _escape(parts[-1])
    name = "s" + "".join(parts)
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()
    return name[:100] + "~" + digest


def decode_session_id(name: str) -> str | None:
    """The caller id a file stem stands for; ``None`` for a hashed (shortened) or foreign name."""
    if not name.startswith("s") or "~" in name:
        return None
    out: list[str] = []
    i = 1
    try:
        while i < len(name):
            ch = name[i]
            if ch != "_":
                out.append(ch)
                i += 1
            elif name[i + 1] == "u":
                out.append(chr(int(name[i + 2 : i + 6], 16)))
                i += 6
            elif name[i + 1] == "U":
                out.append(chr(int(name[i + 2 : i + 10], 16)))
                i += 10
            else:
                out.append(chr(int(name[i + 1 : i + 3], 16)))
                i += 3
    except (IndexError, ValueError):
        return None
    return "".join(out)
