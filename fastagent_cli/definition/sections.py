"""The sections of ``fastagent.toml`` (``[http]``, ``[engine]``, ``[limits]``, ``[telemetry]``,
``[compaction]``, ``[deploy]``, ``[approval]``, ``[database]``, ``[output]``): one strict pydantic
model each. :mod:`.config` assembles them into :class:`~.config.FastagentConfig` and reads the file.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fastagent_cli.tools.approval import DEFAULT_APPROVAL_TIMEOUT_S, ApprovalPolicy

__all__ = [
    "CONFIG_NAME",
    "HTTP_FACES",
    "ApprovalConfig",
    "CompactionConfig",
    "DatabaseConfig",
    "DeployConfig",
    "EngineSettings",
    "HttpConfig",
    "LimitsConfig",
    "OutputConfig",
    "Strict",
    "TelemetryConfig",
]

CONFIG_NAME = "fastagent.toml"


class Strict(BaseModel):
    """No unknown keys and no coercion: ``"yes"`` is not a boolean and ``"8787"`` not a port."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


_HOST_NAME = re.compile(r"\.?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
_ORIGIN = re.compile(r"https?://(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(:[0-9]{1,5})?")


HTTP_FACES: dict[str, str] = {
    "openai": "OpenAI-compatible API on /v1",
    "mcp": "MCP server on /mcp",
    "a2a": "A2A agent on /a2a",
}
"""The protocol faces ``[http]`` switches on, each a boolean of its own name (off by default): name
-> what it serves, as ``info`` and the startup lines say it."""


class HttpConfig(Strict):
    port: int | None = Field(default=None, ge=0, le=65535)
    host: str | None = None
    token: str | None = None
    web_chat: bool | None = None
    """The web chat page on ``GET /`` (``None``: on under ``dev``, off under ``start``)."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """``Host`` names served besides loopback names and IP addresses (``.example.com``: it and its
    subdomains; ``"*"``: any). See :mod:`fastagent_cli.serving.request_guard`."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Web origins (``https://app.example.com``) that may call across origins (CORS)."""
    openai: bool = False
    """The OpenAI-compatible API under ``/v1`` (:mod:`fastagent_cli.serving.faces.openai`)."""
    mcp: bool = False
    """The MCP server on ``/mcp`` (:mod:`fastagent_cli.serving.faces.mcp`)."""
    a2a: bool = False
    """The A2A agent card and JSON-RPC endpoint (:mod:`fastagent_cli.serving.faces.a2a`)."""

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for entry in value:
            name = entry.strip().lower().rstrip(".")
            if name != "*" and (not name or not _HOST_NAME.fullmatch(name)):
                raise ValueError(
                    f'"{entry}" is not a host name (write "agent.example.com" or ".example.com")'
                )
            out.append(name)
        return out

    @field_validator("allowed_origins")
    @classmethod
    def _allowed_origins(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for entry in value:
            origin = entry.strip().lower().rstrip("/")
            if not _ORIGIN.fullmatch(origin):
                raise ValueError(
                    f'"{entry}" is not a web origin (write "https://app.example.com", scheme and host, '
                    "optionally :port; no path, no wildcard)"
                )
            out.append(origin)
        return out

    def faces(self) -> list[str]:
        """The faces switched on, in :data:`HTTP_FACES` order."""
        return [name for name in HTTP_FACES if getattr(self, name, False) is True]

    @field_validator("token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        if value is not None and (not value or any(ch.isspace() for ch in value)):
            raise ValueError("must be a non-empty string without spaces (prefer FASTAGENT_TOKEN in .env)")
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        if value is None or value == "localhost":
            return value
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError("must be an IP address or localhost") from None
        return value


class EngineSettings(Strict):
    max_tool_rounds: int = Field(default=50, ge=1, le=1000)
    max_retries: int = Field(default=3, ge=0, le=10)
    retry_base_delay_ms: int = Field(default=2000, ge=0, le=60_000)
    tool_timeout: float = Field(default=600.0, ge=0, le=86_400)
    connect_timeout: float = Field(default=15.0, gt=0, le=3_600)
    first_byte_timeout: float = Field(default=30.0, gt=0, le=86_400)
    chunk_timeout: float = Field(default=300.0, gt=0, le=86_400)


class LimitsConfig(Strict):
    """Spend limits (see :mod:`fastagent_cli.engine.budget`); unset: no limit."""

    max_cost_per_turn: float | None = Field(default=None, gt=0)
    max_cost_per_session: float | None = Field(default=None, gt=0)
    max_cost_per_day: float | None = Field(default=None, gt=0)
    max_tokens_per_turn: int | None = Field(default=None, ge=1)
    max_tokens_per_session: int | None = Field(default=None, ge=1)
    max_tokens_per_day: int | None = Field(default=None, ge=1)


class TelemetryConfig(Strict):
    """OpenTelemetry export (see :mod:`fastagent_cli.telemetry`); the ``OTEL_*`` variables win."""

    otlp_endpoint: str | None = None
    capture_content: bool = False
    service_name: str | None = None

    @field_validator("otlp_endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL (the collector's OTLP/HTTP base)")
        return value


class CompactionConfig(Strict):
    enabled: bool = True
    reserve_tokens: int = Field(default=16_384, ge=1, le=1_000_000)
    keep_recent_tokens: int = Field(default=20_000, ge=1, le=1_000_000)


class DeployConfig(Strict):
    secrets: list[str] = Field(default_factory=list)
    apt: list[str] = Field(default_factory=list)

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                raise ValueError(f"{name!r} is not an environment variable name ([A-Z_][A-Z0-9_]*)")
        return value

    @field_validator("apt")
    @classmethod
    def _apt(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", name):
                raise ValueError(f"{name!r} is not a Debian package name")
        return value


class ApprovalConfig(Strict):
    tools: list[str] | None = None
    mode: Literal["ask", "deny", "allow"] = "ask"
    timeout: float = Field(default=DEFAULT_APPROVAL_TIMEOUT_S, ge=0, le=30 * 86_400)
    allow_from: list[str] = Field(default_factory=list)

    @field_validator("tools", "allow_from")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            if not name.strip() or any(ch.isspace() for ch in name):
                raise ValueError(f"{name!r} must be a non-empty name without spaces")
        return value

    def policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(
            tools=tuple(self.tools or ()),
            mode=self.mode,
            timeout=self.timeout or None,
            answerers=tuple(self.allow_from),
            tools_set=self.tools is not None,
        )


class DatabaseConfig(Strict):
    url: str | None = None
    namespace: str | None = None
    pool_size: int = Field(default=10, ge=1, le=200)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", value):
            raise ValueError("must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit")
        return value


class OutputConfig(Strict):
    schema_: str | dict[str, Any] | None = Field(default=None, alias="schema")
    """The JSON Schema ``fastagent invoke`` answers match unless ``--schema`` says otherwise: a
    table (the schema itself), or a string: a ``.json`` file (relative to the agent directory),
    inline JSON, or the concise ``'name str, age int'``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    @field_validator("schema_")
    @classmethod
    def _schema(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        from fastagent_cli.errors import UsageError
        from fastagent_cli.models.structured import check_schema, parse_schema

        if isinstance(value, dict):
            error = check_schema(value)
            if error is not None:
                raise ValueError(f"is not a valid JSON Schema: {error}")
        elif isinstance(value, str) and not value.strip().endswith(".json"):
            try:
                parse_schema(value)  # a file is read when it is used (it is relative to the agent)
            except UsageError as exc:
                raise ValueError(exc.message) from None
        return value

    def resolve(self, agent_dir: Path) -> dict[str, Any] | None:
        """The schema itself (UsageError when its file cannot be read or is not a schema)."""
        from fastagent_cli.errors import UsageError
        from fastagent_cli.models.structured import parse_schema

        if self.schema_ is None or isinstance(self.schema_, dict):
            return self.schema_
        try:
            return parse_schema(self.schema_, agent_dir)
        except UsageError as exc:
            raise UsageError(f"{agent_dir / CONFIG_NAME}: [output] schema: {exc.message}") from None
