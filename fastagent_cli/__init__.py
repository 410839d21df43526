"""fastagent: turn a file-defined agent directory into a live service.

The public API. Names are imported on first use, so ``import fastagent_cli`` stays cheap for the
CLI and for channel packages that need only the contract.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fastagent_cli._version import __version__

if TYPE_CHECKING:
    from fastagent_cli.assembly import OpenedAgent, create_agent, inspect_agent_dir, open_agent_dir
    from fastagent_cli.assembly.control import session_control
    from fastagent_cli.assembly.typed_output import TypedAgent, agent_output
    from fastagent_cli.contract import (
        ABORTED_CODE,
        INVALID_OUTPUT_CODE,
        SESSION_BUSY_CODE,
        Agent,
        AgentEvent,
        AgentFailure,
        ApprovalRequested,
        CollectResult,
        Completed,
        Failed,
        ImageRef,
        Prompt,
        Retrying,
        Scope,
        Text,
        Thinking,
        ToolEnded,
        ToolStarted,
        collect,
        event_from_json,
        event_to_json,
    )
    from fastagent_cli.control import SessionControl, SessionEvent, SessionUpdate
    from fastagent_cli.engine.agent import EngineAgent
    from fastagent_cli.engine.retry import RetryPolicy
    from fastagent_cli.errors import ControlRequestError, FastagentError
    from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
    from fastagent_cli.remote import connect_agent, connect_session_control
    from fastagent_cli.serving import create_agent_service, create_invoke_handler, read_body_capped, serve
    from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore
    from fastagent_cli.tools.base import Tool, ToolContext, ToolResult
    from fastagent_cli.tools.define import define_tool, tool

__all__ = [
    "ABORTED_CODE",
    "INVALID_OUTPUT_CODE",
    "SESSION_BUSY_CODE",
    "Agent",
    "AgentEvent",
    "AgentFailure",
    "ApprovalRequested",
    "CollectResult",
    "Completed",
    "ControlRequestError",
    "EngineAgent",
    "Failed",
    "FastagentError",
    "FileSessionStore",
    "ImageRef",
    "MemorySessionStore",
    "OpenedAgent",
    "Prompt",
    "RetryPolicy",
    "Retrying",
    "Scope",
    "ScriptedModel",
    "ScriptedRequest",
    "SessionControl",
    "SessionEvent",
    "SessionUpdate",
    "Text",
    "Thinking",
    "Tool",
    "ToolContext",
    "ToolEnded",
    "ToolResult",
    "ToolStarted",
    "TypedAgent",
    "__version__",
    "agent_output",
    "collect",
    "connect_agent",
    "connect_session_control",
    "create_agent",
    "create_agent_service",
    "create_invoke_handler",
    "define_tool",
    "event_from_json",
    "event_to_json",
    "inspect_agent_dir",
    "open_agent_dir",
    "read_body_capped",
    "serve",
    "session_control",
    "tool",
]

_HOME: dict[str, str] = {
    "OpenedAgent": "assembly",
    "create_agent": "assembly",
    "inspect_agent_dir": "assembly",
    "open_agent_dir": "assembly",
    "EngineAgent": "engine.agent",
    "RetryPolicy": "engine.retry",
    "ControlRequestError": "errors",
    "FastagentError": "errors",
    "ScriptedModel": "models.scripted",
    "ScriptedRequest": "models.scripted",
    "SessionControl": "control",
    "SessionEvent": "control",
    "SessionUpdate": "control",
    "session_control": "assembly.control",
    "TypedAgent": "assembly.typed_output",
    "agent_output": "assembly.typed_output",
    "connect_agent": "remote",
    "connect_session_control": "remote",
    "create_agent_service": "serving",
    "create_invoke_handler": "serving",
    "read_body_capped": "serving",
    "serve": "serving",
    "FileSessionStore": "sessions.store",
    "MemorySessionStore": "sessions.store",
    "Tool": "tools.base",
    "ToolContext": "tools.base",
    "ToolResult": "tools.base",
    "define_tool": "tools.define",
    "tool": "tools.define",
}


def __getattr__(name: str) -> Any:
    if name in __all__ and name != "__version__":
        module = importlib.import_module(f"fastagent_cli.{_HOME.get(name, 'contract')}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastagent_cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
