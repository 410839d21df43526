"""Who may call ``POST /invoke``, and the warning when anyone on the network could.

* A bearer token is optional: ``FASTAGENT_TOKEN`` (the environment or the agent's ``.env``) wins
  over ``[http] token`` in ``fastagent.toml``. With one, ``/invoke`` wants
  ``Authorization: Bearer <token>``, compared in constant time; anything else is
  ``401 unauthorized`` (with ``WWW-Authenticate: Bearer``), before the body is read.
* ``/invoke`` runs the agent, and with the ``bash``, ``write`` or ``edit`` coding tools that means
  running commands and changing files as the serving user. When it is reachable from other
  machines (a non-loopback bind, or ``--tunnel``) with no token, serving starts with a loud
  warning (:func:`exposure_warning`).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable, Mapping

from aiohttp import web

from fastagent_cli.errors import ConfigError
from fastagent_cli.serving.binding import describe_listen, is_loopback
from fastagent_cli.serving.body import text_response

__all__ = [
    "DANGEROUS_TOOLS",
    "TOKEN_ENV",
    "InvokeToken",
    "exposure_warning",
    "is_authorized",
    "resolve_invoke_token",
    "unauthorized",
]

TOKEN_ENV = "FASTAGENT_TOKEN"
DANGEROUS_TOOLS = ("bash", "write", "edit")


class InvokeToken:
    """The token ``/invoke`` requires, and where it came from (never printed)."""

    def __init__(self, value: str, source: str) -> None:
        self._value = value.encode("utf-8")
        self.source = source

    def matches(self, presented: str) -> bool:
        return hmac.compare_digest(self._value, presented.encode("utf-8", "surrogateescape"))

    def __repr__(self) -> str:
        return f"InvokeToken(source={self.source!r})"


def resolve_invoke_token(
    config_token: str | None, env: Mapping[str, str] | None = None
) -> InvokeToken | None:
    """``FASTAGENT_TOKEN`` > ``[http] token`` > none."""
    environ = os.environ if env is None else env
    raw = environ.get(TOKEN_ENV, "")
    if raw:
        if raw != raw.strip() or any(ch.isspace() for ch in raw):
            raise ConfigError(f"{TOKEN_ENV} must not contain spaces or line breaks")
        return InvokeToken(raw, TOKEN_ENV)
    if config_token:
        return InvokeToken(config_token, "[http] token")
    return None


def is_authorized(request: web.BaseRequest, token: InvokeToken) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer":
        return token.matches("\0" + header)  # same work as a real comparison, never equal
    return token.matches(presented.strip())


def unauthorized() -> web.Response:
    response = text_response("unauthorized\n", 401)
    response.headers["WWW-Authenticate"] = 'Bearer realm="fastagent"'
    return response


def exposure_warning(
    host: str | None, port: int, *, tunnel: bool, tools: Iterable[str], token: InvokeToken | None
) -> str | None:
    """The loud warning for an ``/invoke`` anyone can reach that can run commands, else ``None``."""
    dangerous = [name for name in DANGEROUS_TOOLS if name in set(tools)]
    if token is not None or not dangerous or (is_loopback(host) and not tunnel):
        return None
    where = "through the --tunnel URL" if tunnel else f"on {describe_listen(host, port)}"
    return (
        f"!!! /invoke is open to anyone who can reach it {where}, with no token, and this agent has "
        f"{', '.join(dangerous)}: they can run commands and change files as this user. Set "
        f"{TOKEN_ENV} (or [http] token), bind 127.0.0.1, or turn those coding tools off"
    )
