"""``--tunnel`` with a fake ``cloudflared`` on PATH (features S1, S2, R5)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from fastagent_cli.serving.tunnel import Tunnel, find_tunnel_url
from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess, get

URL = "https://fake-tunnel-123.trycloudflare.com"

FAKE_CLOUDFLARED = f"""#!{sys.executable}
import os, sys, time
log = os.environ["FAKE_CF_LOG"]
with open(log, "a") as f:
    f.write(f"{{os.getpid()}} {{' '.join(sys.argv[1:])}}\\n")
runs = sum(1 for _ in open(log))
mode = os.environ.get("FAKE_CF_MODE", "ok")
if mode == "silent":
    time.sleep(3600)
if mode.startswith("fail-") and runs <= int(mode[5:]):
    sys.stderr.write('ERR failed to request quick Tunnel: "https://api.trycloudflare.com/tunnel": EOF\\n')
    sys.exit(1)
sys.stderr.write("INF Requesting new quick Tunnel on trycloudflare.com...\\n")
sys.stderr.write('ERR error="Post \\\\"https://api.trycloudflare.com/tunnel\\\\""\\n')
sys.stderr.write("INF |  {URL}                                  |\\n")
sys.stderr.flush()
time.sleep(3600)
"""


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "cloudflared"
    script.write_text(FAKE_CLOUDFLARED)
    script.chmod(0o755)
    return bin_dir


@pytest.fixture
def cf_log(tmp_path: Path) -> Path:
    return tmp_path / "cloudflared.log"


def fake_env(fake_bin: Path, cf_log: Path, mode: str = "ok") -> dict[str, str]:
    return {
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
        "FAKE_CF_LOG": str(cf_log),
        "FAKE_CF_MODE": mode,
    }


def runs(cf_log: Path) -> list[tuple[int, str]]:
    if not cf_log.exists():
        return []
    return [
        (int(pid), args) for pid, _, args in (line.partition(" ") for line in cf_log.read_text().splitlines())
    ]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def gone(pid: int) -> bool:
    for _ in range(100):
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def test_the_url_is_the_first_trycloudflare_host_that_is_not_the_api() -> None:
    assert find_tunnel_url('ERR Post "https://api.trycloudflare.com/tunnel": EOF') is None
    assert find_tunnel_url(f"INF |  {URL}   |") == URL
    assert find_tunnel_url("INF https://a-b.example.com and https://x-y.trycloudflare.com") == (
        "https://x-y.trycloudflare.com"
    )
    assert find_tunnel_url("nothing here") is None


async def test_retries_until_a_url_then_close_ends_the_process(
    fake_bin: Path, cf_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in fake_env(fake_bin, cf_log, "fail-2").items():
        monkeypatch.setenv(name, value)
    tunnel = Tunnel(4321, attempts=3, retry_delay=0.05, start_timeout=10)
    assert await tunnel.open() == URL
    started = runs(cf_log)
    assert [args for _, args in started] == ["tunnel --url http://localhost:4321"] * 3
    await tunnel.close()
    assert await gone(started[-1][0])


async def test_gives_up_after_three_silent_attempts(
    fake_bin: Path, cf_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in fake_env(fake_bin, cf_log, "silent").items():
        monkeypatch.setenv(name, value)
    tunnel = Tunnel(4321, retry_delay=0.05, start_timeout=0.5)
    assert await tunnel.open() is None
    started = runs(cf_log)
    assert len(started) == 3
    for pid, _ in started:
        assert await gone(pid)  # each silent attempt was stopped
    await tunnel.close()


async def test_start_prints_the_url_and_kills_cloudflared_on_exit(
    make_agent: AgentFactory, fake_bin: Path, cf_log: Path
) -> None:
    env = fake_env(fake_bin, cf_log)
    async with ServerProcess.spawn("start", str(make_agent()), "--port", "0", "--tunnel", env=env) as server:
        port = await server.port()
        await server.wait_for(rf"INFO  \[fastagent\] tunnel: {URL} -> http://localhost:{port}$")
        [(pid, args)] = runs(cf_log)
        assert args == f"tunnel --url http://localhost:{port}"
        assert await get(port) == (200, "ok\n")
        server.send(signal.SIGTERM)
        assert await server.wait() == -signal.SIGTERM
    assert await gone(pid)


async def test_dev_keeps_one_tunnel_across_worker_restarts(
    make_agent: AgentFactory, fake_bin: Path, cf_log: Path
) -> None:
    agent = make_agent({"tools/probe.py": "from fastagent_cli.tools.define import tool\n"})
    env = fake_env(fake_bin, cf_log)
    async with ServerProcess.spawn("dev", str(agent), "--port", "0", "--tunnel", env=env) as dev:
        port = await dev.port()
        await dev.wait_for(rf"tunnel: {URL} -> http://localhost:{port}$")
        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text("# edited\nfrom fastagent_cli.tools.define import tool\n")
        await dev.wait_for(r"tools/probe\.py changed — restarting the dev worker", after=before)
        assert await dev.port(after=before) == port
        assert await get(port) == (200, "ok\n")
        [(pid, _)] = runs(cf_log)  # the same cloudflared, still running
        assert alive(pid)
        assert dev.count(r"\[fastagent\] tunnel: ") == 1
        dev.send(signal.SIGTERM)
        await dev.wait()
    assert await gone(pid)


async def test_no_cloudflared_on_path_is_reported_and_serving_continues(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    async with ServerProcess.spawn(
        "start", str(make_agent()), "--port", "0", "--bind", "127.0.0.1", "--tunnel", env={"PATH": str(empty)}
    ) as server:
        port = await server.port()
        await server.wait_for(
            r"ERROR \[tunnel\] cloudflared is not on PATH, so there is no tunnel .*serving continues"
        )
        assert await get(port) == (200, "ok\n")


def test_a_bind_localhost_cannot_reach_is_refused(make_agent: AgentFactory, run_cli: RunCli) -> None:
    flag = run_cli("start", str(make_agent()), "--tunnel", "--bind", "10.0.0.5")
    assert flag.returncode == 2
    assert flag.stderr.strip() == (
        "Error: --bind 10.0.0.5 conflicts with --tunnel forwards http://localhost:<port>, which cannot "
        "reach 10.0.0.5; drop --bind or bind 127.0.0.1"
    )
    agent = make_agent(config='[http]\nhost = "10.0.0.5"\n')
    for command in ("start", "dev"):
        configured = run_cli(command, str(agent), "--tunnel", "--port", "0")
        assert configured.returncode == 1, configured.stderr
        assert configured.stderr.startswith(
            'Error: [http] host = "10.0.0.5" in fastagent.toml: --tunnel forwards'
        )
