"""The session event hub of an agent whose instances share a database.

:class:`SharedEventHub` is the engine's :class:`~fastagent_cli.engine.hub.EventHub` (the local
watchers get every event at once) that also relays each event to the other instances: a
``pg_notify`` queued on the link after the writes it follows, so a watcher elsewhere that reads
``entries()`` on hearing ``message_finished`` finds the entry. Events heard from other instances
go to this process's watchers only. So ``events()`` (and ``attach``) on any instance sees a run
driven on any other.

It also keeps what the relayed events say about runs elsewhere: which instance runs a session
now and what is queued for it (:meth:`SharedEventHub.remote_run`), so ``state()`` reads
``running`` everywhere. A run whose instance stopped without settling it (``kill -9``) is
settled for the watchers here as ``failed`` (retryable) once that instance is gone.

Run actions on a run elsewhere (steer, follow-up, abort: :mod:`.remote_actions`) travel the same
way, to the instance that runs it, and its answer comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastagent_cli.control import SUBSCRIBER_BUFFER_CAP, PendingPrompts, SessionEvent
from fastagent_cli.engine.hub import EventHub

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database

__all__ = ["REAP_EVERY_S", "RemoteRun", "SharedEventHub"]

log = logging.getLogger("fastagent.control")

REAP_EVERY_S = 1.0
"""How often runs elsewhere are checked for an instance that stopped."""
INSTANCE_LOST = "the instance running this session stopped before the run settled; invoke again"


@dataclass(slots=True)
class RemoteRun:
    instance: str
    run_id: str | None
    pending: PendingPrompts


class SharedEventHub(EventHub):
    def __init__(self, db: Database, cap: int = SUBSCRIBER_BUFFER_CAP) -> None:
        super().__init__(cap)
        self.db = db
        self.channel = db.settings.channel("events")
        self.actions: Callable[[str, Mapping[str, Any]], None] | None = None
        """Run actions to and from other instances (set by the session hub)."""
        self._runs: dict[str, RemoteRun] = {}
        self._reaper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Hear the other instances (call once the database is connected)."""
        await self.db.listener.subscribe(self.channel, self._heard)
        self._reaper = asyncio.create_task(self._reap(), name="remote run reaper")

    # --- this instance's events -------------------------------------------------------------------

    def publish(self, session: str, event: SessionEvent) -> None:
        super().publish(session, event)
        self.db.link.notify(self.channel, f"[{json.dumps(session, ensure_ascii=False)},{event.wire()}]")

    def end_session(self, session: str, reason: str = "deleted") -> None:
        super().end_session(session, reason)
        if reason == "deleted":
            self.db.link.notify(self.channel, json.dumps({"deleted": session}, ensure_ascii=False))

    def remote_run(self, session: str) -> RemoteRun | None:
        """The run of ``session`` on another instance, if one is running."""
        return self._runs.get(session)

    # --- other instances' events ------------------------------------------------------------------

    async def _heard(self, payload: str) -> None:
        try:
            note = json.loads(payload)
            instance = note["i"]
        except (ValueError, KeyError, TypeError):
            log.warning("[control] ignored a malformed event notification: %.200s", payload)
            return
        if instance == self.db.instance:
            return
        if "spill" in note:
            note = await self._spilled(int(note["spill"]))
            if note is None:
                return
        for item in note.get("e", ()):
            self._relay(instance, item)

    async def _spilled(self, spill: int) -> dict[str, Any] | None:
        try:
            text = await self.db.run(
                "read a relayed event",
                lambda conn: conn.fetchval("SELECT payload FROM fastagent_spill WHERE id = $1", spill),
            )
            found = json.loads(text) if isinstance(text, str) else None
        except Exception as exc:
            log.warning("[control] a large relayed event was lost: %s", exc)
            return None
        return found if isinstance(found, dict) else None

    def _relay(self, instance: str, item: Any) -> None:
        if isinstance(item, Mapping):
            if isinstance(item.get("deleted"), str):
                super().end_session(item["deleted"], "deleted")
            elif self.actions is not None:
                self.actions(instance, item)
            return
        try:
            session, raw = item
            event = SessionEvent.from_json(raw)
        except (ValueError, TypeError):
            log.warning("[control] ignored a malformed relayed event: %.200r", item)
            return
        self._track(instance, str(session), event)
        super().publish(str(session), event)

    def _track(self, instance: str, session: str, event: SessionEvent) -> None:
        if event.type == "run_started":
            self._runs[session] = RemoteRun(instance, event.run_id, PendingPrompts())
        elif event.type == "run_settled":
            self._runs.pop(session, None)
        elif event.type == "queue_changed" and session in self._runs:
            with contextlib.suppress(ValueError, TypeError):
                self._runs[session].pending = PendingPrompts.from_json(event.data)

    # --- instances that stopped -------------------------------------------------------------------

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(REAP_EVERY_S)
            if not self._runs:
                continue
            try:
                live = await self.db.live_instances({run.instance for run in self._runs.values()})
            except Exception as exc:
                log.debug("[control] cannot check the instances running sessions: %s", exc)
                continue
            for session, run in list(self._runs.items()):
                if run.instance not in live:
                    del self._runs[session]
                    error = {"message": INSTANCE_LOST, "retryable": True}
                    settled = SessionEvent("run_settled", {"status": "failed", "error": error}, run.run_id)
                    super().publish(session, settled)

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper

    def close(self) -> None:
        super().close()
        if self._reaper is not None:
            self._reaper.cancel()
