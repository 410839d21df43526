"""Session stores: where records live and who may write them.

* :class:`FileSessionStore` keeps one file per session in pi's layout, which the TypeScript
  original and pi open as they are: ``--<workspace>--/<created>_<encoded id>.jsonl`` under the
  sessions directory (naming, lookup and the move of older flat records:
  :mod:`~fastagent_cli.sessions.files`). Lookup by id reads no file, so opening a session costs
  the same with 10 or 10 000 stored sessions. A new record is published complete (header written
  to a temp file, then hard-linked into place), so the user's question survives a crash and
  open-or-create stays idempotent across processes. Entries are appended with the state layer's
  whole-line JSONL append. The lease is a :class:`~fastagent_cli.state.locks.FileLock` on
  ``.locks/<name>.lock``: one in-flight turn per session, across threads *and* processes,
  released by the kernel if a process dies.
* :class:`MemorySessionStore` keeps records in a dict, for embedding and tests.
* :class:`~fastagent_cli.sessions.pg_store.PgSessionStore` keeps them in the shared database
  (``state_backend = "postgres"``), leased per session across instances.

Opening for a turn repairs the record (dangling tool calls get an interrupted result, written at
once); :meth:`SessionStore.read` is for display and never repairs or writes.

:meth:`SessionStore.fork` copies a session's active path up to an entry into a new record whose
header names its origin (``fastagentFork``), which makes a repeated fork a no-op;
:meth:`SessionStore.delete` removes a record and its lock.

Both stores inherit: a new session created with a ``parent_session`` starts from the parent's
active path (see :mod:`fastagent_cli.sessions.inherit`).

A file system that refuses (read-only, full, permission denied) surfaces as one
:class:`~fastagent_cli.errors.SessionError` saying ``cannot write the session store: <reason>``
(retryable when the disk is full), with the file in ``path`` for the server log.

The stores live in :mod:`~fastagent_cli.sessions.memory_store` and
:mod:`~fastagent_cli.sessions.file_store`, the port they answer in
:mod:`~fastagent_cli.sessions.store_protocol`, forks in :mod:`~fastagent_cli.sessions.fork`; every
name stays importable from here.
"""

from __future__ import annotations

from fastagent_cli.sessions.file_store import FileSessionStore
from fastagent_cli.sessions.fork import FORK_KEY, ForkConflict, fork_entries, fork_header, same_fork
from fastagent_cli.sessions.inherit import Inheritance
from fastagent_cli.sessions.memory_store import MemorySessionStore
from fastagent_cli.sessions.store_protocol import RELEASE_WAIT_S as RELEASE_WAIT_S
from fastagent_cli.sessions.store_protocol import Release, SessionLease, SessionStore, release_lease

__all__ = [
    "FORK_KEY",
    "FileSessionStore",
    "ForkConflict",
    "Inheritance",
    "MemorySessionStore",
    "Release",
    "SessionLease",
    "SessionStore",
    "fork_entries",
    "release_lease",
    "fork_header",
    "same_fork",
]
