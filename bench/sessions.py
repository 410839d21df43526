"""Turn cost with many stored sessions, and the ``sessions`` CLI (prints figures; not a test).

    .venv/bin/python bench/sessions.py [--stored 10,1000] [--turns 200]

For each count of stored sessions (seeded as the server stores them: one turn each, through the
engine), ``fastagent start`` is driven over HTTP (``POST /invoke``, the SSE stream read to its
end), one turn at a time, so every figure is one turn's own cost. Its model is a local fake
OpenAI-compatible server streaming chat completions (``bench/soak.py``'s), or the scripted model
with ``--scripted``:

* ``existing``: turns on sessions already stored (a round over ``--turns`` stored ids, each
  opened for the first time by this server, then again);
* ``new``: turns that create a session;
* latency p50 / p99 and the server's CPU per turn (``/proc/<pid>/stat`` utime+stime);
* the CLI: ``fastagent sessions list --limit 1`` (the last session, what ``--continue`` needs),
  ``sessions list`` (30) and ``sessions show``, wall time of the whole process, median of 5;
* the store alone, in process (``--store 10,1000,10000``): a fresh process's first lookup, then
  CPU per open of a stored session and per new session, and ``list_sessions(1)`` / ``(30)``.

Target: no slowdown from 10 to 1 000 stored sessions (the TypeScript original: 14x per turn,
because it reads every record's header to find one). The bench runs against another checkout
with ``PYTHONPATH=<checkout>`` (the CLI figures are skipped where it has no ``sessions``).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load
import soak
from load import cpu_seconds, seed_sessions, server_env, start_server, stop_server

CLI_RUNS = 5


def fake_model() -> tuple[multiprocessing.Process, int]:
    """bench/soak.py's fake OpenAI-compatible model server, in its own process."""
    ports: multiprocessing.Queue[int] = multiprocessing.Queue()
    process = multiprocessing.Process(target=soak.run_fake_model, args=(ports,), daemon=True)
    process.start()
    return process, ports.get(timeout=30)


def stored_records(agent: Path) -> int:
    sessions = agent / ".fastagent" / "sessions"
    return sum(1 for p in sessions.rglob("*.jsonl") if ".locks" not in p.parts)


async def timed_turns(url: str, pid: int, ids: list[str]) -> tuple[list[float], float]:
    """Latencies of one turn per id, in order, and the server CPU they took."""
    latencies = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        cpu = cpu_seconds(pid)
        for session in ids:
            started = time.perf_counter()
            async with http.post(url, json={"session": session, "text": "How are you?"}) as response:
                body = await response.read()
            if response.status != 200 or b'"completed"' not in body:
                raise SystemExit(f"turn on {session} failed: {response.status} {body[-200:]!r}")
            latencies.append(time.perf_counter() - started)
        return latencies, cpu_seconds(pid) - cpu


def row(label: str, latencies: list[float], cpu: float) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    per_turn = cpu / len(latencies) * 1000
    return f"  {label:<22} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   cpu {per_turn:5.2f} ms/turn"


def cli_seconds(*args: str) -> float | None:
    """Median wall time of ``fastagent <args>`` (``None`` when the command does not exist)."""
    times = []
    for _ in range(CLI_RUNS):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "fastagent_cli", *args], capture_output=True, env=server_env(), check=False
        )
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            return None
    return statistics.median(times)


async def bench(stored: int, turns: int, tmp: Path, model_port: int | None) -> None:
    if model_port is None:
        agent = load.make_agent(tmp / f"stored-{stored}")
    else:
        agent = soak.make_agent(tmp / f"stored-{stored}", model_port)
    started = time.perf_counter()
    await seed_sessions(agent, stored)
    seeded = time.perf_counter() - started
    print(f"\n== {stored_records(agent)} stored sessions (seeded in {seeded:.1f} s)")
    existing = [f"stored-{i % stored}" for i in range(turns)]
    process, port, _ = await start_server(agent)
    try:
        url = f"http://127.0.0.1:{port}/invoke"
        await timed_turns(url, process.pid, ["warm-up"] * 5)
        print(
            row("existing, first open", *await timed_turns(url, process.pid, existing[: min(turns, stored)]))
        )
        print(row("existing, again", *await timed_turns(url, process.pid, existing)))
        print(row("new sessions", *await timed_turns(url, process.pid, [f"new-{i}" for i in range(turns)])))
    finally:
        await stop_server(process)
    for label, args in [
        ("sessions list --limit 1", ("sessions", "list", str(agent), "--limit", "1")),
        ("sessions list", ("sessions", "list", str(agent))),
        ("sessions show", ("sessions", "show", "stored-0", str(agent))),
    ]:
        seconds = cli_seconds(*args)
        shown = "(no such command)" if seconds is None else f"{seconds * 1000:6.0f} ms (process wall time)"
        print(f"  {label:<24} {shown}")


async def store_figures(stored: int, tmp: Path) -> None:
    from fastagent_cli.sessions.store import FileSessionStore

    root = tmp / f"store-{stored}"
    seeding = FileSessionStore(root, tmp)
    for i in range(stored):
        await seeding.open_or_create(f"seed-{i}")
    store = FileSessionStore(root, tmp)  # what a fresh process sees
    started = time.perf_counter()
    await store.open_if_exists("seed-0")
    first = time.perf_counter() - started
    opens, creates = [], []
    for i in range(300):
        started = time.process_time()
        await store.open_if_exists(f"seed-{i % stored}")
        opens.append(time.process_time() - started)
    for i in range(300):
        started = time.process_time()
        await store.open_or_create(f"new-{i}")
        creates.append(time.process_time() - started)
    listed = []
    for limit in (1, 30):
        started = time.perf_counter()
        store.list_sessions(limit)
        listed.append((time.perf_counter() - started) * 1000)
    open_us, create_us = statistics.mean(opens) * 1e6, statistics.mean(creates) * 1e6
    print(
        f"  {stored:>6} stored: first lookup {first * 1000:6.2f} ms, open {open_us:4.0f} us, "
        f"create {create_us:5.0f} us (cpu), list(1) {listed[0]:5.1f} ms, list(30) {listed[1]:5.1f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", default="10,1000")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--store", default="10,1000,10000")
    parser.add_argument(
        "--scripted", action="store_true", help="Serve the scripted model, not the fake server."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fastagent-sessions-") as tmp:
        print("== the store, in process")
        for stored in (int(n) for n in args.store.split(",") if n):
            await store_figures(stored, Path(tmp))
        model = None if args.scripted else fake_model()
        try:
            port = None if model is None else model[1]
            served = "scripted" if port is None else f"a fake OpenAI-compatible server on port {port}"
            print(f"\n(model: {served})")
            for stored in (int(n) for n in args.stored.split(",") if n):
                await bench(stored, args.turns, Path(tmp), port)
        finally:
            if model is not None:
                model[0].terminate()
                model[0].join()


if __name__ == "__main__":
    asyncio.run(main())
