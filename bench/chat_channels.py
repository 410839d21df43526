"""Slack and Feishu figures for the real ``fastagent start`` process (prints figures; not a test).

    .venv/bin/python bench/chat_channels.py [--rate 50] [--seconds 10] [--stream-turns 4]

1. Acknowledgement latency at ``--rate`` deliveries per second, open loop, with persistence: every
   delivery is a DM that becomes a turn, so the ``200`` comes after its intent is appended to
   ``turns.jsonl`` and flushed (fsync). Slack deliveries are signed (``v0`` HMAC); Feishu deliveries
   are AES-256-CBC encrypted and signed, so decryption is in the measured path. Every turn must be
   answered through the fake platform. Target: p99 <= 20 ms at 50 deliveries/s. Then as many new
   threads (each a new session), all of which must be answered too: how long the last one took is
   printed (the channel runs at most 32 turns at once, the rest wait in arrival order).
2. Streaming update rates: ``--stream-turns`` turns at once, after the new threads are answered,
   each streaming a tool call and ~2 800 characters for about 6 s. Slack: the gaps between writes
   to one native stream (``chat.startStream``/``appendStream``, >= 750 ms by design) and the most
   ``appendStream`` calls in any minute (Tier 4: 100+/min). Feishu: card snapshot writes per card
   in any 1 s (cardkit allows 10/s per card) and across the app (50/s), and the smallest gap on one
   card (>= 1 s).

Both run against fakes on 127.0.0.1 with the scripted model. The deliveries are sent and timed by
a separate process, so the fakes' work (answering the turns' API calls) never delays the clock that
measures an acknowledgement. The machine is shared: the disk flush, the load average and the CPU
pressure are printed with the figures. A wait that runs out prints what was measured so far and
how many turns were answered, and the run ends NOT ok.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.channels import cpu_pressure, flush_latency, open_loop, percentile, row  # noqa: E402
from tests.fakes.fake_feishu import FakeFeishu  # noqa: E402
from tests.fakes.fake_slack import FakeSlack, message  # noqa: E402
from tests.serving.serving_proc import ServerProcess  # noqa: E402

SLACK_SECRET = "bench-slack"
KEY = "bench-key"
TEXT = " ".join(f"word{n}" for n in range(400))
SCRIPT = {
    "rules": [
        {
            "match": "stream",
            "steps": [
                {"toolCalls": [{"name": "read", "args": {"path": "persona.md"}}]},
                {"text": TEXT, "chunkSize": 12, "chunkDelayMs": 25},
            ],
        },
        {"steps": [{"text": "Done."}]},
    ]
}


def make_agent(root: Path, kind: str) -> Path:
    agent = root / kind
    (agent / "scripts").mkdir(parents=True)
    (agent / "channels").mkdir()
    (agent / "scripts" / "bench.json").write_text(json.dumps(SCRIPT))
    (agent / "fastagent.toml").write_text('model = "scripted/bench"\n')
    (agent / "persona.md").write_text("You are the channel bench agent.\n")
    if kind == "slack":
        (agent / "channels" / "slack.py").write_text(
            "from fastagent_cli.channels import slack_channel\n\nchannel = "
            "slack_channel(reaction_ack=False)\n"
        )
        (agent / ".env").write_text(f"SLACK_BOT_TOKEN=xoxb-bench\nSLACK_SIGNING_SECRET={SLACK_SECRET}\n")
    else:
        (agent / "channels" / "feishu.py").write_text(
            "from fastagent_cli.channels import feishu_channel\n\nchannel = feishu_channel()\n"
        )
        (agent / ".env").write_text(
            f"FEISHU_APP_ID=cli_0123456789abcdef\nFEISHU_APP_SECRET=s3cret\nFEISHU_VERIFICATION_TOKEN=vtoken\nFEISHU_ENCRYPT_KEY={KEY}\n"
        )
    return agent


Requests = list[tuple[bytes, dict[str, str]]]


def _send_in_process(url: str, requests: Requests, rate: float, ok: int) -> tuple[list[float], int]:
    async def send() -> tuple[list[float], int]:
        async with aiohttp.ClientSession() as http:
            return await open_loop(http, url, requests, rate, ok)

    return asyncio.run(send())


class Sender:
    """Sends and times deliveries from a process of its own (see the module doc)."""

    def __init__(self) -> None:
        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    async def send(self, url: str, requests: Requests, rate: float) -> tuple[list[float], int]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, _send_in_process, url, requests, rate, 200)


async def settle(check: Callable[[], int], target: int, within: float) -> tuple[bool, float]:
    """Wait until ``check() >= target``: whether it got there, and the seconds it took."""
    started = time.monotonic()
    while check() < target:
        if time.monotonic() - started > within:
            return False, time.monotonic() - started
        await asyncio.sleep(0.2)
    return True, time.monotonic() - started


def load() -> str:
    one, five, _ = os.getloadavg()
    return (
        f"load average {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} CPUs, "
        f"CPU pressure {cpu_pressure()}"
    )


def problems(log: str) -> None:
    """What the server said went wrong (a wait ran out)."""
    lines = [line for line in log.splitlines() if any(w in line for w in ("ERROR", "WARNING", "Traceback"))]
    print(f"the server logged {len(lines)} warning/error line(s); the last ones:")
    for line in lines[-12:]:
        print("  " + line[:300])


def table(name: str, rows: list[tuple[str, list[float], int]]) -> None:
    print(f"{'':<34} {'count':>6} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7} {'errors':>6}")
    for label, values, errors in rows:
        print(row(label, values, errors) if values else f"{label:<34} {'(not measured)':>14}")


def gaps(stamps: list[float]) -> list[float]:
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


def most_in(stamps: list[float], window: float) -> int:
    stamps = sorted(stamps)
    return max((sum(1 for t in stamps if s <= t < s + window) for s in stamps), default=0)


async def slack_bench(args: argparse.Namespace, tmp: Path, sender: Sender) -> bool:
    count = int(args.rate * args.seconds)
    chats = max(1, int(args.rate))
    latencies: list[float] = []
    first: list[float] = []
    errors = first_errors = 0
    ok = True
    async with FakeSlack() as slack:

        def answered() -> int:  # a settled native stream, or the classic rendering's message
            return sum(1 for m in slack.messages if "Done." in m.text and (m.stopped or m.kind == "message"))

        def streamed() -> list[Any]:
            return [m for m in slack.messages if m.stopped and "word399" in m.text]

        server = await ServerProcess.start(
            "start",
            str(make_agent(tmp, "slack")),
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            env={"SLACK_API_BASE_URL": slack.api_url},
        )
        try:
            url = f"http://127.0.0.1:{await server.port()}/slack"
            warm = [
                slack.event(message("warm up", channel=f"D{n}", ts=f"{n}.0001"), secret=SLACK_SECRET)
                for n in range(chats)
            ]
            requests = []
            for n in range(count):  # replies in the warmed threads: their sessions exist
                event = message(
                    f"delivery {n}",
                    channel=f"D{n % chats}",
                    ts=f"{1000 + n}.0001",
                    thread_ts=f"{n % chats}.0001",
                )
                requests.append(slack.event(event, secret=SLACK_SECRET, event_id=f"Ev{n}"))
            await sender.send(url, warm, 20)
            ok, _ = await settle(answered, chats, 120)
            if ok:
                latencies, errors = await sender.send(url, requests, args.rate)
                ok, took = await settle(answered, chats + count, args.wait)
                print(
                    f"\nslack: the {count} replies answered {took:.1f} s after the last was sent ({load()})"
                )
            if ok:
                fresh = [  # signed now: Slack's 5-minute window counts from here
                    slack.event(
                        message(f"first {n}", channel=f"D{n % chats}", ts=f"{50_000 + n}.0001"),
                        secret=SLACK_SECRET,
                    )
                    for n in range(count)
                ]
                first, first_errors = await sender.send(url, fresh, args.rate)
                ok, took = await settle(answered, chats + 2 * count, args.wait)
                print(
                    f"slack: the {count} new threads answered {took:.1f} s after the last was sent ({load()})"
                )
            if ok:
                stream_events = [
                    slack.event(message("stream please", channel=f"D9{n}", ts=f"9{n}.1"), secret=SLACK_SECRET)
                    for n in range(args.stream_turns)
                ]
                await sender.send(url, stream_events, 100)
                ok, _ = await settle(lambda: len(streamed()), args.stream_turns, args.wait)
        finally:
            await server.aclose()
            if not ok:
                problems(server.text)
    total = chats + 2 * count + args.stream_turns
    print(f"\nslack: acknowledgement, {args.rate:g} signed DMs/s for {args.seconds:g} s (open loop), ms:")
    table(
        "slack",
        [
            ("slack reply in a thread (persisted)", latencies, errors),
            ("slack new thread (a new session)", first, first_errors),
        ],
    )
    p99 = max((percentile(v, 0.99) for v in (latencies, first) if v), default=float("inf"))
    print(
        f"turns answered through the fake Web API: {answered() + len(streamed())}/{total}"
        f"{'' if ok else ' (a wait ran out: partial figures)'}; worst p99 {p99:.1f} ms "
        f"({'meets' if p99 <= 20 else 'MISSES'} 20 ms)"
    )
    streams = streamed()
    if not streams:
        return False
    writes = [gaps([at for at, _ in m.writes[:-1]]) for m in streams]
    smallest = min((g for w in writes for g in w), default=0.0)
    appends = [at for at, method, _ in slack.calls if method == "chat.appendStream"]
    per_stream = max(len(m.writes) for m in streams)
    print(
        f"slack: {len(streams)} native streams at once: writes per stream up to {per_stream}; "
        "smallest gap between "
        f"writes to one stream {smallest:.2f} s (>= 0.75 s); chat.appendStream calls in any 60 s: "
        f"{most_in(appends, 60)} (Tier 4: 100+)"
    )
    return ok and p99 <= 20 and errors + first_errors == 0 and smallest >= 0.7 and most_in(appends, 60) <= 100


async def feishu_bench(args: argparse.Namespace, tmp: Path, sender: Sender) -> bool:
    count = int(args.rate * args.seconds)
    chats = max(1, int(args.rate))
    latencies: list[float] = []
    first: list[float] = []
    errors = first_errors = 0
    ok = True
    started = 0.0
    async with FakeFeishu() as fake:

        def answered() -> int:  # a settled card, or the text a failed card falls back to
            cards = sum(
                1 for c in fake.cards.values() if c.elements.get("answer") == "Done." and not c.streaming
            )
            texts = sum(1 for m in fake.messages if m.msg_type != "interactive" and "Done." in m.content)
            return cards + texts

        def streamed() -> list[Any]:
            return [
                c
                for c in fake.cards.values()
                if "word399" in c.elements.get("answer", "") and not c.streaming
            ]

        server = await ServerProcess.start(
            "start",
            str(make_agent(tmp, "feishu")),
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            env={"FEISHU_API_BASE_URL": fake.base_url},
        )
        try:
            url = f"http://127.0.0.1:{await server.port()}/feishu"
            warm = [
                fake.delivery(
                    fake.envelope("warm up", chat_id=f"oc_{n}", message_id=f"om_w{n}"), encrypt_key=KEY
                )
                for n in range(chats)
            ]
            requests = [  # continuations in the warmed threads: their sessions exist
                fake.delivery(
                    fake.envelope(
                        f"delivery {n}",
                        chat_id=f"oc_{n % chats}",
                        message_id=f"om_b{n}",
                        root_id=f"om_w{n % chats}",
                    ),
                    encrypt_key=KEY,
                )
                for n in range(count)
            ]
            fresh = [
                fake.delivery(
                    fake.envelope(f"first {n}", chat_id=f"oc_{n % chats}", message_id=f"om_f{n}"),
                    encrypt_key=KEY,
                )
                for n in range(count)
            ]
            await sender.send(url, warm, 20)
            ok, _ = await settle(answered, chats, 120)
            if ok:
                latencies, errors = await sender.send(url, requests, args.rate)
                ok, took = await settle(answered, chats + count, args.wait)
                print(
                    f"\nfeishu: the {count} replies answered {took:.1f} s after the last was sent ({load()})"
                )
            if ok:
                first, first_errors = await sender.send(url, fresh, args.rate)
                ok, took = await settle(answered, chats + 2 * count, args.wait)
                print(
                    f"feishu: the {count} new threads answered {took:.1f} s after the last was sent "
                    f"({load()})"
                )
            if ok:
                streams = [
                    fake.delivery(
                        fake.envelope("stream please", chat_id=f"oc_s{n}", message_id=f"om_s{n}"),
                        encrypt_key=KEY,
                    )
                    for n in range(args.stream_turns)
                ]
                started = time.monotonic()
                await sender.send(url, streams, 100)
                ok, _ = await settle(lambda: len(streamed()), args.stream_turns, args.wait)
        finally:
            await server.aclose()
            if not ok:
                problems(server.text)
    total = chats + 2 * count + args.stream_turns
    print(
        f"\nfeishu: acknowledgement, {args.rate:g} encrypted + signed events/s for "
        f"{args.seconds:g} s (open loop), ms:"
    )
    table(
        "feishu",
        [
            ("feishu reply in a thread (persisted)", latencies, errors),
            ("feishu new thread (a new session)", first, first_errors),
        ],
    )
    p99 = max((percentile(v, 0.99) for v in (latencies, first) if v), default=float("inf"))
    print(
        f"turns answered (settled cards, or text): {answered() + len(streamed())}/{total}"
        f"{'' if ok else ' (a wait ran out: partial figures)'}; worst p99 {p99:.1f} ms "
        f"({'meets' if p99 <= 20 else 'MISSES'} 20 ms)"
    )
    cards = streamed()
    if not cards:
        return False
    per_card = max(most_in(c.writes, 1.0) for c in cards)
    app = most_in([t for c in cards for t in c.writes if t >= started], 1.0)
    smallest = min((g for c in cards for g in gaps(c.writes[:-1]) if g > 0.05), default=0.0)
    print(
        f"feishu: {len(cards)} streaming cards at once: most card writes in any 1 s, one card: "
        f"{per_card} (limit 10), "
        f"whole app: {app} (limit 50); smallest gap between two snapshots of one card as they "
        f"arrived {smallest:.2f} s"
    )
    return ok and p99 <= 20 and errors + first_errors == 0 and per_card <= 10 and app <= 50


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--stream-turns", type=int, default=4)
    parser.add_argument("--wait", type=float, default=300.0, help="seconds each wait for answers may take")
    args = parser.parse_args()
    sender = Sender()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            flush = flush_latency(Path(tmp))
            print(
                f"this machine now: an append + fdatasync takes p50 {statistics.median(flush):.1f} ms, "
                f"p99 {percentile(flush, 0.99):.1f} ms; {load()}"
            )
            slack_ok = await slack_bench(args, Path(tmp), sender)
            feishu_ok = await feishu_bench(args, Path(tmp), sender)
    finally:
        sender.pool.shutdown()
    print(
        f"\nresult: slack {'ok' if slack_ok else 'NOT ok'}, feishu "
        f"{'ok' if feishu_ok else 'NOT ok'}; {load()}"
    )
    return 0 if slack_ok and feishu_ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
