"""Channel figures for the real ``fastagent start`` process (prints figures; not a test).

    .venv/bin/python bench/channels.py [--rate 50] [--seconds 10] [--preview-turns 4]

1. Webhook acknowledgement latency at ``--rate`` deliveries per second, open loop (each delivery is
   sent at its scheduled instant whatever the previous ones did, so a slow answer cannot hide the
   next one's wait). Telegram updates that become turns: the ``200`` comes after the turn intent is
   durably appended to ``turns.jsonl`` (fsync). For comparison, the same rate of updates that
   persist nothing (edits, acknowledged and dropped) and of GitHub deliveries (``202``, no
   persistence by design); and turns that are each the first message of a new chat (the engine
   creates a session record for each, while the earlier turns still run). Every Telegram turn must
   be answered through the fake Bot API.
   Target: p99 <= 20 ms at 50 deliveries/s.
2. Live-preview write rate: ``--preview-turns`` turns at once, each streaming a tool call and a
   long answer for about 6 s; every write to a preview message (edits, and the final answer) is
   timestamped by the fake Bot API. Reported: the smallest gap between two writes to one message
   and the most writes to one chat in any 1 s and any 60 s window. Telegram asks bots to stay at
   about one message per second per chat; the channel edits a preview at most every 1.5 s and
   writes the answer at least 1.2 s after the last preview edit (a quick answer replaces the
   placeholder at once).

Both run against a fake Bot API and the scripted model on 127.0.0.1; the client shares the machine.
The disk flush an acknowledgement waits for, and the CPU pressure, are printed first: on a shared
machine the latency figures move with them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.fake_telegram import FakeTelegram, Updates  # noqa: E402
from tests.serving.serving_proc import ServerProcess  # noqa: E402

SECRET = "bench-secret"
TOKEN = "5555:BENCH"
GH_SECRET = "bench-gh"
PREVIEW_TEXT = " ".join(f"word{n}" for n in range(400))
SCRIPT = {
    "rules": [
        {
            "match": "preview",
            "steps": [
                {"toolCalls": [{"name": "read", "args": {"path": "persona.md"}}]},
                {
                    "thinking": "Let me write it out.",
                    "text": PREVIEW_TEXT,
                    "chunkSize": 12,
                    "chunkDelayMs": 25,
                },
            ],
        },
        {"steps": [{"text": "Done."}]},
    ]
}
TICK = os.sysconf("SC_CLK_TCK")
GITHUB = (
    "from fastagent_cli.channels import Intent, github_channel\n\nchannel = github_channel(on=lambda e: [])\n"
)


def make_agent(root: Path) -> Path:
    agent = root / "agent"
    (agent / "scripts").mkdir(parents=True)
    (agent / "channels").mkdir()
    (agent / "scripts" / "bench.json").write_text(json.dumps(SCRIPT))
    (agent / "fastagent.toml").write_text('model = "scripted/bench"\n')
    (agent / "persona.md").write_text("You are the channel bench agent.\n")
    (agent / "channels" / "telegram.py").write_text(
        "from fastagent_cli.channels import telegram_channel\n\nchannel = telegram_channel()\n"
    )
    (agent / "channels" / "github.py").write_text(GITHUB)
    (agent / ".env").write_text(
        f"TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_SECRET_TOKEN={SECRET}\nGITHUB_WEBHOOK_SECRET={GH_SECRET}\n"
    )
    return agent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(name: str, values: list[float], errors: int) -> str:
    return (
        f"{name:<34} {len(values):>6} {statistics.median(values):>7.1f} {percentile(values, 0.9):>7.1f} "
        f"{percentile(values, 0.99):>7.1f} {max(values):>7.1f} {errors:>6}"
    )


async def open_loop(
    http: aiohttp.ClientSession, url: str, requests: list[tuple[bytes, dict[str, str]]], rate: float, ok: int
) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0

    async def one(at: float, body: bytes, headers: dict[str, str]) -> None:
        nonlocal errors
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        started = time.perf_counter()
        async with http.post(url, data=body, headers=headers) as response:
            await response.read()
            if response.status != ok:
                errors += 1
        latencies.append((time.perf_counter() - started) * 1000)

    start = time.monotonic() + 0.2
    await asyncio.gather(*(one(start + i / rate, b, h) for i, (b, h) in enumerate(requests)))
    return latencies, errors


def telegram_requests(updates: list[dict[str, Any]]) -> list[tuple[bytes, dict[str, str]]]:
    headers = {"content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET}
    return [(json.dumps(u).encode(), headers) for u in updates]


def github_requests(count: int) -> list[tuple[bytes, dict[str, str]]]:
    out = []
    for n in range(count):
        body = json.dumps({"action": "opened", "number": n}).encode()
        signature = "sha256=" + hmac.new(GH_SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "content-type": "application/json",
            "x-github-event": "issues",
            "x-github-delivery": f"d-{n}",
            "x-hub-signature-256": signature,
        }
        out.append((body, headers))
    return out


def flush_latency(directory: Path, samples: int = 200) -> list[float]:
    """This machine's cost of what an acknowledgement waits for: one line appended and
    ``fdatasync``-ed, ``samples`` times, in milliseconds."""
    path = directory / "probe.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    out = []
    try:
        for n in range(samples):
            started = time.perf_counter()
            os.write(fd, f'{{"probe": {n}}}\n'.encode())
            os.fdatasync(fd)
            out.append((time.perf_counter() - started) * 1000)
            time.sleep(0.01)
    finally:
        os.close(fd)
        path.unlink()
    return out


def cpu_pressure() -> str:
    """``some avg10`` of ``/proc/pressure/cpu`` (how often tasks waited for a CPU), if available."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return "unknown"
    return next((f"{part.split('=')[1]} %" for part in line.split() if part.startswith("avg10=")), "unknown")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def ack_latency(
    args: argparse.Namespace, telegram: FakeTelegram, port: int, agent: Path, pid: int
) -> bool:
    count = int(args.rate * args.seconds)
    chats = max(1, int(args.rate))  # one message per chat per second: turns never queue
    updates = Updates(first_update=10_000)
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        warm = [updates.message("warm up", chat_id=1 + n) for n in range(chats)]  # the chats' sessions exist
        await open_loop(http, base + "/telegram", telegram_requests(warm), 20, 200)
        await wait_answers(telegram, len(warm))
        turns = [updates.message(f"delivery {n}", chat_id=1 + n % chats) for n in range(count)]
        cpu_before = cpu_seconds(pid)
        persisted, errors = await open_loop(
            http, base + "/telegram", telegram_requests(turns), args.rate, 200
        )
        answered = await wait_answers(telegram, len(warm) + count) - len(warm)
        cpu_per_turn = (cpu_seconds(pid) - cpu_before) / count * 1000
        fresh = [updates.message(f"first words {n}", chat_id=100_000 + n) for n in range(count)]
        first, first_errors = await open_loop(
            http, base + "/telegram", telegram_requests(fresh), args.rate, 200
        )
        edits = []
        for n in range(count):
            edited = updates.message(f"edit {n}", chat_id=1 + n % chats)
            edits.append({"update_id": edited["update_id"], "edited_message": edited["message"]})
        dropped, dropped_errors = await open_loop(
            http, base + "/telegram", telegram_requests(edits), args.rate, 200
        )
        github, github_errors = await open_loop(
            http, base + "/webhook", github_requests(count), args.rate, 202
        )
    print(f"\nwebhook acknowledgement, {args.rate:g} deliveries/s for {args.seconds:g} s (open loop), ms:")
    print(f"{'':<34} {'count':>6} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7} {'errors':>6}")
    print(row("telegram turn (intent persisted)", persisted, errors))
    print(row("telegram turn, each from a new chat", first, first_errors))
    print(row("telegram edit (nothing persisted)", dropped, dropped_errors))
    print(row("github delivery (202, no intent)", github, github_errors))
    journal = agent / ".fastagent" / "channels" / "telegram"
    print(f"turns answered through the fake Bot API: {answered}/{count}; state files: "
          f"{', '.join(sorted(p.name for p in journal.iterdir()))}")  # fmt: skip
    print(f"server CPU per Telegram turn (acknowledged, run, answered): {cpu_per_turn:.1f} ms")
    p99 = percentile(persisted, 0.99)
    verdict = "meets" if p99 <= 20 else "MISSES"
    print(f"p99 with the intent persisted: {p99:.1f} ms ({verdict} the 20 ms target)")
    return p99 <= 20 and errors == 0 and answered == count


async def wait_answers(telegram: FakeTelegram, expected: int, within: float = 120) -> int:
    """How many turns were answered ("Done.") once ``expected`` are, or the time is up."""
    deadline = time.monotonic() + within
    while True:
        answers = sum(1 for m in telegram.messages if m.text == "Done." and not m.deleted)
        if answers >= expected or time.monotonic() > deadline:
            return answers
        await asyncio.sleep(0.5)


async def preview_rate(args: argparse.Namespace, telegram: FakeTelegram, port: int) -> bool:
    updates = Updates(first_update=500_000)
    chats = [700_000 + n for n in range(args.preview_turns)]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        await open_loop(
            http,
            f"http://127.0.0.1:{port}/telegram",
            telegram_requests([updates.message("preview please", chat_id=c) for c in chats]),
            100,
            200,
        )
    await telegram.wait_until(
        lambda: all(any("word399" in m.text for m in telegram.of_chat(c)) for c in chats), within=120
    )
    gaps: list[float] = []
    worst_second = worst_minute = writes = 0
    for chat in chats:
        stamps: list[float] = []
        for message in telegram.of_chat(chat):
            times = [message.sent_at] + [at for at, _, _ in message.edits]
            gaps += [b - a for a, b in zip(times, times[1:], strict=False)]
            stamps += times
        stamps.sort()
        writes += len(stamps)
        worst_second = max(worst_second, max(sum(1 for t in stamps if s <= t < s + 1.0) for s in stamps))
        worst_minute = max(worst_minute, max(sum(1 for t in stamps if s <= t < s + 60.0) for s in stamps))
    print(
        f"\nlive preview, {len(chats)} turns at once (a tool call, then ~{len(PREVIEW_TEXT)} chars streamed):"
    )
    print(f"writes to preview messages: {writes} ({writes / len(chats):.1f} a turn)")
    print(
        f"smallest gap between two writes to one message: {min(gaps):.2f} s "
        "(edits >= 1.5 s apart, the answer >= 1.2 s after one)"
    )
    print(f"most writes to one chat in any 1 s: {worst_second}; in any 60 s: {worst_minute}")
    return min(gaps) >= 1.0 and worst_second <= 1


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--preview-turns", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        agent = make_agent(Path(tmp))
        flush = flush_latency(Path(tmp))
        print(
            f"this machine now: an append + fdatasync takes p50 {statistics.median(flush):.1f} ms, "
            f"p99 {percentile(flush, 0.99):.1f} ms; CPU pressure {cpu_pressure()}"
        )
        async with FakeTelegram() as telegram:
            env = {"TELEGRAM_API_BASE_URL": telegram.base_url}
            server = await ServerProcess.start(
                "start", str(agent), "--port", "0", "--bind", "127.0.0.1", env=env
            )
            try:
                port = await server.port()
                acks = await ack_latency(args, telegram, port, agent, server.process.pid)
                previews = await preview_rate(args, telegram, port)
            finally:
                await server.aclose()
    verdicts = f"acknowledgement {'ok' if acks else 'NOT ok'}, preview rate {'ok' if previews else 'NOT ok'}"
    print(f"\nresult: {verdicts}")
    return 0 if acks and previews else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
