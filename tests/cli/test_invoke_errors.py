"""What ``fastagent invoke`` says when a turn goes wrong, as a user meets it: a failure once, a
404 that names the URL it hit and what to check, a failed tool with its reason on one line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.conftest import AgentFactory, RunCli

SCRIPT = {
    "rules": [
        {"match": "fail", "steps": [{"error": {"status": 401, "message": "Incorrect API key provided"}}]},
        {
            "match": "read",
            "steps": [{"toolCalls": [{"name": "read", "args": {"path": "missing.md"}}]}, {"text": "no file"}],
        },
    ]
}


def scripted(make_agent: AgentFactory) -> Path:
    return make_agent({"scripts/demo.json": json.dumps(SCRIPT)}, model="scripted/demo")


def test_a_failed_turn_says_why_once(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "please fail", str(scripted(make_agent)))
    assert done.returncode == 1
    assert done.stderr.count("Incorrect API key provided") == 1, done.stderr
    assert "[fastagent] failed: scripted: 401 Incorrect API key provided" in done.stderr
    assert "[agent]" not in done.stderr


def test_fire_says_why_once(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = scripted(make_agent)
    (agent / "schedules").mkdir()
    (agent / "schedules" / "nightly.toml").write_text('cron = "0 3 * * *"\nprompt = "fail now"\n')
    done = run_cli("fire", "nightly", str(agent))
    assert done.returncode == 1
    assert done.stderr.count("Incorrect API key provided") == 1, done.stderr


def test_a_failed_tool_says_what_and_why_on_one_line(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "read it", str(scripted(make_agent)))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("[tool]")]
    assert lines[0] == "[tool] read path=missing.md"
    assert lines[1].startswith("[tool] read path=missing.md ✗ "), lines
    reason = lines[1].partition(": ")[2]
    assert "missing.md" in reason and len(reason) > len("missing.md"), lines  # the tool's own error


@pytest.fixture
async def bare_server() -> AsyncIterator[str]:
    """A real HTTP server with no routes: every path answers aiohttp's ``404: Not Found``."""
    runner = web.AppRunner(web.Application())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_a_404_names_the_url_and_the_v1_hint(
    make_agent: AgentFactory, run_cli: RunCli, bare_server: str
) -> None:
    models = {
        "providers": {
            "myvllm": {"baseUrl": bare_server, "api": "openai-completions", "models": [{"id": "qwen"}]}
        }
    }
    agent = make_agent({"models.json": json.dumps(models)}, model="myvllm/qwen")
    done = await asyncio.to_thread(run_cli, "invoke", "hi", str(agent))
    assert done.returncode == 1
    failed = [line for line in done.stderr.splitlines() if "failed" in line]
    assert failed == [
        f"[fastagent] failed: myvllm: 404 Not Found at {bare_server}/chat/completions: "
        "does the provider's baseUrl in models.json end in /v1?"
    ], done.stderr


def test_chat_says_why_once(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("chat", str(scripted(make_agent)), input="please fail\n")
    assert done.stderr.count("Incorrect API key provided") == 1, done.stderr
    assert "[fastagent] failed: scripted: 401 Incorrect API key provided" in done.stderr
