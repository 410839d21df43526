"""``code_mode`` in ``fastagent.toml``: ``code_mode = true``, or a table with its limits::

    [code_mode]
    enabled = true
    time_limit = 30          # seconds of sandbox time per run (its snippets share them)
    memory_mb = 256          # heap per sandbox
    max_nested_calls = 100   # tool calls one run_code snippet may make
    max_suspensions = 1000   # host round trips per sandbox (calls, lookups, awaits)
    print_limit_kb = 10240   # captured print() output per snippet

Per server, ``[mcp_servers.<name>] code_mode = false`` keeps that server's tools native (or
``true`` puts only that server's tools in the sandbox when the agent's ``code_mode`` is off).
Importing this module does not import the sandbox.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CodeModeSettings"]


class CodeModeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    enabled: bool = True
    time_limit: float = Field(default=30.0, gt=0, le=3600)
    memory_mb: int = Field(default=256, ge=8, le=65_536)
    max_nested_calls: int = Field(default=100, ge=1, le=100_000)
    max_suspensions: int = Field(default=1000, ge=1, le=1_000_000)
    print_limit_kb: int = Field(default=10_240, ge=1, le=1_048_576)
    call_timeout: float = Field(default=600.0, gt=0, le=86_400)
    """Seconds one nested tool call may run (unless the tool sets its own ``timeout``)."""
