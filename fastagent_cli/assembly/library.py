"""L1: an agent from typed parts, for embedding (no directory is read)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fastagent_cli.assembly.opened import renewing_credentials
from fastagent_cli.auth.paths import global_auth_path
from fastagent_cli.engine.agent import DEFAULT_TOOL_TIMEOUT_S, EngineAgent, EngineConfig
from fastagent_cli.engine.ports import static_tools
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.messages import ThinkingLevel
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.models.resolver import ModelResolver
from fastagent_cli.models.types import ModelClient
from fastagent_cli.sessions.store import MemorySessionStore, SessionStore
from fastagent_cli.tools.approval import ApprovalPolicy
from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.search_tools import with_search_tool

__all__ = ["create_agent"]


def create_agent(
    *,
    model: str | ModelClient,
    instructions: str = "",
    tools: Sequence[Tool] = (),
    sessions: SessionStore | None = None,
    cwd: str | os.PathLike[str] | None = None,
    thinking_level: ThinkingLevel = "medium",
    max_tool_rounds: int = 50,
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT_S,
    retry: RetryPolicy | None = None,
    registry: ModelRegistry | None = None,
    auth_path: str | os.PathLike[str] | None = None,
    approval: ApprovalPolicy | None = None,
) -> EngineAgent:
    """Assemble an agent from typed parts (L1). ``instructions`` is used verbatim.

    ``model`` is a spec (``"openai/gpt-4.1-mini"``, ``"scripted/echo"``) or a model client built in
    code, e.g. ``ScriptedModel.from_callable(fn)`` (it answers as ``scripted/custom``). When a tool
    is deferred, the built-in ``search_tools`` loader is mounted too (an authored one wins, forced
    sequential); the instructions stay verbatim, so tell the model about ``search_tools`` there.
    ``approval``: which tool calls wait for a person (the tools' own ``approval`` flags count too;
    answer through ``agent.approvals.answer``).
    """
    workdir = str(Path(cwd or os.getcwd()).resolve())
    keys = Path(auth_path) if auth_path else None
    credentials = renewing_credentials(keys, global_auth_path())
    models = (
        ModelResolver(model, registry, auth_path=keys, credentials=credentials)
        if isinstance(model, str)
        else ModelResolver.fixed(model, registry=registry, auth_path=keys, credentials=credentials)
    )
    mounted, _ = with_search_tool(tools)
    return EngineAgent(
        EngineConfig(
            models=models,
            sessions=sessions or MemorySessionStore(workdir),
            system_prompt=lambda: instructions,
            tools=static_tools(mounted),
            cwd=workdir,
            thinking_level=thinking_level,
            max_tool_rounds=max_tool_rounds,
            tool_timeout=tool_timeout or None,
            retry=retry or RetryPolicy(),
            approvals=approval or ApprovalPolicy(),
        )
    )
