"""The engine's :class:`~fastagent_cli.contract.Agent`.

``invoke`` is the whole contract:

1. take the session's lease (a second concurrent turn gets one ``failed{code: session_busy}``);
2. open or create the session record (dangling tool calls repaired) and bind a fresh turn to it;
3. run the turn as a producer task and relay its events;
4. emit exactly one terminal (``completed`` / ``failed``); iteration never raises;
5. on early exit (``break``, ``aclose()``, task cancellation) cancel the producer, which aborts the
   HTTP stream and kills tool processes, then release the lease. No terminal is emitted then.

Nothing is resident between turns: continuity lives in the session store (MUST 6). The engine is
built from ports (:mod:`.ports`): a session store, a model port, a system prompt and a tool source,
each asked afresh per turn; it never reads a directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fastagent_cli.contract import (
    SESSION_BUSY_CODE,
    AgentEvent,
    Completed,
    Failed,
    Prompt,
    Scope,
    as_prompt,
    as_scope,
    is_terminal,
)
from fastagent_cli.engine.activation import ActivationState
from fastagent_cli.engine.failures import INTERNAL_ERROR, describe_failure
from fastagent_cli.engine.ports import ModelPort, SystemPrompt, ToolSource
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.settings import resolve_session_settings
from fastagent_cli.engine.turn import TurnSetup, run_turn
from fastagent_cli.errors import CredentialError
from fastagent_cli.messages import ContentBlock, ThinkingLevel, UserMessage, now_ms
from fastagent_cli.models.credentials import missing_hint
from fastagent_cli.models.thinking import DEFAULT_THINKING_LEVEL
from fastagent_cli.models.types import ModelRequest
from fastagent_cli.sessions.inherit import Inheritance
from fastagent_cli.sessions.store import SessionStore
from fastagent_cli.tools.base import Tool

__all__ = ["BUSY_DETAILS", "DEFAULT_TOOL_TIMEOUT_S", "EngineAgent", "EngineConfig"]

log = logging.getLogger("fastagent.agent")
BUSY_DETAILS = "session busy: a turn is already in flight for this session"
_CANCEL_GRACE_S = 5.0
DEFAULT_TOOL_TIMEOUT_S = 600.0


@dataclass(slots=True)
class EngineConfig:
    """The ports and limits a turn runs with, fixed at assembly; prompt and tools are asked per turn."""

    models: ModelPort
    sessions: SessionStore
    system_prompt: SystemPrompt
    tools: ToolSource
    cwd: str = "."
    thinking_level: ThinkingLevel = DEFAULT_THINKING_LEVEL
    max_tool_rounds: int = 50
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT_S
    """Seconds a tool call may run unless the tool sets its own ``timeout``; ``None``: no limit."""


class EngineAgent:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    # --- the contract -------------------------------------------------------------------------

    async def invoke(self, scope: Scope | str, prompt: Prompt | str) -> AsyncIterator[AgentEvent]:
        bound = as_scope(scope)
        try:
            release = self.config.sessions.try_lease(bound.session)
        except Exception as exc:  # MUST 2: an unwritable store is a failed event, not a raise
            yield self._failed(bound, exc, ())
            return
        if release is None:
            yield Failed(BUSY_DETAILS, True, SESSION_BUSY_CODE)
            return
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        producer = asyncio.create_task(self._produce(bound, as_prompt(prompt), queue.put_nowait))
        released = False
        try:
            while True:
                event = await queue.get()
                if is_terminal(event):
                    # The turn is over: free the session before the consumer sees the terminal,
                    # so a consumer that stops reading at the terminal never holds the lease.
                    await producer
                    released = True
                    release()
                    yield event
                    return
                yield event
        finally:
            if not released:
                if not producer.done():
                    producer.cancel()
                    with contextlib.suppress(BaseException):
                        await asyncio.wait({producer}, timeout=_CANCEL_GRACE_S)
                release()

    async def _produce(self, scope: Scope, prompt: Prompt, emit: Callable[[AgentEvent], None]) -> None:
        started = time.monotonic()
        secrets: list[str | None] = []
        try:
            if log.isEnabledFor(logging.DEBUG):
                preview = " ".join(prompt.text.split())[:200]
                log.debug("[agent] ▶ turn session=%s ← %s", scope.session, preview)
            setup = await self._bind(scope)
            secrets.append(setup.request.api_key)
            outcome = await run_turn(setup, _user_message(prompt), emit)
            data: dict[str, Any] = {
                "model": setup.request.model.spec,
                "usage": outcome.usage,
                "stopReason": outcome.stop_reason,
            }
            log.debug("[agent] ■ turn session=%s completed in %.0f ms", scope.session, _ms(started))
            emit(Completed(data))
        except asyncio.CancelledError:
            log.debug("[agent] ■ turn session=%s cancelled after %.0f ms", scope.session, _ms(started))
            raise
        except Exception as exc:  # MUST 2: nothing escapes as a raise
            emit(self._failed(scope, exc, secrets))

    def _failed(self, scope: Scope, exc: Exception, secrets: Sequence[str | None]) -> Failed:
        """The caller gets the redacted event; the server log gets the specifics (never the key)."""
        event, detail = describe_failure(exc, secrets)
        if event.code == INTERNAL_ERROR:
            log.error("[agent] turn session=%s crashed: %s", scope.session, detail, exc_info=exc)
        else:
            log.warning("[agent] turn session=%s failed: %s", scope.session, detail)
        return event

    # --- binding a turn -----------------------------------------------------------------------

    async def _bind(self, scope: Scope) -> TurnSetup:
        offered = await self.config.tools()  # first: a source may mount tools the prompt lists
        tools: dict[str, Tool] = {}
        for tool in offered:
            tools.setdefault(tool.name, tool)
        inherit = Inheritance(scope.parent_session, scope.branch_hints) if scope.parent_session else None
        record = await self.config.sessions.open_or_create(scope.session, inherit)
        context = record.context()
        settings = resolve_session_settings(context, self.config.models, self.config.thinking_level)
        if settings.ignored_model is not None:
            log.warning(
                "[agent] session model %s is unknown; using %s", settings.ignored_model, settings.spec
            )
        model = settings.model
        credential = await self.config.models.acquire(model)  # may renew a subscription login
        if credential.expired(now_ms()):
            raise CredentialError(
                f"the {model.provider} login expired and this agent cannot renew it: "
                f"run `fastagent login {model.provider}`"
            )
        if credential.missing:
            raise CredentialError(f"no API key for provider {model.provider}: {missing_hint(model)}")
        if credential.base_url and credential.base_url != model.base_url:
            model = replace(model, base_url=credential.base_url)  # the login names its API host
        request = ModelRequest(
            model=model,
            system=self.config.system_prompt(),
            messages=context.messages,
            thinking=settings.thinking,
            api_key=credential.key,
            session_id=scope.session,
        )
        return TurnSetup(
            request=request,
            client=self.config.models.client_for(model),
            tools=tools,
            activation=ActivationState(list(tools.values()), record, context.activated_tools),
            record=record,
            cwd=self.config.cwd,
            max_tool_rounds=self.config.max_tool_rounds,
            retry=self.config.retry,
            tool_timeout=self.config.tool_timeout,
        )

    async def aclose(self) -> None:
        """Close the model clients and, when it has ``aclose``, the tool source."""
        try:
            await self.config.models.aclose()
        finally:
            close = getattr(self.config.tools, "aclose", None)
            if close is not None:
                await close()


def _user_message(prompt: Prompt) -> UserMessage:
    content: list[ContentBlock] = [{"type": "text", "text": prompt.text}]
    for image in prompt.images:
        content.append({"type": "image", "data": image.data, "mimeType": image.mime_type})
    return {"role": "user", "content": content, "timestamp": now_ms()}


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
