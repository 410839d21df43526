"""Local and real providers as a user meets them after the quickstart, with ``fastagent invoke``
against local fakes speaking the real wire formats: a keyless local server, a refused connection,
a 4 096-token context window, a cut-off answer, a ``:high`` thinking suffix."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli
from tests.fakes.fake_providers import FakeAnthropic, FakeOpenAI, anthropic_reply, openai_reply

WINDOW = 4096


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def local_agent(make_agent: AgentFactory, base_url: str, model: dict[str, Any] | None = None) -> Path:
    """An agent on ``local/small``, a llama.cpp-like server with a small declared window."""
    models = {"providers": {"local": {"baseUrl": base_url, "models": [model or {"id": "small"}]}}}
    return make_agent(
        {"models.json": json.dumps(models)}, model="local/small", config="coding_tools = false\n"
    )


async def invoke(run_cli: RunCli, *args: str, env: dict[str, str] | None = None) -> Any:
    return await asyncio.to_thread(run_cli, "invoke", *args, env=env)


async def test_a_local_server_needs_no_key(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = local_agent(make_agent, fake.base_url)
    fake.enqueue_stream(openai_reply("hello from llama"))
    done = await invoke(run_cli, "hi", str(agent))
    assert (done.returncode, done.stdout) == (0, "hello from llama\n"), done.stderr
    assert "authorization" not in fake.last_request.headers
    fake.enqueue_stream(openai_reply("with a key"))
    keyed = await invoke(run_cli, "hi", str(agent), env={"LOCAL_API_KEY": "sk-local"})
    assert keyed.stdout == "with a key\n"
    assert fake.last_request.headers["authorization"] == "Bearer sk-local"  # used when set
    info = json.loads((await asyncio.to_thread(run_cli, "info", str(agent), "--json")).stdout)
    assert info["credentialSource"] == "not needed"


async def test_a_refused_local_connection_fails_at_once_naming_the_url(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    models = {"providers": {"ollama": {"baseUrl": f"http://127.0.0.1:{port}/v1"}}}
    agent = make_agent({"models.json": json.dumps(models)}, model="ollama/llama3.2")
    done = await invoke(run_cli, "hi", str(agent))
    assert done.returncode == 1
    assert "retrying" not in done.stderr  # no 15 s of retries against a server that is not there
    assert (
        f"[fastagent] failed: ollama: nothing is listening at http://127.0.0.1:{port}/v1/chat/completions "
        "(connection refused): is Ollama (`ollama serve`) running?"
    ) in done.stderr


async def test_the_output_asked_for_fits_the_declared_window(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = local_agent(make_agent, fake.base_url, {"id": "small", "contextWindow": WINDOW})
    fake.enqueue_stream(openai_reply("short"))
    done = await invoke(run_cli, "hi", str(agent))
    assert done.returncode == 0, done.stderr
    asked = fake.last_request.body["max_tokens"]
    assert asked == WINDOW // 4  # not 16 384: the answer leaves room for the next turn


async def test_a_conversation_that_no_longer_fits_fails_before_sending(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = local_agent(make_agent, fake.base_url, {"id": "small", "contextWindow": WINDOW})
    too_long = "word " * 4000  # about 5 000 tokens
    done = await invoke(run_cli, too_long, str(agent), "--session", "s1")
    assert done.returncode == 1
    assert fake.requests == []  # refused here, not after three retries
    assert (
        "[fastagent] failed: the conversation no longer fits local/small's context window: about "
    ) in done.stderr
    assert "start a new session (/new in chat; invoke without --session or --continue)" in done.stderr
    fake.enqueue_stream(openai_reply("still fine"))
    after = await invoke(run_cli, "a short question", str(agent), "--session", "s1")
    assert (after.returncode, after.stdout) == (0, "still fine\n"), after.stderr
    sent = [m["content"] for m in fake.last_request.body["messages"] if m["role"] == "user"]
    assert sent == ["a short question"]  # the refused message was not stored, so it is not re-sent


async def test_an_empty_stream_near_the_window_names_a_likely_overflow(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = local_agent(make_agent, fake.base_url, {"id": "small", "contextWindow": WINDOW})
    fake.enqueue_stream([], done=False)  # llama-cpp-python's answer to an overflow: 200, no data
    done = await invoke(run_cli, "word " * 2200, str(agent))
    assert done.returncode == 1
    assert len(fake.requests) == 1  # not retried: the same request would overflow again
    assert "the server sent an empty response stream, likely a context overflow" in done.stderr
    assert "declares a 4,096-token context window" in done.stderr


async def test_an_answer_cut_off_at_the_output_limit_says_so(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = local_agent(make_agent, fake.base_url)
    fake.enqueue_stream(openai_reply("and then the model went on and on", finish_reason="length"))
    done = await invoke(run_cli, "ramble", str(agent))
    assert (done.returncode, done.stdout) == (0, "and then the model went on and on\n")
    assert done.stderr.rstrip().endswith(
        "[fastagent] note: the answer was cut off: it reached the output token limit (the model's "
        "maxTokens, or what its context window left)"
    )


@pytest.mark.parametrize("where", ["--model", "FASTAGENT_MODEL", "fastagent.toml"])
async def test_a_thinking_suffix_on_the_spec_sets_the_level(
    make_agent: AgentFactory, run_cli: RunCli, where: str
) -> None:
    spec = "anthropic/claude-sonnet-4-5:high"
    async with FakeAnthropic() as fake:
        models = {"providers": {"anthropic": {"baseUrl": fake.origin}}}
        agent = make_agent(
            {"models.json": json.dumps(models)},
            model=spec if where == "fastagent.toml" else None,
            config="coding_tools = false\n",
        )
        env = {"ANTHROPIC_API_KEY": "sk-ant-test"}
        args = ["hi", str(agent)]
        if where == "--model":
            args += ["--model", spec]
        else:
            env["FASTAGENT_MODEL"] = spec if where == "FASTAGENT_MODEL" else ""
        fake.enqueue_stream(anthropic_reply("thought hard"))
        done = await invoke(run_cli, *args, env=env)
        assert (done.returncode, done.stdout) == (0, "thought hard\n"), done.stderr
        assert fake.last_request.body["thinking"] == {"type": "enabled", "budget_tokens": 16384}  # high
        info_args = ["info", str(agent), "--json", *(["--model", spec] if where == "--model" else [])]
        info = json.loads((await asyncio.to_thread(run_cli, *info_args, env=env)).stdout)
        assert info["thinkingLevel"] == "high"
