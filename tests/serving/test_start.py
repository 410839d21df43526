"""``fastagent start``, run as the real process: serving, startup lines, port and bind precedence,
and the errors (features G14, G15, I13, I28, I29)."""

from __future__ import annotations

import json
import re
import shlex
import socket
from pathlib import Path

import aiohttp
import pytest

from fastagent_cli.errors import ConfigError, UsageError
from fastagent_cli.serving.binding import (
    DEFAULT_PORT,
    ServeOptions,
    check_tunnel_bind,
    host_from_env,
    parse_bind,
    port_from_env,
    resolve_bind,
    resolve_port,
)
from tests.conftest import AgentFactory, RunCli
from tests.serving.conftest import sse_events
from tests.serving.serving_proc import ServerProcess, answer, free_port, get, invoke

LOCAL = ("--bind", "127.0.0.1")


async def test_start_serves_invoke_and_health_and_says_how(make_agent: AgentFactory) -> None:
    agent = make_agent({"persona.md": "You are terse.\n"})
    async with ServerProcess.spawn("start", str(agent), "--port", "0", *LOCAL) as server:
        port = await server.port()
        assert await get(port) == (200, "ok\n")
        assert answer(await invoke(port, "s1", "hello")) == "echo: hello"
        text = server.text
        for label, value in (
            ("agent", f"agent ({agent})"),
            ("workspace", str(agent)),
            ("config", str(agent / "fastagent.toml")),
            ("model", "scripted/echo (from fastagent.toml)"),
            ("auth", "not needed"),
            ("persona", "persona.md"),
            ("skills", "(none)"),
            ("tools", "read, bash, edit, write"),
            ("channels", "(none: built-in /invoke)"),
            ("routes", "/invoke, GET /health"),
        ):
            assert re.search(rf"INFO  \[fastagent\] {label}: +{re.escape(value)}$", text, re.M), (label, text)
        assert f"[fastagent] http host on 127.0.0.1:{port}" in text
        curl = (await server.wait_for(r"\[fastagent\] try it: (curl .*)$")).group(1)
        argv = shlex.split(curl)  # paste-ready: run what it says, with aiohttp
        assert argv[:3] == ["curl", "-sN", f"http://127.0.0.1:{port}/invoke"]
        assert argv[3:5] == ["-H", "content-type: application/json"]
        assert argv[5] == "-d"
        async with (
            aiohttp.ClientSession() as http,
            http.post(argv[2], data=argv[6], headers={"content-type": "application/json"}) as response,
        ):
            events = sse_events(await response.text())
        assert answer(events) == "echo: " + json.loads(argv[6])["text"]
        assert "Traceback" not in server.text


async def test_startup_reports_the_auth_source_and_skipped_tools(make_agent: AgentFactory) -> None:
    agent = make_agent(
        {"tools/broken.py": "def oops(:\n"},
        model="openai/gpt-4.1-mini",
        config="coding_tools = false\n",
    )
    env = {"OPENAI_API_KEY": "sk-test"}
    async with ServerProcess.spawn("start", str(agent), "--port", "0", *LOCAL, env=env) as server:
        await server.port()
        assert re.search(r"INFO  \[fastagent\] auth: +OPENAI_API_KEY$", server.text, re.M), server.text
        warning = re.search(r"WARN  \[fastagent\] tools/broken\.py: SyntaxError.*\(skipped\)", server.text)
        assert warning, server.text  # warnings come before the "http host" line


@pytest.mark.parametrize(
    ("flag", "env", "config", "expected"),
    [
        (None, None, None, DEFAULT_PORT),
        (None, None, 9001, 9001),
        (None, 9002, 9001, 9002),
        (9003, 9002, 9001, 9003),
        (0, 9002, None, 0),
    ],
)
def test_port_precedence(flag: int | None, env: int | None, config: int | None, expected: int) -> None:
    assert resolve_port(ServeOptions(port=flag, env_port=env), config) == expected


def test_bind_precedence_and_tunnel_reach() -> None:
    assert resolve_bind(ServeOptions(), None) == "127.0.0.1"  # safe by default
    assert resolve_bind(ServeOptions(), "localhost") == "127.0.0.1"
    assert resolve_bind(ServeOptions(), "0.0.0.0") == "0.0.0.0"
    assert resolve_bind(ServeOptions(env_host="0.0.0.0"), "10.0.0.5") == "0.0.0.0"
    assert resolve_bind(ServeOptions(bind="::1", env_host="0.0.0.0"), "10.0.0.5") == "::1"
    assert host_from_env({"HOST": "localhost"}) == "127.0.0.1"
    assert host_from_env({"HOST": ""}) is None and host_from_env({}) is None
    with pytest.raises(ConfigError, match="the HOST environment variable must be an IP address"):
        host_from_env({"HOST": "my-laptop"})
    with pytest.raises(ConfigError, match="HOST=10.0.0.5 conflicts with --tunnel"):
        check_tunnel_bind(ServeOptions(tunnel=True, env_host="10.0.0.5"), None)
    assert parse_bind("localhost") == "127.0.0.1"
    with pytest.raises(UsageError, match="--bind must be an IP address"):
        parse_bind("example.com")
    for ok in (None, "127.0.0.1", "0.0.0.0", "::", "::1"):
        check_tunnel_bind(ServeOptions(tunnel=True, bind=ok), None)
        check_tunnel_bind(ServeOptions(tunnel=True), ok)
    with pytest.raises(UsageError):
        check_tunnel_bind(ServeOptions(tunnel=True, bind="10.0.0.5"), None)
    with pytest.raises(ConfigError):
        check_tunnel_bind(ServeOptions(tunnel=True), "10.0.0.5")
    check_tunnel_bind(ServeOptions(tunnel=False), "10.0.0.5")
    assert port_from_env({"PORT": "8080"}) == 8080
    assert port_from_env({}) is None
    with pytest.raises(ConfigError, match="PORT"):
        port_from_env({"PORT": "80a"})


async def test_port_env_and_config_as_the_process_sees_them(make_agent: AgentFactory) -> None:
    config_port, env_port, flag_port = free_port(), free_port(), free_port()
    agent = make_agent(config=f'[http]\nport = {config_port}\nhost = "127.0.0.1"\n')
    async with ServerProcess.spawn("start", str(agent)) as server:
        assert await server.port() == config_port
    async with ServerProcess.spawn("start", str(agent), env={"PORT": str(env_port)}) as server:
        assert await server.port() == env_port
        assert await get(env_port) == (200, "ok\n")
    async with ServerProcess.spawn(
        "start", str(agent), "--port", str(flag_port), env={"PORT": "1"}
    ) as server:
        assert await server.port() == flag_port
    # dev has no PORT: the config wins over it
    async with ServerProcess.spawn("dev", str(agent), "--no-watch", env={"PORT": str(env_port)}) as server:
        assert await server.port() == config_port


async def test_bind_loopback_by_default_and_other_interfaces_when_asked(make_agent: AgentFactory) -> None:
    agent = make_agent()
    async with ServerProcess.spawn("start", str(agent), "--port", "0") as server:
        port = int((await server.wait_for(r"http host on 127\.0\.0\.1:(\d+)$")).group(1))
        assert await get(port) == (200, "ok\n")
        assert "try it: curl -sN http://127.0.0.1:" in server.text
        assert "!!!" not in server.text  # loopback: nobody else can reach /invoke
    for how in (("--bind", "0.0.0.0"), ("--bind", "localhost")):
        async with ServerProcess.spawn("start", str(agent), "--port", "0", *how) as server:
            expected = r"http host on :\d+ \(all interfaces\)" if how[1] == "0.0.0.0" else r"on 127\.0\.0\.1:"
            await server.wait_for(expected)
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env={"HOST": "0.0.0.0"}) as server:
        port = int((await server.wait_for(r"http host on :(\d+) \(all interfaces\)")).group(1))
        assert await get(port) == (200, "ok\n")


def test_bad_port_flag_is_a_usage_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("start", str(make_agent()), "--port", "http")
    assert done.returncode == 2
    assert done.stderr.strip() == "Error: --port must be a port number 0-65535, not 'http'"
    assert run_cli("start", str(make_agent()), "--port", "70000").returncode == 2
    assert run_cli("start", str(make_agent()), "--bind", "my-host").returncode == 2


def test_bad_port_env_is_a_runtime_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("start", str(make_agent()), env={"PORT": "eighty"})
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "Error: the PORT environment variable must be a port number 0-65535, not 'eighty'"
    )


def test_port_in_use_suggests_another(make_agent: AgentFactory, run_cli: RunCli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("start", str(make_agent()), "--port", str(port), *LOCAL)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        f"Error: cannot listen on 127.0.0.1:{port}: the port is already in use; pick another with --port"
    ]
    assert "Traceback" not in done.stderr


def test_broken_channel_refuses_to_start(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"channels/hook.py": "raise RuntimeError('no token')\n"})
    done = run_cli("start", str(agent), "--port", "0", *LOCAL)
    assert done.returncode == 1
    assert (
        "Error: channel setup is invalid (1 load failure(s), 0 route collision(s)) — fix it, or rename "
        "an intentionally disabled file to *.disabled: channels/hook.py: cannot load: RuntimeError: no token"
    ) in done.stderr


async def test_route_channel_replaces_invoke_and_is_listed(make_agent: AgentFactory) -> None:
    channel = (
        "from aiohttp import web\n"
        "def channel(ctx):\n"
        "    async def hello(request):\n"
        "        return web.Response(text='hi\\n')\n"
        "    return {'GET /hello': hello}\n"
    )
    agent = make_agent({"channels/hello.py": channel})
    async with ServerProcess.spawn("start", str(agent), "--port", "0", *LOCAL) as server:
        port = await server.port()
        assert await get(port, "/hello") == (200, "hi\n")
        assert (await get(port, "/invoke"))[0] == 404
        assert re.search(r"routes: +GET /hello, GET /health$", server.text, re.M)
        assert re.search(r"channels: +hello\.py$", server.text, re.M)
        assert "try it:" not in server.text


def test_missing_model_without_input_fails_fast(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("start", str(make_agent(model=None)), "--no-input", "--port", "0", *LOCAL)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: missing model: set --model, FASTAGENT_MODEL")


@pytest.mark.parametrize("command", ["start", "dev"])
async def test_a_fresh_init_serves_without_a_model_flag_or_a_terminal(
    command: str, tmp_path: Path, run_cli: RunCli
) -> None:
    """The README's `start` and `dev` after `fastagent init demo`, in CI (no terminal, no key, no
    --model): they serve the demo model init wrote instead of failing on a missing model."""
    assert run_cli("init", "demo", cwd=tmp_path).returncode == 0
    async with ServerProcess.spawn(command, "demo", "--port", "0", *LOCAL, cwd=tmp_path) as server:
        port = await server.port(within=60)
        assert re.search(r"model: +scripted/demo \(from fastagent\.toml\)$", server.text, re.M), server.text
        assert answer(await invoke(port, "s1", "hello")).startswith("Hello! I am **scripted/demo**")
        assert "missing model" not in server.text


def test_route_collision_refuses_to_start(make_agent: AgentFactory, run_cli: RunCli) -> None:
    route = "def channel(ctx):\n    async def h(request):\n        return None\n    return {'GET /x': h}\n"
    agent = make_agent({"channels/a.py": route, "channels/b.py": route.replace("GET /x", "/x")})
    done = run_cli("start", str(agent), "--port", "0", *LOCAL)
    assert done.returncode == 1
    assert "(0 load failure(s), 1 route collision(s))" in done.stderr
    assert '"GET /x" (channels/a.py) and "/x" (channels/b.py) name the same route' in done.stderr


FLAKY_CONNECTION = """
import asyncio

class Flaky:
    name = "flaky"

    def connect(self, ctx, stop):
        async def ready():
            {ready}

        async def closed():
            await asyncio.sleep(0.3)
            raise ConnectionResetError("socket dropped")

        class Connection:
            pass

        connection = Connection()
        connection.ready = ready()
        connection.closed = closed()
        return connection

channel = Flaky()
"""


@pytest.mark.parametrize(
    "ready", ["return None", "await asyncio.sleep(5)"], ids=["after-ready", "before-ready"]
)
def test_a_long_connection_that_closes_fails_the_process(
    make_agent: AgentFactory, run_cli: RunCli, ready: str
) -> None:
    agent = make_agent({"channels/flaky.py": FLAKY_CONNECTION.replace("{ready}", ready)})
    done = run_cli("start", str(agent), "--port", "0", *LOCAL, timeout=20)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "Error: long connection flaky closed unexpectedly: ConnectionResetError: socket dropped"
    )
    assert "Traceback" not in done.stderr
