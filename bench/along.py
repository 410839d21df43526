"""Flat along a session (issue 35 item 2): the server CPU of a turn by its place in one long
session, ``fastagent start`` streaming from the fake OpenAI-compatible model over real HTTP
(prints figures; not a test).

    .venv/bin/python bench/along.py [--turns 200] [--rounds 3]
    .venv/bin/python bench/along.py --compare 5f467b0 --rounds 3

One session takes ``--turns`` turns (a 300-character question, a ``--answer-tokens``-token
answer), one after the other; each turn's server CPU is the process's CPU time (every thread,
``/proc/<pid>/task/*/schedstat``, as :mod:`hotpath` reads it) across the turn. The figures are the
mean CPU per turn of three buckets of ten turns: the first (1-10), the middle (91-100 of 200) and
the last (191-200), and ``last/first`` (goal: within 1.2x).

``--compare REF`` extracts ``REF`` with ``git archive`` and runs it and this checkout alternately
(``--rounds`` times, the order swapped every round, each run on a fresh server and a fresh
session), then prints each figure's median per build and the ratio this/REF. The machine is
shared: read the ratios of neighbouring runs, and repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path

from hotpath import (
    ROOT,
    Build,
    FakeModel,
    Figures,
    Server,
    Table,
    client,
    cpu_ns,
    export,
    make_agent,
    tokens,
    turn,
)

QUESTION = ("Here is a question of moderate length about the weather and the tides. " * 4)[:300]
BUCKET = 10


def buckets(turns: int) -> list[tuple[int, int]]:
    """The first, middle and last ten turns, 1-based and inclusive (1-10, 91-100, 191-200)."""
    middle = max(BUCKET, turns // 2)
    spans = [(1, BUCKET), (middle - BUCKET + 1, middle), (turns - BUCKET + 1, turns)]
    return sorted(set(spans))


async def along(build: Build, model: FakeModel, turns: int, answer_tokens: int) -> Figures:
    """One server of ``build``, one session of ``turns`` turns: CPU ms per turn by bucket."""
    with tempfile.TemporaryDirectory(prefix="fastagent-along-") as tmp:
        agent = make_agent(Path(tmp), model.port)
        server = Server(build, agent, model.port)
        try:
            await server.ready()
            cpu: list[int] = []
            async with client() as http:
                for i in range(3):  # warm-up on other sessions: connections, caches, imports
                    await turn(http, server.url, f"warm-{i}", f"hello {tokens(answer_tokens)}")
                for i in range(turns):
                    before = cpu_ns(server.pid)
                    done = await turn(http, server.url, "along", f"{QUESTION} ({i}) {tokens(answer_tokens)}")
                    if not done.ok:
                        raise SystemExit(f"[{build.label}] turn {i + 1} failed: {done.error}")
                    cpu.append(cpu_ns(server.pid) - before)
            if server.warnings():
                print(f"  [{build.label}] the server logged {server.warnings()} warning lines")
        finally:
            server.stop()
    figures: Figures = {}
    for first, last in buckets(turns):
        span = cpu[first - 1 : last]
        figures[f"cpu ms/turn, turns {first}-{last}"] = sum(span) / len(span) / 1e6
    values = list(figures.values())
    figures["last/first"] = values[-1] / values[0]
    return figures


async def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the finally blocks stop the processes
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--compare", metavar="REF", nargs="?", const="main", default=None)
    parser.add_argument("--answer-tokens", type=int, default=20)
    parser.add_argument("--interval-ms", type=float, default=0.0)
    args = parser.parse_args()
    if args.turns < BUCKET:
        raise SystemExit(f"--turns must be at least {BUCKET}")
    model = FakeModel(args.interval_ms)
    table = Table()
    with tempfile.TemporaryDirectory(prefix="fastagent-along-ref-") as ref_dir:
        this = Build("this checkout", ROOT)
        builds = [this] if args.compare is None else [export(args.compare, Path(ref_dir)), this]
        try:
            for round_ in range(args.rounds):
                order = builds if round_ % 2 == 0 else builds[::-1]
                for build in order:
                    figures = await along(build, model, args.turns, args.answer_tokens)
                    print(f"  [{build.label}] " + ", ".join(f"{k} {v:.3g}" for k, v in figures.items()))
                    table.add(build.label, {"along": figures})
        finally:
            model.stop()
    print(f"\n== along one session: {args.turns} turns, fake model over HTTP, {os.cpu_count()} CPUs")
    if args.rounds > 1:
        print(f"(medians of {args.rounds} interleaved rounds)")
    table.print([b.label for b in builds])


if __name__ == "__main__":
    asyncio.run(main())
