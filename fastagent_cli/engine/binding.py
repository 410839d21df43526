"""Binding a run: the ports and limits the engine is built with, the session's model and key,
and the :class:`~fastagent_cli.engine.turn.TurnSetup` a run starts from.

Everything is asked afresh per run (the tools, the system prompt, the model's credential): nothing
is resident between runs but what the session store holds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from fastagent_cli.contract import Scope
from fastagent_cli.engine.activation import ActivationState
from fastagent_cli.engine.approvals import ApprovalDesk
from fastagent_cli.engine.budget import SpendLimits, UsageMeter
from fastagent_cli.engine.compaction import CompactionSettings
from fastagent_cli.engine.hub import EventHub
from fastagent_cli.engine.ports import ModelPort, SystemPrompt, ToolSource
from fastagent_cli.engine.resume import open_calls
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.runs import Run
from fastagent_cli.engine.settings import SessionSettings, resolve_session_settings
from fastagent_cli.engine.turn import TurnSetup
from fastagent_cli.errors import CredentialError
from fastagent_cli.messages import ThinkingLevel, now_ms
from fastagent_cli.models.credentials import missing_hint
from fastagent_cli.models.thinking import DEFAULT_THINKING_LEVEL
from fastagent_cli.models.types import ModelClient, ModelInfo, ModelRequest
from fastagent_cli.sessions.inherit import Inheritance
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.sessions.store import SessionStore
from fastagent_cli.state.usage import UsageLedger
from fastagent_cli.tools.approval import ApprovalPolicy
from fastagent_cli.tools.base import Tool

__all__ = ["DEFAULT_TOOL_TIMEOUT_S", "BoundModel", "EngineConfig", "bind_model", "bind_turn", "settings_of"]

log = logging.getLogger("fastagent.agent")
DEFAULT_TOOL_TIMEOUT_S = 600.0


@dataclass(slots=True)
class EngineConfig:
    """The ports and limits a run works with, fixed at assembly; prompt and tools are asked per run."""

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
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    hub: EventHub | None = None
    """Where session events go (a fresh hub when not given: watchers subscribe to ``agent.hub``)."""
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Which tool calls wait for a person (the tools' own flags count too)."""
    usage: UsageLedger | None = None
    """Where each answer's usage is recorded (none: not recorded, only the session record has it)."""
    limits: SpendLimits = field(default_factory=SpendLimits)


@dataclass(frozen=True, slots=True)
class BoundModel:
    """The model a session runs with right now, its key and its client."""

    model: ModelInfo
    thinking: ThinkingLevel
    api_key: str | None
    client: ModelClient


def settings_of(config: EngineConfig, record: SessionRecord | None) -> SessionSettings:
    """The model and thinking level ``record`` runs with (overrides resolved and clamped;
    ``None``: a session that does not exist yet)."""
    context = record.context() if record is not None else None
    return resolve_session_settings(context, config.models, config.thinking_level)


async def bind_model(config: EngineConfig, record: SessionRecord | None) -> BoundModel:
    """The session's model (overrides applied, thinking clamped), its key and its client;
    CredentialError when no usable key exists (``record`` ``None``: a session not created yet)."""
    settings = settings_of(config, record)
    if settings.ignored_model is not None:
        log.warning("[agent] session model %s is unknown; using %s", settings.ignored_model, settings.spec)
    model = settings.model
    credential = await config.models.acquire(model)  # may renew a subscription login
    if credential.expired(now_ms()):
        raise CredentialError(
            f"the {model.provider} login expired and this agent cannot renew it: "
            f"run `fastagent login {model.provider}`"
        )
    if credential.missing:
        raise CredentialError(f"no API key for provider {model.provider}: {missing_hint(model)}")
    if credential.base_url and credential.base_url != model.base_url:
        model = replace(model, base_url=credential.base_url)  # the login names its API host
    return BoundModel(model, settings.thinking, credential.key, config.models.client_for(model))


async def bind_turn(
    config: EngineConfig, approvals: ApprovalDesk, scope: Scope, run: Run, resume: bool = False
) -> TurnSetup:
    """Open (or create) the session's record and bind the run to it: tools, model, first request."""
    offered = await config.tools()  # first: a source may mount tools the prompt lists
    tools: dict[str, Tool] = {}
    for tool in offered:
        tools.setdefault(tool.name, tool)
    inherit = Inheritance(scope.parent_session, scope.branch_hints) if scope.parent_session else None
    store = config.sessions
    existing = await store.open_if_exists(scope.session)
    if existing is None and inherit is None:
        # A new session: a turn refused for configuration (no key, unknown script) writes nothing.
        bound = await bind_model(config, None)
        record = await store.open_or_create(scope.session)
    else:
        record = existing or await store.open_or_create(scope.session, inherit)
        bound = await bind_model(config, record)
    resumed = open_calls(record, run, resume, approvals)
    context = record.context()
    request = ModelRequest(
        model=bound.model,
        system=config.system_prompt(),
        messages=context.messages,
        thinking=bound.thinking,
        api_key=bound.api_key,
        session_id=scope.session,
        memo=record.memo,
    )
    return TurnSetup(
        request=request,
        client=bound.client,
        tools=tools,
        activation=ActivationState(list(tools.values()), record, context.activated_tools),
        record=record,
        run=run,
        cwd=config.cwd,
        max_tool_rounds=config.max_tool_rounds,
        retry=config.retry,
        compaction=config.compaction.for_window(bound.model.context_window),
        tool_timeout=config.tool_timeout,
        approvals=approvals,
        resume=resumed,
        meter=_meter(config, scope.session),
    )


def _meter(config: EngineConfig, session: str) -> UsageMeter | None:
    if config.usage is None and not config.limits.any:
        return None
    return UsageMeter(config.usage, config.limits, session)
