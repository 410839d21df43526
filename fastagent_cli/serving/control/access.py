"""Who may use the plane: its bearer token, ``control.json``, and the exposure warnings.

* The token is ``FASTAGENT_CONTROL_TOKEN`` when the environment (or the agent's ``.env``) sets it:
  how a deployed box gets a token its callers already know. Otherwise every boot mints a fresh
  one, and ``dev`` / ``start`` write ``<state root>/control.json`` =
  ``{"url": "http://<host>:<port>", "token": "..."}`` (0600 in a 0700 directory, atomically) for
  local clients such as ``fastagent attach``, and remove it on a clean exit.
* The plane is a remote-control surface: reachable beyond loopback it is worth a warning, and
  through ``--tunnel`` (public) a loud one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.serving.binding import is_loopback
from fastagent_cli.serving.control.plane import CONTROL_PREFIX
from fastagent_cli.state.atomic import read_json, write_private_json

__all__ = [
    "CONTROL_FILE",
    "CONTROL_TOKEN_ENV",
    "DEV_CONTROL_TOKEN_ENV",
    "LAN_WARNING",
    "TUNNEL_WARNING",
    "ControlAccess",
    "control_access",
    "control_exposure_warning",
    "mint_control_token",
    "read_control_file",
    "remove_control_file",
    "write_control_file",
]

CONTROL_TOKEN_ENV = "FASTAGENT_CONTROL_TOKEN"
DEV_CONTROL_TOKEN_ENV = "FASTAGENT_DEV_CONTROL_TOKEN"
"""How ``dev``'s supervisor hands its workers the token it minted (a worker removes it from its
environment at once, so tools never see it)."""
CONTROL_FILE = "control.json"
LAN_WARNING = (
    "session_control = true: /control/* is reachable on your LAN (bound to {host}), guarded only by "
    "its bearer token; bind 127.0.0.1 to keep it local"
)
TUNNEL_WARNING = (
    "!!! --tunnel with session_control = true: /control/* is reachable from the public internet "
    "through the tunnel URL (guarded only by its bearer token)"
)


@dataclass(frozen=True, slots=True)
class ControlAccess:
    """The plane's bearer token and prefix (``create_agent_service`` returns it as ``control``)."""

    token: str
    prefix: str = CONTROL_PREFIX
    minted: bool = True
    """Minted for this boot (``False``: it came from ``FASTAGENT_CONTROL_TOKEN``)."""


def mint_control_token() -> str:
    return secrets.token_urlsafe(32)


def control_access(env: Mapping[str, str] | None = None, *, boot_token: str | None = None) -> ControlAccess:
    """``FASTAGENT_CONTROL_TOKEN`` when set; else ``boot_token`` (``dev``'s supervisor keeps one
    token across worker restarts, so an open web chat page survives them); else a fresh one."""
    environ = os.environ if env is None else env
    given = environ.get(CONTROL_TOKEN_ENV, "").strip()
    if given:
        return ControlAccess(given, minted=False)
    return ControlAccess(boot_token or mint_control_token())


def write_control_file(state_root: Path, url: str, token: str) -> Path:
    path = state_root / CONTROL_FILE
    write_private_json(path, {"url": url, "token": token})
    return path


def read_control_file(state_root: Path) -> tuple[str, str] | None:
    """``(url, token)`` from ``control.json``; ``None`` when absent or not of that shape."""
    try:
        doc = read_json(state_root / CONTROL_FILE)
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("url"), str) and isinstance(doc.get("token"), str):
        return doc["url"], doc["token"]
    return None


def remove_control_file(path: Path, token: str) -> None:
    """Remove ``control.json`` if it is still this boot's (a newer process may have replaced it)."""
    current = read_control_file(path.parent)
    if current is not None and current[1] == token:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def control_exposure_warning(host: str | None) -> str | None:
    """The warning for a plane bound to ``host`` (``None``: all interfaces); ``None`` on loopback."""
    if is_loopback(host):
        return None
    return LAN_WARNING.format(host=host or "all interfaces")
