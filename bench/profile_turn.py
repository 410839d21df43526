"""Where a short turn's server CPU goes (issue 35 item 1): ``fastagent start`` on the fake
OpenAI-compatible model over real HTTP, sampled by py-spy, every sample put in one bucket.

    .venv/bin/pip install py-spy            # a sampling profiler (not a dependency of fastagent)
    .venv/bin/python bench/profile_turn.py [--turns 600] [--ref main] [--raw out.txt]

The server runs as users run it (``python -m fastagent_cli start``, the bench agent of
:mod:`hotpath`); after a warm-up, py-spy attaches to it and samples its threads (only while they
run: idle is not counted) during ``--turns`` sequential one-token turns, each on a new session,
as the issue's "short turn" row measures them. The server's CPU over the same turns (from
``/proc/<pid>/task/*/schedstat``) is split in proportion to the samples.

A sample's bucket is decided by its innermost frame that a rule claims (third-party and stdlib
code counts for the fastagent code that called it: ``json.dumps`` under the request builder is
request body); a stack with no claimed frame (aiohttp's server, the event loop) is "HTTP server +
loop", which the floor (:mod:`floor`) pays as well. ``--ref REF`` profiles the tree of a git ref
instead of this checkout (``git archive``, as ``hotpath.py --compare`` does). ``--telemetry``
turns OpenTelemetry on (OTLP/HTTP to a sink in this process, as ``hotpath.py --telemetry``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hotpath import ROOT, Build, FakeModel, OtlpSink, Server, client, cpu_ns, export, make_agent, tokens, turn

BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    # (bucket, path or function fragments); a frame is claimed by the first bucket naming it
    ("logging + telemetry", ("/logging/", "fastagent_cli/logging_setup", "fastagent_cli/telemetry/")),
    ("lease", ("fastagent_cli/state/locks", "store_protocol.py", "try_lease", "(lease ")),
    (
        "session appends + fsync",
        ("state/atomic", "sessions/record.py", "sessions/file_store", "sessions/files", "sessions/parsed"),
    ),
    ("session read + open", ("fastagent_cli/sessions/",)),
    ("prompt assembly + definition re-read", ("fastagent_cli/definition/", "fastagent_cli/assembly/")),
    ("request body", ("_request.py", "models/_wire", "models/context_budget", "models/structured")),
    (
        "model client (HTTP + SSE parse)",
        ("fastagent_cli/models/", "fastagent_cli/sse.py", "/httpx/", "/httpcore/"),
    ),
    ("SSE framing", ("fastagent_cli/serving/sse", "event_to_wire", "contract.py")),
    ("serving (router, guard, body)", ("fastagent_cli/serving/",)),
    (
        "engine (run loop, hub, projection)",
        ("fastagent_cli/engine/", "fastagent_cli/control/", "fastagent_cli/tools/"),
    ),
    ("imports (lazy, first use)", ("_find_and_load", "<frozen importlib")),
]
OTHER = "HTTP server + loop (aiohttp, asyncio)"


def bucket_of(stack: list[str]) -> str:
    for frame in reversed(stack):
        for name, fragments in BUCKETS:
            if any(fragment in frame for fragment in fragments):
                return name
    return OTHER


def buckets(raw: Path) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            counts[bucket_of(stack.split(";"))] += int(count)
    return counts


async def profile(
    build: Build,
    turns: int,
    rate: int,
    raw: Path,
    telemetry: bool = False,
    answer_tokens: int = 1,
    burst: bool = False,
) -> tuple[collections.Counter[str], float]:
    model = FakeModel(5.0)
    sink = await OtlpSink.start() if telemetry else None
    if sink is not None:
        build = Build(build.label, build.path, {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url})
    try:
        with tempfile.TemporaryDirectory(prefix="fastagent-profile-") as tmp:
            server = Server(build, make_agent(Path(tmp), model.port), model.port)
            try:
                await server.ready()
                async with client() as http:
                    for i in range(20):  # warm-up: connections, caches, lazy imports
                        await turn(http, server.url, f"warm-{i}", f"hello {tokens(1)}")
                    spy = subprocess.Popen(
                        ["py-spy", "record", "--pid", str(server.pid), "--rate", str(rate), "--format", "raw"]
                        + ["--output", str(raw), "--nonblocking", "--gil"],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    await asyncio.sleep(1.0)  # py-spy attached
                    before = cpu_ns(server.pid)
                    text = f"Tell me a story. {tokens(answer_tokens)}"
                    if burst:  # the thousand row: every turn at once, each on a new session
                        results = await asyncio.gather(
                            *(turn(http, server.url, f"p-{i}", text) for i in range(turns))
                        )
                    else:
                        results = [await turn(http, server.url, f"p-{i}", text) for i in range(turns)]
                    for done in results:
                        if not done.ok:
                            raise SystemExit(f"turn failed: {done.error}")
                    per_turn = (cpu_ns(server.pid) - before) / turns / 1e6
                    spy.send_signal(signal.SIGINT)
                    spy.wait(30)
            finally:
                server.stop()
    finally:
        model.stop()
        if sink is not None:
            await sink.stop()
    return buckets(raw), per_turn


def table(counts: collections.Counter[str], per_turn: float, label: str) -> str:
    total = sum(counts.values()) or 1
    lines = [f"| bucket ({label}) | samples | share | ms/turn |", "|---|---:|---:|---:|"]
    for name, n in counts.most_common():
        lines.append(f"| {name} | {n} | {n / total:.1%} | {per_turn * n / total:.2f} |")
    lines.append(f"| **total** | {total} | 100% | {per_turn:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    parser.add_argument("--ref", help="profile this git ref's tree instead of the checkout")
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    parser.add_argument("--telemetry", action="store_true", help="with OpenTelemetry on (a sink here)")
    parser.add_argument("--tokens", type=int, default=1, help="tokens per answer (the stream row: 300)")
    parser.add_argument(
        "--burst", action="store_true", help="every turn at once (the thousand row: --turns 1000 --tokens 50)"
    )
    args = parser.parse_args()
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    with tempfile.TemporaryDirectory(prefix="fastagent-profile-ref-") as ref_dir:
        build = export(args.ref, Path(ref_dir)) if args.ref else Build("this checkout", ROOT)
        if args.telemetry:
            build.label += ", telemetry on"
        raw = args.raw or Path(ref_dir) / "stacks.txt"
        started = time.perf_counter()
        counts, per_turn = asyncio.run(
            profile(build, args.turns, args.rate, raw, args.telemetry, args.tokens, args.burst)
        )
        print(
            f"{build.label}: {args.turns} turns of {args.tokens} tokens{' at once' if args.burst else ''} in "
            f"{time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f}"
        )
        print(table(counts, per_turn, build.label))


if __name__ == "__main__":
    main()
