"""Tool results are held to a documented size before they are stored or sent: a 10 MiB result is
cut to 64 KiB with a notice to the model, and the session stays small for every later request."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, ToolEnded
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.tools.base import ToolResult
from fastagent_cli.tools.define import tool
from fastagent_cli.tools.result_limit import MAX_RESULT_TEXT_BYTES, limit_result
from tests.conformance.suite import drain

HUGE = "0123456789abcdef" * (10 * 1024 * 1024 // 16)  # 10 MiB


async def test_a_10_mib_result_is_cut_with_a_notice_and_the_session_recovers(tmp_path: Path) -> None:
    seen: list[int] = []

    def model(request: ScriptedRequest) -> Any:
        seen.append(sum(len(str(m.get("content"))) for m in request.messages))
        if request.round == 0 and request.last_user_text == "dump":
            return {"toolCalls": [{"name": "dump", "args": {}}]}
        return "noted"

    @tool
    def dump() -> str:
        """Return everything."""
        return HUGE

    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    agent = create_agent(model=ScriptedModel.from_callable(model), tools=[dump], sessions=store)
    events = await drain(agent.invoke("s", "dump"))
    (ended,) = [e for e in events if isinstance(e, ToolEnded)]
    text = ended.content[0]["text"]
    assert text.startswith(HUGE[:1000])
    assert text.endswith(
        "[Tool result truncated: showing the first 64.0KB of 10.0MB. Ask the tool for less "
        "(a narrower query, a smaller range) to see the rest.]"
    )
    assert len(text.encode()) < MAX_RESULT_TEXT_BYTES + 200
    assert isinstance(events[-1], Completed)
    assert seen[-1] < 100_000  # the model got the cut result, not 10 MiB
    path = store.location("s")
    assert path is not None and path.stat().st_size < 200_000

    assert isinstance((await drain(agent.invoke("s", "and now?")))[-1], Completed)
    assert seen[-1] < 100_000  # later requests stay small too


def test_results_within_the_limits_are_untouched() -> None:
    result = ToolResult([{"type": "text", "text": "x" * MAX_RESULT_TEXT_BYTES}], details={"k": 1})
    assert limit_result(result) is result


def test_images_over_the_budget_and_huge_details_are_replaced() -> None:
    image = base64.b64encode(b"\0" * (4 * 1024 * 1024)).decode()  # 5.3 MiB of base64
    result = ToolResult(
        [{"type": "text", "text": "two pictures"}, {"type": "image", "data": image, "mimeType": "image/png"}],
        details={"rows": ["r" * 100] * 2000},
    )
    limited = limit_result(result)
    assert limited.content == [
        {"type": "text", "text": "two pictures"},
        {"type": "text", "text": "[Image omitted: 5.3MB is over the 5.0MB limit for tool results]"},
    ]
    assert limited.details == {"fastagent": "details-omitted", "bytes": len(json.dumps(result.details))}


def test_a_cut_never_splits_a_character() -> None:
    text = "é" * MAX_RESULT_TEXT_BYTES  # two bytes each
    kept = limit_result(ToolResult([{"type": "text", "text": text}])).content[0]["text"]
    assert kept.startswith("é" * (MAX_RESULT_TEXT_BYTES // 2) + "\n\n[Tool result truncated")
