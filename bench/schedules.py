"""Scheduler figures for ``fastagent start`` (prints figures; not a test).

    .venv/bin/python bench/schedules.py [--idle 60] [--fires 5]

* **Idle CPU**: ``fastagent start`` on an agent with 100 ``schedules/*.toml`` (none due during the
  window) and ``self_schedule = true`` with 1 000 pending wake-ups (50 conversations x 20, none
  due), against the same agent with neither. CPU is ``/proc/<pid>/stat`` utime+stime over
  ``--idle`` seconds once the server listens (two 30 s wake-up polls at the default). Target: no
  measurable CPU between fires (the difference is within the tick resolution, 10 ms).
* **Fire latency**: from a cron slot to the model request reaching an OpenAI-compatible server
  (a local fake speaking the streaming wire format), over ``--fires`` fresh processes whose clock
  (``FASTAGENT_CLOCK_OFFSET``) puts the slot a few seconds after start. Target: <= 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
LEAD_S = 4.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class FakeOpenAI:
    """``POST /v1/chat/completions`` streaming one short answer; records when each request arrived."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.arrived = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.complete)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    async def complete(self, request: web.Request) -> web.StreamResponse:
        self.arrivals.append(time.time())
        self.arrived.set()
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for chunk in (
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Digest sent."}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 3, "total_tokens": 53}},
        ):
            body = {"id": "c1", "object": "chat.completion.chunk", "model": "m", **chunk}
            await response.write(f"data: {json.dumps(body)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response


def make_agent(root: Path, base_url: str, *, schedules: int, wakes: int, self_schedule: bool) -> Path:
    agent = root / "agent"
    (agent / "schedules").mkdir(parents=True)
    config = 'model = "fake/m"\ncoding_tools = false\n' + ("self_schedule = true\n" if self_schedule else "")
    (agent / "fastagent.toml").write_text(config)
    models = {
        "providers": {
            "fake": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    hour = (datetime.now(UTC).hour + 12) % 24  # half a day away: nothing fires during the window
    for i in range(schedules):
        cron = f"{i % 60} {hour} * * *"
        (agent / "schedules" / f"job-{i:03d}.toml").write_text(f'cron = "{cron}"\nprompt = "job {i}"\n')
    if wakes:
        later = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        entries = [
            {
                "id": str(uuid.uuid4()),
                "session": f"chat-{i // 20}",
                "prompt": f"follow up {i}",
                "fireAt": later,
            }
            for i in range(wakes)
        ]
        (agent / ".fastagent" / "schedule").mkdir(parents=True)
        (agent / ".fastagent" / "schedule" / "wakeups.json").write_text(json.dumps(entries))
    return agent


async def start(agent: Path, env: dict[str, str]) -> tuple[asyncio.subprocess.Process, list[str]]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_")}
    full.update(env)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fastagent_cli",
        "start",
        str(agent),
        "--port",
        "0",
        "--bind",
        "127.0.0.1",
        env=full,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    lines: list[str] = []
    assert process.stderr is not None
    while True:
        raw = await asyncio.wait_for(process.stderr.readline(), 60)
        if not raw:
            raise RuntimeError("server exited:\n" + "\n".join(lines))
        lines.append(raw.decode().rstrip())
        if "http host on" in lines[-1]:
            break

    async def drain() -> None:
        assert process.stderr is not None
        while raw := await process.stderr.readline():
            lines.append(raw.decode().rstrip())

    asyncio.get_running_loop().create_task(drain())
    return process, lines


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        await process.wait()


async def idle_cpu(window: float, *, schedules: int, wakes: int, self_schedule: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAI() as fake:
            agent = make_agent(
                Path(tmp), fake.base_url, schedules=schedules, wakes=wakes, self_schedule=self_schedule
            )
            process, lines = await start(agent, {})
            try:
                await asyncio.sleep(2.0)  # let start-up work (imports, first poll) finish
                before = cpu_seconds(process.pid)
                await asyncio.sleep(window)
                used = cpu_seconds(process.pid) - before
            finally:
                await stop(process)
            if fake.arrivals or any("firing" in line for line in lines):
                raise RuntimeError("something fired during the idle window")
            return used


async def fire_latency(runs: int) -> list[float]:
    latencies = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            async with FakeOpenAI() as fake:
                agent = make_agent(Path(tmp), fake.base_url, schedules=0, wakes=0, self_schedule=False)
                (agent / "schedules" / "digest.toml").write_text(
                    'cron = "0 9 * * *"\nprompt = "send the digest"\n'
                )
                now = datetime.now(UTC)
                slot = now.replace(hour=9, minute=0, second=0, microsecond=0)
                slot = slot if slot > now else slot + timedelta(days=1)
                offset = slot.timestamp() - LEAD_S - time.time()
                process, lines = await start(agent, {"FASTAGENT_CLOCK_OFFSET": f"{offset:.6f}"})
                try:
                    await asyncio.wait_for(fake.arrived.wait(), LEAD_S + 10)
                except TimeoutError:
                    pass
                finally:
                    await stop(process)
                if not fake.arrivals:
                    raise RuntimeError("the slot did not fire:\n" + "\n".join(lines))
                latencies.append(fake.arrivals[0] - (slot.timestamp() - offset))
    return latencies


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--idle", type=float, default=60.0, help="idle window in seconds (default 60)")
    parser.add_argument("--fires", type=int, default=5, help="fire-latency samples (default 5)")
    args = parser.parse_args()

    print(f"idle CPU over {args.idle:g} s after start (tick {1000 / TICK:g} ms):")
    bare = await idle_cpu(args.idle, schedules=0, wakes=0, self_schedule=False)
    print(f"  no schedules, no wake-ups:                 {bare * 1000:7.0f} ms CPU")
    loaded = await idle_cpu(args.idle, schedules=100, wakes=1000, self_schedule=True)
    print(f"  100 schedules + 1 000 pending wake-ups:    {loaded * 1000:7.0f} ms CPU")
    print(
        f"  scheduler cost:                            {(loaded - bare) * 1000:7.0f} ms CPU "
        f"({(loaded - bare) / args.idle * 100:.3f} % of one core)"
    )

    latencies = await fire_latency(args.fires)
    shown = ", ".join(f"{x * 1000:.0f}" for x in latencies)
    print(f"fire latency, slot -> model request ({args.fires} fresh processes): {shown} ms")
    median, worst = statistics.median(latencies) * 1000, max(latencies) * 1000
    print(f"  median {median:.0f} ms, max {worst:.0f} ms (target <= 1000 ms)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    asyncio.run(main())
