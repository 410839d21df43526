"""Machine state under ``.fastagent/``: atomic JSON, whole-line JSONL, file locks, paths."""

from fastagent_cli.state.atomic import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    make_private_dir,
    read_json,
    read_jsonl,
)
from fastagent_cli.state.locks import FileLock
from fastagent_cli.state.paths import resolve_sessions_dir, resolve_state_root

__all__ = [
    "FileLock",
    "append_jsonl",
    "atomic_write_json",
    "atomic_write_text",
    "make_private_dir",
    "read_json",
    "read_jsonl",
    "resolve_sessions_dir",
    "resolve_state_root",
]
