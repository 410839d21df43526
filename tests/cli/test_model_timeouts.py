"""Model providers that hang, are misnamed or are not trusted, met through ``fastagent invoke``:
the first-byte and between-chunks timeouts (``[engine]`` and per provider in ``models.json``),
an elapsed counter on stderr while the first token is awaited (a terminal only), and failures a
retry cannot fix ending the turn at once with one line."""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import trustme
from aiohttp import web

from tests.conftest import AgentFactory, RunCli, cli_command
from tests.fakes.fake_providers import FakeOpenAI, openai_reply


class Silent:
    """``/v1/chat/completions`` that reads the request and then (``stall_after``) sends nothing,
    or one SSE chunk and nothing more; ``delay`` > 0: a whole answer after that many seconds."""

    def __init__(self, *, head: bool = False, delay: float = 0.0) -> None:
        self.head = head
        self.delay = delay
        self.requests = 0
        self.runner: web.AppRunner | None = None
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        await request.read()
        if self.delay:
            await asyncio.sleep(self.delay)
        elif not self.head:
            await asyncio.sleep(3600)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        events = openai_reply("hello")
        for event in events[:-1]:
            await response.write(b"data: %s\n\n" % json.dumps(event).encode())
        if self.head:
            await asyncio.sleep(3600)
        await response.write(b"data: %s\n\ndata: [DONE]\n\n" % json.dumps(events[-1]).encode())
        return response

    async def __aenter__(self) -> Silent:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


def agent_on(make_agent: AgentFactory, base_url: str, engine: str = "", **provider: Any) -> Path:
    models = {
        "providers": {
            "local": {"baseUrl": base_url, "api": "openai-completions", "models": [{"id": "m"}], **provider}
        }
    }
    config = "coding_tools = false\n" + (f"[engine]\n{engine}\n" if engine else "")
    return make_agent({"models.json": json.dumps(models)}, model="local/m", config=config)


async def invoke(run_cli: RunCli, agent: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = await asyncio.to_thread(run_cli, "invoke", "hi", str(agent), "--session", "s1")
    return done, time.monotonic() - started


def failure_lines(stderr: str) -> list[str]:
    return [
        line
        for line in stderr.splitlines()
        if line.startswith("[fastagent]") and ("failed" in line or "retrying" in line)
    ]


async def test_a_provider_that_never_answers_fails_at_the_engines_first_byte_timeout(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    async with Silent() as server:
        agent = agent_on(make_agent, server.base_url, "first_byte_timeout = 1\nmax_retries = 0")
        done, elapsed = await invoke(run_cli, agent)
    assert done.returncode == 1 and done.stdout == ""
    assert elapsed < 15
    assert failure_lines(done.stderr) == [
        f"[fastagent] failed: local: no answer from {server.base_url}/chat/completions within 1 s of "
        "sending the request (first-byte timeout; set first_byte_timeout in [engine], or "
        "timeouts.firstByte for the provider in models.json) (retryable)"
    ]


async def test_the_providers_own_timeouts_win_over_the_engines(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    async with Silent(head=True) as server:
        agent = agent_on(
            make_agent,
            server.base_url,
            "first_byte_timeout = 60\nchunk_timeout = 60\nmax_retries = 0",
            timeouts={"betweenChunks": 0.5},
        )
        done, elapsed = await invoke(run_cli, agent)
    assert done.returncode == 1 and elapsed < 15
    assert done.stdout.startswith("hello")  # what arrived before the silence is shown
    assert (
        f"local: the answer from {server.base_url}/chat/completions stopped: nothing for 0.5 s "
        "(between-chunks timeout; set chunk_timeout in [engine], or timeouts.betweenChunks for the "
        "provider in models.json)"
    ) in done.stderr


def test_bad_timeouts_in_models_json_are_a_config_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = agent_on(make_agent, "http://127.0.0.1:9/v1", timeouts={"firstbyte": 5})
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode != 0
    assert (
        "providers.local: timeouts: unknown key 'firstbyte' (use connect, firstByte, betweenChunks)"
        in done.stderr
    )
    agent = agent_on(make_agent, "http://127.0.0.1:9/v1", timeouts={"connect": -1})
    assert "timeouts.connect must be more than 0" in run_cli("invoke", "hi", str(agent)).stderr


async def test_a_host_name_that_does_not_resolve_ends_the_turn_at_once(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = agent_on(make_agent, "https://api.no-such-host.invalid/v1")
    done, elapsed = await invoke(run_cli, agent)
    assert done.returncode == 1 and elapsed < 10  # the default policy would retry for 14 s
    lines = failure_lines(done.stderr)
    assert len(lines) == 1 and "retryable" not in lines[0], done.stderr
    assert lines[0].startswith(
        "[fastagent] failed: local: cannot resolve the host name 'api.no-such-host.invalid'"
    )


async def test_an_untrusted_certificate_ends_the_turn_at_once_and_ca_file_fixes_it(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    async with FakeOpenAI(tls=context) as fake:
        done, elapsed = await invoke(run_cli, agent_on(make_agent, fake.base_url))
        assert done.returncode == 1 and elapsed < 10
        lines = failure_lines(done.stderr)
        assert len(lines) == 1 and "retryable" not in lines[0], done.stderr
        assert "the TLS certificate of localhost is not trusted" in lines[0] and "set caFile" in lines[0]
        assert fake.requests == []
        fake.enqueue_stream(openai_reply("trusted now"))
        agent = agent_on(make_agent, fake.base_url, caFile=str(tmp_path / "ca.pem"))
        done, _ = await invoke(run_cli, agent)
    assert (done.returncode, done.stdout) == (0, "trusted now\n"), done.stderr


# ----------------------------------------------------------------------------- progress


async def run_with_stderr_on_a_pty(agent: Path) -> tuple[str, str, int]:
    """``invoke`` with stderr on a pseudo-terminal and stdout on a pipe."""
    import pty

    leader, follower = pty.openpty()
    process = await asyncio.create_subprocess_exec(
        *cli_command(), "invoke", "hi", str(agent),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower,
        env={**os.environ, "TERM": "xterm"},
    )  # fmt: skip
    os.close(follower)
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                return
            if not data:
                return
            seen.extend(data)

    reader = asyncio.create_task(asyncio.to_thread(drain))
    stdout, _ = await asyncio.wait_for(process.communicate(), 60)
    await asyncio.wait_for(reader, 10)
    os.close(leader)
    return stdout.decode(), seen.decode(errors="replace"), process.returncode or 0


async def test_invoke_counts_the_wait_for_the_first_token_on_a_terminal_only(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    async with Silent(delay=2.0) as server:
        agent = agent_on(make_agent, server.base_url)
        stdout, terminal, code = await run_with_stderr_on_a_pty(agent)
        assert (code, stdout) == (0, "hello\n")
        assert re.search(r"\r\x1b\[K. waiting for local/m … \ds", terminal), repr(terminal)
        assert terminal.count("\r\x1b[K") >= 2  # rewritten in place, erased before the answer
        piped, _ = await invoke(run_cli, agent)
    assert (piped.returncode, piped.stdout) == (0, "hello\n")
    assert "waiting for" not in piped.stderr and "\x1b" not in piped.stderr
