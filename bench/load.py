"""Load figures for ``fastagent start`` on the scripted model (prints figures; not a test).

    .venv/bin/python bench/load.py [--duration 10] [--sessions 20,100] [--stored 1000]

For a fresh agent, then the same agent with ``--stored`` sessions already on disk:

* time from process start to ``GET /health`` answering 200, and RSS once idle;
* for each concurrency N: N sessions, each doing sequential turns against ``POST /invoke`` (SSE,
  read to the end) for ``--duration`` seconds: turns/s, latency p50/p99, server CPU per turn
  (``/proc/<pid>/stat`` utime+stime), peak RSS (``VmHWM``).

Targets on the 2-core dev machine (the TypeScript original: 15 ms CPU/turn, 74 turns/s at 20,
42 turns/s and 470 MB at 100, 180 MB idle, 1.4 s to ready): <= 5 ms server CPU per turn,
>= 150 turns/s at 100 sessions, <= 120 MB peak at 100, <= 60 MB idle, ready in <= 0.5 s, and no
slowdown with 1 000 stored sessions. The client shares the machine: its CPU is not the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCRIPT = {"steps": [{"text": "Done: the answer is short."}]}
TICK = os.sysconf("SC_CLK_TCK")
STARTS = 5
"""Starts timed per agent (the median is reported)."""
COLUMNS = [("sessions", 8), ("turns/s", 9), ("p50 ms", 8), ("p99 ms", 8), ("cpu ms/turn", 11), ("peak MB", 9)]
HEADER = " ".join(f"{name:>{width}}" for name, width in [*COLUMNS, ("errors", 6)])


def make_agent(root: Path) -> Path:
    agent = root / "agent"
    (agent / "scripts").mkdir(parents=True)
    (agent / "scripts" / "short.json").write_text(json.dumps(SCRIPT))
    (agent / "fastagent.toml").write_text('model = "scripted/short"\n')
    (agent / "persona.md").write_text("You are the load-test agent. Answer briefly.\n")
    return agent


async def seed_sessions(agent: Path, count: int) -> None:
    """Store ``count`` sessions (one turn each) the way the server would."""
    from fastagent_cli.assembly import open_agent_dir
    from fastagent_cli.contract import collect

    opened = open_agent_dir(agent)
    try:
        for start in range(0, count, 50):
            await asyncio.gather(
                *(
                    collect(opened.agent.invoke(f"stored-{i}", "hello"))
                    for i in range(start, min(count, start + 50))
                )
            )
    finally:
        await opened.aclose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


@dataclass
class Run:
    sessions: int
    turns: int
    seconds: float
    latencies: list[float]
    cpu: float
    peak_mb: float
    errors: int

    def row(self) -> str:
        lat = sorted(self.latencies)
        p50 = statistics.median(lat) * 1000 if lat else float("nan")
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
        per_turn = self.cpu / self.turns * 1000 if self.turns else float("nan")
        return (
            f"{self.sessions:>8} {self.turns / self.seconds:>9.1f} {p50:>8.1f} {p99:>8.1f} "
            f"{per_turn:>11.2f} {self.peak_mb:>9.1f} {self.errors:>6}"
        )


async def run_load(url: str, pid: int, sessions: int, duration: float, tag: str) -> Run:
    latencies: list[float] = []
    errors = 0
    body_ok = b'"type":"completed"'
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:

        async def one_session(index: int, stop_at: float, record: bool) -> None:
            nonlocal errors
            payload = {"session": f"{tag}-{sessions}-{index}", "text": "How are you?"}
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                async with http.post(url, json=payload) as response:
                    body = await response.read()
                if response.status != 200 or body_ok not in body.replace(b" ", b""):
                    errors += 1
                elif record:
                    latencies.append(time.perf_counter() - started)

        warm_until = time.perf_counter() + 1.0
        await asyncio.gather(*(one_session(i, warm_until, False) for i in range(sessions)))
        cpu_before = cpu_seconds(pid)
        started = time.perf_counter()
        stop_at = started + duration
        await asyncio.gather(*(one_session(i, stop_at, True) for i in range(sessions)))
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu_before
    return Run(sessions, len(latencies), elapsed, latencies, cpu, memory_mb(pid)[1], errors)


async def wait_ready(port: int, started: float, process: asyncio.subprocess.Process) -> float:
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if process.returncode is not None:
                raise SystemExit(f"the server exited with {process.returncode}") from None
            await asyncio.sleep(0.002)
            continue
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = await reader.read()
        writer.close()
        await writer.wait_closed()
        if answer.startswith(b"HTTP/1.1 200"):
            return time.perf_counter() - started
        await asyncio.sleep(0.002)


def server_env() -> dict[str, str]:
    """Quiet logs, and bytecode caching on (as an installed CLI has it), whatever this shell says."""
    env = dict(os.environ, FASTAGENT_LOG_LEVEL="warn")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


async def start_server(agent: Path) -> tuple[asyncio.subprocess.Process, int, float]:
    """(process, port, seconds from spawn to /health answering 200)."""
    port = free_port()
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fastagent_cli",
        "start",
        str(agent),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        env=server_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
    )
    return process, port, await wait_ready(port, started, process)


async def stop_server(process: asyncio.subprocess.Process) -> None:
    process.terminate()
    await process.wait()


async def bench_server(agent: Path, concurrency: list[int], duration: float, label: str) -> None:
    readies = []
    for _ in range(STARTS - 1):
        process, _, ready = await start_server(agent)
        readies.append(ready)
        await stop_server(process)
    process, port, ready = await start_server(agent)
    readies.append(ready)
    try:
        await asyncio.sleep(1.0)
        idle, _ = memory_mb(process.pid)
        shown = ", ".join(f"{r * 1000:.0f}" for r in readies)
        print(f"\n== {label}")
        median = statistics.median(readies) * 1000
        print(f"ready in {median:.0f} ms (median of {STARTS}: {shown}); idle RSS {idle:.1f} MB")
        print(HEADER)
        url = f"http://127.0.0.1:{port}/invoke"
        for sessions in concurrency:
            run = await run_load(url, process.pid, sessions, duration, label.split()[0])
            print(run.row(), flush=True)
    finally:
        await stop_server(process)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--sessions", default="20,100")
    parser.add_argument("--stored", type=int, default=1000)
    args = parser.parse_args()
    concurrency = [int(n) for n in args.sessions.split(",")]
    with tempfile.TemporaryDirectory(prefix="fastagent-load-") as tmp:
        agent = make_agent(Path(tmp))
        process, _, _ = await start_server(agent)  # writes the bytecode cache if it was off
        await stop_server(process)
        await bench_server(agent, concurrency, args.duration, "fresh agent (0 stored sessions)")
        fresh = Path(tmp) / "stored"
        agent = make_agent(fresh)
        seeded = time.perf_counter()
        await seed_sessions(agent, args.stored)
        stored = sum(
            1 for p in (agent / ".fastagent" / "sessions").rglob("*.jsonl") if ".locks" not in p.parts
        )
        print(f"\n(seeded {stored} sessions in {time.perf_counter() - seeded:.1f} s)")
        await bench_server(agent, concurrency, args.duration, f"with {stored} stored sessions")


if __name__ == "__main__":
    asyncio.run(main())
