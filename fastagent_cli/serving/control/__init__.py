"""The session control plane over HTTP: the hub under ``/control``, bearer-authenticated.

``create_control_plane(control, token, agent)`` is the handler that owns the ``/control`` prefix
(mount it with ``build_router(routes, mounts={"/control": handler})``; ``create_agent_service``
does when ``session_control = true``). The wire is documented in ``docs/control-plane.md``.
"""

from __future__ import annotations

from fastagent_cli.contract import Agent
from fastagent_cli.control import SessionControl
from fastagent_cli.serving.control.access import (
    CONTROL_FILE,
    CONTROL_TOKEN_ENV,
    DEV_CONTROL_TOKEN_ENV,
    LAN_WARNING,
    TUNNEL_WARNING,
    ControlAccess,
    control_access,
    control_exposure_warning,
    mint_control_token,
    read_control_file,
    remove_control_file,
    write_control_file,
)
from fastagent_cli.serving.control.detached import DetachedRuns
from fastagent_cli.serving.control.plane import CONTROL_PREFIX, CORS_HEADERS, mount_plane
from fastagent_cli.serving.control.routes import BODY_TOO_LARGE, control_routes
from fastagent_cli.serving.router import Handler

__all__ = [
    "BODY_TOO_LARGE",
    "CONTROL_FILE",
    "CONTROL_PREFIX",
    "CONTROL_TOKEN_ENV",
    "CORS_HEADERS",
    "DEV_CONTROL_TOKEN_ENV",
    "LAN_WARNING",
    "TUNNEL_WARNING",
    "ControlAccess",
    "DetachedRuns",
    "control_access",
    "control_exposure_warning",
    "create_control_plane",
    "mint_control_token",
    "read_control_file",
    "remove_control_file",
    "write_control_file",
]


def create_control_plane(
    control: SessionControl, token: str, agent: Agent | None = None, detached: DetachedRuns | None = None
) -> Handler:
    """The ``/control`` handler over ``control`` (``POST /control/invoke`` too when ``agent`` is
    given; pass ``detached`` to cancel its detached runs at shutdown). Refuses to exist without a
    token."""
    return mount_plane(control_routes(control, agent, detached), token)
