"""The public surface is pinned: ``fastagent_cli.__all__`` changes only on purpose, every name in it
resolves, and importing the package stays cheap (no heavy dependency at import time)."""

from __future__ import annotations

import subprocess
import sys

import fastagent_cli

PUBLIC = [
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


def test_all_is_pinned() -> None:
    assert fastagent_cli.__all__ == PUBLIC
    assert dir(fastagent_cli) == sorted(PUBLIC)


def test_every_public_name_resolves() -> None:
    for name in fastagent_cli.__all__:
        assert getattr(fastagent_cli, name) is not None, name
    assert fastagent_cli.SESSION_BUSY_CODE == "session_busy" and fastagent_cli.ABORTED_CODE == "aborted"


def test_importing_the_package_and_the_contract_is_light() -> None:
    code = (
        "import sys, fastagent_cli, fastagent_cli.contract;"
        "heavy = [m for m in ('aiohttp', 'httpx', 'pydantic', 'rich', 'prompt_toolkit', 'mcp', 'click')"
        " if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
