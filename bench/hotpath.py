"""The hot path's figures (issue 10): ``fastagent start`` streaming from a fake OpenAI-compatible
model over real HTTP (prints figures; not a test).

    .venv/bin/python bench/hotpath.py [--rows stream,growth,latency,thousand]
    .venv/bin/python bench/hotpath.py --compare main [--rounds 3] [--gated]
    .venv/bin/python bench/hotpath.py --telemetry --rows stream,latency [--rounds 3]

``--telemetry`` runs this checkout twice, telemetry off and on (OTLP/HTTP to a sink in this
process, which answers every export 200), interleaved like ``--compare``.
    .venv/bin/python bench/hotpath.py --floor        # and the bare relay, a column "x floor"

Three processes: the fake model (:mod:`fake_openai`, one token per TCP write every
``--interval-ms``), the real ``fastagent start`` on it (``python -m fastagent_cli``, as users run
it), and this load generator (aiohttp). Server CPU is read per thread from
``/proc/<pid>/task/*/schedstat`` (nanoseconds, loop and worker threads together); the client and
the fake share the machine, their CPU is not the server's.

Rows (the issue's table):

* ``stream``: sequential turns, each on a fresh session: server CPU per turn with a 300-token
  answer, and CPU per streamed token = (CPU of a 300-token turn - CPU of a 1-token turn) / 299;
  also the client's time to the first ``text`` event after the model sent it.
* ``growth``: one session, ``--growth-turns`` turns (a 300-character question, a 20-token answer):
  CPU per turn over the last 20 turns / over the first 20 (goal: within 1.2x).
* ``latency``: 100 sessions at once, each doing turns back to back for ``--duration`` s (a new
  session every 10 turns), ``--concurrent-tokens``-token answers: turns/s, p50, p99, p99/p50
  (goal <= 2) and CPU per turn.
* ``thousand``: 1 000 sessions start one turn each at once; done within 60 s, errors, wall time,
  CPU per turn and its ratio to the ``latency`` row's (goal: all done, no error, within 1.5x),
  and when the first SSE event and the first text reached each client (p50, p99, the last;
  goal: the first event within 2 s).
* ``startup`` (start-up must not regress): ``--version`` and ``invoke`` on the scripted model
  (wall ms, median of ``--starts``; invoke's peak RSS), ``start`` from spawn to ``/health``
  answering 200 and its RSS once idle.

``--gated`` serves a tool that needs approval (issue 30: it must add no CPU to the turns that
never call it; a build without approvals serves the same tool unflagged).

``--compare REF`` extracts ``REF`` (default ``main``) with ``git archive`` into a temporary
directory and runs that build and this checkout alternately (interleaved, ``--rounds`` times, the
order swapped every round) on the same fake model, then prints each figure's median per build and
the ratio this/REF: on a shared, noisy machine the ratio of neighbouring runs is what to read.

``--floor`` (issue 35) runs :mod:`floor`, a bare aiohttp relay of the same fake model, in the same
interleaving and prints each figure of this checkout as a multiple of it (``x floor``; goal: 2x,
streaming 1.2x). The relay has no history (no ``growth`` row) and no ``--version``; its
one-shot streams one token from the fake model where ``invoke`` uses the scripted model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import aiohttp.web

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

Figures = dict[str, float]


# --------------------------------------------------------------------------- processes


@dataclass
class Build:
    """A source tree to run ``python -m fastagent_cli`` from (``PYTHONPATH`` points at it)."""

    label: str
    path: Path
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for its server (``--telemetry``: the OTLP endpoint)."""
    floor: bool = False
    """The bare relay of :mod:`floor` rather than ``fastagent`` (issue 35: the ratio's base)."""


FLOOR = Build("floor (bare relay)", HERE, floor=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_ns(pid: int) -> int:
    """The server's CPU so far (every live thread), in nanoseconds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def _status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmHWM:")


def rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmRSS:")


class FakeModel:
    def __init__(self, interval_ms: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "fake_openai.py"), "--interval-ms", str(interval_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("port "):
            raise SystemExit("the fake model did not start")
        self.port = int(line.split()[1])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


_GATED_TOOL = """from fastagent_cli import tool


@tool{flag}
def deploy(env: str) -> str:
    \"\"\"Deploy to an environment (the bench's turns never call it).\"\"\"
    return f"deployed {{env}}"
"""


def make_agent(root: Path, model_port: int, gated: Build | None = None) -> Path:
    """The bench agent; ``gated``: with a tool that needs approval (``@tool(approval=True)`` and
    ``[approval] tools``) when that build has approvals, the same tool unflagged when it has not,
    so both builds serve the same tool set."""
    agent = root / "agent"
    agent.mkdir(parents=True)
    config = 'model = "fake/fast"\ncoding_tools = false\n'
    if gated is not None:
        approvals = (gated.path / "fastagent_cli" / "tools" / "approval.py").exists()
        (agent / "tools").mkdir()
        (agent / "tools" / "deploy.py").write_text(
            _GATED_TOOL.format(flag="(approval=True)" if approvals else "")
        )
        if approvals:
            config += '[approval]\ntools = ["deploy", "bash"]\n'
    (agent / "fastagent.toml").write_text(config)
    provider = {
        "baseUrl": f"http://127.0.0.1:{model_port}/v1",
        "api": "openai-completions",
        "apiKey": "bench-key",
        "models": [{"id": "fast", "contextWindow": 1000000, "maxTokens": 4096}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    (agent / "persona.md").write_text("You are the hot-path bench agent. Answer briefly.\n")
    return agent


class Server:
    """``fastagent start`` of ``build``; its log (warnings and errors) goes to ``log``."""

    def __init__(self, build: Build, agent: Path, model_port: int) -> None:
        self.port = free_port()
        env = dict(os.environ, FASTAGENT_LOG_LEVEL="warn", PYTHONPATH=str(build.path), **build.env)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        command = [sys.executable, "-m", "fastagent_cli", "start", str(agent), "--port", str(self.port)]
        command += ["--bind", "127.0.0.1"]
        if build.floor:
            command = [sys.executable, str(HERE / "floor.py"), "--model-port", str(model_port)]
            command += ["--port", str(self.port)]
        self.log = agent.parent / "server.log"
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command,
                env=env,
                cwd=agent.parent,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        self.url = f"http://127.0.0.1:{self.port}/invoke"

    def warnings(self) -> int:
        """Warning and error lines the server logged (tracebacks count once)."""
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return sum(1 for line in lines if line.startswith(("WARN", "ERROR", "Traceback")))

    @property
    def pid(self) -> int:
        return self.process.pid

    async def ready(self) -> None:
        deadline = time.monotonic() + 30
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise SystemExit(f"the server exited with {self.process.returncode}")
                try:
                    async with http.get(f"http://127.0.0.1:{self.port}/health") as response:
                        if response.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.02)
        raise SystemExit("the server did not become ready in 30 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --------------------------------------------------------------------------- one turn


@dataclass
class Turn:
    ok: bool
    seconds: float
    first_text: float | None = None
    error: str = ""
    first_event: float | None = None


async def turn(http: aiohttp.ClientSession, url: str, session: str, text: str) -> Turn:
    """One turn, read as the bytes come (the client's own CPU stays small: it shares the machine)."""
    started = time.perf_counter()
    first: float | None = None
    first_event: float | None = None
    tail = b""
    try:
        async with http.post(url, json={"session": session, "text": text}) as response:
            if response.status != 200:
                return Turn(False, time.perf_counter() - started, error=f"HTTP {response.status}")
            async for chunk in response.content.iter_any():
                if first_event is None and b"data: " in chunk:
                    first_event = time.perf_counter() - started
                if first is None and b'"type":"text"' in chunk:
                    first = time.perf_counter() - started
                tail = (tail + chunk)[-400:]
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return Turn(False, time.perf_counter() - started, error=type(exc).__name__)
    last = tail.rstrip(b"\n").rpartition(b"\n\n")[2]
    ok = last.startswith(b"data: ") and b'"type":"completed"' in last
    error = "" if ok else (last.decode(errors="replace").strip()[:200] or "no terminal event")
    return Turn(ok, time.perf_counter() - started, first, error, first_event)


def client(limit: int = 0, total_s: float = 120) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=limit)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=total_s))


def tokens(n: int) -> str:
    return f"[tokens={n}]"


# --------------------------------------------------------------------------- the rows


@dataclass
class Options:
    interval_ms: float
    stream_turns: int
    growth_turns: int
    duration: float
    concurrent_tokens: int
    thousand: int
    starts: int
    gated: bool = False


async def row_stream(server: Server, opts: Options) -> Figures:
    async with client() as http:

        async def cpu_per_turn(n_tokens: int, tag: str) -> tuple[float, list[float]]:
            for i in range(3):  # warm-up: connections, caches
                await turn(http, server.url, f"warm-{tag}-{i}", f"hello {tokens(n_tokens)}")
            before = cpu_ns(server.pid)
            firsts: list[float] = []
            for i in range(opts.stream_turns):
                done = await turn(http, server.url, f"s-{tag}-{i}", f"Tell me a story. {tokens(n_tokens)}")
                if not done.ok:
                    raise SystemExit(f"stream turn failed: {done.error}")
                if done.first_text is not None:
                    firsts.append(done.first_text)
            return (cpu_ns(server.pid) - before) / opts.stream_turns / 1e6, firsts

        long_turn, firsts = await cpu_per_turn(300, "long")
        short_turn, _ = await cpu_per_turn(1, "short")
    return {
        "cpu ms/turn (300 tokens)": long_turn,
        "cpu ms/turn (1 token)": short_turn,
        "cpu ms/token": (long_turn - short_turn) / 299,
        "first text ms (median)": statistics.median(firsts) * 1000,
    }


async def row_growth(server: Server, opts: Options) -> Figures:
    question = ("Here is a question of moderate length about the weather and the tides. " * 4)[:300]
    window = 20
    cpu: list[int] = []
    async with client() as http:
        await turn(http, server.url, "growth-warm", f"hello {tokens(20)}")
        for i in range(opts.growth_turns):
            before = cpu_ns(server.pid)
            done = await turn(http, server.url, "growth", f"{question} ({i}) {tokens(20)}")
            if not done.ok:
                raise SystemExit(f"growth turn {i + 1} failed: {done.error}")
            cpu.append(cpu_ns(server.pid) - before)
    first = statistics.mean(cpu[:window]) / 1e6
    last = statistics.mean(cpu[-window:]) / 1e6
    return {
        f"cpu ms/turn, turns 1-{window}": first,
        f"cpu ms/turn, last {window} of {opts.growth_turns}": last,
        "growth (last/first)": last / first,
    }


async def concurrent_turns(
    server: Server, count: int, run: Callable[[aiohttp.ClientSession, int], Awaitable[list[Turn]]]
) -> tuple[list[Turn], float, float]:
    """(turns, wall s, server CPU s) of ``count`` workers running at once."""
    async with client(total_s=300) as http:
        before, started = cpu_ns(server.pid), time.perf_counter()
        results = await asyncio.gather(*(run(http, i) for i in range(count)))
        wall, cpu = time.perf_counter() - started, (cpu_ns(server.pid) - before) / 1e9
    return [t for batch in results for t in batch], wall, cpu


async def row_latency(server: Server, opts: Options, sessions: int = 100) -> Figures:
    text = f"How are things? {tokens(opts.concurrent_tokens)}"
    async with client() as http:  # warm-up: every worker's connection, one turn each
        await asyncio.gather(*(turn(http, server.url, f"lw-{i}", text) for i in range(sessions)))

    async def worker(http: aiohttp.ClientSession, index: int) -> list[Turn]:
        out = []
        stop_at = time.perf_counter() + opts.duration
        while time.perf_counter() < stop_at:
            out.append(await turn(http, server.url, f"l-{index}-{len(out) // 10}", text))
        return out

    turns, wall, cpu = await concurrent_turns(server, sessions, worker)
    lat = sorted(t.seconds for t in turns if t.ok)
    p50 = statistics.median(lat)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    return {
        "turns/s": len(turns) / wall,
        "p50 ms": p50 * 1000,
        "p99 ms": p99 * 1000,
        "p99/p50": p99 / p50,
        "cpu ms/turn": cpu / len(turns) * 1000,
        "errors": float(sum(not t.ok for t in turns)),
    }


async def row_thousand(server: Server, opts: Options, per_turn_100: float | None) -> Figures:
    text = f"How are things? {tokens(opts.concurrent_tokens)}"
    deadline = 60.0

    async def worker(http: aiohttp.ClientSession, index: int) -> list[Turn]:
        try:
            return [await asyncio.wait_for(turn(http, server.url, f"k-{index}", text), deadline)]
        except TimeoutError:
            return [Turn(False, deadline, error="not done in 60 s")]

    turns, wall, cpu = await concurrent_turns(server, opts.thousand, worker)
    done = [t for t in turns if t.ok]
    errors: dict[str, int] = {}
    for t in turns:
        if not t.ok:
            errors[t.error] = errors.get(t.error, 0) + 1
    for kind, n in sorted(errors.items(), key=lambda item: -item[1])[:3]:
        print(f"    {n} x {kind}", flush=True)
    per_turn = cpu / len(turns) * 1000
    figures = {
        f"done of {opts.thousand} in 60 s": float(len(done)),
        "errors": float(len(turns) - len(done)),
        "wall s": wall,
        "p99 s": sorted(t.seconds for t in turns)[int(len(turns) * 0.99) - 1],
        **_first_events(done),
        "cpu ms/turn": per_turn,
        "peak RSS MB": peak_rss_mb(server.pid),
    }
    if per_turn_100:
        figures["cpu/turn vs 100 sessions"] = per_turn / per_turn_100
    return figures


def _first_events(done: list[Turn]) -> Figures:
    """When the turns' first SSE event and first text reached the client (p50, p99, the last)."""
    out: Figures = {}
    for label, values in (
        ("first event", sorted(t.first_event for t in done if t.first_event is not None)),
        ("first text", sorted(t.first_text for t in done if t.first_text is not None)),
    ):
        if values:
            out[f"{label} p50 s"] = statistics.median(values)
            out[f"{label} p99 s"] = values[max(0, int(len(values) * 0.99) - 1)]
            out[f"{label} max s"] = values[-1]
    return out


_MEASURE = (
    "import os, subprocess, sys, time\n"
    "started = time.perf_counter()\n"
    "child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,"
    " stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "cpu = (usage.ru_utime + usage.ru_stime) * 1000\n"
    "print((time.perf_counter() - started) * 1000, usage.ru_maxrss, cpu, os.waitstatus_to_exitcode(status))\n"
)
"""Runs a command from a small parent: a child forked from this (by then large) bench process
would report the bench's memory as its own peak RSS."""


def run_cli(build: Build, args: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall ms, peak RSS MB, CPU ms) of one ``python -m fastagent_cli`` run of ``build`` (of
    ``bench/floor.py`` for the floor)."""
    env = dict(os.environ, PYTHONPATH=str(build.path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    program = [str(HERE / "floor.py")] if build.floor else ["-m", "fastagent_cli"]
    command = [sys.executable, "-c", _MEASURE, sys.executable, *program, *args]
    out = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout
    wall, rss_kb, cpu, code = out.split()
    if code != "0":
        raise SystemExit(f"{' '.join(program)} {' '.join(args)} exited with {code}")
    return float(wall), int(rss_kb) / 1024, float(cpu)


async def row_startup(builds: list[Build], model: FakeModel, root: Path, starts: int) -> dict[str, Figures]:
    """Start-up figures per build; with several builds each sample alternates between them (start-up
    times swing with the machine's load from one minute to the next)."""
    scripted = root / "scripted"
    scripted.mkdir()
    (scripted / "fastagent.toml").write_text('model = "scripted/echo"\n')
    agent = make_agent(root / "served", model.port)
    samples: dict[str, dict[str, list[float]]] = {b.label: {} for b in builds}
    # The floor's one-shot streams one token from the fake model (a request and a reply over
    # HTTP, more than the scripted model's none): the ratio to it is an upper bound.
    once = ["--model-port", str(model.port), "--once", f"hello {tokens(1)}"]
    for build in builds:
        run_cli(build, once if build.floor else ["invoke", "warm", str(scripted)], root)  # bytecode
    for i in range(starts):
        for build in builds if i % 2 == 0 else builds[::-1]:
            add = samples[build.label].setdefault
            if not build.floor:
                add("--version ms", []).append(run_cli(build, ["--version"], root)[0])
            wall, rss, cpu = run_cli(build, once if build.floor else ["invoke", "hello", str(scripted)], root)
            add("invoke ms (scripted)", []).append(wall)
            add("invoke cpu ms", []).append(cpu)
            add("invoke peak RSS MB", []).append(rss)
            started = time.perf_counter()
            server = Server(build, agent, model.port)
            try:
                await server.ready()
                add("start: ready ms", []).append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.5)
                add("start: idle RSS MB", []).append(rss_mb(server.pid))
            finally:
                server.stop()
    return {
        label: {k: statistics.median(v) for k, v in figures.items()} for label, figures in samples.items()
    }


# --------------------------------------------------------------------------- running


ROWS = ("startup", "stream", "growth", "latency", "thousand")


async def run_rows(build: Build, model: FakeModel, rows: list[str], opts: Options) -> dict[str, Figures]:
    out: dict[str, Figures] = {}
    for row in rows:
        if build.floor and row == "growth":
            continue  # the relay keeps no history: nothing to grow
        with tempfile.TemporaryDirectory(prefix="fastagent-hotpath-") as tmp:
            server = Server(
                build, make_agent(Path(tmp), model.port, build if opts.gated else None), model.port
            )
            try:
                await server.ready()
                if row == "stream":
                    out[row] = await row_stream(server, opts)
                elif row == "growth":
                    out[row] = await row_growth(server, opts)
                elif row == "latency":
                    out[row] = await row_latency(server, opts)
                else:
                    base = out.get("latency", {}).get("cpu ms/turn")
                    out[row] = await row_thousand(server, opts, base)
            finally:
                server.stop()
            out[row]["server log warnings"] = float(server.warnings())
            if server.warnings():
                shown = server.log.read_text(errors="replace").splitlines()
                print(
                    "\n".join(f"    | {line}" for line in shown if line.startswith(("WARN", "ERROR")))[:2000]
                )
        print(
            f"  [{build.label}] {row}: " + ", ".join(f"{k} {v:.3g}" for k, v in out[row].items()), flush=True
        )
    return out


class OtlpSink:
    """An OTLP/HTTP collector stand-in: answers every export 200 and counts them."""

    def __init__(self, runner: aiohttp.web.AppRunner, port: int) -> None:
        self.runner = runner
        self.url = f"http://127.0.0.1:{port}"
        self.posts = 0
        self.bytes = 0

    @classmethod
    async def start(cls) -> OtlpSink:
        from aiohttp import web

        app = web.Application()
        runner = web.AppRunner(app)
        sink = cls(runner, free_port())

        async def take(request: web.Request) -> web.Response:
            sink.posts += 1
            sink.bytes += len(await request.read())
            return web.Response(content_type="application/x-protobuf")

        app.router.add_post("/v1/traces", take)
        app.router.add_post("/v1/metrics", take)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", int(sink.url.rsplit(":", 1)[1])).start()
        return sink

    async def stop(self) -> None:
        await self.runner.cleanup()


def export(ref: str, into: Path) -> Build:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Build(f"{ref} ({commit})", into)


@dataclass
class Table:
    values: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)

    def add(self, label: str, results: dict[str, Figures]) -> None:
        for row, figures in results.items():
            for name, value in figures.items():
                self.values.setdefault(row, {}).setdefault(name, {}).setdefault(label, []).append(value)

    def print(self, labels: list[str], floor: str | None = None) -> None:
        """One column per build (the floor's last), then this/REF and this/floor."""
        columns = [*labels, floor] if floor else labels
        head = f"{'row':<9} {'figure':<30}" + "".join(f" {label[:22]:>22}" for label in columns)
        if len(labels) == 2:
            head += f" {'ratio':>7}"
        if floor:
            head += f" {'x floor':>7}"
        print(head)
        for row, figures in self.values.items():
            for name, per_label in figures.items():
                medians = [
                    statistics.median(per_label[label]) if label in per_label else None for label in columns
                ]
                cells = "".join(f" {m:>22.3f}" if m is not None else f" {'-':>22}" for m in medians)
                ratio = ""
                if len(labels) == 2:
                    ratio = (
                        f" {medians[1] / medians[0]:>7.2f}"
                        if medians[0] and medians[1] is not None
                        else " " * 8
                    )
                if floor:
                    this, base = medians[len(labels) - 1], medians[-1]
                    ratio += f" {this / base:>7.2f}" if base and this is not None else f" {'-':>7}"
                print(f"{row:<9} {name:<30}{cells}{ratio}")


async def main() -> None:
    # Stopped (SIGTERM), still stop the fake model and the servers: the finally blocks run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--compare", metavar="REF", nargs="?", const="main", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--floor", action="store_true", help="also run the bare relay (bench/floor.py) and print x floor"
    )
    parser.add_argument("--interval-ms", type=float, default=5.0)
    parser.add_argument("--stream-turns", type=int, default=20)
    parser.add_argument("--growth-turns", type=int, default=200)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--concurrent-tokens", type=int, default=50)
    parser.add_argument("--thousand", type=int, default=1000)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument(
        "--gated", action="store_true", help="serve a tool that needs approval (never called)"
    )
    parser.add_argument(
        "--telemetry",
        action="store_true",
        help="compare this checkout with telemetry off and on (OTLP/HTTP to a sink on 127.0.0.1)",
    )
    args = parser.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = set(rows) - set(ROWS)
    if unknown:
        raise SystemExit(f"unknown rows: {', '.join(sorted(unknown))} (known: {', '.join(ROWS)})")
    opts = Options(
        args.interval_ms,
        args.stream_turns,
        args.growth_turns,
        args.duration,
        args.concurrent_tokens,
        args.thousand,
        args.starts,
        args.gated,
    )
    model = FakeModel(args.interval_ms)
    table = Table()
    sink = await OtlpSink.start() if args.telemetry else None
    with tempfile.TemporaryDirectory(prefix="fastagent-hotpath-ref-") as ref_dir:
        this = Build("this checkout", ROOT)
        builds = [this] if args.compare is None else [export(args.compare, Path(ref_dir)), this]
        if sink is not None:
            env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url, "OTEL_METRIC_EXPORT_INTERVAL": "5000"}
            builds = [Build("telemetry off", ROOT), Build("telemetry on", ROOT, env)]
        runs = [*builds, FLOOR] if args.floor else builds
        try:
            for round_ in range(args.rounds):
                order = runs if round_ % 2 == 0 else runs[::-1]
                if "startup" in rows:
                    with tempfile.TemporaryDirectory(prefix="fastagent-hotpath-") as tmp:
                        started = await row_startup(order, model, Path(tmp), opts.starts)
                    for label, figures in started.items():
                        table.add(label, {"startup": figures})
                        print(
                            f"  [{label}] startup: " + ", ".join(f"{k} {v:.3g}" for k, v in figures.items())
                        )
                for build in order:
                    table.add(
                        build.label, await run_rows(build, model, [r for r in rows if r != "startup"], opts)
                    )
        finally:
            model.stop()
            if sink is not None:
                print(f"  OTLP sink: {sink.posts} exports, {sink.bytes} bytes")
                await sink.stop()
        pace = f"{args.interval_ms:g} ms between tokens"
        print(f"\n== hot path: fake model over HTTP, {pace}, {os.cpu_count()} CPUs")
        if args.rounds > 1:
            print(f"(medians of {args.rounds} interleaved rounds)")
        table.print([b.label for b in builds], FLOOR.label if args.floor else None)
        shutil.rmtree(Path(ref_dir), ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
