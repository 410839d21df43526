"""CPU per turn through the OpenAI-compatible face against ``/invoke`` (issue 31 item 1), on the
real ``fastagent start`` streaming from the same fake OpenAI-compatible model (prints figures;
not a test).

    .venv/bin/python bench/openai_face.py [--turns 40] [--rounds 5] [--tokens 300]

One server with ``[http] openai = true``; turns of each kind alternate one by one (the order
rotated every turn, so the machine's drift is shared), each on a fresh session:

* ``invoke``: ``POST /invoke`` (SSE of AgentEvents);
* ``chat``: ``POST /v1/chat/completions`` streaming, one user message: the one-off session
  (created, then deleted once the turn settled), as Open WebUI and SDK users send it;
* ``chat+session``: the same with ``X-Fastagent-Session`` (a session kept like ``/invoke``'s);
* ``chat+history``: streaming, 6 earlier messages re-sent (the one-off session seeded first);
* ``responses``: ``POST /v1/responses`` streaming (a kept session, the response id recorded).

Server CPU is read from ``/proc/<pid>/task/*/schedstat`` around each turn (and the 20 ms after
it, when a one-off session is deleted; see :mod:`hotpath`); the figure is the median CPU ms per
turn with its interquartile range, and each kind's ratio to ``invoke``'s (target: within 1.10).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hotpath import Build, FakeModel, Server, client, cpu_ns, make_agent, tokens

ROOT = Path(__file__).resolve().parents[1]
SETTLE_S = 0.02
TurnFn = Callable[[aiohttp.ClientSession, str, int], Awaitable[None]]


async def _drain(response: aiohttp.ClientResponse, done_marker: bytes) -> None:
    if response.status != 200:
        raise SystemExit(f"HTTP {response.status}: {await response.text()}")
    tail = b""
    found = False
    async for chunk in response.content.iter_any():
        window = tail + chunk
        found = found or done_marker in window
        tail = window[-600:]
    if not found:
        raise SystemExit(f"the stream did not finish: {tail[-200:]!r}")


async def invoke_turn(http: aiohttp.ClientSession, base: str, n: int) -> None:
    body = {"session": f"i-{uuid.uuid4().hex}", "text": f"Tell me a story. {tokens(n)}"}
    async with http.post(f"{base}/invoke", json=body) as response:
        await _drain(response, b'"type":"completed"')


def _chat_body(n: int, history: int = 0) -> dict[str, Any]:
    messages: list[dict[str, str]] = []
    for i in range(history // 2):
        messages += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    messages.append({"role": "user", "content": f"Tell me a story. {tokens(n)}"})
    return {"model": "agent", "stream": True, "messages": messages}


async def chat_turn(http: aiohttp.ClientSession, base: str, n: int) -> None:
    async with http.post(f"{base}/v1/chat/completions", json=_chat_body(n)) as response:
        await _drain(response, b"data: [DONE]")


async def chat_session_turn(http: aiohttp.ClientSession, base: str, n: int) -> None:
    headers = {"X-Fastagent-Session": f"c-{uuid.uuid4().hex}"}
    async with http.post(f"{base}/v1/chat/completions", json=_chat_body(n), headers=headers) as response:
        await _drain(response, b"data: [DONE]")


async def chat_history_turn(http: aiohttp.ClientSession, base: str, n: int) -> None:
    async with http.post(f"{base}/v1/chat/completions", json=_chat_body(n, history=6)) as response:
        await _drain(response, b"data: [DONE]")


async def responses_turn(http: aiohttp.ClientSession, base: str, n: int) -> None:
    body = {"model": "agent", "stream": True, "input": f"Tell me a story. {tokens(n)}"}
    async with http.post(f"{base}/v1/responses", json=body) as response:
        await _drain(response, b"response.completed")


KINDS: dict[str, TurnFn] = {
    "invoke": invoke_turn,
    "chat": chat_turn,
    "chat+session": chat_session_turn,
    "chat+history": chat_history_turn,
    "responses": responses_turn,
}


async def run(opts: argparse.Namespace) -> None:
    fake = FakeModel(opts.interval_ms)
    workdir = Path(tempfile.mkdtemp(prefix="fastagent-openai-bench-"))
    agent = make_agent(workdir, fake.port)
    with open(agent / "fastagent.toml", "a", encoding="utf-8") as toml:
        toml.write("\n[http]\nopenai = true\n")
    server = Server(Build("this", ROOT), agent)
    try:
        await server.ready()
        base = f"http://127.0.0.1:{server.port}"
        names = [kind for kind in KINDS if kind in opts.kinds.split(",")]
        if "invoke" not in names:
            names.insert(0, "invoke")
        figures: dict[str, list[float]] = {kind: [] for kind in names}
        async with client() as http:
            for kind in names:  # warm-up: connections, caches, imports
                for _ in range(3):
                    await KINDS[kind](http, base, opts.tokens)
            for round_ in range(opts.rounds):
                for i in range(opts.turns):
                    shift = (round_ + i) % len(names)
                    for kind in names[shift:] + names[:shift]:
                        before = cpu_ns(server.pid)
                        await KINDS[kind](http, base, opts.tokens)
                        await asyncio.sleep(SETTLE_S)  # a one-off session is deleted just after
                        figures[kind].append((cpu_ns(server.pid) - before) / 1e6)
        reference = statistics.median(figures["invoke"])
        print(
            f"server CPU per turn, {opts.tokens}-token answers, "
            f"median of {opts.rounds * opts.turns} turns each, measured one by one, kinds interleaved"
        )
        for kind in names:
            median = statistics.median(figures[kind])
            quart = statistics.quantiles(figures[kind], n=4)
            spread = f"IQR {quart[0]:.2f}-{quart[2]:.2f}"
            print(f"  {kind:<13} {median:7.2f} ms  ({spread})  ratio {median / reference:5.3f}")
        if server.warnings():
            print(f"  the server logged {server.warnings()} warning lines: {server.log}")
    finally:
        server.stop()
        fake.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--interval-ms", type=float, default=0.0)
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, from: " + ", ".join(KINDS))
    started = time.monotonic()
    asyncio.run(run(parser.parse_args()))
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
