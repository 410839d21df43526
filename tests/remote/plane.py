"""The real ``/control`` plane served on 127.0.0.1, in process, for the remote clients' tests.

``Planes.start(agent)`` serves an engine agent (from :func:`~fastagent_cli.assembly.create_agent`) with its
local hub under ``/control`` and returns the base URL; the test compares what the remote client
answers with what the local hub answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from fastagent_cli.assembly.control import LocalSessionControl, session_control
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.serving.control import create_control_plane
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.router import build_router

TOKEN = "remote-test-token"


@dataclass
class Served:
    url: str
    agent: EngineAgent
    control: LocalSessionControl
    server: Server


class Planes:
    """``served = await planes.start(agent)``: ``agent``'s hub and ``/control/invoke`` on a real
    host; :meth:`close` stops them all."""

    def __init__(self) -> None:
        self.running: list[Served] = []

    async def start(self, agent: EngineAgent) -> Served:
        control = session_control(agent)
        handler = build_router({}, {"/control": create_control_plane(control, TOKEN, agent)})
        server = serve(handler, port=0, host="127.0.0.1")
        port = await server.listening
        served = Served(f"http://127.0.0.1:{port}", agent, control, server)
        self.running.append(served)
        return served

    async def close(self) -> None:
        for served in self.running:
            await served.server.close()
            await served.agent.aclose()


@pytest.fixture
async def planes() -> AsyncIterator[Planes]:
    made = Planes()
    yield made
    await made.close()
