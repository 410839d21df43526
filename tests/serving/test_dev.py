"""``fastagent dev``, run as the real process: a supervisor restarting its worker on code edits
(features R1-R5), and ``--no-watch``."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import aiohttp
import pytest

from fastagent_cli.contract import AgentEvent, Completed, Failed, Text, event_from_wire
from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess, answer, get, invoke

# A scripted model (``scripted/model:reply``) that shows what the worker is running with.
MODEL = """
import os


def reply(request):
    text = request.last_user_text
    if text == "persona":
        return next((l for l in request.system.splitlines() if l.startswith("MOTTO:")), "no motto")
    if text.startswith("stream "):  # twenty one-letter deltas, one every `ms` milliseconds
        return {"text": "abcdefghijklmnopqrst", "chunkSize": 1, "chunkDelayMs": int(text.split()[1])}
    if text == "env":
        return "env " + os.environ.get("DEV_SETTING", "unset")
    if text == "tool":
        if request.round == 0:
            return {"toolCalls": [{"name": "probe", "args": {}}]}
        result = request.messages[-1]
        return "tool said: " + "".join(b.get("text", "") for b in result["content"])
    return "echo " + text
"""


def probe_tool(version: str) -> str:
    return (
        "from fastagent_cli.tools.define import tool\n\n\n"
        "@tool\n"
        "def probe() -> str:\n"
        '    """Say which version of this file is loaded."""\n'
        f"    return {version!r}\n"
    )


RESTART = r"changed — restarting the dev worker"
STOPPED = r"\[fastagent\] dev stopped \(worker exited: code 1\) — save a change to retry"
DEV = ("--port", "0", "--bind", "127.0.0.1")
SETTLE_S = 0.8
"""Longer than the watch debounce: a restart that was going to happen has started by then."""


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    return make_agent(
        {
            "model.py": MODEL,
            "persona.md": "You are a test agent.\nMOTTO: one\n",
            "tools/probe.py": probe_tool("v1"),
            ".env": "DEV_SETTING=first\n",
        },
        model="scripted/model:reply",
        config="coding_tools = false\n",
    )


async def _until(port: int, prompt: str, expected: str) -> None:
    """Ask until the answer is ``expected`` (a restarted worker or a re-read file may lag a save)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    last = ""
    while loop.time() < deadline:
        try:
            last = answer(await invoke(port, f"s{loop.time()}", prompt))
        except (aiohttp.ClientError, OSError, AssertionError) as exc:
            last = repr(exc)
        if last == expected:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{prompt!r}: still {last!r}, wanted {expected!r}")


async def test_tool_edit_restarts_persona_edit_does_not(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        await dev.wait_for(r"\[fastagent\] watching tools/, channels/, schedules/, fastagent\.toml")
        port = await dev.port()
        assert answer(await invoke(port, "a", "tool")) == "tool said: v1"
        assert answer(await invoke(port, "b", "persona")) == "MOTTO: one"

        (agent / "persona.md").write_text("You are a test agent.\nMOTTO: two\n")
        (agent / "skills" / "notes").mkdir(parents=True)
        (agent / "skills" / "notes" / "SKILL.md").write_text(
            "---\nname: notes\ndescription: Notes.\n---\nBody\n"
        )
        await _until(port, "persona", "MOTTO: two")
        await asyncio.sleep(SETTLE_S)
        assert dev.count(RESTART) == 0, dev.text
        assert dev.count(r"http host on") == 1

        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text(probe_tool("v2"))
        await dev.wait_for(rf"tools/probe\.py {RESTART}", after=before)
        assert await dev.port(after=before) == port  # the supervisor keeps the port
        assert answer(await invoke(port, "c", "tool")) == "tool said: v2"
        assert dev.process.returncode is None


async def test_reloads_refuse_no_request(agent: Path) -> None:
    """The supervisor keeps the listening socket: requests sent while a worker restarts wait for
    the next one instead of being refused (bench/dev_reload.py measures it under load)."""
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        port = await dev.port()
        outcomes: list[object] = []
        stop = asyncio.Event()

        async def client() -> None:
            while not stop.is_set():
                try:
                    outcomes.append((await get(port))[0])
                except (aiohttp.ClientError, OSError) as exc:
                    outcomes.append(repr(exc))
                await asyncio.sleep(0.02)

        task = asyncio.create_task(client())
        for version in ("v2", "v3", "v4"):
            before = len(dev.lines)
            (agent / "tools" / "probe.py").write_text(probe_tool(version))
            assert await dev.port(after=before) == port
        stop.set()
        await task
        assert dev.count(RESTART) == 3
        assert len(outcomes) >= 3 and set(outcomes) == {200}, outcomes  # few when the machine is busy


async def test_a_port_in_use_stops_dev_before_any_worker(agent: Path, run_cli: RunCli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("dev", str(agent), "--port", str(port), "--bind", "127.0.0.1", timeout=30)
    assert done.returncode == 1
    assert f"Error: cannot listen on 127.0.0.1:{port}: the port is already in use" in done.stderr
    assert "worker" not in done.stderr


async def test_env_edit_restarts_and_the_worker_reads_the_new_value(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        port = await dev.port()
        assert answer(await invoke(port, "a", "env")) == "env first"
        before = len(dev.lines)
        (agent / ".env").write_text("DEV_SETTING=second\n")
        await dev.wait_for(rf"\.env {RESTART}", after=before)
        await dev.port(after=before)
        assert answer(await invoke(port, "b", "env")) == "env second"


async def test_broken_tool_file_is_skipped_and_fixing_it_recovers(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        port = await dev.port()
        pid = dev.process.pid
        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text("def probe(:\n")
        await dev.wait_for(r"WARN  \[fastagent\] tools/probe\.py: SyntaxError.*\(skipped\)", after=before)
        await dev.port(after=before)
        broken = answer(await invoke(port, "a", "tool"))
        assert broken.startswith("tool said: ") and "v1" not in broken

        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text(probe_tool("v3"))
        await dev.port(after=before)
        assert answer(await invoke(port, "b", "tool")) == "tool said: v3"
        assert dev.process.pid == pid and dev.process.returncode is None


async def test_failing_worker_waits_for_the_next_save(agent: Path) -> None:
    config = (agent / "fastagent.toml").read_text()
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        port = await dev.port()

        before = len(dev.lines)
        (agent / "fastagent.toml").write_text(config + "model = \n")
        await dev.wait_for(r"^Error: .*fastagent\.toml: TOML syntax error", after=before)
        await dev.wait_for(STOPPED, after=before)
        status, body = await get(port)  # the supervisor answers while no worker can run
        assert (status, body) == (
            503,
            "fastagent dev: the worker exited (code 1); fix the error shown in the dev terminal and "
            "save a change to retry\n",
        )
        before = len(dev.lines)
        (agent / "fastagent.toml").write_text(config)
        assert await dev.port(after=before) == port
        assert await get(port) == (200, "ok\n")

        before = len(dev.lines)
        (agent / "channels").mkdir()
        (agent / "channels" / "hook.py").write_text("raise RuntimeError('no token yet')\n")
        await dev.wait_for(r"channel setup is invalid .* channels/hook\.py: cannot load", after=before)
        await dev.wait_for(STOPPED, after=before)
        before = len(dev.lines)
        (agent / "channels" / "hook.py").write_text(
            "from aiohttp import web\n"
            "def channel(ctx):\n"
            "    async def hook(request):\n"
            "        return web.Response(text='hooked\\n')\n"
            "    return {'GET /hook': hook}\n"
        )
        await dev.port(after=before)
        assert await get(port, "/hook") == (200, "hooked\n")
        assert (await get(port, "/invoke"))[0] == 404  # a channel file replaces the built-in /invoke
        assert dev.process.returncode is None


async def test_a_worker_that_never_served_ends_dev_with_its_code(agent: Path, run_cli: RunCli) -> None:
    (agent / "channels").mkdir()
    (agent / "channels" / "hook.py").write_text("channel = 42\n")
    done = run_cli("dev", str(agent), *DEV, timeout=30)
    assert done.returncode == 1
    assert "channels/hook.py: `channel` is a int" in done.stderr
    assert "dev stopped" not in done.stderr


async def test_sigterm_stops_the_supervisor_and_its_worker(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        port = await dev.port()
        worker_pid = int((await dev.wait_for(r"\[dev\] worker (\d+) started")).group(1))
        dev.send(signal.SIGTERM)
        assert await dev.wait(within=10) == -signal.SIGTERM
        with pytest.raises(ProcessLookupError):
            os.kill(worker_pid, 0)
        with pytest.raises((aiohttp.ClientError, OSError)):
            await get(port)


async def test_a_killed_supervisor_takes_its_worker_down(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        await dev.port()
        worker_pid = int((await dev.wait_for(r"\[dev\] worker (\d+) started")).group(1))
        dev.send(signal.SIGKILL)
        await dev.wait(within=10)
        for _ in range(100):
            try:
                os.kill(worker_pid, 0)
            except ProcessLookupError:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the worker outlived its supervisor")


async def test_no_watch_serves_once_in_process(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV, "--no-watch") as dev:
        port = await dev.port()
        assert answer(await invoke(port, "a", "tool")) == "tool said: v1"
        (agent / "tools" / "probe.py").write_text(probe_tool("v2"))
        await asyncio.sleep(SETTLE_S)
        assert answer(await invoke(port, "b", "tool")) == "tool said: v1"
        assert "watching" not in dev.text
        assert dev.count(r"http host on") == 1
        assert "DEBUG [agent] ▶ turn session=a ← tool" in dev.text  # dev logs at debug


async def _stream(port: int, session: str, text: str, started: asyncio.Event) -> list[AgentEvent]:
    """Invoke and read the SSE body event by event (``started`` is set at the first delta)."""
    events: list[AgentEvent] = []
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        http.post(f"http://127.0.0.1:{port}/invoke", json={"session": session, "text": text}) as response,
    ):
        assert response.status == 200
        async for raw in response.content:
            line = raw.decode()
            if line.startswith("data: "):
                events.append(event_from_wire(line[6:].strip()))
                started.set()
    return events


async def test_a_reload_mid_stream_lets_the_answer_finish(agent: Path) -> None:
    """Every delta and one terminal, while a request sent during the drain is answered by the new
    worker (which loaded the edit)."""
    async with ServerProcess.spawn("dev", str(agent), *DEV) as dev:
        port = await dev.port()
        started = asyncio.Event()
        streaming = asyncio.create_task(_stream(port, "long", "stream 1000", started))  # 20 s
        await asyncio.wait_for(started.wait(), 10)
        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text(probe_tool("v2"))
        await dev.wait_for(RESTART, after=before)
        await dev.port(after=before)  # the next worker serves while the old one drains
        assert answer(await invoke(port, "meanwhile", "tool")) == "tool said: v2"
        assert not streaming.done()  # the new worker answered while the old one still streamed
        events = await asyncio.wait_for(streaming, 30)
        deltas = [e.delta for e in events if isinstance(e, Text)]
        assert "".join(deltas) == "abcdefghijklmnopqrst" and len(deltas) == 20
        assert [type(e) for e in events].count(Completed) == 1 and isinstance(events[-1], Completed)
        assert dev.process.returncode is None


async def test_a_reload_ends_an_answer_that_outlasts_the_drain_retryably(agent: Path) -> None:
    async with ServerProcess.spawn("dev", str(agent), *DEV, "--drain", "0.5") as dev:
        port = await dev.port()
        started = asyncio.Event()
        streaming = asyncio.create_task(_stream(port, "slow", "stream 1000", started))  # 20 s
        await asyncio.wait_for(started.wait(), 10)
        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text(probe_tool("v2"))
        events = await asyncio.wait_for(streaming, 20)
        assert [type(e) for e in events if isinstance(e, Completed | Failed)] == [Failed]
        failed = events[-1]
        assert isinstance(failed, Failed) and failed.retryable and failed.code == "server_restarting"
        assert "reloaded" in failed.details
        await dev.wait_for(r"the reload ended 1 turn\(s\) still running after 0\.5 s", after=before)
        assert answer(await invoke(port, "slow", "tool")) == "tool said: v2"  # the session is free


async def test_a_reload_says_one_line_and_no_shutdown(agent: Path) -> None:
    """The first start prints the banner; a reload adds one INFO line (what changed), no second
    banner and no ``SIGTERM: shutting down`` as if the server had stopped."""
    async with ServerProcess.spawn("dev", str(agent), *DEV, env={"FASTAGENT_LOG_LEVEL": "info"}) as dev:
        port = await dev.port()
        await dev.wait_for(r"control plane on")  # the first start's last line
        banner = dev.count(r"\[fastagent\] ")
        assert banner >= 10  # agent, workspace, config, model, ... http host, try it, web chat
        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text(probe_tool("v2"))
        await _until(port, "tool", "tool said: v2")
        await asyncio.sleep(SETTLE_S)
        said = dev.lines[before:]
        assert said == ["INFO  [fastagent] tools/probe.py changed — restarting the dev worker"], said
