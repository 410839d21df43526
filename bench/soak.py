"""Soak ``fastagent start`` under mixed traffic and report what leaks (prints figures; not a test).

    .venv/bin/python bench/soak.py [--minutes 10] [--sessions 200]

Three processes: a fast OpenAI-compatible fake model (aiohttp, its own process, speaking the real
streaming wire format), the real ``fastagent start`` process on it, and this load generator.
``--sessions`` workers run concurrently for ``--minutes``, each picking, turn after turn:

* 50 % normal turns (the answer streamed to the end),
* 20 % tool turns (the model calls a sync tool from ``tools/``, then answers),
* 20 % early disconnects (the client leaves right after the first SSE event),
* 10 % busy collisions (two requests on one session at once: one answers, the other must be
  ``failed{code: session_busy}`` or also complete).

Each worker moves to a fresh session every 20 turns, so histories stay short and what grows is
only what leaks. Reported: turns by kind, errors (a non-200, a stream without its terminal, an
unexpected ``failed``, a tool error, a timeout), and, at the start (after a warm-up) and at the
end, the server's open fds, RSS and established connections to the model; after the traffic
stops and the pool's idle connections expire, one probe turn, then the connections still open to
the model beyond the probe's are *leaked*.

The server's own log must stay clean too: a warning, an error or a traceback counts. Targets:
zero errors, zero leaked connections, flat fds, RSS growth under 10 % after the warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = (("normal", 50), ("tool", 20), ("disconnect", 20), ("collision", 10))
TURNS_PER_SESSION = 20
BUSY_BUDGET_S = 5.0
WARMUP_S = 90.0
"""Before the start figures: the bounded caches (parsed sessions, tool threads, pooled model
connections) fill in the first minute; growth is measured from there."""
SAMPLE_EVERY_S = 60.0
KEEPALIVE_EXPIRY_S = 15.0  # fastagent_cli.models.http_pool.DEFAULT_POOL.keepalive_expiry_s
ANSWER = "The answer, streamed in a few chunks so the client sees a real stream."

TOOL_FILE = '''"""Look up a record (a sync tool: it runs on the tool threads)."""

import time

from fastagent_cli import tool


@tool
def lookup(key: str) -> dict:
    """Look up a record by key."""
    time.sleep(0.01)
    return {"key": key, "status": "shipped", "items": 3}
'''


# --------------------------------------------------------------------------- the fake model


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "chatcmpl-soak", "object": "chat.completion.chunk", "model": "fast", "choices": [choice]}
    return f"data: {json.dumps(body)}\n\n".encode()


def _answer(request_body: dict[str, Any]) -> list[bytes]:
    messages = request_body.get("messages") or []
    last = messages[-1] if messages else {}
    text = json.dumps(last.get("content"))
    if last.get("role") == "user" and "[tool]" in text:
        call = {
            "index": 0,
            "id": f"call_{random.getrandbits(32):x}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"key": "A-1001"})},
        }
        return [_chunk({"role": "assistant"}), _chunk({"tool_calls": [call]}), _chunk({}, "tool_calls")]
    words = ANSWER.split(" ")
    parts = [" ".join(words[i : i + 4]) + " " for i in range(0, len(words), 4)]
    return [_chunk({"role": "assistant"}), *(_chunk({"content": p}) for p in parts), _chunk({}, "stop")]


def run_fake_model(port_out: Any) -> None:
    """The fake model's process: answers every POST /v1/chat/completions as a stream."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for piece in _answer(body):
                await response.write(piece)
                await asyncio.sleep(0.002)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_out.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


# --------------------------------------------------------------------------- the server's figures


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def established_to(pid: int, port: int) -> int:
    """The server's ESTABLISHED TCP connections to ``127.0.0.1:port``."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[2].split(":")[1], 16) == port and fields[9] in inodes:
            count += 1
    return count


@dataclass
class Snapshot:
    fds: int
    rss: float
    model_connections: int

    @classmethod
    def of(cls, pid: int, model_port: int) -> Snapshot:
        return cls(fd_count(pid), rss_mb(pid), established_to(pid, model_port))


# --------------------------------------------------------------------------- the load


@dataclass
class Tally:
    turns: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.examples.setdefault(kind, detail[:300])


def events_of(body: bytes) -> list[dict[str, Any]]:
    out = []
    for line in body.decode("utf-8", "replace").split("\n"):
        if line.startswith("data: "):
            out.append(json.loads(line[6:]))
    return out


class Load:
    def __init__(self, url: str, sessions: int, stop_at: float) -> None:
        self.url = url
        self.sessions = sessions
        self.stop_at = stop_at
        self.tally = Tally()
        self.rng = random.Random(8)

    async def run(self) -> Tally:
        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
            await asyncio.gather(*(self.worker(http, i) for i in range(self.sessions)))
        return self.tally

    def pick(self) -> str:
        return self.rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]

    async def worker(self, http: aiohttp.ClientSession, index: int) -> None:
        n = 0
        while time.monotonic() < self.stop_at:
            session = f"w{index}-{n // TURNS_PER_SESSION}"
            kind = self.pick()
            started = time.monotonic()
            try:
                if kind == "normal":
                    await self.turn(http, session, "How are things?", kind)
                elif kind == "tool":
                    await self.turn(http, session, "[tool] where is order A-1001?", kind)
                elif kind == "disconnect":
                    await self.leave_early(http, session)
                else:
                    await self.collide(http, session)
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                self.tally.error(f"{kind}: {type(exc).__name__}", str(exc))
            self.tally.latencies.append(time.monotonic() - started)
            n += 1

    async def post(self, http: aiohttp.ClientSession, session: str, text: str) -> tuple[int, bytes]:
        async with http.post(self.url, json={"session": session, "text": text}) as response:
            return response.status, await response.read()

    async def turn(self, http: aiohttp.ClientSession, session: str, text: str, kind: str) -> None:
        """One turn; ``session_busy`` (the turn a client just left may still be winding down) is
        retried as a client would, for up to :data:`BUSY_BUDGET_S`; a lease never released is an
        error."""
        deadline = time.monotonic() + BUSY_BUDGET_S
        while True:
            status, body = await self.post(http, session, text)
            events = events_of(body) if status == 200 else []
            busy = bool(events) and events[-1].get("code") == "session_busy"
            if not busy or time.monotonic() > deadline:
                break
            self.tally.turns["busy retries"] += 1
            await asyncio.sleep(0.05)
        self.check(kind, status, body, allow_busy=False)

    def check(self, kind: str, status: int, body: bytes, *, allow_busy: bool) -> None:
        if status != 200:
            self.tally.error(f"{kind}: HTTP {status}", body.decode("utf-8", "replace"))
            return
        events = events_of(body)
        last = events[-1] if events else {}
        if last.get("type") == "failed" and allow_busy and last.get("code") == "session_busy":
            self.tally.turns["busy (expected)"] += 1
            return
        if last.get("type") != "completed":
            self.tally.error(f"{kind}: ended {last.get('type', 'without a terminal')}", json.dumps(last))
            return
        if kind == "tool" and not any(e.get("type") == "tool_ended" and not e["isError"] for e in events):
            self.tally.error("tool: no successful tool_ended", json.dumps(events)[:300])
            return
        self.tally.turns[kind] += 1

    async def leave_early(self, http: aiohttp.ClientSession, session: str) -> None:
        response = await http.post(self.url, json={"session": session, "text": "Tell me a story."})
        try:
            if response.status != 200:
                self.tally.error(f"disconnect: HTTP {response.status}", (await response.read()).decode())
                return
            first = await response.content.readuntil(b"\n\n")
            if not first.startswith(b"data: "):
                self.tally.error("disconnect: no first event", first.decode("utf-8", "replace"))
                return
            self.tally.turns["disconnect"] += 1
        finally:
            response.close()  # drop the connection mid-stream

    async def collide(self, http: aiohttp.ClientSession, session: str) -> None:
        results = await asyncio.gather(
            self.post(http, session, "First of two at once."), self.post(http, session, "Second of two.")
        )
        for status, body in results:
            self.check("collision", status, body, allow_busy=True)


# --------------------------------------------------------------------------- orchestration


def make_agent(root: Path, model_port: int) -> Path:
    agent = root / "agent"
    (agent / "tools").mkdir(parents=True)
    (agent / "tools" / "lookup.py").write_text(TOOL_FILE)
    (agent / "fastagent.toml").write_text('model = "fake/fast"\ncoding_tools = false\n')
    provider = {
        "baseUrl": f"http://127.0.0.1:{model_port}/v1",
        "api": "openai-completions",
        "apiKey": "soak-key",
        "models": [{"id": "fast"}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    (agent / "persona.md").write_text("You are the soak-test agent.\n")
    return agent


async def start_server(agent: Path) -> tuple[asyncio.subprocess.Process, int]:
    env = dict(os.environ, FASTAGENT_LOG_LEVEL="info")
    serve = ["start", str(agent), "--port", "0", "--bind", "127.0.0.1"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fastagent_cli",
        *serve,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    pattern = re.compile(rb"http host on 127\.0\.0\.1:(\d+)")
    lines = []
    try:
        while True:
            line = await asyncio.wait_for(process.stderr.readline(), 30)
            if not line:
                raise SystemExit("the server exited before listening:\n" + b"".join(lines).decode())
            lines.append(line)
            found = pattern.search(line)
            if found:
                break
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    asyncio.create_task(_drain(process.stderr))
    return process, int(found.group(1))


SERVER_PROBLEMS: Counter[str] = Counter()
"""The server's log lines that are not INFO (warnings, errors, tracebacks), by first line."""


async def _drain(stream: asyncio.StreamReader) -> None:
    while line := await stream.readline():
        text = line.decode("utf-8", "replace").rstrip()
        if text.startswith("INFO"):
            continue
        if not text.startswith((" ", "Traceback")):  # a traceback's body belongs to its first line
            SERVER_PROBLEMS[text[:160]] += 1
        print(f"  server: {text}", flush=True)


async def probe(url: str) -> bool:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(url, json={"session": "probe", "text": "still there?"}) as response,
    ):
        events = events_of(await response.read())
    return bool(events) and events[-1].get("type") == "completed"


async def soak(minutes: float, sessions: int) -> int:
    ports: multiprocessing.Queue[int] = multiprocessing.Queue()
    fake = multiprocessing.Process(target=run_fake_model, args=(ports,), daemon=True)
    fake.start()
    model_port = ports.get(timeout=30)
    with tempfile.TemporaryDirectory(prefix="fastagent-soak-") as tmp:
        process, port = await start_server(make_agent(Path(tmp), model_port))
        pid = process.pid
        url = f"http://127.0.0.1:{port}/invoke"
        try:
            began = time.monotonic()
            stop_at = began + minutes * 60
            load = Load(url, sessions, stop_at)
            running = asyncio.create_task(load.run())
            await asyncio.sleep(min(WARMUP_S / 3, minutes * 60 / 12))
            print(f"early ({time.monotonic() - began:.0f} s): {Snapshot.of(pid, model_port)}", flush=True)
            await asyncio.sleep(max(0.0, began + min(WARMUP_S, minutes * 60 / 4) - time.monotonic()))
            start = Snapshot.of(pid, model_port)
            print(f"start (after {time.monotonic() - began:.0f} s of warm-up): {start}", flush=True)
            end = start
            done_before = 0
            last_sample = stop_at - 1.0  # just before the traffic stops
            next_sample = time.monotonic() + SAMPLE_EVERY_S
            while True:
                moment = min(next_sample, last_sample)
                await asyncio.sleep(max(0.0, moment - time.monotonic()))
                end = Snapshot.of(pid, model_port)
                total = sum(load.tally.turns.values())
                print(
                    f"  {time.monotonic() - began:6.0f} s  fds {end.fds:5d}  rss {end.rss:6.1f} MB  model "
                    f"conns {end.model_connections:4d}  turns {total:7d} (+{total - done_before})  "
                    f"errors {sum(load.tally.errors.values())}",
                    flush=True,
                )
                done_before = total
                if moment >= last_sample:
                    break
                next_sample += SAMPLE_EVERY_S
            tally = await running
            await asyncio.sleep(KEEPALIVE_EXPIRY_S + 2)  # the pool's idle connections expire
            probed = await probe(url)  # a request makes the pool drop expired connections
            await asyncio.sleep(0.5)
            after = Snapshot.of(pid, model_port)
        finally:
            process.terminate()
            await process.wait()
            fake.terminate()
    leaked = max(0, after.model_connections - 1)
    lat = sorted(tally.latencies)
    print("\n== soak: fastagent start, fake OpenAI-compatible model over HTTP")
    print(f"duration {minutes:g} min, {sessions} concurrent sessions, {sum(tally.turns.values())} turns")
    print("turns:  " + ", ".join(f"{k} {v}" for k, v in sorted(tally.turns.items())))
    if lat:
        p50, p99 = statistics.median(lat) * 1000, lat[int(len(lat) * 0.99)] * 1000
        print(f"latency per action: p50 {p50:.0f} ms, p99 {p99:.0f} ms")
    print(f"errors: {sum(tally.errors.values())}" + "".join(f"\n  {k}: {v}" for k, v in tally.errors.items()))
    for kind, example in tally.examples.items():
        print(f"  e.g. {kind}: {example}")
    growth = (end.rss - start.rss) / start.rss * 100
    print(f"fds:    start {start.fds}, end {end.fds}, after idle {after.fds}")
    print(f"RSS:    start {start.rss:.1f} MB, end {end.rss:.1f} MB ({growth:+.1f} %)")
    print(
        f"model connections: start {start.model_connections}, end {end.model_connections}, after idle + "
        f"probe {after.model_connections} (probe {'completed' if probed else 'FAILED'}); leaked {leaked}"
    )
    problems = sum(SERVER_PROBLEMS.values())
    print(
        f"server log: {problems} warning/error lines"
        + "".join(f"\n  {n} x {t}" for t, n in SERVER_PROBLEMS.items())
    )
    ok = not tally.errors and not problems and leaked == 0 and probed and growth < 10
    print("verdict: " + ("PASS" if ok else "FAIL") + " (zero errors, zero leaks, RSS growth < 10 %)")
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(soak(args.minutes, args.sessions)))


if __name__ == "__main__":
    main()
