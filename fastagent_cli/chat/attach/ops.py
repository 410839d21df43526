"""The session ``attach`` shows, for the commands it shares with chat
(:mod:`fastagent_cli.chat.session_commands`): the same operations as chat's controller, over the
control plane (``PATCH /control/sessions/{id}`` for the model, the thinking level and the leaf,
the compact action), each refusal one clear line."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fastagent_cli.chat.attachments import REMOTE_BODY_BYTES, PendingAttachments
from fastagent_cli.control import ActionResult, Session, SessionState, SessionUpdate
from fastagent_cli.errors import ControlRequestError, UsageError
from fastagent_cli.remote import RemoteSessionControl

__all__ = ["NOT_CONNECTED", "RemoteOps"]

NOT_CONNECTED = "not connected (reconnecting): try again in a moment"


class RemoteOps:
    """:class:`~fastagent_cli.chat.session_commands.SessionOps` of an attach."""

    def __init__(
        self,
        session: str,
        control: Callable[[], RemoteSessionControl | None],
        state: Callable[[], SessionState | None],
    ) -> None:
        self.session = session
        self._control = control
        self._state = state
        self.attachments = PendingAttachments(body_cap=REMOTE_BODY_BYTES)
        """Files ``/attach`` (or a pasted path) added: they go with the next line sent (within
        what a serve takes in one request)."""

    @property
    def model(self) -> str:
        state = self._state()
        return (state.model if state is not None else None) or "(model unknown)"

    @property
    def thinking(self) -> str:
        state = self._state()
        return (state.thinking_level if state is not None else None) or "off"

    def _hub(self) -> RemoteSessionControl:
        control = self._control()
        if control is None:
            raise UsageError(NOT_CONNECTED)
        return control

    def control_session(self) -> Session:
        return self._hub().sessions.get(self.session)

    async def model_choices(self) -> Sequence[str]:
        try:
            capabilities = await self._hub().capabilities()
        except ControlRequestError as exc:
            raise UsageError(f"the model list is unavailable: {exc.message}") from None
        return capabilities.model_selection or ()

    async def thinking_help(self) -> str:
        return f"thinking {self.thinking} ({self.model}); /thinking <level> sets it"

    async def set_model(self, spec: str) -> str:
        await self._update(SessionUpdate(model=spec))
        return f"model {spec} for session {self.session}"

    async def set_thinking(self, level: str) -> str:
        await self._update(SessionUpdate(thinking_level=level))
        line = f"thinking {level} for session {self.session}"
        runs = (await self.control_session().state()).thinking_level
        return line + (f" (its model runs {runs})" if runs and runs != level else "")

    async def compact(self, instructions: str | None = None) -> str:
        _check(await self.control_session().compact(instructions))
        return "compacting the session… (its summary shows here when it lands; /abort stops it)"

    async def move_leaf(self, leaf: str) -> ActionResult:
        return await self.control_session().update(SessionUpdate(leaf_entry_id=leaf))

    async def _update(self, patch: SessionUpdate) -> None:
        _check(await self.control_session().update(patch))


def _check(result: ActionResult) -> None:
    if not result.ok:
        raise UsageError(result.error.message if result.error is not None else "refused")
