"""Opening a read directory: the engine built from its ports, handed to hosts as ports.

:func:`open_agent` raises what is fatal on the surface (no usable model, a config ``tools`` ref
that cannot be imported, a definition that cannot be read), then wires the engine: the session
store and event hub of the agent's state backend (files under the state root, or the shared
database: :mod:`fastagent_cli.assembly.backend`), the model resolver, the definition's per-turn
prompt and the live tool set (MCP servers start on the first turn). Hosts get an
:class:`OpenedAgent`: the contract's ``Agent``, the session hub (``control``) with the owner's face
on it (``sessions``: :class:`~fastagent_cli.assembly.control.owner.SessionOwner`), and what the
directory reports; never the engine or the store.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from fastagent_cli import telemetry
from fastagent_cli.assembly.backend import StateBackend
from fastagent_cli.assembly.control import LocalSessionControl, session_control
from fastagent_cli.assembly.control.owner import SessionOwner
from fastagent_cli.assembly.reading import AgentSurface, describe_credential, inspect_agent_dir
from fastagent_cli.contract import Agent
from fastagent_cli.control import AgentCommand, Inbox, InboxSink, Notice, SessionControl
from fastagent_cli.definition.config import FastagentConfig
from fastagent_cli.definition.placement import Placement
from fastagent_cli.definition.prompt import DefinitionPrompt, LoadedDefinition
from fastagent_cli.definition.report import (
    Finding,
    SummaryRow,
    collect_findings,
    format_rows,
    summary_rows,
)
from fastagent_cli.definition.skills import Skill, load_skills
from fastagent_cli.definition.tools_loader import ToolCollision, ToolLoadFailure
from fastagent_cli.engine.agent import EngineAgent, EngineConfig
from fastagent_cli.engine.budget import SpendLimits
from fastagent_cli.engine.compaction import CompactionSettings
from fastagent_cli.engine.inbox import EngineInbox
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.errors import FastagentError
from fastagent_cli.models.credentials import CredentialSource, missing_hint
from fastagent_cli.models.http_pool import model_pool
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.models.resolver import ModelResolver
from fastagent_cli.sessions.claude_code import ClaudeCodeMirror, MirroredStore
from fastagent_cli.sessions.store import SessionStore
from fastagent_cli.telemetry.settings import resolve_telemetry
from fastagent_cli.tools.base import Tool

WATCH_STATE_NAME = "watch-state.json"

__all__ = ["WATCH_STATE_NAME", "OpenedAgent", "open_agent", "open_agent_dir", "renewing_credentials"]


class OpenedAgent:
    """An opened directory agent: the agent, its session hub, and what it was assembled from."""

    def __init__(
        self,
        engine: EngineAgent,
        surface: AgentSurface,
        resolver: ModelResolver,
        backend: StateBackend | None = None,
    ) -> None:
        self._engine = engine
        self.backend = backend or surface.backend
        """Where this agent's state lives (files, or the database several instances share)."""
        self._resolver = resolver
        self._control: LocalSessionControl | None = None
        self._control_writes = surface.config.session_control
        self.surface = surface
        assert surface.model_spec is not None and surface.model_source is not None  # open checked it
        self.model_spec: str = surface.model_spec
        self.model_source: str = surface.model_source

    @property
    def agent(self) -> Agent:
        """The agent every host drives: ``invoke(scope, prompt)`` and nothing else."""
        return self._engine

    @property
    def control(self) -> SessionControl:
        """The session hub: watch and steer this agent's runs, read and (with
        ``session_control = true``) write its sessions. The definition's skills are its commands."""
        return self._hub()

    @property
    def sessions(self) -> SessionOwner:
        """The owner's face on the hub (chat, ``invoke``): read, list, settings writes through the
        hub's write path, ``/compact``."""
        return self._hub().owner

    def _hub(self) -> LocalSessionControl:
        if self._control is None:
            skills_dir = self.agent_dir / "skills"

            async def commands() -> list[AgentCommand]:
                found = await asyncio.to_thread(load_skills, skills_dir)
                return [AgentCommand(s.name, s.description or None) for s in found.skills]

            self._control = session_control(self._engine, commands=commands, writes=self._control_writes)
        return self._control

    async def drain(self, within: float) -> int:
        """Let the turns in flight finish for at most ``within`` seconds, then end the rest with
        a retryable ``failed`` (code ``server_restarting``): what a ``dev`` reload's old worker
        does. Returns how many were ended."""
        return await self._engine.drain(within)

    def enable_session_control(self) -> None:
        """Let the hub write sessions (rename, fork, delete, model and thinking changes, compact),
        as ``session_control = true`` does: a host that serves the control plane for a client
        that needs it (the web chat page) turns it on."""
        self._control_writes = True
        if self._control is not None:
            self._control.writes = True

    @property
    def session_control(self) -> bool:
        """Whether the hub writes (``session_control = true``, or a host turned it on)."""
        return self._control_writes

    def inbox(self, sink: InboxSink) -> Inbox:
        """Run input as it arrives (notices, streamed lines): an idle session starts a run, input
        arriving during a run coalesces into one follow-up turn; ``sink`` hears the runs."""
        return EngineInbox(self._engine, sink)

    def on_start(self) -> str | None:
        """The definition's ``On Start`` sections (what the first notice says when serving
        begins), or ``None``."""
        return self.definition().on_start

    def watched_resources(self) -> list[str]:
        """``<server> <uri>`` for every ``watch`` entry of ``[mcp_servers.<name>]``."""
        return [f"{name} {uri}" for name, server in self.config.mcp_servers.items() for uri in server.watch]

    async def start_watches(self, deliver: Callable[[Notice], None]) -> list[Notice]:
        """Subscribe to the watched MCP resources (starting their servers); resource updates
        go to ``deliver`` as notices. Returns the notices queued at startup: resources that
        changed since the last run (the watch state lives under the state root)."""
        if not self.watched_resources():
            return []
        return await self.surface.live.start_watches(deliver, self.state_root / WATCH_STATE_NAME)

    # --- what it was read from ------------------------------------------------------------------

    @property
    def placement(self) -> Placement:
        return self.surface.placement

    @property
    def config(self) -> FastagentConfig:
        return self.surface.config

    @property
    def registry(self) -> ModelRegistry:
        return self.surface.registry

    @property
    def state_root(self) -> Path:
        return self.surface.state_root

    @property
    def sessions_dir(self) -> Path:
        return self.surface.sessions_dir

    @property
    def auth_path(self) -> Path:
        return self.surface.auth_path

    @property
    def prompt(self) -> DefinitionPrompt:
        return self.surface.prompt

    @property
    def agent_dir(self) -> Path:
        return self.surface.agent_dir

    @property
    def name(self) -> str:
        """What the agent is called where it is shown (chat header, web chat, startup lines)."""
        return self.surface.name

    @property
    def workspace(self) -> Path:
        return self.surface.workspace

    # --- what it offers -------------------------------------------------------------------------

    def definition(self) -> LoadedDefinition:
        """The definition as the next turn will see it (persona, context files, skills, findings)."""
        return self.surface.definition()

    def skills(self) -> list[Skill]:
        return list(self.definition().skills)

    def tools(self) -> list[Tool]:
        """The mounted tools (MCP tools join once their servers ran for a turn)."""
        return self.surface.live.mounted()

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools()]

    @property
    def deferred_tools(self) -> list[str]:
        return [t.name for t in self.tools() if t.deferred]

    @property
    def tool_collisions(self) -> list[ToolCollision]:
        return [*self.surface.toolset.collisions, *self.surface.live.collisions]

    @property
    def tool_failures(self) -> list[ToolLoadFailure]:
        return list(self.surface.toolset.failures)

    # --- what it reports ------------------------------------------------------------------------

    def findings(self) -> list[Finding]:
        """Every problem worth a warning: tools, skills, context files, MCP servers, settings."""
        surface = self.surface
        return collect_findings(surface.toolset, self.definition(), surface.live, surface.schedules)

    def diagnostics(self) -> list[str]:
        return [f.message for f in self.findings()]

    def summary(self) -> list[SummaryRow]:
        """What a serving command says when it starts (``agent``, ``workspace``, ``model``, ...)."""
        surface = self.surface
        return summary_rows(
            surface.placement,
            surface.config,
            self.definition(),
            surface.live,
            self.model_spec,
            self.model_source,
        )

    def startup_lines(self) -> list[str]:
        """The summary rows, then one ``warn: ...`` line per finding."""
        return format_rows(self.summary()) + [f"warn: {f.message}" for f in self.findings()]

    def auth_summary(self) -> str:
        """Where the default model's key comes from (never the key), or what to do about it."""
        try:
            model = self._resolver.default()
            credential = self._resolver.credential(model)
        except FastagentError as exc:
            return f"cannot resolve: {exc.message}"
        return describe_credential(model, credential)

    def missing_key(self) -> str | None:
        """Why every turn on the default model would fail for want of a key (``None``: it has one,
        or needs none): what a serving command warns about when it starts."""
        try:
            model = self._resolver.default()
            credential = self._resolver.credential(model)
        except FastagentError:
            return None  # reported by auth_summary() on the auth line
        if not credential.missing:
            return None
        return (
            f"no API key for provider {model.provider}: {missing_hint(model)} "
            f"(every turn on {self.model_spec} fails until it is set)"
        )

    def serve_on(self, loopback: bool) -> None:
        """Serving on a loopback address (``loopback``) or beyond it: beyond, the built-in coding
        tools ask for approval unless ``[approval] tools`` says otherwise."""
        desk = self._engine.approvals
        desk.policy = self.config.approval.policy().served(loopback)

    def answer_approvals(self, answer: Callable[[str], Literal["approve", "deny"]], by: str) -> None:
        """Answer every approval request at once from the tool's name (``invoke --approve``)."""
        desk = self._engine.approvals
        desk.auto, desk.auto_by = answer, by

    async def connect(self) -> None:
        """Connect the state database and apply its migrations (nothing to do on files): what a
        serving command does before it listens. DatabaseError when it cannot be reached."""
        await self.backend.connect()

    async def aclose(self) -> None:
        """Close the model clients, stop the MCP servers, close the database connections, send
        the telemetry still buffered."""
        try:
            await self._engine.aclose()
        finally:
            try:
                await self.backend.aclose()
            finally:
                await telemetry.shutdown()


def open_agent(surface: AgentSurface, *, wake_tools: bool = False) -> OpenedAgent:
    """Build the engine of a read directory; raises the surface's fatal problems. ``wake_tools``
    (the serving path, where the scheduler polls wake-ups): mount ``wake`` / ``unwake`` when
    ``self_schedule`` is on."""
    if wake_tools:
        surface.mount_wake_tools()
    surface.check()
    assert surface.model_spec is not None  # check() guarantees it
    config = surface.config
    telemetry.activate(
        resolve_telemetry(
            config.telemetry.otlp_endpoint,
            capture_content=config.telemetry.capture_content,
            service_name=config.telemetry.service_name or surface.name,
            env=surface.environment,
        )
    )
    resolver = ModelResolver(
        surface.model_spec,
        surface.registry,
        auth_path=surface.auth_path,
        agent_dir=surface.agent_dir,
        credentials=renewing_credentials(surface.auth_path, surface.global_auth_path),
        pool=model_pool(config.engine),
    )
    backend = surface.backend
    store: SessionStore = backend.session_store(surface.sessions_dir, surface.workspace)
    if config.claude_code_sessions:
        mirror = ClaudeCodeMirror(str(surface.workspace), scope=str(surface.sessions_dir))
        store = MirroredStore(store, [mirror])
    engine = EngineAgent(
        EngineConfig(
            models=resolver,
            sessions=store,
            hub=backend.event_hub(),
            usage=backend.usage_ledger(),
            limits=SpendLimits(**config.limits.model_dump()),
            system_prompt=surface.prompt,
            tools=surface.live,
            cwd=str(surface.workspace),
            thinking_level=surface.thinking_level,
            max_tool_rounds=config.engine.max_tool_rounds,
            tool_timeout=config.engine.tool_timeout or None,
            retry=RetryPolicy(config.engine.max_retries, config.engine.retry_base_delay_ms),
            compaction=CompactionSettings(
                config.compaction.enabled,
                config.compaction.reserve_tokens,
                config.compaction.keep_recent_tokens,
            ),
            approvals=config.approval.policy(),
        )
    )
    return OpenedAgent(engine, surface, resolver, backend)


def open_agent_dir(
    directory: str | os.PathLike[str] = ".",
    *,
    model: str | None = None,
    sessions_dir: str | None = None,
    auth_path: str | None = None,
    tools: Sequence[Tool] = (),
    wake_tools: bool = False,
) -> OpenedAgent:
    """Read and open the agent in ``directory`` in one step (what ``invoke`` does with ``--model``)."""
    surface = inspect_agent_dir(
        directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path, tools=tools
    )
    return open_agent(surface, wake_tools=wake_tools)


def renewing_credentials(auth_path: Path | None, global_path: Path | None) -> CredentialSource:
    """Keys from the agent's file, the global file and the environment; subscription logins
    renewed (in the file they came from) when they expire."""
    from fastagent_cli.auth.oauth.resolver import OAuthCredentials

    return OAuthCredentials(auth_path, global_path)
