"""A script file is re-read when it changes, so a running chat or server follows its edits."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed, Text
from fastagent_cli.models.scripted import load_scripted
from tests.conformance.suite import drain


async def test_an_edited_script_answers_the_next_turn(tmp_path: Path) -> None:
    script = tmp_path / "scripts" / "live.json"
    script.parent.mkdir()
    script.write_text(json.dumps({"steps": ["first version"]}))
    agent = create_agent(model=load_scripted("live", tmp_path))

    def text(events: list[object]) -> str:
        return "".join(e.delta for e in events if isinstance(e, Text))

    assert text(await drain(agent.invoke("a", "hi"))) == "first version"
    script.write_text(json.dumps({"steps": ["second, longer version"]}))
    assert text(await drain(agent.invoke("b", "hi"))) == "second, longer version"

    script.write_text("{broken")
    os.utime(script, ns=(1, 1))  # a distinct stamp even within one mtime tick
    failed = (await drain(agent.invoke("c", "hi")))[-1]
    assert isinstance(failed, Failed) and "invalid JSON at line 1" in failed.details
    script.write_text(json.dumps({"steps": ["fixed"]}))
    events = await drain(agent.invoke("d", "hi"))
    assert isinstance(events[-1], Completed) and text(events) == "fixed"
