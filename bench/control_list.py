"""``sessions.list()`` over 1 000 stored sessions (prints figures; not a test).

    .venv/bin/python bench/control_list.py [--sessions 1000] [--kb 80] [--rounds 20]

Writes ``--sessions`` pi-format session records of about ``--kb`` KB each (40 exchanges of user
text, assistant text with a tool call, tool result), then measures, in this order:

* **before** (the original's method): read and parse every record, every call;
* **first ever**: the first ``GET /control/sessions`` of a service on a directory never listed
  before: every record is scanned (paid once: the index is kept in ``sessions/.index.json``);
* **after a restart**: a new service on the same directory: its first call starts from the kept
  index (what a ``dev`` worker restarted by a code edit pays);
* **warm**: the same route again, nothing changed (median of ``--rounds``);
* **after an append**: one exchange appended to one record, then the route: the answer must show
  the new message count (never stale), and only the appended bytes are read.

All through the real HTTP route (``GET /control/sessions`` with the bearer token, aiohttp host on
127.0.0.1). Target: <= 100 ms for 1 000 sessions / ~80 MB (warm, after a restart, after an append).
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
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastagent_cli.sessions.layout import encode_id, record_name, workspace_dirname  # noqa: E402
from fastagent_cli.sessions.store import FileSessionStore  # noqa: E402
from fastagent_cli.state.atomic import append_jsonl, dumps_line  # noqa: E402

TOKEN = "bench-token"


def exchange(i: int, size: int) -> list[dict[str, object]]:
    text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    call = {"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": f"src/f{i}.py"}}
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}, call],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-4.1-mini",
        "usage": {"input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1200},
        "stopReason": "toolUse",
        "timestamp": 1,
    }
    result = {
        "role": "toolResult",
        "toolCallId": f"c{i}",
        "toolName": "read",
        "isError": False,
        "timestamp": 1,
    }
    result["content"] = [{"type": "text", "text": text}]
    user = {
        "role": "user",
        "content": [{"type": "text", "text": f"question {i}: {text[:200]}"}],
        "timestamp": 1,
    }
    return [
        {
            "type": "message",
            "id": f"u{i:07x}",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": m,
        }
        for m in (user, assistant, result)
    ]


def write_sessions(directory: Path, workspace: Path, count: int, kb: int) -> int:
    """``count`` records in pi's layout under ``directory`` for ``workspace``."""
    records = directory / workspace_dirname(str(workspace.resolve()))
    records.mkdir(parents=True)
    per_exchange = (kb * 1024 // 40 - 950) // 2  # two texts per exchange, ~950 bytes of JSON around them
    total = 0
    stamp = "2026-01-01T00:00:00.000Z"
    for n in range(count):
        session = f"chat-{n:04d}"
        lines = [{"type": "session", "version": 3, "id": encode_id(session), "timestamp": stamp, "cwd": "/"}]
        for i in range(40):
            lines.extend(exchange(i, per_exchange))
        path = records / record_name(stamp, session)
        data = "".join(dumps_line(line) + "\n" for line in lines)
        path.write_text(data, encoding="utf-8")
        total += len(data.encode())
    return total


def full_parse_listing(directory: Path) -> int:
    """What the original did: every record read and parsed, every call."""
    count = 0
    for path in directory.glob("--*--/*.jsonl"):
        for line in path.read_bytes().splitlines():
            if line.strip():
                json.loads(line)
        count += 1
    return count


async def timed_get(http: aiohttp.ClientSession, url: str) -> tuple[float, list[dict[str, object]]]:
    started = time.perf_counter()
    async with http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as resp:
        body = await resp.json()
    return (time.perf_counter() - started) * 1000, body


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--kb", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    from fastagent_cli.serving.host import serve
    from fastagent_cli.serving.service import create_agent_service

    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        (agent / "fastagent.toml").write_text('model = "scripted/echo"\nsession_control = true\n')
        sessions = agent / ".fastagent" / "sessions"
        size = write_sessions(sessions, agent, args.sessions, args.kb)
        print(f"{args.sessions} sessions, {size / 1e6:.1f} MB of JSONL")

        started = time.perf_counter()
        listed = full_parse_listing(sessions)
        before = (time.perf_counter() - started) * 1000
        print(f"before (read and parse every record, every call): {before:7.1f} ms for {listed} sessions")

        os.environ["FASTAGENT_CONTROL_TOKEN"] = TOKEN
        service = await create_agent_service(agent)
        server = serve(service.handler, port=0, host="127.0.0.1")
        port = await server.listening
        url = f"http://127.0.0.1:{port}/control/sessions"
        async with aiohttp.ClientSession() as http:
            cold, body = await timed_get(http, url)
        assert len(body) == args.sessions, len(body)
        print(f"first ever GET /control/sessions (every record scanned):    {cold:7.1f} ms")
        await server.close()
        await service.close()

        service = await create_agent_service(agent)  # a new process would start the same way
        server = serve(service.handler, port=0, host="127.0.0.1")
        port = await server.listening
        url = f"http://127.0.0.1:{port}/control/sessions"
        try:
            async with aiohttp.ClientSession() as http:
                restarted, body = await timed_get(http, url)
                assert len(body) == args.sessions, len(body)
                print(f"after a restart, first GET (from the kept index):           {restarted:7.1f} ms")
                warm = [(await timed_get(http, url))[0] for _ in range(args.rounds)]
                median = statistics.median(warm)
                print(
                    f"warm GET /control/sessions (median of {args.rounds}):                 {median:7.1f} ms"
                )
                found = FileSessionStore(sessions, agent).location("chat-0500")
                assert found is not None
                target = found
                append_jsonl(target, exchange(99, args.kb * 1024 // 80))
                after, body = await timed_get(http, url)
                row = next(r for r in body if r["session"] == "chat-0500")
                assert row["messageCount"] == 123, row  # 120 + the appended 3: never stale
                assert body[0]["session"] == "chat-0500"  # newest first
                count = row["messageCount"]
                print(f"after an append (the new count is there: {count}):             {after:7.1f} ms")
                verdict = "meets" if max(median, restarted, after) <= 100 else "MISSES"
                print(f"target: <= 100 ms (warm, restarted, after an append): {verdict}")
        finally:
            await server.close()
            await service.close()


if __name__ == "__main__":
    asyncio.run(main())
