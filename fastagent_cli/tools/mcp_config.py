"""``[mcp_servers.<name>]``: how to reach one MCP server: a command to start (stdio) or a URL.

A remote server is ``url = "https://..."`` with optional ``headers`` (values may be ``$VAR`` or
``${VAR}``, read from the environment when connecting, as ``models.json`` keys are), a
``timeout`` in seconds for each HTTP request, and ``transport = "sse"`` for a server that speaks
only the legacy HTTP+SSE transport (default ``"streamable-http"``). A server behind OAuth needs no
table at all (``fastagent login mcp:<name>`` discovers its authorization server and registers a
client); ``oauth = { client_id = "...", client_secret = "$VAR", scopes = [...], redirect_port = N }``
names a client registered by hand, for an authorization server without dynamic registration.

The type lives with the tools that use it (:mod:`fastagent_cli.tools.mcp`), below the definition
that reads it from ``fastagent.toml``; importing it does not import the ``mcp`` SDK.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["McpOAuthConfig", "McpServerConfig", "resolve_headers"]

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def resolve_headers(headers: Mapping[str, str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``headers`` with each ``$VAR`` / ``${VAR}`` replaced from the environment; ValueError naming
    the header and the variable when one is not set."""
    environ = os.environ if env is None else env
    resolved: dict[str, str] = {}
    for name, value in headers.items():

        def sub(match: re.Match[str], header: str = name) -> str:
            var = match.group(1) or match.group(2)
            if var not in environ:
                raise ValueError(f"header {header} needs ${var}, which is not set")
            return environ[var]

        resolved[name] = _VAR.sub(sub, value)
    return resolved


class McpOAuthConfig(BaseModel):
    """``[mcp_servers.<name>] oauth``: the OAuth client ``login mcp:<name>`` uses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    client_id: str | None = None
    """A client registered by hand (default: dynamic registration, when the server offers it)."""
    client_secret: str | None = None
    """Its secret, if it has one (``$VAR`` / ``${VAR}`` read from the environment)."""
    scopes: list[str] | None = None
    """Scopes to ask for (default: what the server's challenge or metadata names)."""
    redirect_port: int = Field(default=0, ge=0, le=65535)
    """The loopback port of the redirect ``http://127.0.0.1:<port>/callback`` (0: any free one;
    a client registered by hand usually needs the port it was registered with)."""

    @model_validator(mode="after")
    def _secret_needs_id(self) -> McpOAuthConfig:
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("oauth.client_secret needs oauth.client_id")
        return self


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    watch: list[str] = Field(default_factory=list)
    """Resource URIs to subscribe to while serving: each update becomes a notice."""
    watch_debounce_ms: int = Field(default=500, ge=0, le=600_000)
    """Updates of one resource within this window are one notice."""
    code_mode: bool | None = None
    """Call this server's tools from ``run_code`` (``None``: the agent's ``code_mode``)."""
    url: str | None = None
    """A remote server's endpoint (instead of ``command``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    transport: Literal["streamable-http", "sse"] = "streamable-http"
    timeout: float = Field(default=30.0, gt=0, le=3600)
    """Seconds for each HTTP request to a remote server (a stream's reads wait longer)."""
    oauth: McpOAuthConfig | None = None
    """The OAuth client of a remote server behind OAuth (see ``fastagent login mcp:<name>``)."""

    @model_validator(mode="after")
    def _one_way_in(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (a server to start) and url (a remote server)")
        if self.url is not None:
            if not re.match(r"https?://[^/\s]+", self.url):
                raise ValueError(f"url must be an http:// or https:// URL, not {self.url!r}")
            local = ("args", "env", "cwd")
            given = [k for k in local if k in self.model_fields_set]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to a command; a url server takes headers")
        elif {"headers", "transport", "oauth"} & self.model_fields_set:
            raise ValueError("headers, transport and oauth only apply to a url server")
        return self

    @property
    def remote(self) -> bool:
        return self.url is not None
