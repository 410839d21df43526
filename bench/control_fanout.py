"""Fan-out cost of the session control plane (prints figures; not a test).

    .venv/bin/python bench/control_fanout.py [--turns 200] [--watchers 100] [--deltas 20]

The real ``fastagent start`` (``session_control = true``, the scripted model answering in
``--deltas`` text deltas) serves one session; this process drives ``--turns`` turns on it through
``POST /control/invoke`` with ``connect_agent``, first with nobody watching, then with
``--watchers`` subscribers of ``GET /control/sessions/{id}/events`` (``connect_session_control``,
over HTTP, each consuming every event). Printed: the server's CPU per turn (``/proc/<pid>/stat``
utime+stime) in each phase and the difference, the events per turn, and a check that every
watcher saw every turn. Target (issue 11): <= 2 ms of server CPU per turn added by 100 watchers.
The client shares the machine: its CPU is not the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import cpu_seconds, free_port, server_env, wait_ready  # noqa: E402
from fastagent_cli.contract import Completed, collect  # noqa: E402
from fastagent_cli.remote import connect_agent, connect_session_control  # noqa: E402

TOKEN = "fanout-bench-token"
SESSION = "fan"


def make_agent(root: Path, deltas: int) -> Path:
    agent = root / "agent"
    (agent / "scripts").mkdir(parents=True)
    words = " ".join(f"word{i:02d}" for i in range(deltas))
    step = {"text": words, "chunkSize": 7}
    (agent / "scripts" / "fan.json").write_text(json.dumps({"steps": [step]}))
    (agent / "fastagent.toml").write_text('model = "scripted/fan"\nsession_control = true\n')
    return agent


async def turns(url: str, count: int) -> float:
    """Drive ``count`` turns; seconds taken."""
    agent = connect_agent(url, TOKEN)
    started = time.perf_counter()
    try:
        for _ in range(count):
            result = [e async for e in agent.invoke(SESSION, "go")]
            if not isinstance(result[-1], Completed):
                raise SystemExit(f"a turn failed: {result[-1]}")
    finally:
        await agent.aclose()
    return time.perf_counter() - started


async def phase(url: str, pid: int, count: int, watchers: int) -> tuple[float, float, list[int]]:
    """(server CPU seconds, wall seconds, events each watcher saw) for ``count`` turns."""
    control = await connect_session_control(url, TOKEN)
    streams = [control.sessions.get(SESSION).events() for _ in range(watchers)]
    await asyncio.gather(*(s.ready() for s in streams))
    seen = [0] * watchers
    settled = [0] * watchers
    done = asyncio.Event()

    async def watch(index: int) -> None:
        async for event in streams[index]:
            seen[index] += 1
            if event.type == "run_settled":
                settled[index] += 1
                if all(n >= count for n in settled):
                    done.set()

    tasks = [asyncio.create_task(watch(i)) for i in range(watchers)]
    await collect(connect_agent(url, TOKEN).invoke("warm-up", "go"))
    before = cpu_seconds(pid)
    wall = await turns(url, count)
    if watchers:
        await asyncio.wait_for(done.wait(), 120)
    cpu = cpu_seconds(pid) - before
    for stream in streams:
        await stream.aclose()
    await asyncio.gather(*tasks, return_exceptions=True)
    await control.aclose()
    return cpu, wall, seen


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--deltas", type=int, default=20, help="text deltas per answer")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        agent = make_agent(Path(tmp), args.deltas)
        port = free_port()
        env = {**server_env(), "FASTAGENT_CONTROL_TOKEN": TOKEN}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "fastagent_cli", "start", str(agent), "--port", str(port),
            "--bind", "127.0.0.1", env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            await wait_ready(port, time.perf_counter(), process)
            url = f"http://127.0.0.1:{port}"
            quiet_cpu, quiet_wall, _ = await phase(url, process.pid, args.turns, 0)
            busy_cpu, busy_wall, seen = await phase(url, process.pid, args.turns, args.watchers)
        finally:
            process.terminate()
            await process.wait()
    per_turn = [cpu / args.turns * 1000 for cpu in (quiet_cpu, busy_cpu)]
    events = seen[0] / args.turns if seen else 0
    print(f"fastagent control fan-out: {args.turns} turns, {args.deltas} text deltas per answer")
    print(f"  events per turn (what each watcher receives): {events:.1f}")
    print(
        f"  nobody watching:   {per_turn[0]:6.2f} ms server CPU/turn  ({args.turns / quiet_wall:.0f} turns/s)"
    )
    print(
        f"  {args.watchers:>3} watchers:       {per_turn[1]:6.2f} ms server CPU/turn  "
        f"({args.turns / busy_wall:.0f} turns/s)"
    )
    print(f"  added by watchers: {per_turn[1] - per_turn[0]:6.2f} ms/turn (target <= 2 ms)")
    complete = all(n == seen[0] for n in seen)
    print(f"  every watcher saw every event: {'yes' if complete else f'no: {min(seen)}..{max(seen)}'}")


if __name__ == "__main__":
    asyncio.run(main())
