"""Protocol faces: other protocols' entries to the same agent, each switched on in ``[http]``.

A face (``[http] openai = true``: :mod:`fastagent_cli.serving.faces.openai`) maps a protocol other
tools already speak onto the agent's contract and session store. Each one is off by default and
its module is imported only when it is on (:func:`load_faces` imports by name), so a face costs a
server that does not serve it nothing at start-up.

What every face shares with ``/invoke`` comes in through :class:`FaceContext`: the one bearer
token (:mod:`~fastagent_cli.serving.invoke_auth`), the one body cap
(:data:`~fastagent_cli.serving.body.MAX_BODY_BYTES`), the streams in flight per session
(:class:`~fastagent_cli.serving.sse.KeyedStreams`, so a dropped stream is reclaimed whichever
face asks next) and, through the agent, the one session lease (a busy session answers the
protocol's own "busy" error).

A face module has ``create_face(ctx: FaceContext) -> Face``. Its routes and mounts join the
router (a collision is refused like any other), its startup lines follow ``http host on ...``.

Exposure: a face on a bind others can reach (not loopback, or ``--tunnel``) needs a bearer token;
:func:`check_face_exposure` refuses to serve without one.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastagent_cli.errors import ServeError
from fastagent_cli.serving.binding import is_loopback
from fastagent_cli.serving.body import MAX_BODY_BYTES
from fastagent_cli.serving.invoke_auth import TOKEN_ENV, InvokeToken
from fastagent_cli.serving.router import Handler
from fastagent_cli.serving.sse import KeyedStreams

if TYPE_CHECKING:
    from fastagent_cli.assembly import OpenedAgent
    from fastagent_cli.contract import Agent

__all__ = ["FACE_MODULES", "Face", "FaceContext", "check_face_exposure", "load_faces"]

FACE_MODULES: dict[str, str] = {
    "openai": "fastagent_cli.serving.faces.openai",
    "mcp": "fastagent_cli.serving.faces.mcp",
    "a2a": "fastagent_cli.serving.faces.a2a",
}
"""Face name (its ``[http]`` flag) -> the module that builds it."""


@dataclass(frozen=True, slots=True)
class FaceContext:
    """What a face is built from."""

    opened: OpenedAgent
    agent: Agent
    token: InvokeToken | None
    """The bearer token every request must carry, if one is set (the one ``/invoke`` wants)."""
    streams: KeyedStreams
    """The streams in flight per session, shared with ``/invoke``."""
    max_body: int = MAX_BODY_BYTES


@dataclass(slots=True)
class Face:
    """A face, ready to mount."""

    name: str
    routes: dict[str, Handler] = field(default_factory=dict)
    """Literal router keys (``"GET /.well-known/agent-card.json"``)."""
    mounts: dict[str, Handler] = field(default_factory=dict)
    """Prefix -> handler (``"/v1"``)."""
    startup: Callable[[str], list[str]] = lambda _base: []
    """The lines said once listening, given the base URL (``http://127.0.0.1:8787``)."""
    aclose: Callable[[], Awaitable[None]] | None = None

    def served(self) -> list[str]:
        """What it serves, for the routes line."""
        return [*self.routes, *(f"{prefix}/*" for prefix in self.mounts)]


def load_faces(names: Sequence[str], ctx: FaceContext) -> list[Face]:
    """Import and build each named face (names come from ``HttpConfig.faces()``)."""
    faces: list[Face] = []
    for name in names:
        module = importlib.import_module(FACE_MODULES[name])
        faces.append(module.create_face(ctx))
    return faces


def check_face_exposure(
    faces: Sequence[Face], host: str | None, *, tunnel: bool, token: InvokeToken | None
) -> None:
    """ServeError when a face would be reachable from other machines without a bearer token."""
    if not faces or token is not None or (is_loopback(host) and not tunnel):
        return
    names = ", ".join(f"[http] {face.name} = true" for face in faces)
    where = "through the --tunnel URL" if tunnel else f"on {host or 'every interface'}"
    raise ServeError(
        f"{names} needs a bearer token when others can reach it ({where}): set {TOKEN_ENV} "
        "(or [http] token), or bind 127.0.0.1"
    )
