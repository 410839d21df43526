"""Where ``start`` / ``dev`` listen: the port and bind precedence, and what ``--tunnel`` can reach.

* port: ``--port`` > ``PORT`` (``start`` only) > ``[http] port`` > 8787. A bad ``--port`` is a
  usage error (exit 2); a bad ``PORT`` is a runtime error (exit 1).
* bind: ``--bind`` > ``HOST`` > ``[http] host`` > 127.0.0.1 (loopback: safe by default; bind
  ``0.0.0.0`` to serve other machines); ``localhost`` is read as 127.0.0.1. A bad ``--bind`` is a
  usage error (exit 2); a bad ``HOST`` is a runtime error (exit 1).
* ``--tunnel`` runs ``cloudflared tunnel --url http://localhost:<port>``, so the bind must answer
  ``localhost``: loopback or all interfaces. Otherwise a ``--bind`` flag is a usage conflict
  (exit 2) and a config value a configuration error (exit 1).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from fastagent_cli.errors import ConfigError, UsageError

__all__ = [
    "DEFAULT_BIND",
    "DEFAULT_PORT",
    "ServeOptions",
    "check_tunnel_bind",
    "concrete_port",
    "describe_listen",
    "host_from_env",
    "is_loopback",
    "local_base_url",
    "parse_bind",
    "parse_port",
    "port_from_env",
    "resolve_bind",
    "resolve_port",
]

DEFAULT_PORT = 8787
DEFAULT_BIND = "127.0.0.1"
_TUNNEL_REACHABLE = {"127.0.0.1", "::1", "0.0.0.0", "::"}


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What ``start`` / ``dev`` were asked for (flags already validated)."""

    directory: str = "."
    command: Literal["start", "dev"] = "start"
    port: int | None = None
    """``--port``."""
    env_port: int | None = None
    """``PORT`` (``start`` only)."""
    bind: str | None = None
    """``--bind``, normalised (``localhost`` -> 127.0.0.1)."""
    env_host: str | None = None
    """``HOST``, normalised."""
    model: str | None = None
    sessions_dir: str | None = None
    auth_path: str | None = None
    tunnel: bool = False
    no_input: bool = False


def parse_port(raw: str, source: str) -> int:
    """A port number 0-65535 (0 picks a free one), or ValueError saying what is wrong."""
    text = raw.strip()
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ValueError(f"{source} must be a port number 0-65535, not {raw!r}")
    return int(text)


def port_from_env(env: Mapping[str, str] | None = None) -> int | None:
    """``PORT`` from the environment; ConfigError (exit 1) when it is not a port number."""
    environ = os.environ if env is None else env
    raw = environ.get("PORT")
    if raw is None or raw == "":
        return None
    try:
        return parse_port(raw, "the PORT environment variable")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def parse_bind(raw: str) -> str:
    """``--bind``: an IP address or ``localhost`` (read as 127.0.0.1); UsageError otherwise."""
    address = _address(raw)
    if address is None:
        raise UsageError(f"--bind must be an IP address or localhost, not {raw!r}")
    return address


def _address(raw: str) -> str | None:
    text = raw.strip()
    if text == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        return None


def host_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``HOST`` from the environment; ConfigError (exit 1) when it is not an address."""
    environ = os.environ if env is None else env
    raw = environ.get("HOST")
    if raw is None or raw == "":
        return None
    address = _address(raw)
    if address is None:
        raise ConfigError(
            f"the HOST environment variable must be an IP address or localhost, not {raw!r} "
            "(unset it, or pass --bind)"
        )
    return address


def is_loopback(host: str | None) -> bool:
    """Whether only this machine can reach ``host`` (``None``: all interfaces)."""
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def resolve_port(options: ServeOptions, config_port: int | None) -> int:
    if options.port is not None:
        return options.port
    if options.env_port is not None:
        return options.env_port
    return config_port if config_port is not None else DEFAULT_PORT


def resolve_bind(options: ServeOptions, config_host: str | None) -> str:
    """The address to bind: ``--bind`` > ``HOST`` > ``[http] host`` > 127.0.0.1."""
    if options.bind is not None:
        return options.bind
    if options.env_host is not None:
        return options.env_host
    if config_host is None:
        return DEFAULT_BIND
    return "127.0.0.1" if config_host == "localhost" else config_host


def _reachable_from_localhost(host: str | None) -> bool:
    return host is None or host in _TUNNEL_REACHABLE


def check_tunnel_bind(options: ServeOptions, config_host: str | None) -> None:
    """Refuse a bind that ``http://localhost:<port>`` (what cloudflared dials) cannot reach."""
    if not options.tunnel:
        return
    host = resolve_bind(options, config_host)
    if _reachable_from_localhost(host):
        return
    reason = f"--tunnel forwards http://localhost:<port>, which cannot reach {host}"
    if options.bind is not None:
        raise UsageError(f"--bind {host} conflicts with {reason}; drop --bind or bind 127.0.0.1")
    if options.env_host is not None:
        raise ConfigError(f"HOST={host} conflicts with {reason}; unset HOST or set it to 127.0.0.1")
    raise ConfigError(
        f'[http] host = "{config_host}" in fastagent.toml: {reason}; '
        "bind 127.0.0.1 (or --bind 127.0.0.1) to use --tunnel"
    )


def describe_listen(host: str | None, port: int) -> str:
    """``:8787 (all interfaces)`` or ``127.0.0.1:8787``."""
    if host is None or host in ("0.0.0.0", "::"):
        return f":{port} (all interfaces)"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def local_base_url(host: str | None, port: int) -> str:
    """A URL this machine can paste: all-interfaces binds are reached through loopback."""
    if host is None or host == "0.0.0.0":
        return f"http://127.0.0.1:{port}"
    if host == "::":
        return f"http://[::1]:{port}"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def concrete_port(host: str | None, port: int) -> int:
    """Port 0 on all interfaces is one port free on IPv4 and IPv6 alike.

    Binding ``port=0`` with no host makes one socket per address family, each with its own
    ephemeral port, so the reported port would answer one family only. Pick one both can take.
    """
    if port != 0 or host is not None or not socket.has_ipv6:
        return port
    for _ in range(20):
        with socket.socket(socket.AF_INET) as v4:
            v4.bind(("0.0.0.0", 0))
            candidate = int(v4.getsockname()[1])
            with socket.socket(socket.AF_INET6) as v6:
                v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                with contextlib.suppress(OSError):
                    v6.bind(("::", candidate))
                    return candidate
    return port
