"""``fastagent.toml``: the agent's typed configuration.

Every key is optional; an unknown key is an error naming the key, the file and the valid keys, and
a TOML syntax error names the file, line and column::

    name = "support-bot"               # shown in chat, web chat, startup lines (default: the dir's)
    model = "anthropic/claude-sonnet-4-5"
    thinking_level = "medium"          # off|minimal|low|medium|high|xhigh|max
    coding_tools = true                # or false, or ["read", "bash"]
    tools = ["mypkg.tools:lookup"]     # import refs to Tool objects (or lists of them)
    self_schedule = false
    session_control = false
    state_backend = "files"            # or "postgres" (FASTAGENT_DATABASE_URL set: postgres)

    [http]
    port = 8787
    host = "127.0.0.1"                 # the default; "0.0.0.0" serves other machines
    token = "..."                      # bearer token for /invoke (FASTAGENT_TOKEN wins)
    web_chat = true                    # the chat page on GET / (default: on under dev, off under start)
    allowed_hosts = ["agent.example.com", ".example.org"]  # Host names besides loopback and IPs
    allowed_origins = ["https://app.example.com"]           # cross-origin callers (CORS)

    [engine]
    max_tool_rounds = 50
    tool_timeout = 600                 # seconds a tool call may run (0: no limit)
    connect_timeout = 15               # seconds to reach a model provider (TCP, proxy, TLS)
    first_byte_timeout = 30            # seconds for its answer to start once a request is sent
    chunk_timeout = 300                # seconds an answer may go silent between two chunks

    [limits]                           # spend limits, checked before each model request
    max_cost_per_turn = 0.50           # USD (catalog prices, or models.json "cost")
    max_cost_per_session = 5
    max_cost_per_day = 20              # the UTC day, across every session and instance
    max_tokens_per_day = 2000000       # token equivalents (per_turn / per_session / per_day)

    [telemetry]                        # OpenTelemetry, off unless an endpoint is set
    otlp_endpoint = "http://localhost:4318"   # OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT wins)
    capture_content = false            # prompts, answers and tool arguments in the spans
    service_name = "support-bot"       # default: the agent's name (OTEL_SERVICE_NAME wins)

    [compaction]                       # pi's compaction settings
    enabled = true                     # compact by itself near the context window's end
    reserve_tokens = 16384             # caps: a session uses 1/4 of its model's window at most
    keep_recent_tokens = 20000         # (and keeps 1/6 of it at most)

    [approval]                         # tool calls that wait for a person (README "Tool approvals")
    tools = ["bash", "github__*"]      # name globs (default: none; bash/write/edit when served
                                       # beyond loopback); tools may also flag themselves
    mode = "ask"                       # ask | deny (refuse, nobody asked) | allow (approvals off)
    timeout = 86400                    # seconds an ask waits, then the call is denied (0: no limit)
    allow_from = ["U123"]              # platform user ids who may answer besides the asker

    [deploy]
    secrets = ["OPENAI_API_KEY"]
    apt = ["ripgrep"]

    code_mode = false                  # or a [code_mode] table (see tools/code_mode/settings.py)
    claude_code_sessions = false       # also write each session as a Claude Code transcript

    [database]                         # state_backend = "postgres"
    namespace = "support-bot"          # this agent's rows (default: the agent directory's name)
    pool_size = 10                     # pooled connections per instance (plus two of its own)
    url = "postgresql://..."           # FASTAGENT_DATABASE_URL wins (keep passwords in .env)

    [output]
    schema = "person.json"             # `invoke` answers a JSON object matching it (or 'name str, age int')

    [mcp_servers.files]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    watch = ["file:///notes.md"]       # resources whose updates become notices while serving
    code_mode = true                   # this server's tools are called from run_code

    [mcp_servers.linear]               # a remote server (streamable HTTP)
    url = "https://mcp.linear.app/mcp"
    headers = { Authorization = "Bearer $LINEAR_TOKEN" }   # $VAR read when connecting
    timeout = 30                       # seconds per HTTP request
    transport = "sse"                  # only for a server on the legacy HTTP+SSE transport
    # behind OAuth instead of a header: `fastagent login mcp:linear`; a client registered by hand:
    oauth = { client_id = "...", scopes = ["read"], redirect_port = 8765 }
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Literal

import pydantic
from pydantic import BaseModel, Field, field_validator, model_validator

from fastagent_cli.definition.sections import (
    CONFIG_NAME,
    HTTP_FACES,
    ApprovalConfig,
    CompactionConfig,
    DatabaseConfig,
    DeployConfig,
    EngineSettings,
    HttpConfig,
    LimitsConfig,
    OutputConfig,
    Strict,
    TelemetryConfig,
)
from fastagent_cli.errors import ConfigError
from fastagent_cli.tools.code_mode.settings import CodeModeSettings
from fastagent_cli.tools.mcp_config import McpServerConfig

__all__ = [
    "CODING_TOOL_NAMES",
    "CONFIG_NAME",
    "WEB_CHAT_WITHOUT_PLANE",
    "HTTP_FACES",
    "FastagentConfig",
    "McpServerConfig",
    "load_config",
    "toml_error_text",
]

CODING_TOOL_NAMES = ("read", "bash", "edit", "write")
WEB_CHAT_WITHOUT_PLANE = (
    "[http] web_chat = true needs the session control plane, but session_control = false: "
    "the page is a client of /control (remove one of the two)"
)


class FastagentConfig(Strict):
    model: str | None = None
    thinking_level: Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"] = "medium"
    coding_tools: bool | list[str] = True
    tools: list[str] = Field(default_factory=list)
    http: HttpConfig = Field(default_factory=HttpConfig)
    self_schedule: bool = False
    session_control: bool = False
    deploy: DeployConfig = Field(default_factory=DeployConfig)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    engine: EngineSettings = Field(default_factory=EngineSettings)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    approval: ApprovalConfig = Field(default_factory=ApprovalConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    code_mode: CodeModeSettings | bool = Field(default=False, union_mode="left_to_right")
    claude_code_sessions: bool = False
    state_backend: Literal["files", "postgres"] | None = None
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    name: str | None = None
    """What the chat header, the web chat and the startup lines call the agent (default: its
    directory's name, or the workspace's for ``init``'s ``<workspace>/fastagent/``)."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or len(value) > 64 or not value.isprintable()):
            raise ValueError("must be a non-empty line of at most 64 printable characters")
        return value

    @field_validator("code_mode", mode="before")
    @classmethod
    def _code_mode_type(cls, value: object) -> object:
        if isinstance(value, bool | dict):
            return value
        raise ValueError(f"must be true, false or a [code_mode] table, not {_toml_repr(value)}")

    @property
    def code_mode_settings(self) -> CodeModeSettings:
        value = self.code_mode
        return value if isinstance(value, CodeModeSettings) else CodeModeSettings(enabled=value)

    @field_validator("coding_tools", mode="before")
    @classmethod
    def _coding_tools_type(cls, value: object) -> object:
        if isinstance(value, bool) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return value
        raise ValueError(
            f"must be true, false or a list of coding tool names ({', '.join(CODING_TOOL_NAMES)}), "
            f"not {_toml_repr(value)}"
        )

    @field_validator("coding_tools")
    @classmethod
    def _coding_tools(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, bool):
            return value
        seen: set[str] = set()
        for name in value:
            if name not in CODING_TOOL_NAMES:
                raise ValueError(f"unknown coding tool {name!r} (valid: {', '.join(CODING_TOOL_NAMES)})")
            if name in seen:
                raise ValueError(f"coding tool {name!r} is listed twice")
            seen.add(name)
        return [n for n in CODING_TOOL_NAMES if n in seen]

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: list[str]) -> list[str]:
        for ref in value:
            if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", ref):
                raise ValueError(f'{ref!r} is not an import ref like "package.module:attribute"')
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_servers(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", name) or "__" in name:
                raise ValueError(
                    f"server name {name!r} must be 1-40 letters, digits, '_' or '-' without '__' "
                    "(its tools appear as <server>__<tool>)"
                )
        return value

    @model_validator(mode="after")
    def _web_chat_needs_the_plane(self) -> FastagentConfig:
        if self.http.web_chat is True and self.session_control_refused:
            raise ValueError(WEB_CHAT_WITHOUT_PLANE)
        return self

    @property
    def session_control_refused(self) -> bool:
        """``session_control = false`` written out (not merely the default)."""
        return not self.session_control and "session_control" in self.model_fields_set

    @property
    def coding_tool_names(self) -> tuple[str, ...]:
        if self.coding_tools is True:
            return CODING_TOOL_NAMES
        if self.coding_tools is False:
            return ()
        return tuple(self.coding_tools)


def _section_keys(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    current: type[BaseModel] = model
    parts = list(loc[:-1])
    while parts:
        part = parts.pop(0)
        if part == "code_mode" and current is FastagentConfig:
            current = CodeModeSettings
            parts = [p for p in parts if p != "CodeModeSettings"]
            continue
        if part == "mcp_servers" and current is FastagentConfig:
            current = McpServerConfig
            parts = parts[1:]  # skip the server name
            continue
        field = current.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        current = annotation
    return [field.alias or name for name, field in current.model_fields.items()]  # [output] schema


_RETIRED = {
    "agent_dir": "placement is structural: put the agent in ./fastagent/ or point fastagent at it",
    "agentDir": "placement is structural: put the agent in ./fastagent/ or point fastagent at it",
    "channels": "channels are files: channels/<name>.py",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _describe(error: pydantic.ValidationError, path: Path) -> str:
    first = error.errors()[0]
    loc = first["loc"]
    key = ".".join(str(p) for p in loc if p != "CodeModeSettings")
    if first["type"] == "extra_forbidden":
        if len(loc) == 1 and str(loc[0]) in _RETIRED:
            return f"{path}: key {key!r} is retired ({_RETIRED[str(loc[0])]})"
        valid = _section_keys(FastagentConfig, loc) or list(FastagentConfig.model_fields)
        close = difflib.get_close_matches(_snake(str(loc[-1])), valid, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{path}: unknown key {key!r}{hint} (valid keys: {', '.join(valid)})"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] not in ("value_error", "assertion_error") and "input" in first:
        message = f"{message}, not {_toml_repr(first['input'])}"
    where = _field_key(loc)
    return f"{path}: {where}: {message}" if where else f"{path}: {message}"


def _field_key(loc: tuple[int | str, ...]) -> str:
    """``http.port``, ``tools[0]``: the key as a TOML user reads it (union member tags dropped)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("bool", "int", "float", "str", "CodeModeSettings") or "[" in str(part):
            continue  # pydantic's name for the union member that was tried
        else:
            out += f".{part}" if out else str(part)
    return out


def _toml_repr(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def toml_error_text(exc: tomllib.TOMLDecodeError) -> str:
    """``TOML syntax error at line L, column C: <what>``, one line."""
    text = str(exc)
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)", text)
    line, col = (found.group(1), found.group(2)) if found else (getattr(exc, "lineno", None), None)
    message = text[: found.start()] + text[found.end() :] if found else text
    where = f" at line {line}, column {col}" if line and col else ""
    return f"TOML syntax error{where}: {message.strip()}"


def load_config(path: Path) -> FastagentConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {toml_error_text(exc)}") from None
    try:
        return FastagentConfig.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None
