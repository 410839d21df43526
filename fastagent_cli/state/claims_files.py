"""Schedule claims as two JSON files under ``<state root>/schedule/`` (single machine).

* ``fires.json``: ``{"<schedule>": "<ISO instant>"}``, the last claimed run of each schedule;
* ``wakeups.json``: ``[{id, session, prompt, fireAt, cron?, tz?, attempts?}, ...]``.

Every change is read-modify-write under an exclusive lock (``.claims.lock``, released by the
kernel if the process dies) and lands with an atomic replace, so a crash leaves the old file or
the new one. Reads take no lock and create nothing. The blocking work runs in a worker thread.

A file that is not JSON (or not the right shape) is ignored with a warning and set aside as
``<name>.corrupt-<time>`` before the next write replaces it; a malformed entry is left out with a
warning (logged in full) and is gone after the next write. An unreadable file is a storage fault
(:class:`~fastagent_cli.state.wakeup.ClaimsUnavailable`). Checking for a due wake-up costs one
``stat`` while the file is unchanged, so a poll over thousands of pending wake-ups stays free.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from fastagent_cli.state.atomic import atomic_write_json
from fastagent_cli.state.clock import format_instant, parse_instant
from fastagent_cli.state.cron import next_after
from fastagent_cli.state.locks import FileLock
from fastagent_cli.state.wakeup import ClaimsUnavailable, TooManyWakeups, Wakeup

__all__ = ["FIRES_FILE", "LOCK_FILE", "WAKEUPS_FILE", "FileClaims"]

log = logging.getLogger("fastagent.schedule")

FIRES_FILE = "fires.json"
WAKEUPS_FILE = "wakeups.json"
LOCK_FILE = ".claims.lock"
T = TypeVar("T")
_Stamp = tuple[int, int, int, int]


class FileClaims:
    """The schedule claims (:class:`~fastagent_cli.state.claims.ScheduleClaims`) as files in
    ``directory``."""

    def __init__(self, directory: Path, lock_timeout: float = 10.0) -> None:
        self.directory = Path(directory)
        self.lock_timeout = lock_timeout
        self._warned: dict[str, _Stamp | None] = {}
        self._cache: tuple[_Stamp, list[Wakeup], datetime | None] | None = None
        self._cache_lock = threading.Lock()

    @property
    def fires_path(self) -> Path:
        return self.directory / FIRES_FILE

    @property
    def wakeups_path(self) -> Path:
        return self.directory / WAKEUPS_FILE

    # --- the interface ------------------------------------------------------------------------

    async def last_fired(self) -> dict[str, datetime]:
        return await asyncio.to_thread(lambda: self._read_fires()[0])

    async def claim_slot(self, name: str, slot: datetime, at: datetime) -> bool:
        def claim() -> bool:
            fires, corrupt = self._read_fires()
            self._set_aside_if_corrupt(self.fires_path, corrupt)
            last = fires.get(name)
            if last is not None and last >= slot:
                return False  # fired for this slot (or a later one) already
            fires[name] = max(at, slot)
            atomic_write_json(self.fires_path, {k: format_instant(v) for k, v in fires.items()})
            return True

        return await self._locked(claim)

    async def wakeups(self) -> list[Wakeup]:
        return await asyncio.to_thread(lambda: list(self._cached_wakeups()[1]))

    async def add_wakeup(self, wakeup: Wakeup, *, limit: int) -> None:
        def add() -> None:
            wakes = self._rewrite_start()
            mine = [w for w in wakes if w.session == wakeup.session]
            if len(mine) >= limit:
                raise TooManyWakeups(limit, mine)
            self._write_wakeups([*wakes, wakeup])

        await self._locked(add)

    async def remove_wakeup(self, wake_id: str, *, session: str | None = None) -> bool:
        def remove() -> bool:
            wakes = self._rewrite_start()
            kept = [w for w in wakes if not (w.id == wake_id and session in (None, w.session))]
            if len(kept) == len(wakes):
                return False
            self._write_wakeups(kept)
            return True

        if not await asyncio.to_thread(self.wakeups_path.exists):
            return False  # nothing to remove: create no state (no lock file) for it
        return await self._locked(remove)

    async def take_due_wakeup(self, now: datetime) -> Wakeup | None:
        def take() -> Wakeup | None:
            wakes = self._rewrite_start()
            index = next((i for i, w in enumerate(wakes) if w.fire_at <= now), None)
            if index is None:
                return None
            due = wakes[index]
            if due.cron is not None:
                following = next_after(due.cron, due.tz or "UTC", now)
                if following is None:
                    del wakes[index]
                else:
                    wakes[index] = replace(due, fire_at=following, attempts=0)
            else:
                del wakes[index]
            self._write_wakeups(wakes)
            return due

        earliest = await asyncio.to_thread(lambda: self._cached_wakeups()[2])
        if earliest is None or earliest > now:
            return None
        return await self._locked(take)

    async def put_wakeup(self, wakeup: Wakeup) -> None:
        def put() -> None:
            self._write_wakeups([*self._rewrite_start(), wakeup])

        await self._locked(put)

    # --- files --------------------------------------------------------------------------------

    async def _locked(self, work: Callable[[], T]) -> T:
        def run() -> T:
            with FileLock(self.directory / LOCK_FILE, timeout=self.lock_timeout):
                return work()

        return await asyncio.to_thread(run)

    def _read_raw(self, path: Path) -> tuple[_Stamp | None, Any, bool]:
        """``(stamp, document, corrupt)``; ``(None, None, False)`` when the file does not exist."""
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                data = fh.read()
        except FileNotFoundError:
            return None, None, False
        except OSError as exc:
            raise ClaimsUnavailable(f"schedule state {path} is unreadable: {exc.strerror or exc}") from None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        try:
            return stamp, json.loads(data), False
        except ValueError as exc:
            self._warn_once(path, stamp, f"{path} is not valid JSON ({exc}); ignoring it")
            return stamp, None, True

    def _read_fires(self) -> tuple[dict[str, datetime], bool]:
        """``(fires, corrupt)``."""
        stamp, doc, corrupt = self._read_raw(self.fires_path)
        if doc is None:
            return {}, corrupt
        if not isinstance(doc, dict):
            self._warn_once(self.fires_path, stamp, f"{self.fires_path} is not a JSON object; ignoring it")
            return {}, True
        fires: dict[str, datetime] = {}
        for name, value in doc.items():
            try:
                if not isinstance(value, str):
                    raise ValueError(value)
                fires[name] = parse_instant(value)
            except ValueError:
                problem = f"{self.fires_path}: dropping {name!r}: {value!r} is not an ISO instant"
                self._warn_once(f"{self.fires_path}:{name}", stamp, problem)
        return fires, False

    def _parse_wakeups(self, path: Path) -> tuple[_Stamp | None, list[Wakeup], bool]:
        """``(stamp, wake-ups, corrupt)``."""
        stamp, doc, corrupt = self._read_raw(path)
        if doc is None:
            return stamp, [], corrupt
        if not isinstance(doc, list):
            self._warn_once(path, stamp, f"{path} is not a JSON array; ignoring it")
            return stamp, [], True
        wakes: list[Wakeup] = []
        for entry in doc:
            try:
                wakes.append(Wakeup.from_json(entry))
            except ValueError as exc:
                shown = json.dumps(entry, ensure_ascii=False)
                self._warn_once(
                    f"{path}:{shown}", stamp, f"dropping a malformed wake-up entry ({exc}): {shown}"
                )
        return stamp, wakes, False

    def _cached_wakeups(self) -> tuple[_Stamp | None, list[Wakeup], datetime | None]:
        """The wake-ups and the earliest ``fireAt``, re-parsed only when the file changed."""
        try:
            st = os.stat(self.wakeups_path)
        except FileNotFoundError:
            return None, [], None
        except OSError as exc:
            raise ClaimsUnavailable(f"schedule state {self.wakeups_path} is unreadable: {exc}") from None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        with self._cache_lock:
            cached = self._cache
        if cached is not None and cached[0] == stamp:
            return cached
        read_stamp, wakes, _ = self._parse_wakeups(self.wakeups_path)
        earliest = min((w.fire_at for w in wakes), default=None)
        if read_stamp is not None:
            with self._cache_lock:
                self._cache = (read_stamp, wakes, earliest)
        return read_stamp, wakes, earliest

    def _rewrite_start(self) -> list[Wakeup]:
        """The current wake-ups, fresh from disk, for a change that will be written back."""
        _, wakes, corrupt = self._parse_wakeups(self.wakeups_path)
        self._set_aside_if_corrupt(self.wakeups_path, corrupt)
        return wakes

    def _write_wakeups(self, wakes: list[Wakeup]) -> None:
        atomic_write_json(self.wakeups_path, [w.to_json() for w in wakes])

    def _set_aside_if_corrupt(self, path: Path, corrupt: bool) -> None:
        if not corrupt:
            return
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        kept = path.with_name(f"{path.name}.corrupt-{stamp}")
        os.replace(path, kept)
        log.warning("[schedule] kept the unreadable %s as %s", path.name, kept)

    def _warn_once(self, key: Any, stamp: _Stamp | None, message: str) -> None:
        if self._warned.get(str(key), ()) == stamp:
            return
        self._warned[str(key)] = stamp
        log.warning("[schedule] %s", message)
