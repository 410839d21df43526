"""The short turn's server CPU, A/B on a shared machine (issue 35): several builds served at once
on one fake model, blocks of one-token turns (each on a new session) alternating between them, the
order swapped every block; prints each build's median CPU per turn and its ratio to the first.

    .venv/bin/python bench/short_turns.py --refs main,this,floor [--blocks 6] [--turns 60]

``this`` is the checkout, ``floor`` the bare relay of :mod:`floor`, anything else a git ref
(``git archive``, as ``hotpath.py --compare`` does). Neighbouring blocks see the same load, so the
ratio holds where one long run per build (``hotpath.py``'s rows) swings with the other users of
the machine. ``--concurrent N`` runs each block's turns N at once; ``--tokens N`` makes the answers
N tokens long (300: the stream row of :mod:`hotpath`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path

from hotpath import FLOOR, ROOT, Build, FakeModel, Server, client, cpu_ns, export, make_agent, tokens, turn


async def measure(
    builds: list[Build], blocks: int, per_block: int, concurrent: int, answer_tokens: int = 1
) -> dict[str, list[float]]:
    model = FakeModel(5.0)
    servers: list[Server] = []
    try:
        with tempfile.TemporaryDirectory(prefix="fastagent-short-") as tmp:
            for i, build in enumerate(builds):
                server = Server(build, make_agent(Path(tmp) / str(i), model.port), model.port)
                servers.append(server)
                await server.ready()
            figures: dict[str, list[float]] = {b.label: [] for b in builds}
            async with client() as http:
                for server in servers:  # warm-up: connections, caches, lazy imports
                    for i in range(10):
                        await turn(http, server.url, f"warm-{i}", f"hello {tokens(1)}")
                for block in range(blocks):
                    pairs = list(zip(builds, servers, strict=True))
                    for build, server in pairs if block % 2 == 0 else pairs[::-1]:
                        before = cpu_ns(server.pid)

                        async def worker(w: int, server: Server = server, block: int = block) -> None:
                            for i in range(per_block // concurrent):
                                text = f"Tell me a story. {tokens(answer_tokens)}"
                                done = await turn(http, server.url, f"b{block}-{w}-{i}", text)
                                if not done.ok:
                                    raise SystemExit(f"turn failed: {done.error}")

                        await asyncio.gather(*(worker(w) for w in range(concurrent)))
                        turns = per_block // concurrent * concurrent
                        figures[build.label].append((cpu_ns(server.pid) - before) / turns / 1e6)
            return figures
    finally:
        for server in servers:
            server.stop()
        model.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refs", default="main,this,floor")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--turns", type=int, default=60, help="turns per block")
    parser.add_argument("--concurrent", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=1, help="tokens per answer (300: the stream row's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fastagent-short-ref-") as refs_dir:
        builds = []
        for i, ref in enumerate(r for r in args.refs.split(",") if r):
            if ref == "this":
                builds.append(Build("this checkout", ROOT))
            elif ref == "floor":
                builds.append(FLOOR)
            else:
                into = Path(refs_dir) / str(i)
                into.mkdir()
                builds.append(export(ref, into))
        figures = asyncio.run(measure(builds, args.blocks, args.turns, args.concurrent, args.tokens))
    print(
        f"load {os.getloadavg()[0]:.1f}; {args.blocks} blocks x {args.turns} {args.tokens}-token turns, "
        f"{args.concurrent} at once (server CPU ms per turn)"
    )
    base = statistics.median(figures[builds[0].label])
    for build in builds:
        median = statistics.median(figures[build.label])
        blocks = " ".join(f"{v:.2f}" for v in figures[build.label])
        print(f"  {build.label:<24} {median:7.3f}  x{median / base:.2f}   blocks: {blocks}")


if __name__ == "__main__":
    main()
