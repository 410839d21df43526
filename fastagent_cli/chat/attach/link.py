"""Where ``attach`` connects, and what it does when the connection fails.

A *local* attach found its endpoint in ``<state root>/control.json`` (a serve minted it); a restart
of that serve mints a new token (and may bind a new port), so after a failure the file is read
again: changed credentials mean "reattach at once". A *remote* attach (``--url`` / ``--token``) has
nothing to read again. Each keeps trying within a budget: 30 s local, 120 s remote (networks
recover slowly), 15 s at start-up; a token the serve rejects ends it at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote import RemoteAgent, RemoteSessionControl, connect_agent, connect_session_control

__all__ = [
    "LOCAL_BUDGET_S",
    "REMOTE_BUDGET_S",
    "RETRY_PAUSE_S",
    "STARTUP_BUDGET_S",
    "Decision",
    "Discovery",
    "Endpoint",
    "Link",
    "decide",
]

LOCAL_BUDGET_S = 30.0
REMOTE_BUDGET_S = 120.0
STARTUP_BUDGET_S = 15.0
RETRY_PAUSE_S = 1.0
"""Between two attempts."""

Discovery = Literal["unchanged", "changed", "unavailable"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    token: str


@dataclass(frozen=True, slots=True)
class Decision:
    """``retry`` (after a pause), ``reattach`` (to ``fresh``, at once) or ``exit`` (``message``)."""

    kind: Literal["retry", "reattach", "exit"]
    message: str = ""
    fresh: Endpoint | None = None


def decide(
    error: BaseException,
    *,
    local: bool,
    discovery: Discovery,
    fresh: Endpoint | None,
    down_s: float,
    startup: bool,
) -> Decision:
    """What to do after a failed attempt (pure: every verdict and budget lives here)."""
    limit = STARTUP_BUDGET_S if startup else LOCAL_BUDGET_S if local else REMOTE_BUDGET_S
    auth = isinstance(error, ControlRequestError) and error.status == 401
    down = round(down_s)
    if not local:
        if auth:
            return Decision("exit", f"the serve rejected the token ({error}) — check --token")
        if startup:  # nothing ever worked here: a wrong --url is likelier than a blip
            return Decision("exit", str(error))
        if down_s >= limit:
            return Decision("exit", f"{error} — the serve has been unreachable for ~{down} s; re-run attach")
        return Decision("retry", f"connection lost ({error}); retrying (~{down} s of {limit:g} s)")
    if discovery == "changed" and fresh is not None:
        return Decision("reattach", fresh=fresh)  # a restarted serve: its new token and port
    if auth and discovery == "unchanged":
        return Decision(
            "exit",
            "the serve rejected the token in control.json — the file belongs to another (or a stopped) "
            "serve; restart the serve and re-run attach",
        )
    if down_s >= limit:
        if startup:
            return Decision("exit", f"{error} (waited {down} s)")
        return Decision(
            "exit", f"{error} — the serve has been unreachable for ~{down} s; restart it and re-run attach"
        )
    return Decision("retry", f"connection lost ({error}); retrying (~{down} s of {limit:g} s)")


class Link:
    """The clients attach holds for one endpoint (the hub and the data plane), and where a fresh
    endpoint comes from after a restart (``discover``: read ``control.json``; ``None`` for a remote
    endpoint)."""

    def __init__(
        self,
        endpoint: Endpoint | None,
        discover: Callable[[], Endpoint | None] | None,
        source: str = "control.json",
    ) -> None:
        self.endpoint = endpoint
        self.discover = discover
        self.source = source
        """Where ``discover`` reads (for messages)."""
        self.control: RemoteSessionControl | None = None
        self.agent: RemoteAgent | None = None

    @property
    def local(self) -> bool:
        return self.discover is not None

    @property
    def url(self) -> str:
        return self.endpoint.url if self.endpoint is not None else "(no endpoint yet)"

    def rediscover(self) -> tuple[Discovery, Endpoint | None]:
        """What ``control.json`` says now, compared with the endpoint in use."""
        if self.discover is None:
            return "unavailable", None
        fresh = self.discover()
        if fresh is None:
            return "unavailable", None
        return ("unchanged" if fresh == self.endpoint else "changed"), fresh

    async def connect(self, endpoint: Endpoint | None = None) -> RemoteSessionControl:
        """Connect to ``endpoint`` (the current one, or ``control.json``'s when there is none yet);
        the clients of the previous endpoint are closed once the new one answered."""
        target = endpoint or self.endpoint
        if target is None and self.discover is not None:
            target = self.discover()
        if target is None:
            raise ControlRequestError(
                f"no {self.source}: is `fastagent start` or `dev` running there with session_control = true? "
                "(a remote serve: --url and --token)"
            )
        try:
            control = await connect_session_control(target.url, target.token)
        except ControlRequestError as exc:
            if self.local and exc.status is None:
                stale = (
                    f"{exc.message} — {self.source} names a serve that does not answer (stopped, or starting)"
                )
                raise ControlRequestError(stale) from None
            raise
        await self.aclose()
        self.endpoint, self.control, self.agent = target, control, connect_agent(target.url, target.token)
        return control

    async def aclose(self) -> None:
        if self.control is not None:
            await self.control.aclose()
        if self.agent is not None:
            await self.agent.aclose()
        self.control = self.agent = None
