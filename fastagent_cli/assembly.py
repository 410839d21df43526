"""Assembly: the one place agents are built.

* L1 :func:`create_agent` assembles from typed parts; ``instructions`` is the system prompt,
  verbatim.
* :func:`open_agent_dir` opens a directory the way every command does (``invoke``, ``chat``,
  ``dev``, ``start``, ``tool``, ``info``): placement, ``.env``, ``fastagent.toml``, model
  precedence (``--model`` > ``FASTAGENT_MODEL`` > config ``model``), state paths, sessions, and the
  definition's prompt.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.definition.config import FastagentConfig, load_config
from fastagent_cli.definition.dotenv import load_dotenv
from fastagent_cli.definition.placement import Placement, resolve_placement
from fastagent_cli.definition.prompt import DefinitionPrompt
from fastagent_cli.engine.agent import EngineAgent, EngineConfig
from fastagent_cli.engine.clients import ClientPool
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.errors import ModelError
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.models.types import ModelClient, ThinkingLevel
from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore, SessionStore
from fastagent_cli.state.paths import resolve_sessions_dir, resolve_state_root
from fastagent_cli.tools.base import Tool

__all__ = ["MISSING_MODEL", "OpenedAgent", "create_agent", "open_agent_dir", "resolve_model_spec"]

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
    code, e.g. ``ScriptedModel.from_callable(fn)`` (it answers as ``scripted/custom``).
    """
    workdir = str(Path(cwd or os.getcwd()).resolve())
    client = None if isinstance(model, str) else model
    spec = "scripted/custom" if client is not None else str(model)
    return EngineAgent(
        EngineConfig(
            model=spec,
            sessions=sessions or MemorySessionStore(workdir),
            system_prompt=lambda: instructions,
            tools=tools,
            cwd=workdir,
            registry=registry or ModelRegistry(),
            thinking_level=thinking_level,
            max_tool_rounds=max_tool_rounds,
            retry=retry or RetryPolicy(),
            auth_path=Path(auth_path) if auth_path else None,
            clients=ClientPool(None, client),
        )
    )


@dataclass(slots=True)
class OpenedAgent:
    agent: EngineAgent
    placement: Placement
    config: FastagentConfig
    registry: ModelRegistry
    model_spec: str
    model_source: str
    state_root: Path
    sessions_dir: Path
    auth_path: Path

    @property
    def agent_dir(self) -> Path:
        return self.placement.agent_dir

    @property
    def workspace(self) -> Path:
        return self.placement.workspace


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


def open_agent_dir(
    directory: str | os.PathLike[str] = ".",
    *,
    model: str | None = None,
    sessions_dir: str | None = None,
    auth_path: str | None = None,
    tools: Sequence[Tool] = (),
) -> OpenedAgent:
    placement = resolve_placement(directory)
    load_dotenv(placement.agent_dir / ".env")
    config = load_config(placement.config_path)
    registry = ModelRegistry(placement.agent_dir / "models.json")
    chosen = resolve_model_spec(model, config)
    if chosen is None:
        raise ModelError(MISSING_MODEL)
    spec, source = chosen
    registry.resolve(spec)  # fail at startup, naming the spec, not at the first turn
    state_root = resolve_state_root(placement.agent_dir, placement.workspace)
    sessions_path = resolve_sessions_dir(state_root, sessions_dir, placement.workspace)
    auth = _auth_path(auth_path, state_root, placement.workspace)
    prompt = DefinitionPrompt(placement.agent_dir, placement.workspace, [t.name for t in tools])
    agent = EngineAgent(
        EngineConfig(
            model=spec,
            sessions=FileSessionStore(sessions_path, placement.workspace),
            system_prompt=prompt,
            tools=tools,
            cwd=str(placement.workspace),
            registry=registry,
            thinking_level=config.thinking_level,
            max_tool_rounds=config.engine.max_tool_rounds,
            retry=RetryPolicy(config.engine.max_retries, config.engine.retry_base_delay_ms),
            auth_path=auth,
            agent_dir=placement.agent_dir,
        )
    )
    return OpenedAgent(agent, placement, config, registry, spec, source, state_root, sessions_path, auth)


def _auth_path(flag: str | None, state_root: Path, workspace: Path) -> Path:
    from fastagent_cli.auth.paths import resolve_auth_path  # the one definition of the order

    return resolve_auth_path(flag, state_root, workspace)
