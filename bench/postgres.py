"""The PostgreSQL state backend against files (prints figures; not a test).

    .venv/bin/python bench/postgres.py [--sessions 100] [--duration 10] [--stored 10000]

A real PostgreSQL (``initdb`` + ``pg_ctl`` in a temporary directory, PostgreSQL's default durable
settings: fsync on, synchronous commit) and a fake OpenAI-compatible model server
(``bench/soak.py``'s, streaming chat completions over HTTP) on 127.0.0.1. Then, with
``fastagent start`` driven over ``POST /invoke`` (SSE read to the end) by ``--sessions``
concurrent sessions each doing sequential turns for ``--duration`` seconds:

* files, one instance;
* postgres, one instance;
* postgres, two instances (the sessions split between them, both counted);

turns/s, latency p50/p99 and server CPU per turn (``/proc/<pid>/stat`` utime+stime, summed over
the instances; the client, the model server and PostgreSQL share the 2 cores and are not counted).
Finally the listing with ``--stored`` sessions in the database: ``GET /control/sessions`` (all of
them) and the store's ``listing(30)``, median of 5, against files with the same count.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import soak  # noqa: E402
from load import cpu_seconds, free_port, server_env, wait_ready  # noqa: E402

from tests.pg_server import PgServer  # noqa: E402

TOKEN = "bench-token"


def fake_model() -> tuple[multiprocessing.Process, int]:
    ports: multiprocessing.Queue[int] = multiprocessing.Queue()
    process = multiprocessing.Process(target=soak.run_fake_model, args=(ports,), daemon=True)
    process.start()
    return process, ports.get(timeout=30)


def make_agent(root: Path, model_port: int, backend: str) -> Path:
    agent = soak.make_agent(root, model_port)
    config = (agent / "fastagent.toml").read_text()
    (agent / "fastagent.toml").write_text(config + f'state_backend = "{backend}"\nsession_control = true\n')
    return agent


async def start(agent: Path, env: dict[str, str]) -> tuple[asyncio.subprocess.Process, int]:
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
        env={**server_env(), **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
    )
    await wait_ready(port, started, process)
    return process, port


async def stop(processes: list[asyncio.subprocess.Process]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        await process.wait()


async def drive(ports: list[int], pids: list[int], sessions: int, duration: float, tag: str) -> str:
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:

        async def one(index: int, stop_at: float, record: bool) -> None:
            nonlocal errors
            url = f"http://127.0.0.1:{ports[index % len(ports)]}/invoke"
            payload = {"session": f"{tag}-{index}", "text": "How are you?"}
            while time.perf_counter() < stop_at:
                began = time.perf_counter()
                async with http.post(url, json=payload) as response:
                    body = await response.read()
                if response.status != 200 or b'"completed"' not in body:
                    errors += 1
                elif record:
                    latencies.append(time.perf_counter() - began)

        warm = time.perf_counter() + 1.5
        await asyncio.gather(*(one(i, warm, False) for i in range(sessions)))
        cpu = sum(cpu_seconds(pid) for pid in pids)
        began = time.perf_counter()
        await asyncio.gather(*(one(i, began + duration, True) for i in range(sessions)))
        elapsed = time.perf_counter() - began
        cpu = sum(cpu_seconds(pid) for pid in pids) - cpu
    ordered = sorted(latencies)
    if not ordered:
        return f"no turn completed ({errors} errors)"
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    return (
        f"{len(ordered) / elapsed:8.1f} turns/s   p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   "
        f"cpu {cpu / len(ordered) * 1000:5.2f} ms/turn   errors {errors}"
    )


async def seed(agent: Path, env: dict[str, str], count: int, concurrency: int) -> None:
    """``count`` stored sessions, one turn's worth of entries each, through the session store."""
    os.environ.update(env)
    from fastagent_cli.assembly import inspect_agent_dir

    surface = inspect_agent_dir(agent)
    store = surface.backend.session_store(surface.sessions_dir, surface.workspace)
    try:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem, store.leased(f"stored-{i}"):
                record = await store.open_or_create(f"stored-{i}")
                record.append_message(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": f"question {i}"}],
                        "timestamp": 1,
                    }
                )
                record.append_message(
                    {"role": "assistant", "content": [{"type": "text", "text": "answer"}], "timestamp": 2}
                )
                await record.flush()

        await asyncio.gather(*(one(i) for i in range(count)))
    finally:
        await surface.backend.aclose()
        for name in env:
            os.environ.pop(name, None)


async def list_latency(agent: Path, env: dict[str, str]) -> str:
    process, port = await start(agent, {**env, "FASTAGENT_CONTROL_TOKEN": TOKEN})
    try:
        times = []
        count = 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
            for _ in range(6):
                began = time.perf_counter()
                async with http.get(
                    f"http://127.0.0.1:{port}/control/sessions", headers={"Authorization": f"Bearer {TOKEN}"}
                ) as response:
                    doc = await response.json()
                times.append(time.perf_counter() - began)
                count = len(doc) if isinstance(doc, list) else len(doc.get("sessions", []))
    finally:
        await stop([process])
    return f"GET /control/sessions ({count} listed): median {statistics.median(times[1:]) * 1000:7.1f} ms"


async def store_listing(agent: Path, env: dict[str, str]) -> str:
    os.environ.update(env)
    from fastagent_cli.assembly import inspect_agent_dir

    surface = inspect_agent_dir(agent)
    store = surface.backend.session_store(surface.sessions_dir, surface.workspace)
    try:
        times = []
        for _ in range(6):
            began = time.perf_counter()
            await store.listing(30)
            times.append(time.perf_counter() - began)
    finally:
        await surface.backend.aclose()
        for name in env:
            os.environ.pop(name, None)
    return f"store listing(30): median {statistics.median(times[1:]) * 1000:6.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--stored", type=int, default=10000)
    args = parser.parse_args()
    model, model_port = fake_model()
    server = PgServer.start(durable=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            url = server.create_database()
            pg = {"FASTAGENT_DATABASE_URL": url}
            print(f"{args.sessions} concurrent sessions, {args.duration:g} s each run, fake HTTP model")
            files_agent = make_agent(root / "files", model_port, "files")
            process, port = await start(files_agent, {})
            try:
                line = await drive([port], [process.pid], args.sessions, args.duration, "f")
                print(f"  files, 1 instance     {line}")
            finally:
                await stop([process])
            pg_agent = make_agent(root / "pg", model_port, "postgres")
            process, port = await start(pg_agent, {**pg, "FASTAGENT_STATE_DIR": str(root / "s1")})
            try:
                line = await drive([port], [process.pid], args.sessions, args.duration, "p1")
                print(f"  postgres, 1 instance  {line}")
            finally:
                await stop([process])
            pair = [
                await start(pg_agent, {**pg, "FASTAGENT_STATE_DIR": str(root / f"s2{i}")}) for i in range(2)
            ]
            try:
                ports, pids = [p for _, p in pair], [proc.pid for proc, _ in pair]
                line = await drive(ports, pids, args.sessions, args.duration, "p2")
                print(f"  postgres, 2 instances {line}")
            finally:
                await stop([proc for proc, _ in pair])

            print(f"listing with {args.stored} stored sessions")
            list_url = server.create_database()
            list_pg = make_agent(root / "list-pg", model_port, "postgres")
            list_env = {
                "FASTAGENT_DATABASE_URL": list_url,
                "FASTAGENT_STATE_DIR": str(root / "list-pg-state"),
            }
            began = time.perf_counter()
            await seed(list_pg, list_env, args.stored, 20)
            print(f"  (seeded in {time.perf_counter() - began:.1f} s)")
            print(f"  postgres  {await list_latency(list_pg, list_env)}")
            print(f"  postgres  {await store_listing(list_pg, list_env)}")
            list_files = make_agent(root / "list-files", model_port, "files")
            await seed(list_files, {}, args.stored, 20)
            print(f"  files     {await list_latency(list_files, {})}")
            print(f"  files     {await store_listing(list_files, {})}")
    finally:
        server.stop()
        model.terminate()


if __name__ == "__main__":
    asyncio.run(main())
