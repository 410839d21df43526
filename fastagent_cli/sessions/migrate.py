"""Records of the flat layout moved into pi's layout: once, atomically, losing nothing.

Until this layout a record was ``<sessions dir>/s<escaped id>.jsonl``, its header carrying a random
``id`` and the caller's id in ``fastagentSession``. A file store moves every such file into its
workspace directory the first time it is used (afterwards the check is one listing of the
sessions directory, which then holds only directories):

1. the target is named from the header's creation time and the caller id, so a run after a crash
   picks the same target;
2. the record is written there complete (pi's header: ``id`` the encoded caller id, the creation
   time, ``cwd`` and ``parentSession`` kept; then every line after the old header, byte for byte)
   as a temp file, fsynced, renamed into place, the directory fsynced;
3. only then is the old file removed (and its directory fsynced).

A crash anywhere leaves the old file, which stays the truth until step 3, and at most a complete
copy. The next run recognises the copy (it equals the old file's content, or continues it with
entries appended since) and finishes by removing the old file. A target that holds anything else
is left alone with a warning, and so is a file that is not a record. Each session moves under its
lease, so a turn still writing to it (an older fastagent, say) is never cut off: a busy session
moves on a later run. ``.locks/migrate.lock`` keeps two processes from migrating at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.encoding import decode_session_id
from fastagent_cli.sessions.layout import encode_id, record_name, stamp_of
from fastagent_cli.state.atomic import dumps_line, make_private_dir, publish_file, remove_file
from fastagent_cli.state.locks import FileLock, LockTimeoutError

__all__ = ["Migration", "legacy_records", "migrate_flat_records"]

log = logging.getLogger("fastagent.sessions")

Lease = Callable[[str], Callable[[], None] | None]
_LOCK_WAIT = 60.0


@dataclass(slots=True)
class Migration:
    """What a run did: the sessions moved (id, new file) and the files left where they were."""

    moved: list[tuple[str, Path]] = field(default_factory=list)
    left: list[tuple[Path, str]] = field(default_factory=list)


def legacy_records(root: Path) -> list[Path]:
    """The flat-layout record files directly in ``root``."""
    try:
        with os.scandir(root) as entries:
            return sorted(
                Path(e.path)
                for e in entries
                if e.name.startswith("s") and e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
            )
    except (FileNotFoundError, NotADirectoryError):
        return []


def migrate_flat_records(
    root: Path,
    target_dir: Path,
    lease: Lease,
    on_moved: Callable[[str, Path], None] | None = None,
) -> Migration:
    """Move the flat-layout records of ``root`` into ``target_dir`` (see the module notes)."""
    done = Migration()
    if not legacy_records(root):
        return done
    lock = FileLock(root / ".locks" / "migrate.lock", timeout=_LOCK_WAIT)
    try:
        lock.acquire()
    except LockTimeoutError:
        raise SessionError(
            f"cannot move the session records of {root} into the new layout: another process has "
            f"been doing it for over {_LOCK_WAIT:.0f} s"
        ) from None
    try:
        try:
            make_private_dir(target_dir)
        except OSError as exc:
            raise SessionError(
                f"cannot create {target_dir} for the session records: {exc.strerror or exc}"
            ) from exc
        for path in legacy_records(root):  # again, under the lock: another process may have moved them
            _move(path, target_dir, lease, done, on_moved)
    finally:
        lock.release()
    for path, reason in done.left:
        log.warning("[sessions] %s stays where it is: %s", path, reason)
    return done


def _move(
    path: Path,
    target_dir: Path,
    lease: Lease,
    done: Migration,
    on_moved: Callable[[str, Path], None] | None,
) -> None:
    header = _header(path)
    if header is None:
        done.left.append((path, "not a session record (line 1 is no session header)"))
        return
    session = header.get("fastagentSession")
    if not isinstance(session, str):
        session = decode_session_id(path.stem)
    if session is None:
        done.left.append((path, "its session id cannot be told from the file"))
        return
    release = lease(session)
    if release is None:
        done.left.append((path, f"session {session!r} is busy; it moves on a later start"))
        return
    try:
        data = path.read_bytes()  # under the lease: nothing appends to it any more
        st = path.stat()
        _, newline, body = data.partition(b"\n")
        content = (dumps_line(_pi_header(header, session)) + "\n").encode("utf-8") + (
            body if newline else b""
        )
        target = target_dir / record_name(stamp_of(header, st.st_mtime), session)
        existing = _read_or_none(target)
        if existing is None or (content.startswith(existing) and existing != content):
            publish_file(target, content, mode=0o600, replace=True)
        elif not existing.startswith(content):
            done.left.append((path, f"{target} exists and holds another record"))
            return
        remove_file(path)
    except OSError as exc:
        done.left.append((path, f"cannot move it: {exc.strerror or exc}"))
        return
    finally:
        release()
    done.moved.append((session, target))
    if on_moved is not None:
        on_moved(session, target)


def _header(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
        header = json.loads(first)
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) and header.get("type") == "session" else None


def _pi_header(old: dict[str, Any], session: str) -> dict[str, Any]:
    header: dict[str, Any] = {
        "type": "session",
        "version": old.get("version", 3),
        "id": encode_id(session),
        "timestamp": old.get("timestamp"),
        "cwd": old.get("cwd"),
    }
    header.update(
        (k, v)
        for k, v in old.items()
        if k not in ("type", "version", "id", "timestamp", "cwd", "fastagentSession")
    )
    return header


def _read_or_none(path: Path) -> bytes | None:
    with contextlib.suppress(FileNotFoundError):
        return path.read_bytes()
    return None
