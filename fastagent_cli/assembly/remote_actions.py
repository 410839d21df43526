"""Run actions across instances: steer, follow up or abort a run another instance drives.

When ``steer`` / ``follow_up`` / ``abort`` reach an instance with no run of that session while
the shared hub knows another instance runs it, the action is sent there (a notification naming
the instance and a request id), executed against that instance's runs as if it had been called
there, and the answer comes back the same way. No answer within :data:`ANSWER_WITHIN_S` (the
instance is stopping, the database is slow) is a retryable ``run_command_failed``.

Wire items, inside the event channel's ``{"i": <from>, "e": [...]}`` notifications::

    {"to": <instance>, "id": <request>, "a": "steer"|"follow_up"|"abort", "s": <session>, "p": <prompt>?}
    {"to": <instance>, "re": <request>, "r": <ActionResult JSON>}
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from fastagent_cli.contract import Prompt
from fastagent_cli.control import RUN_COMMAND_FAILED, ActionResult, rejected
from fastagent_cli.control.wire import prompt_from_json, prompt_to_json
from fastagent_cli.engine.runs import RunRegistry

if TYPE_CHECKING:
    from fastagent_cli.assembly.shared_hub import SharedEventHub

__all__ = ["ANSWER_WITHIN_S", "RemoteActions"]

log = logging.getLogger("fastagent.control")

ANSWER_WITHIN_S = 5.0
Action = Literal["steer", "follow_up", "abort"]


class RemoteActions:
    def __init__(
        self, hub: SharedEventHub, runs: RunRegistry, answer_within: float = ANSWER_WITHIN_S
    ) -> None:
        self.hub = hub
        self.runs = runs
        self.answer_within = answer_within
        self._waiting: dict[str, asyncio.Future[ActionResult]] = {}
        hub.actions = self.heard

    async def request(self, session: str, kind: Action, prompt: Prompt | None = None) -> ActionResult | None:
        """Send ``kind`` to the instance running ``session``; ``None`` when no other instance
        runs it (the caller answers as it would locally)."""
        run = self.hub.remote_run(session)
        if run is None:
            return None
        request = uuid.uuid4().hex
        item: dict[str, Any] = {"to": run.instance, "id": request, "a": kind, "s": session}
        if prompt is not None:
            item["p"] = prompt_to_json(prompt)
        answer: asyncio.Future[ActionResult] = asyncio.get_running_loop().create_future()
        self._waiting[request] = answer
        try:
            self.hub.db.link.notify(self.hub.channel, json.dumps(item, ensure_ascii=False))
            return await asyncio.wait_for(answer, self.answer_within)
        except TimeoutError:
            return rejected(
                RUN_COMMAND_FAILED,
                f"the instance running session {session!r} did not answer the {kind.replace('_', '-')}",
                retryable=True,
            )
        finally:
            self._waiting.pop(request, None)

    def heard(self, instance: str, item: Mapping[str, Any]) -> None:
        """An action item from ``instance`` (ignored unless addressed to this instance)."""
        if item.get("to") != self.hub.db.instance:
            return
        if isinstance(item.get("re"), str):
            answer = self._waiting.get(item["re"])
            if answer is not None and not answer.done():
                try:
                    answer.set_result(ActionResult.from_json(item.get("r") or {}))
                except ValueError as exc:
                    answer.set_exception(exc)
            return
        request, kind, session = item.get("id"), item.get("a"), item.get("s")
        if not isinstance(request, str) or not isinstance(session, str):
            return
        result = self._execute(kind, session, item.get("p"))
        reply = {"to": instance, "re": request, "r": result.to_json()}
        self.hub.db.link.notify(self.hub.channel, json.dumps(reply, ensure_ascii=False))

    def _execute(self, kind: Any, session: str, raw: Any) -> ActionResult:
        if kind == "abort":
            result = self.runs.abort(session)
        elif kind in ("steer", "follow_up"):
            prompt = prompt_from_json(raw)
            if prompt is None:
                return rejected(RUN_COMMAND_FAILED, "a relayed prompt was malformed")
            result = self.runs.enqueue(session, kind, prompt)
        else:
            return rejected(RUN_COMMAND_FAILED, f"unknown relayed action {kind!r}")
        log.info("[control] %s of session %s relayed from another instance: %s", kind, session, result.ok)
        return result
