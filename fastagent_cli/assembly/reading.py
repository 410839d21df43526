"""The one reader of an agent directory.

A process reads its agent directory once, here, into an :class:`AgentSurface`: placement, ``.env``
(real environment variables win), ``fastagent.toml``, ``models.json``, the model by precedence
(``--model`` > ``FASTAGENT_MODEL`` > config ``model``), the state paths and the credential file.
The surface keeps problems as data (an unknown or missing model, a broken ``models.json``, a
config ``tools`` ref that cannot be imported, tool files that fail): ``info`` and ``tool`` report
them; :func:`~fastagent_cli.assembly.opened.open_agent` raises the fatal ones. Only what no
command can work without raises here: no agent at that path, an unreadable ``fastagent.toml``.

The tools (coding tools, config ``tools``, ``tools/``, then ``search_tools`` when a tool is
deferred, and ``wake`` / ``unwake`` on the serving path when ``self_schedule`` is on), the per-turn
prompt and the schedule files are built from the surface on first use, so the model picker and the
``dev`` supervisor, which need none of them, import no tool module.

:func:`locate_agent` is the lighter read ``login`` / ``logout`` need: placement, ``.env`` and the
state root, and ``None`` outside any agent (:func:`login_target` applies the credential order).
:func:`read_schedules` is the light read ``fastagent schedule ...`` needs: placement, ``.env``, the
state root, the backend and ``schedules/*.toml``, without importing tools.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fastagent_cli.assembly.backend import StateBackend, select_backend
from fastagent_cli.auth.paths import (
    AuthTarget,
    global_auth_path,
    outside_any_agent,
    resolve_auth_path,
    resolve_auth_target,
)
from fastagent_cli.definition.config import FastagentConfig, load_config
from fastagent_cli.definition.dotenv import load_dotenv
from fastagent_cli.definition.live_tools import LiveTools
from fastagent_cli.definition.placement import Placement, display_name, resolve_placement
from fastagent_cli.definition.prompt import DefinitionPrompt, LoadedDefinition
from fastagent_cli.definition.schedules import ScheduleSet, load_schedules
from fastagent_cli.definition.tools_loader import ToolSet, assemble_tools
from fastagent_cli.errors import ConfigError, FastagentError, ModelError, PlacementError
from fastagent_cli.messages import ThinkingLevel
from fastagent_cli.models.credentials import NOT_NEEDED, Credential, missing_hint, resolve_credential
from fastagent_cli.models.registry import ModelRegistry, parse_spec
from fastagent_cli.models.types import ModelInfo
from fastagent_cli.state.paths import resolve_sessions_dir, resolve_state_root
from fastagent_cli.tools.base import Tool

if TYPE_CHECKING:
    from fastagent_cli.tools.mcp_auth import McpTokens, TokenFactory
    from fastagent_cli.tools.mcp_config import McpServerConfig

__all__ = [
    "MISSING_MODEL",
    "AgentLocation",
    "AgentSurface",
    "ScheduleDir",
    "describe_credential",
    "inspect_agent_dir",
    "locate_agent",
    "locate_state",
    "login_target",
    "read_schedules",
    "resolve_model_spec",
]

MISSING_MODEL = (
    'missing model: set --model, FASTAGENT_MODEL, or model = "provider/model" in fastagent.toml '
    "(see `fastagent models`; offline: scripted/echo)"
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


@dataclass(frozen=True, slots=True)
class AgentLocation:
    """Where an agent is and where its state lives."""

    placement: Placement
    state_root: Path

    @property
    def agent_dir(self) -> Path:
        return self.placement.agent_dir

    @property
    def workspace(self) -> Path:
        return self.placement.workspace


def _locate(placement: Placement, env: Mapping[str, str] | None) -> AgentLocation:
    if env is None:  # the process environment: the agent's .env joins it (real variables win)
        load_dotenv(placement.agent_dir / ".env")
    state_root = resolve_state_root(placement.agent_dir, placement.workspace, env)
    return AgentLocation(placement, state_root)


def locate_agent(
    directory: str | os.PathLike[str] = ".", *, env: Mapping[str, str] | None = None
) -> AgentLocation | None:
    """The agent at ``directory`` for ``login`` / ``logout``: ``None`` outside any agent (no agent
    at, above or directly below it); any other placement problem raises. ``env`` replaces the
    process environment (and then no ``.env`` is loaded)."""
    environ = os.environ if env is None else env
    try:
        placement = resolve_placement(directory, environ)
    except PlacementError:
        if not outside_any_agent(Path(os.path.expanduser(os.fspath(directory))), environ):
            raise
        return None
    return _locate(placement, env)


@dataclass(frozen=True, slots=True)
class ScheduleDir:
    """What ``fastagent schedule ...`` reads: where the state is, the schedule files, and the
    backend whose claims hold the pending wake-ups (nothing connected yet)."""

    placement: Placement
    state_root: Path
    schedules: ScheduleSet
    backend: StateBackend


def locate_state(
    directory: str | os.PathLike[str] = ".", env: Mapping[str, str] | None = None
) -> AgentLocation:
    """The agent at ``directory`` and where its state lives (placement, ``.env``, the state root):
    the read of commands that only touch state."""
    return _locate(resolve_placement(directory, env), env)


def read_schedules(directory: str | os.PathLike[str] = ".") -> ScheduleDir:
    location = locate_state(directory)
    config = load_config(location.placement.config_path)
    backend = select_backend(config, location.agent_dir, location.state_root)
    return ScheduleDir(location.placement, location.state_root, load_schedules(location.agent_dir), backend)


def login_target(
    directory: str | os.PathLike[str] = ".", flag: str | None = None, env: Mapping[str, str] | None = None
) -> AuthTarget:
    """The credential file ``login`` / ``logout`` act on in ``directory`` (see
    :func:`fastagent_cli.auth.paths.resolve_auth_target`)."""
    return resolve_auth_target(locate_agent(directory, env=env), directory, flag, env)


class AgentSurface:
    """What a directory assembles into, before any engine exists (one read per process)."""

    def __init__(
        self,
        location: AgentLocation,
        config: FastagentConfig,
        *,
        model: str | None,
        sessions_dir: Path,
        auth_path: Path,
        tools: Sequence[Tool],
        env: Mapping[str, str] | None,
        wake_tools: bool = False,
    ) -> None:
        self.location = location
        self.config = config
        self.sessions_dir = sessions_dir
        self.auth_path = auth_path
        self.global_auth_path = global_auth_path()
        """Where ``login`` writes outside any agent; read after ``auth_path``, before the environment."""
        self.registry_problem: ConfigError | None = None
        try:
            self.registry = ModelRegistry(location.agent_dir / "models.json")
        except ConfigError as exc:
            self.registry, self.registry_problem = ModelRegistry(), exc
        self._named = resolve_model_spec(model, config, env)
        self.model_problem: FastagentError | None = None
        self._check_model()
        self.live = LiveTools(
            config.mcp_servers,
            location.workspace,
            config.code_mode_settings,
            mcp_tokens=_mcp_tokens(auth_path) if config.mcp_servers else None,
        )
        self._extra = list(tools)
        self._wake_tools = wake_tools
        self._toolset: ToolSet | None = None
        self._prompt: DefinitionPrompt | None = None
        self._schedules: ScheduleSet | None = None
        self._env = env
        self._backend: StateBackend | None = None

    # --- where ----------------------------------------------------------------------------------

    @property
    def placement(self) -> Placement:
        return self.location.placement

    @property
    def environment(self) -> Mapping[str, str]:
        """The environment this read uses (the process's unless one was passed)."""
        return os.environ if self._env is None else self._env

    @property
    def name(self) -> str:
        """What the agent is called where it is shown (``name`` in ``fastagent.toml``, else its
        directory's, or the workspace's for ``init``'s ``<workspace>/fastagent/``)."""
        return display_name(self.location.placement, self.config.name)

    @property
    def agent_dir(self) -> Path:
        return self.location.agent_dir

    @property
    def workspace(self) -> Path:
        return self.location.workspace

    @property
    def state_root(self) -> Path:
        return self.location.state_root

    @property
    def backend(self) -> StateBackend:
        """Where the machine state lives: files under the state root, or the shared database
        (``state_backend = "postgres"`` or ``FASTAGENT_DATABASE_URL``); ConfigError when the
        database settings are wrong. Nothing is connected yet."""
        if self._backend is None:
            self._backend = select_backend(self.config, self.agent_dir, self.state_root, self._env)
        return self._backend

    # --- the model ------------------------------------------------------------------------------

    def _check_model(self) -> None:
        if self.registry_problem is not None:
            self.model_problem = self.registry_problem
        elif self._named is None:
            self.model_problem = ModelError(MISSING_MODEL)
        else:
            try:
                self.registry.resolve(self._named[0])  # fail at startup, naming the spec
                self.model_problem = None
            except FastagentError as exc:
                self.model_problem = exc

    @property
    def model_named(self) -> bool:
        """Something names a model (whether or not it resolves)."""
        return self._named is not None

    @property
    def model_spec(self) -> str | None:
        return None if self.registry_problem is not None or self._named is None else self._named[0]

    @property
    def model_source(self) -> str | None:
        """``--model``, ``FASTAGENT_MODEL`` or ``fastagent.toml``."""
        return None if self.registry_problem is not None or self._named is None else self._named[1]

    @property
    def model_error(self) -> str | None:
        return None if self.model_problem is None else self.model_problem.message

    @property
    def thinking_level(self) -> ThinkingLevel:
        """The model spec's ``:level`` suffix (``anthropic/claude-sonnet-4-5:high``), else the
        config's ``thinking_level``: the level sessions start with, before clamping to the model."""
        level = parse_spec(self._named[0])[1] if self._named is not None else None
        return level or self.config.thinking_level

    @property
    def thinking_source(self) -> str:
        """``the model spec`` or ``fastagent.toml``."""
        named = self._named is not None and parse_spec(self._named[0])[1] is not None
        return "the model spec" if named else "fastagent.toml"

    def credential(self) -> tuple[ModelInfo, Credential] | None:
        """Where the model's key comes from now (no renewal, no network), or ``None`` when no model
        resolves. CredentialError when a credential file or an ``apiKey`` command is broken."""
        if self.model_problem is not None or self.model_spec is None:
            return None
        model = self.registry.resolve(self.model_spec)
        if model.api == "scripted":
            return model, Credential(None, NOT_NEEDED)
        return model, resolve_credential(model, self.auth_path, global_path=self.global_auth_path)

    def choose_model(self, spec: str, source: str) -> None:
        """Name the model after the read (the first-run picker); ``fastagent.toml`` as the source
        means the choice was saved there."""
        if source == "fastagent.toml":
            self.config = self.config.model_copy(update={"model": spec})
        self._named = (spec, source)
        self._check_model()

    # --- tools and prompt (built on first use) ---------------------------------------------------

    def mount_wake_tools(self) -> None:
        """Mount ``wake`` / ``unwake`` when ``self_schedule`` is on (the serving path, where the
        scheduler polls the wake-ups); call it before the tools are first used."""
        if self._toolset is not None and not self._wake_tools:
            raise RuntimeError("the tools are assembled already: mount the wake tools before")
        self._wake_tools = True

    @property
    def toolset(self) -> ToolSet:
        if self._toolset is None:
            toolset = assemble_tools(
                self.config,
                self.agent_dir,
                self.workspace,
                self._extra,
                catalog=self.live.catalog,
                strict=False,
            )
            if self._wake_tools and self.config.self_schedule:
                _mount_wake_tools(toolset, self.backend)
            self.live.set_static(toolset.tools)
            self._toolset = toolset
        return self._toolset

    @property
    def schedules(self) -> ScheduleSet:
        """``schedules/*.toml``, each loaded or reported as a failure."""
        if self._schedules is None:
            self._schedules = load_schedules(self.agent_dir)
        return self._schedules

    @property
    def prompt(self) -> DefinitionPrompt:
        """The per-turn system prompt (it lists the mounted tools, MCP ones included)."""
        if self._prompt is None:
            _ = self.toolset  # the static tools are mounted before the prompt lists them
            self._prompt = DefinitionPrompt(self.agent_dir, self.workspace, self.live.offered)
        return self._prompt

    def definition(self) -> LoadedDefinition:
        """The definition as it is now (re-read only if a file changed)."""
        return self.prompt.snapshot()

    # --- what is fatal --------------------------------------------------------------------------

    def problems(self) -> list[FastagentError]:
        """What would make :func:`~fastagent_cli.assembly.opened.open_agent` refuse, in order."""
        found: list[FastagentError] = []
        if self.model_problem is not None:
            found.append(self.model_problem)
        if self.toolset.error:
            found.append(ConfigError(self.toolset.error))
        try:
            _ = self.backend
        except ConfigError as exc:
            found.append(exc)
        return found

    def check(self) -> None:
        """Raise the first fatal problem (the definition files are read once to check them)."""
        if self.model_problem is not None:
            raise self.model_problem  # before any tool module is imported
        for problem in self.problems():
            raise problem
        self.prompt.snapshot()  # a definition that cannot be read fails at startup, not at turn 1


def describe_credential(model: ModelInfo, credential: Credential) -> str:
    """Where a key comes from (never the key): ``stored credential (<file>)``, ``OAuth (<file>)``,
    a variable name, ``models.json``, ``not needed``, or what to do when none was found."""
    if credential.missing:
        return f"{credential.source}: {missing_hint(model)}"
    return credential.source


def inspect_agent_dir(
    directory: str | os.PathLike[str] = ".",
    *,
    model: str | None = None,
    sessions_dir: str | None = None,
    auth_path: str | None = None,
    tools: Sequence[Tool] = (),
    strict: bool = False,
    env: Mapping[str, str] | None = None,
    wake_tools: bool = False,
) -> AgentSurface:
    """Read the directory into an :class:`AgentSurface`; creates nothing on disk. ``strict``:
    raise the fatal problems now (see :meth:`AgentSurface.check`). ``env`` replaces the process
    environment (then no ``.env`` is loaded). ``wake_tools``: mount ``wake`` / ``unwake`` when
    ``self_schedule`` is on."""
    placement = resolve_placement(directory, env)
    location = _locate(placement, env)
    config = load_config(placement.config_path)
    surface = AgentSurface(
        location,
        config,
        model=model,
        sessions_dir=resolve_sessions_dir(location.state_root, sessions_dir, placement.workspace, env),
        auth_path=resolve_auth_path(auth_path, location.state_root, placement.workspace, env),
        tools=tools,
        env=env,
        wake_tools=wake_tools,
    )
    if strict:
        surface.check()
    return surface


def _mount_wake_tools(toolset: ToolSet, backend: StateBackend) -> None:
    """The one place ``wake`` / ``unwake`` join the tools (the serving path, ``self_schedule``)."""
    from fastagent_cli.state.clock import system_clock
    from fastagent_cli.tools.wake import with_wake_tools

    toolset.tools, warnings = with_wake_tools(toolset.tools, backend.schedule_claims(), system_clock())
    toolset.warnings.extend(warnings)


def _mcp_tokens(auth_path: Path) -> TokenFactory:
    """Remote MCP servers' OAuth tokens from the agent's credential file (imported on first use:
    an agent without remote servers never loads them)."""

    def tokens(name: str, config: McpServerConfig) -> McpTokens | None:
        from fastagent_cli.auth.mcp.tokens import StoredTokens

        return StoredTokens(auth_path, name, config)

    return tokens
