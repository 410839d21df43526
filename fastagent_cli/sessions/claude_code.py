"""A second session writer: each session also as a Claude Code transcript (``claude_code_sessions``).

The same ordered transcript the pi record holds is appended to
``$CLAUDE_CONFIG_DIR/projects/<munged cwd>/<uuid>.jsonl`` (``~/.claude`` without the variable) in
Claude Code's record format, so ``claude --resume <uuid>`` shows the conversation:

* ``user`` records (a prompt; tool results as ``tool_result`` blocks with ``toolUseResult``),
  ``assistant`` records (one per content block, sharing ``message.id`` and ``requestId``),
  notices as ``queue-operation`` ``enqueue`` / ``remove`` plus a ``queued_command`` attachment
  (``commandMode: "task-notification"``), a compaction as a ``compact_boundary`` system record and
  its summary, the session name as ``custom-title``; the envelope of every record is Claude
  Code's (``parentUuid``, ``isSidechain``, ``userType``, ``cwd``, ``sessionId``, ``version``,
  ``gitBranch``, ``uuid``, ``timestamp``).
* Record uuids are derived from the file's session id and the pi entry id, so the chain is
  computed, never stored, and a restarted process finds exactly what the file lacks: on the first
  write of a process the file is read and every missing entry of the active path is appended
  (backfill), then each new entry as it is recorded.
* Files are created exclusively (``O_CREAT | O_EXCL``, mode 0600), never truncated or rewritten:
  appends only, each entry's lines in one write, flushed. A file whose last line is incomplete
  (a process killed mid-write) is left alone: the session moves to a new file (the next id of its
  sequence), backfilled whole.

A write that fails is logged once and the mirror stops for that session; the run never fails
for it. Paths longer than 200 characters are cut and suffixed with a hash (Claude Code does the
same with its own hash, so such a directory name differs from Claude Code's).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastagent_cli.contract import json_text
from fastagent_cli.sessions.claude_records import ClaudeFile, ClaudeRecords
from fastagent_cli.sessions.listing import SessionSummary
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.sessions.store import Inheritance, SessionLease, SessionStore

__all__ = ["ClaudeCodeMirror", "MirroredStore", "claude_projects_dir", "munge_cwd"]

log = logging.getLogger("fastagent.sessions")

Entry = dict[str, Any]
_NAMESPACE = uuid.UUID("6f1d5a52-2f0e-4b8e-9a51-0b7c2f7d9e31")
_MAX_NAME = 200
_GENERATIONS = 100


def munge_cwd(cwd: str) -> str:
    """Claude Code's project directory name: every non-alphanumeric character becomes ``-``."""
    name = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    if len(name) > _MAX_NAME:
        name = f"{name[:_MAX_NAME]}-{hashlib.sha256(cwd.encode()).hexdigest()[:8]}"
    return name


def claude_projects_dir(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    root = environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(root).expanduser() / "projects"


def _git_branch(cwd: Path) -> str:
    for directory in (cwd, *cwd.parents):
        head = directory / ".git" / "HEAD"
        try:
            text = head.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        return text.removeprefix("ref: refs/heads/") if text.startswith("ref: ") else "HEAD"
    return ""


class ClaudeCodeMirror:
    """The mirror for one agent: attach it to each record a run opens (see the module doc)."""

    def __init__(self, cwd: str, projects: Path | None = None, *, scope: str = "") -> None:
        self.cwd = cwd
        self.projects = projects
        self.scope = scope
        """What tells this agent's sessions from another's in the same workspace (its sessions
        directory): part of each file's id."""

    def directory(self) -> Path:
        return (self.projects or claude_projects_dir()) / munge_cwd(self.cwd)

    def attach(self, record: SessionRecord) -> Callable[[Sequence[Entry]], None] | None:
        """Bring the session's Claude Code file up to date, then follow ``record``'s appends;
        ``None`` (after a warning) when the file cannot be written."""
        try:
            file = self._open(record)
            records = ClaudeRecords(file, record)
            self._write(file, self._missing(records, record.path(), fresh=False))
        except OSError as exc:
            why = exc.strerror or exc
            log.warning(
                "[sessions] claude_code_sessions: cannot write the transcript of %s: %s", record.session, why
            )
            return None

        def observe(entries: Sequence[Entry]) -> None:
            try:
                self._write(file, self._missing(records, entries, fresh=True))
            except OSError as exc:
                why = exc.strerror or exc
                log.warning("[sessions] claude_code_sessions: stopped writing %s: %s", file.path, why)
                record.observers.remove(observe)

        record.observers.append(observe)
        return observe

    def _open(self, record: SessionRecord) -> ClaudeFile:
        directory = self.directory()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        header = record.header
        seed = f"{self.scope}\n{header.get('id') or record.session}\n{header.get('timestamp', '')}"
        branch = _git_branch(Path(self.cwd))
        for generation in range(_GENERATIONS):
            session_id = str(uuid.uuid5(_NAMESPACE, f"{seed}:{generation}"))
            path = directory / f"{session_id}.jsonl"
            file = ClaudeFile(session_id, path, self.cwd, branch)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            except FileExistsError:
                if self._complete(file):
                    return file
                log.warning("[sessions] %s ends with an incomplete line: continuing in a new file", path)
                continue
            os.close(fd)
            return file
        raise OSError(f"no usable transcript file for session {record.session} in {directory}")

    @staticmethod
    def _complete(file: ClaudeFile) -> bool:
        """Read an existing file: whether its last line is whole, and which uuids it holds."""
        data = file.path.read_bytes()
        if data and not data.endswith(b"\n"):
            return False
        for line in data.splitlines():
            try:
                uid = json.loads(line).get("uuid")
            except (ValueError, AttributeError):
                continue
            if isinstance(uid, str):
                file.present.add(uid)
        return True

    @staticmethod
    def _missing(records: ClaudeRecords, entries: Sequence[Entry], *, fresh: bool) -> list[dict[str, Any]]:
        """The records of ``entries`` the file lacks (``fresh``: just recorded, so also the records
        without a uuid, like a title, which a backfill cannot tell apart from ones written)."""
        out: list[dict[str, Any]] = []
        file = records.file
        for entry in entries:
            eid = entry.get("id")
            if not isinstance(eid, str):
                continue
            parent = entry.get("parentId")
            produced = records.of(entry, records.tail(parent if isinstance(parent, str) else None))
            chained = [r["uuid"] for r in produced if "uuid" in r]
            if chained and chained[0] in file.present:
                continue
            if not chained and not fresh:
                continue
            out.extend(produced)
            file.present.update(chained)
            file.tails.pop(eid, None)
        return out

    @staticmethod
    def _write(file: ClaudeFile, records: Sequence[Mapping[str, Any]]) -> None:
        if not records:
            return
        payload = "".join(json_text(r) + "\n" for r in records)
        fd = os.open(file.path, os.O_WRONLY | os.O_APPEND)  # never O_CREAT/O_TRUNC: appends only
        try:
            view = memoryview(payload.encode("utf-8"))
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


class MirroredStore:
    """A session store whose records, opened for writing, also feed the mirrors (runs, settings
    writes, compactions: every write path opens its record through the store). Reads are not
    mirrored: they never write."""

    def __init__(self, inner: SessionStore, mirrors: Sequence[ClaudeCodeMirror]) -> None:
        self.inner = inner
        self.mirrors = list(mirrors)

    async def _attach(self, record: SessionRecord | None) -> None:
        if record is not None:
            for mirror in self.mirrors:
                await asyncio.to_thread(mirror.attach, record)

    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        record = await self.inner.open_or_create(session, inherit)
        await self._attach(record)
        return record

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        record = await self.inner.open_if_exists(session)
        await self._attach(record)
        return record

    async def read(self, session: str) -> SessionRecord | None:
        return await self.inner.read(session)

    def leased(self, session: str) -> SessionLease:
        return self.inner.leased(session)

    def location(self, session: str) -> Path | None:
        return self.inner.location(session)

    def list_sessions(self, limit: int | None = 30) -> list[SessionSummary]:
        return self.inner.list_sessions(limit)

    async def listing(self, limit: int | None = 30) -> list[SessionSummary]:
        return await self.inner.listing(limit)

    async def fork(self, source: SessionRecord, at: str, into: str) -> bool:
        return await self.inner.fork(source, at, into)

    async def delete(self, session: str) -> bool:
        return await self.inner.delete(session)

    async def export(self, session: str) -> bytes | None:
        return await self.inner.export(session)

    async def import_record(self, session: str, header: dict[str, Any], body: bytes) -> Path | None:
        return await self.inner.import_record(session, header, body)
