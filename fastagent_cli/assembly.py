"""Assembly: the one place agents are built.

* L1 :func:`create_agent` assembles from typed parts; ``instructions`` is the system prompt,
  verbatim, and ``tools`` are mounted as given.
* :func:`inspect_agent_dir` reads a directory the way every command does, without building an
  engine and without needing a model: placement, ``.env``, ``fastagent.toml``, model precedence
  (``--model`` > ``FASTAGENT_MODEL`` > config ``model``), state paths, the tools (coding tools,
  config ``tools``, ``tools/``, then ``search_tools`` when a tool is deferred) and the per-turn
  prompt. ``info`` and ``tool`` stop here; it creates nothing on disk.
* :func:`open_agent_dir` adds the engine (``invoke``, ``chat``, ``dev``, ``start``): a model is
  required, sessions live under the state root, and MCP servers start on the first turn.
  ``wake_tools=True`` (the serving path, where the scheduler polls wake-ups) also mounts
  ``wake`` / ``unwake`` when ``self_schedule`` is on.
* :func:`read_schedules` is the light read ``fastagent schedule ...`` needs: placement, ``.env``,
  the state root and ``schedules/*.toml``, without importing tools.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.contract import Scope
from fastagent_cli.definition.config import FastagentConfig, load_config
from fastagent_cli.definition.dotenv import load_dotenv
from fastagent_cli.definition.live_tools import LiveTools
from fastagent_cli.definition.placement import Placement, resolve_placement
from fastagent_cli.definition.prompt import DefinitionPrompt, LoadedDefinition
from fastagent_cli.definition.report import report_findings, startup_lines
from fastagent_cli.definition.schedules import ScheduleSet, load_schedules
from fastagent_cli.definition.skills import Skill
from fastagent_cli.definition.tools_loader import ToolCollision, ToolLoadFailure, ToolSet, assemble_tools
from fastagent_cli.engine.agent import EngineAgent, EngineConfig
from fastagent_cli.engine.clients import ClientPool
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.turn import TurnSetup
from fastagent_cli.errors import ConfigError, FastagentError, ModelError
from fastagent_cli.models.credentials import CredentialSource
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.models.types import ModelClient, ThinkingLevel
from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore, SessionStore
from fastagent_cli.state.paths import resolve_sessions_dir, resolve_state_root
from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.search_tools import with_search_tool

__all__ = [
    "MISSING_MODEL",
    "AgentSurface",
    "DirectoryAgent",
    "OpenedAgent",
    "ScheduleDir",
    "create_agent",
    "inspect_agent_dir",
    "open_agent_dir",
    "read_schedules",
    "resolve_model_spec",
]

log = logging.getLogger("fastagent.assembly")

MISSING_MODEL = (
    'missing model: set --model, FASTAGENT_MODEL, or model = "provider/model" in fastagent.toml '
    "(see `fastagent models`; offline: scripted/echo)"
)


def create_agent(
    *,
    model: str | ModelClient,
    instructions: str = "",
    tools: Sequence[Tool] = (),
    sessions: SessionStore | None = None,
    cwd: str | os.PathLike[str] | None = None,
    thinking_level: ThinkingLevel = "medium",
    max_tool_rounds: int = 50,
    retry: RetryPolicy | None = None,
    registry: ModelRegistry | None = None,
    auth_path: str | os.PathLike[str] | None = None,
) -> EngineAgent:
    """Assemble an agent from typed parts (L1). ``instructions`` is used verbatim.

    ``model`` is a spec (``"openai/gpt-4.1-mini"``, ``"scripted/echo"``) or a model client built in
    code, e.g. ``ScriptedModel.from_callable(fn)`` (it answers as ``scripted/custom``). When a tool
    is deferred, the built-in ``search_tools`` loader is mounted too (an authored one wins, forced
    sequential); the instructions stay verbatim, so tell the model about ``search_tools`` there.
    """
    workdir = str(Path(cwd or os.getcwd()).resolve())
    client = None if isinstance(model, str) else model
    spec = "scripted/custom" if client is not None else str(model)
    mounted, _ = with_search_tool(tools)
    return EngineAgent(
        EngineConfig(
            model=spec,
            sessions=sessions or MemorySessionStore(workdir),
            system_prompt=lambda: instructions,
            tools=mounted,
            cwd=workdir,
            registry=registry or ModelRegistry(),
            thinking_level=thinking_level,
            max_tool_rounds=max_tool_rounds,
            retry=retry or RetryPolicy(),
            auth_path=Path(auth_path) if auth_path else None,
            credentials=_credentials(Path(auth_path) if auth_path else None),
            clients=ClientPool(None, client),
        )
    )


def resolve_model_spec(
    flag: str | None, config: FastagentConfig, env: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """``(spec, source)`` by precedence, or ``None`` when nothing names a model."""
    environ = os.environ if env is None else env
    if flag:
        return flag, "--model"
    if environ.get("FASTAGENT_MODEL"):
        return environ["FASTAGENT_MODEL"], "FASTAGENT_MODEL"
    if config.model:
        return config.model, "fastagent.toml"
    return None


@dataclass(slots=True)
class AgentSurface:
    """What a directory assembles into, before any engine exists."""

    placement: Placement
    config: FastagentConfig
    registry: ModelRegistry
    model_spec: str | None
    model_source: str | None
    model_error: str | None
    state_root: Path
    sessions_dir: Path
    auth_path: Path
    toolset: ToolSet
    prompt: DefinitionPrompt
    live: LiveTools
    schedules: ScheduleSet

    @property
    def agent_dir(self) -> Path:
        return self.placement.agent_dir

    @property
    def workspace(self) -> Path:
        return self.placement.workspace

    def definition(self) -> LoadedDefinition:
        """The definition as it is now (re-read only if a file changed)."""
        return self.prompt.snapshot()


def inspect_agent_dir(
    directory: str | os.PathLike[str] = ".",
    *,
    model: str | None = None,
    sessions_dir: str | None = None,
    auth_path: str | None = None,
    tools: Sequence[Tool] = (),
    strict: bool = False,
    wake_tools: bool = False,
) -> AgentSurface:
    """Read the directory into an :class:`AgentSurface`. ``strict``: fail on a missing or unknown
    model and on a config ``tools`` ref that cannot be imported (else they are reported).
    ``wake_tools``: mount ``wake`` / ``unwake`` when ``self_schedule`` is on."""
    placement = resolve_placement(directory)
    load_dotenv(placement.agent_dir / ".env")
    config = load_config(placement.config_path)
    registry, model_spec, model_source, model_error = _model(placement, config, model, strict)
    state_root = resolve_state_root(placement.agent_dir, placement.workspace)
    sessions_path = resolve_sessions_dir(state_root, sessions_dir, placement.workspace)
    auth = _auth_path(auth_path, state_root, placement.workspace)
    live = LiveTools(config.mcp_servers, placement.workspace)
    toolset = assemble_tools(
        config, placement.agent_dir, placement.workspace, tools, catalog=live.catalog, strict=strict
    )
    if wake_tools and config.self_schedule:
        _mount_wake_tools(toolset, state_root)
    live.set_static(toolset.tools)
    prompt = DefinitionPrompt(placement.agent_dir, placement.workspace, live.mounted)
    return AgentSurface(
        placement,
        config,
        registry,
        model_spec,
        model_source,
        model_error,
        state_root,
        sessions_path,
        auth,
        toolset,
        prompt,
        live,
        load_schedules(placement.agent_dir),
    )


def _mount_wake_tools(toolset: ToolSet, state_root: Path) -> None:
    """The one place ``wake`` / ``unwake`` join the tools (the serving path, ``self_schedule``)."""
    from fastagent_cli.state.claims import open_schedule_claims
    from fastagent_cli.state.clock import system_clock
    from fastagent_cli.tools.wake import with_wake_tools

    toolset.tools, warnings = with_wake_tools(toolset.tools, open_schedule_claims(state_root), system_clock())
    toolset.warnings.extend(warnings)


@dataclass(frozen=True, slots=True)
class ScheduleDir:
    """What ``fastagent schedule ...`` reads: where the state is and the schedule files."""

    placement: Placement
    state_root: Path
    schedules: ScheduleSet


def read_schedules(directory: str | os.PathLike[str] = ".") -> ScheduleDir:
    placement = resolve_placement(directory)
    load_dotenv(placement.agent_dir / ".env")
    state_root = resolve_state_root(placement.agent_dir, placement.workspace)
    return ScheduleDir(placement, state_root, load_schedules(placement.agent_dir))


def _model(
    placement: Placement, config: FastagentConfig, flag: str | None, strict: bool
) -> tuple[ModelRegistry, str | None, str | None, str | None]:
    try:
        registry = ModelRegistry(placement.agent_dir / "models.json")
    except ConfigError as exc:
        if strict:
            raise
        return ModelRegistry(), None, None, exc.message
    chosen = resolve_model_spec(flag, config)
    if chosen is None:
        if strict:
            raise ModelError(MISSING_MODEL)
        return registry, None, None, MISSING_MODEL
    spec, source = chosen
    try:
        registry.resolve(spec)  # fail at startup, naming the spec, not at the first turn
    except FastagentError as exc:
        if strict:
            raise
        return registry, spec, source, exc.message
    return registry, spec, source, None


class DirectoryAgent(EngineAgent):
    """The engine agent of a directory: MCP tools join the mounted set before each turn binds."""

    def __init__(self, config: EngineConfig, live: LiveTools) -> None:
        super().__init__(config)
        self.live = live
        live.bind(self.tools)

    async def _bind(self, scope: Scope) -> TurnSetup:
        await self.live.refresh()
        return await super()._bind(scope)

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await self.live.aclose()


@dataclass(slots=True)
class OpenedAgent:
    """An opened directory agent: the engine plus everything it was assembled from."""

    agent: DirectoryAgent
    surface: AgentSurface
    model_spec: str
    model_source: str

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
        return self.surface.placement.agent_dir

    @property
    def workspace(self) -> Path:
        return self.surface.placement.workspace

    def definition(self) -> LoadedDefinition:
        """The definition as the next turn will see it (persona, context files, skills, findings)."""
        return self.surface.prompt.snapshot()

    def skills(self) -> list[Skill]:
        return list(self.definition().skills)

    @property
    def tool_names(self) -> list[str]:
        return list(self.agent.tools)

    @property
    def deferred_tools(self) -> list[str]:
        return [t.name for t in self.agent.tools.values() if t.deferred]

    @property
    def tool_collisions(self) -> list[ToolCollision]:
        return [*self.surface.toolset.collisions, *self.surface.live.collisions]

    @property
    def tool_failures(self) -> list[ToolLoadFailure]:
        return list(self.surface.toolset.failures)

    def diagnostics(self) -> list[str]:
        """Every finding worth a warning line: tools, skills, context files, MCP servers."""
        return report_findings(self.surface, self.definition())  # see definition/report.py

    def startup_lines(self) -> list[str]:
        """What a serving command prints when it starts (``agent:``, ``workspace:``, ...)."""
        return startup_lines(self.surface, self.definition(), self.model_spec, self.model_source)

    async def aclose(self) -> None:
        await self.agent.aclose()


def open_agent_dir(
    directory: str | os.PathLike[str] = ".",
    *,
    model: str | None = None,
    sessions_dir: str | None = None,
    auth_path: str | None = None,
    tools: Sequence[Tool] = (),
    wake_tools: bool = False,
) -> OpenedAgent:
    surface = inspect_agent_dir(
        directory,
        model=model,
        sessions_dir=sessions_dir,
        auth_path=auth_path,
        tools=tools,
        strict=True,
        wake_tools=wake_tools,
    )
    assert surface.model_spec is not None and surface.model_source is not None  # strict guarantees it
    placement, config = surface.placement, surface.config
    surface.prompt.snapshot()  # a definition that cannot be read fails at startup, not at turn 1
    agent = DirectoryAgent(
        EngineConfig(
            model=surface.model_spec,
            sessions=FileSessionStore(surface.sessions_dir, placement.workspace),
            system_prompt=surface.prompt,
            tools=surface.toolset.tools,
            cwd=str(placement.workspace),
            registry=surface.registry,
            thinking_level=config.thinking_level,
            max_tool_rounds=config.engine.max_tool_rounds,
            retry=RetryPolicy(config.engine.max_retries, config.engine.retry_base_delay_ms),
            auth_path=surface.auth_path,
            credentials=_credentials(surface.auth_path),
            agent_dir=placement.agent_dir,
        ),
        surface.live,
    )
    return OpenedAgent(agent, surface, surface.model_spec, surface.model_source)


def _credentials(auth_path: Path | None) -> CredentialSource:
    """Keys from the file and the environment, subscription logins renewed when they expire."""
    from fastagent_cli.auth.oauth.resolver import OAuthCredentials

    return OAuthCredentials(auth_path)


def _auth_path(flag: str | None, state_root: Path, workspace: Path) -> Path:
    from fastagent_cli.auth.paths import resolve_auth_path  # the one definition of the order

    return resolve_auth_path(flag, state_root, workspace)
