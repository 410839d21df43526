"""Slack and Feishu figures for the real ``fastagent start`` process (prints figures; not a test).

    .venv/bin/python bench/chat_channels.py [--rate 50] [--seconds 10] [--stream-turns 4]

1. Acknowledgement latency at ``--rate`` deliveries per second, open loop, with persistence: every
   delivery is a DM that becomes a turn, so the ``200`` comes after its intent is appended to
   ``turns.jsonl`` and flushed (fsync). Slack deliveries are signed (``v0`` HMAC); Feishu deliveries
   are AES-256-CBC encrypted and signed, so decryption is in the measured path. Every turn must be
   answered through the fake platform. Target: p99 <= 20 ms at 50 deliveries/s.
2. Streaming update rates: ``--stream-turns`` turns at once (sent right after the new threads, so
   they stream while those turns are still being answered), each streaming a tool call and ~2 800
   characters for about 6 s. Slack: the gaps between writes to one native stream
   (``chat.startStream``/``appendStream``, >= 750 ms by design) and the most ``appendStream`` calls
   in any minute (Tier 4: 100+/min). Feishu: card snapshot writes per card in any 1 s (cardkit
   allows 10/s per card) and across the app (50/s), and the smallest gap on one card (>= 1 s).

Both run against fakes on 127.0.0.1 with the scripted model; the client shares the machine, so the
disk flush and the CPU pressure are printed first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

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


def gaps(stamps: list[float]) -> list[float]:
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


def most_in(stamps: list[float], window: float) -> int:
    stamps = sorted(stamps)
    return max((sum(1 for t in stamps if s <= t < s + window) for s in stamps), default=0)


async def slack_bench(args: argparse.Namespace, tmp: Path) -> bool:
    async with FakeSlack() as slack:
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
            count = int(args.rate * args.seconds)
            chats = max(1, int(args.rate))
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
            fresh = [
                slack.event(
                    message(f"first {n}", channel=f"D{n % chats}", ts=f"{50_000 + n}.0001"),
                    secret=SLACK_SECRET,
                )
                for n in range(count)
            ]

            def stopped() -> int:
                return sum(1 for m in slack.messages if m.stopped)

            async with aiohttp.ClientSession() as http:
                await open_loop(http, url, warm, 20, 200)
                await slack.wait_until(lambda: stopped() >= chats, within=120, what="warm-up")
                latencies, errors = await open_loop(http, url, requests, args.rate, 200)
                await slack.wait_until(lambda: stopped() >= chats + count, within=180, what="answers")
                answered = stopped() - chats
                first, first_errors = await open_loop(http, url, fresh, args.rate, 200)
                stream_events = [
                    slack.event(message("stream please", channel=f"D9{n}", ts=f"9{n}.1"), secret=SLACK_SECRET)
                    for n in range(args.stream_turns)
                ]
                await open_loop(http, url, stream_events, 100, 200)
            await slack.wait_until(
                lambda: (
                    sum(1 for m in slack.messages if m.stopped and "word399" in m.text) >= args.stream_turns
                ),
                within=600,  # behind the new threads' turns on a busy machine
                what="streams",
            )
        finally:
            await server.aclose()
    streams = [m for m in slack.messages if "word399" in m.text]
    writes = [gaps([at for at, _ in m.writes[:-1]]) for m in streams]
    smallest = min((g for w in writes for g in w), default=0.0)
    appends = [at for at, method, _ in slack.calls if method == "chat.appendStream"]
    per_stream = max(len(m.writes) for m in streams)
    p99 = percentile(latencies, 0.99)
    print(f"\nslack: acknowledgement, {args.rate:g} signed DMs/s for {args.seconds:g} s (open loop), ms:")
    print(f"{'':<34} {'count':>6} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7} {'errors':>6}")
    print(row("slack reply in a thread (persisted)", latencies, errors))
    print(row("slack new thread (a new session)", first, first_errors))
    print(
        f"turns answered through the fake Web API: {answered}/{count}; p99 {p99:.1f} ms "
        f"({'meets' if p99 <= 20 else 'MISSES'} 20 ms)"
    )
    print(
        f"slack: {len(streams)} native streams at once: writes per stream up to {per_stream}; "
        "smallest gap between "
        f"writes to one stream {smallest:.2f} s (>= 0.75 s); chat.appendStream calls in any 60 s: "
        f"{most_in(appends, 60)} (Tier 4: 100+)"
    )
    return p99 <= 20 and errors == 0 and smallest >= 0.7 and most_in(appends, 60) <= 100


async def feishu_bench(args: argparse.Namespace, tmp: Path) -> bool:
    async with FakeFeishu() as fake:
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
            count = int(args.rate * args.seconds)
            chats = max(1, int(args.rate))
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

            def done() -> int:
                return sum(
                    1 for c in fake.cards.values() if c.elements.get("answer") == "Done." and not c.streaming
                )

            async with aiohttp.ClientSession() as http:
                await open_loop(http, url, warm, 20, 200)
                await fake.wait_until(lambda: done() >= chats, within=120, what="warm-up")
                latencies, errors = await open_loop(http, url, requests, args.rate, 200)
                await fake.wait_until(lambda: done() >= chats + count, within=180, what="answers")
                answered = done() - chats
                first, first_errors = await open_loop(http, url, fresh, args.rate, 200)
                streams = [
                    fake.delivery(
                        fake.envelope("stream please", chat_id=f"oc_s{n}", message_id=f"om_s{n}"),
                        encrypt_key=KEY,
                    )
                    for n in range(args.stream_turns)
                ]
                started = time.monotonic()
                await open_loop(http, url, streams, 100, 200)
            await fake.wait_until(
                lambda: (
                    sum(
                        1
                        for c in fake.cards.values()
                        if "word399" in c.elements.get("answer", "") and not c.streaming
                    )
                    >= args.stream_turns
                ),
                within=600,  # behind the new threads' turns on a busy machine
                what="streamed cards",
            )
        finally:
            await server.aclose()
    cards = [c for c in fake.cards.values() if "word399" in c.elements.get("answer", "")]
    per_card = max(most_in(c.writes, 1.0) for c in cards)
    app = most_in([t for c in cards for t in c.writes if t >= started], 1.0)
    smallest = min(g for c in cards for g in gaps(c.writes[:-1]) if g > 0.05) if cards else 0.0
    p99 = percentile(latencies, 0.99)
    print(
        f"\nfeishu: acknowledgement, {args.rate:g} encrypted + signed events/s for "
        f"{args.seconds:g} s (open loop), ms:"
    )
    print(f"{'':<34} {'count':>6} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7} {'errors':>6}")
    print(row("feishu reply in a thread (persisted)", latencies, errors))
    print(row("feishu new thread (a new session)", first, first_errors))
    print(
        f"turns answered (settled cards): {answered}/{count}; p99 {p99:.1f} ms "
        f"({'meets' if p99 <= 20 else 'MISSES'} 20 ms)"
    )
    print(
        f"feishu: {len(cards)} streaming cards at once: most card writes in any 1 s, one card: "
        f"{per_card} (limit 10), "
        f"whole app: {app} (limit 50); smallest gap between two snapshots of one card as they "
        f"arrived {smallest:.2f} s"
    )
    return p99 <= 20 and errors == 0 and per_card <= 10 and app <= 50


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--stream-turns", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        flush = flush_latency(Path(tmp))
        print(
            f"this machine now: an append + fdatasync takes p50 {statistics.median(flush):.1f} ms, "
            f"p99 {percentile(flush, 0.99):.1f} ms; CPU pressure {cpu_pressure()}"
        )
        slack_ok = await slack_bench(args, Path(tmp))
        feishu_ok = await feishu_bench(args, Path(tmp))
    print(
        f"\nresult: slack {'ok' if slack_ok else 'NOT ok'}, feishu "
        f"{'ok' if feishu_ok else 'NOT ok'}; CPU pressure now {cpu_pressure()}"
    )
    return 0 if slack_ok and feishu_ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
