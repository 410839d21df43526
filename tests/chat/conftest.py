from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input

from tests.chat.harness import ChatHarness, ToolProbe, write_agent


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    return write_agent(tmp_path / "agent")


@pytest.fixture
async def chat(agent_dir: Path) -> AsyncIterator[ChatHarness]:
    with create_pipe_input() as inp:
        harness = ChatHarness(agent_dir, inp, probe=ToolProbe())
        await harness.start()
        try:
            yield harness
        finally:
            await harness.close()
