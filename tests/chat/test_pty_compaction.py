"""The real ``fastagent chat`` in a pseudo-terminal against a model with a 4 096-token window: an
automatic compaction is shown in the conversation while it runs and when it is done."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command
from tests.fakes.fake_providers import FakeOpenAI
from tests.fakes.small_window import SmallWindowModel

pytestmark = pytest.mark.slow


@pytest.mark.timeout(120)
async def test_chat_shows_an_automatic_compaction(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        model = SmallWindowModel(4096, script=lambda prompt: 700, summary_tokens=200)
        model.attach(fake)
        agent = tmp_path / "agent"
        agent.mkdir()
        (agent / "fastagent.toml").write_text('model = "local/small"\ncoding_tools = false\n')
        models = {
            "providers": {
                "local": {"baseUrl": fake.base_url, "models": [{"id": "small", "contextWindow": 4096}]}
            }
        }
        (agent / "models.json").write_text(json.dumps(models))
        term = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path)
        try:
            await asyncio.to_thread(term.read_until, "› ")
            mark = len(term.text)
            for turn in range(1, 9):  # the server counts ~720 tokens a turn: over 3 072 by the sixth
                before = len(model.seen)
                term.send(f"question {turn}: what next?\r")
                while len(model.seen) == before or term.text.count("› ", mark) < turn + 1:
                    await asyncio.to_thread(term.read_until, "› ", 20.0, len(term.text) - 2)
                    await asyncio.sleep(0.05)
                if model.summaries:
                    break
            assert model.summaries, term.text[mark:]
            screen = await asyncio.to_thread(term.read_until, "⋯ compacted the conversation: ", 20.0, mark)
            shown = screen[mark:]
            started = shown.index("⋯ compacting the conversation (")
            assert " tokens)..." in shown[started:]
            assert started < shown.index("⋯ compacted the conversation: ")
            assert "older history is now a " in shown
            term.send("\x04")
            assert await asyncio.to_thread(term.wait) == 0
        finally:
            term.close()
