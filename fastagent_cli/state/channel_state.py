"""The storage interface behind chat-channel state, and its file implementation.

A channel keeps a few small named documents (``turns``, ``seen``, ``buffers``, ...). Each is a
*snapshot* plus a *journal* of entries appended since that snapshot, so the hot path (persisting a
turn intent before a webhook is acknowledged) costs one durable append instead of rewriting the
whole document. :class:`ChannelStateStore` is the whole contract. :class:`FileChannelState` is the
single-process store; :class:`~fastagent_cli.state.pg.channel_state.PgChannelState` is the one
several instances share: it has an :attr:`~ChannelStateStore.owner` (the instance writing), numbers
journal entries with gap-free *positions* per document, tells watchers when another instance
appended (:meth:`~ChannelStateStore.watch`), hands out what was appended since a position
(:meth:`~ChannelStateStore.changes`) and says which instances are alive
(:meth:`~ChannelStateStore.live_owners`). The channel kit replays every instance's entries in
position order, so all of them hold the same state.

The file layout under ``<state root>/channels/<kind>/`` (directories 0700, files 0600: chat content)::

    turns.json     {"generation": 3, "data": ...}        atomic: temp file + fsync + rename
    turns.jsonl    {"g": 3, "e": ...}  one entry a line   whole-line appends (+ fdatasync when asked)

:meth:`~ChannelStateStore.replace` writes a new snapshot with the next generation and then empties
the journal; a crash between the two leaves journal lines of the old generation, which a load
ignores (their effect is in the snapshot). A journal line cut short by a crash is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from fastagent_cli.state.atomic import FILE_MODE, atomic_write_json, dumps_line, make_private_dir, parse_jsonl

__all__ = [
    "CHANNELS_STATE_DIR",
    "ChannelStateStore",
    "FileChannelState",
    "LoadedDocument",
    "Watcher",
    "channel_home",
]

CHANNELS_STATE_DIR = "channels"

R = TypeVar("R")


def channel_home(state_root: Path, kind: str) -> Path:
    """``<state root>/channels/<kind>``: where one channel kind keeps its state."""
    return Path(state_root) / CHANNELS_STATE_DIR / kind


@dataclass(slots=True)
class LoadedDocument:
    """What :meth:`ChannelStateStore.load` found for one document."""

    snapshot: Any = None
    """The last snapshot's data; ``None`` when there is none (or it was unreadable as JSON)."""
    journal: list[Any] = field(default_factory=list)
    """Entries appended since that snapshot, in order."""
    problems: list[str] = field(default_factory=list)
    """What was wrong with the stored form (a corrupt file...): the caller warns and starts empty."""
    position: int = 0
    """A shared store: the position of the last journal entry included (0 for a file)."""
    reset: bool = False
    """From :meth:`ChannelStateStore.changes`: the entries asked for were compacted away, so this
    is the whole document again (snapshot and journal), not only what was added."""


Watcher = Callable[[int | None], None]
"""Called with the position another instance appended up to (``None``: unknown, after a gap)."""


class ChannelStateStore(Protocol):
    """Named documents of one channel kind: a snapshot plus the entries journaled since."""

    @property
    def owner(self) -> str | None:
        """The instance this store writes for when several share it; ``None`` for a store of one
        process (then the other shared-store methods are trivial)."""
        ...

    def describe(self, name: str) -> str:
        """Where ``name`` lives, for messages (a path, a table row...)."""
        ...

    async def load(self, name: str) -> LoadedDocument:
        """The document as stored. A corrupt snapshot or journal is a problem in the result, never a
        raise; an unreadable one (permissions, IO) raises :class:`OSError`."""
        ...

    async def append(self, name: str, entries: Sequence[Any], *, sync: bool = True) -> int | None:
        """Add ``entries`` to the document's journal (all or none). ``sync``: on stable storage
        before returning (what an acknowledgement waits for); otherwise they survive the process
        dying, not the machine. Returns the last entry's position (a shared store; ``None``
        otherwise). Raises :class:`OSError`."""
        ...

    async def replace(self, name: str, snapshot: Any, *, position: int | None = None) -> None:
        """Make ``snapshot`` the document and empty its journal (a shared store: ``snapshot`` is
        the document as of ``position``; only the entries up to it are dropped, and an older
        snapshot never replaces a newer one). Raises :class:`OSError`."""
        ...

    async def changes(self, name: str, after: int) -> LoadedDocument:
        """A shared store: the entries appended after position ``after`` (or, ``reset``, the
        whole document when they were compacted away). Raises :class:`OSError`."""
        ...

    async def watch(self, name: str, watcher: Watcher) -> None:
        """A shared store: call ``watcher`` when another instance appends to ``name``."""
        ...

    async def live_owners(self, owners: Collection[str]) -> set[str]:
        """Which of ``owners`` (instances) are running; a store of one process: all of them."""
        ...

    async def aclose(self) -> None:
        """Release what the store holds open."""
        ...


class FileChannelState:
    """:class:`ChannelStateStore` on files in one directory (single process: see the module doc).

    A journal entry is one ``write`` of whole lines to the journal, kept open in append mode (a
    few microseconds: the page cache takes it, as it takes session records); flushing to stable
    storage (``fdatasync``) and snapshot rewrites run in a worker thread, so the event loop never
    waits on the disk. One document is written by one writer at a time.

    The flushes an acknowledgement waits for run on a thread of the store's own, not in the loop's
    shared default executor: there they queued behind whatever else was running in its few
    threads (a burst of new sessions publishing their records, each ending in an fsync), and a
    webhook's ``200`` waited for all of it.
    """

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self._generations: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._journals: dict[str, int] = {}
        self._flusher: ThreadPoolExecutor | None = None

    @property
    def owner(self) -> str | None:
        return None

    def describe(self, name: str) -> str:
        return str(self._snapshot_path(name))

    def _snapshot_path(self, name: str) -> Path:
        return self.home / f"{name}.json"

    def _journal_path(self, name: str) -> Path:
        return self.home / f"{name}.jsonl"

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def load(self, name: str) -> LoadedDocument:
        async with self._lock(name):
            loaded, generation = await asyncio.to_thread(self._load, name)
            self._generations[name] = generation
            return loaded

    def _load(self, name: str) -> tuple[LoadedDocument, int]:
        loaded = LoadedDocument()
        generation = 0
        path = self._snapshot_path(name)
        raw = _read_bytes(path)
        if raw is not None:
            try:
                doc = json.loads(raw)
            except ValueError as exc:
                loaded.problems.append(f"{path} is not valid JSON ({exc})")
            else:
                if isinstance(doc, dict) and isinstance(doc.get("generation"), int) and "data" in doc:
                    generation = doc["generation"]
                    loaded.snapshot = doc["data"]
                else:
                    loaded.problems.append(f"{path} is not a channel state snapshot")
        journal = _read_bytes(self._journal_path(name))
        if journal:
            lines = parse_jsonl(journal)
            current = [line for line in lines if line.get("g") == generation and "e" in line]
            loaded.journal = [line["e"] for line in current]
            torn = sum(1 for line in journal.split(b"\n") if line.strip()) - len(lines)
            if torn > 0:
                loaded.problems.append(f"{self._journal_path(name)}: skipped {torn} unreadable line(s)")
        return loaded, generation

    async def append(self, name: str, entries: Sequence[Any], *, sync: bool = True) -> int | None:
        if not entries:
            return None
        async with self._lock(name):
            if name not in self._generations:
                _, self._generations[name] = await asyncio.to_thread(self._load, name)
            fd = self._journals.get(name)
            if fd is None:
                fd = self._journals[name] = await self._flushing(self._open_journal, name)
            generation = self._generations[name]
            payload = "".join(dumps_line({"g": generation, "e": entry}) + "\n" for entry in entries)
            size = os.fstat(fd).st_size
            try:
                _write_all(fd, payload.encode("utf-8"))
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)  # a full disk took part of the lines: take them back
                raise
            if sync:
                await self._flushing(os.fdatasync, fd)
        return None

    async def _flushing(self, call: Callable[..., R], *args: Any) -> R:
        """``call`` on the store's own flush thread (see the class doc)."""
        if self._flusher is None:
            self._flusher = ThreadPoolExecutor(1, thread_name_prefix="fastagent-channel-flush")
        return await asyncio.get_running_loop().run_in_executor(self._flusher, call, *args)

    def _open_journal(self, name: str) -> int:
        """Open the journal for appends; a line a crash cut short gets a line break first, so the
        next entry starts on a line of its own."""
        make_private_dir(self.home)
        path = self._journal_path(name)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            _write_all(fd, b"\n")
        if created:
            _fsync_dir(self.home)  # a new file's name is durable too, not only its bytes
        return fd

    async def replace(self, name: str, snapshot: Any, *, position: int | None = None) -> None:
        async with self._lock(name):
            if name not in self._generations:
                _, self._generations[name] = await asyncio.to_thread(self._load, name)
            generation = self._generations[name] + 1
            await asyncio.to_thread(self._replace, name, generation, snapshot)
            self._generations[name] = generation

    def _replace(self, name: str, generation: int, snapshot: Any) -> None:
        make_private_dir(self.home)
        atomic_write_json(self._snapshot_path(name), {"generation": generation, "data": snapshot})
        journal = self._journal_path(name)
        if journal.exists():
            os.truncate(journal, 0)

    async def changes(self, name: str, after: int) -> LoadedDocument:
        loaded = await self.load(name)  # one process writes: everything is known already
        loaded.reset = True
        return loaded

    async def watch(self, name: str, watcher: Watcher) -> None:
        """Nothing to watch: no other process writes these files."""

    async def live_owners(self, owners: Collection[str]) -> set[str]:
        return set(owners)

    async def aclose(self) -> None:
        for name in list(self._journals):
            async with self._lock(name):
                fd = self._journals.pop(name, None)
                if fd is not None:
                    os.close(fd)
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            flusher.shutdown(wait=False)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
