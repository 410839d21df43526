"""Sessions: pi v3 JSONL records, file and memory stores, injective ids, the lease."""

from fastagent_cli.sessions.encoding import decode_session_id, encode_session_id
from fastagent_cli.sessions.inherit import Inheritance
from fastagent_cli.sessions.record import SessionContext, SessionRecord
from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore, Release, SessionStore

__all__ = [
    "FileSessionStore",
    "Inheritance",
    "MemorySessionStore",
    "Release",
    "SessionContext",
    "SessionRecord",
    "SessionStore",
    "decode_session_id",
    "encode_session_id",
]
