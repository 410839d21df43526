"""Requests refused while ``fastagent dev`` reloads (prints figures; not a test).

    .venv/bin/python bench/dev_reload.py [--reloads 20] [--interval-ms 25] [--source DIR]

Runs ``fastagent dev`` on a small agent (scripted model, one tool file), sends light load (one
``GET /health`` every ``--interval-ms`` on a fresh connection, the way ``curl`` would) and saves
the tool file ``--reloads`` times, waiting for each new worker to report ready before the next
save. Counts every request by outcome: answered 200, refused (``ECONNREFUSED``), other failure
(reset, no answer within 10 s), and the latency of the answered ones (a request that arrives
while a worker restarts waits in the supervisor's listening queue for the next worker).
Target: 0 refused, 0 failed.

``--source DIR`` runs another checkout's ``fastagent_cli`` (e.g. ``/work/main`` before the change),
for before/after figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST_LINE = re.compile(r"http host on (?:\S+?)?:(\d+)")
READY_TIMEOUT_S = 60.0

TOOL = '''from fastagent_cli import tool


@tool
def probe() -> str:
    """Say which version of this file is loaded."""
    return "version {n}"
'''


@dataclass
class Tally:
    ok: int = 0
    refused: int = 0
    failed: int = 0
    other_status: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)


async def one_request(port: int, tally: Tally) -> None:
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        writer.write(b"GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        await asyncio.wait_for(reader.read(), 10)
        writer.close()
    except ConnectionRefusedError:
        tally.refused += 1
        return
    except (OSError, TimeoutError) as exc:
        tally.failed += 1
        name = type(exc).__name__
        tally.errors[name] = tally.errors.get(name, 0) + 1
        return
    if status_line.startswith(b"HTTP/1.1 200"):
        tally.ok += 1
        tally.latencies_ms.append((time.perf_counter() - started) * 1000)
    else:
        tally.other_status += 1


async def load(port: int, interval_s: float, stop: asyncio.Event, tally: Tally) -> None:
    pending: set[asyncio.Task[None]] = set()
    while not stop.is_set():
        task = asyncio.create_task(one_request(port, tally))
        pending.add(task)
        task.add_done_callback(pending.discard)
        await asyncio.sleep(interval_s)
    if pending:
        await asyncio.wait(pending)


class Dev:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.changed = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while raw := await self.process.stderr.readline():
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
            self.changed.set()

    async def wait_for_ready(self, count: int) -> int:
        """The port once ``count`` workers have reported listening."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            found = [m for line in self.lines if (m := HOST_LINE.search(line))]
            if len(found) >= count:
                return int(found[count - 1].group(1))
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1)
            except TimeoutError:
                pass
            if self.process.returncode is not None:
                break
        raise RuntimeError("dev did not become ready:\n" + "\n".join(self.lines[-20:]))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reloads", type=int, default=20)
    parser.add_argument("--interval-ms", type=float, default=25.0)
    parser.add_argument("--settle-ms", type=float, default=300.0, help="pause after each reload")
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout whose fastagent_cli runs")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fastagent-dev-bench-") as tmp:
        agent = Path(tmp) / "agent"
        (agent / "tools").mkdir(parents=True)
        (agent / "fastagent.toml").write_text('model = "scripted/echo"\ncoding_tools = false\n')
        (agent / "tools" / "probe.py").write_text(TOOL.format(n=0))
        env = {**os.environ, "PYTHONPATH": str(args.source.resolve()), "HOME": tmp}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "fastagent_cli",
            "dev",
            str(agent),
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            env=env,
            cwd=tmp,  # not a checkout: ``-m`` puts the cwd first on sys.path, before PYTHONPATH
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        dev = Dev(process)
        try:
            port = await dev.wait_for_ready(1)
            tally = Tally()
            stop = asyncio.Event()
            client = asyncio.create_task(load(port, args.interval_ms / 1000, stop, tally))
            reload_s: list[float] = []
            for n in range(1, args.reloads + 1):
                saved = time.perf_counter()
                (agent / "tools" / "probe.py").write_text(TOOL.format(n=n))
                await dev.wait_for_ready(n + 1)
                reload_s.append(time.perf_counter() - saved)
                await asyncio.sleep(args.settle_ms / 1000)
            stop.set()
            await client
        finally:
            process.terminate()
            await process.wait()
            dev.reader.cancel()

    total = tally.ok + tally.refused + tally.failed + tally.other_status
    lat = sorted(tally.latencies_ms)
    print(f"source:            {args.source.resolve()}")
    reload_median = statistics.median(reload_s)
    print(f"reloads:           {args.reloads} (save to new worker ready: median {reload_median:.2f} s)")
    print(f"requests:          {total} (one GET /health every {args.interval_ms:g} ms, fresh connections)")
    print(f"answered 200:      {tally.ok}")
    print(f"refused:           {tally.refused}")
    print(f"failed otherwise:  {tally.failed} {tally.errors or ''}".rstrip())
    print(f"other status:      {tally.other_status}")
    if lat:
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        median = statistics.median(lat)
        print(f"latency (200s):    median {median:.1f} ms, p99 {p99:.0f} ms, max {lat[-1]:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
