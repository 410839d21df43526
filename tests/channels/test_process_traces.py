"""The caller's W3C ``traceparent`` through channel webhook deliveries, end to end: the real
``fastagent start`` with Telegram, Slack, Feishu (HTTP) and GitHub channels against fake platforms,
a fake OpenAI-compatible model on the real wire and a real OTLP/HTTP receiver decoding with
``opentelemetry-proto``. Each delivery's turn is one trace, the caller's: the channel's root span is
a child of the caller's span, the model request carries a ``traceparent`` of that trace, and a turn
replayed after ``kill -9`` still continues it (the turn record keeps it)."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.channels.github import sign_payload
from tests.fakes.fake_feishu import FakeFeishu
from tests.fakes.fake_providers import FakeOpenAI, openai_reply
from tests.fakes.fake_slack import FakeSlack, message
from tests.fakes.fake_telegram import FakeTelegram, Updates
from tests.serving.otlp_receiver import OtlpReceiver, attributes
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

TG_SECRET = "tg-secret_123"
SLACK_SECRET = "slack-signing-secret"
GH_SECRET = "gh-secret"
FAST = {"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_METRIC_EXPORT_INTERVAL": "60000"}
CONSUMER = 5

GITHUB = """
from fastagent_cli.channels import Intent, github_channel

def on(event):
    issue = event.payload["issue"]
    return [Intent(session=f"issue-{issue['number']}", text=f"Triage: {issue['title']}")]

channel = github_channel(on=on)
"""


def caller(n: int) -> tuple[str, str]:
    """A caller's trace and span id (hex)."""
    return f"{n:032x}".replace("0", "a", 8), f"{n:016x}".replace("0", "b", 4)


def header(trace: tuple[str, str]) -> dict[str, str]:
    return {"traceparent": f"00-{trace[0]}-{trace[1]}-01"}


class Stack:
    """The agent directory, the fakes and the server process."""

    def __init__(self, root: Path, model: FakeOpenAI, receiver: OtlpReceiver) -> None:
        self.root, self.model, self.receiver = root, model, receiver
        self.telegram = FakeTelegram()
        self.slack = FakeSlack()
        self.feishu = FakeFeishu()
        self.server: ServerProcess | None = None
        self.port = 0
        (root / "channels").mkdir(parents=True)
        models = {"providers": {"local": {"baseUrl": model.base_url, "models": [{"id": "small"}]}}}
        (root / "models.json").write_text(json.dumps(models))
        (root / "fastagent.toml").write_text(
            f'model = "local/small"\ncoding_tools = false\n[telemetry]\notlp_endpoint = "{receiver.url}"\n'
        )
        for name in ("telegram", "slack", "feishu"):
            (root / "channels" / f"{name}.py").write_text(
                f"from fastagent_cli.channels import {name}_channel\n\nchannel = {name}_channel()\n"
            )
        (root / "channels" / "github.py").write_text(GITHUB)
        (root / ".env").write_text(
            f"TELEGRAM_BOT_TOKEN=424242:TRACES\nTELEGRAM_SECRET_TOKEN={TG_SECRET}\n"
            f"SLACK_BOT_TOKEN=xoxb-test\nSLACK_SIGNING_SECRET={SLACK_SECRET}\n"
            "FEISHU_APP_ID=cli_0123456789abcdef\nFEISHU_APP_SECRET=s3cret\nFEISHU_VERIFICATION_TOKEN=vtoken\n"
            f"GITHUB_WEBHOOK_SECRET={GH_SECRET}\n"
        )

    async def __aenter__(self) -> Stack:
        await self.telegram.__aenter__()
        await self.slack.__aenter__()
        await self.feishu.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.server is not None:
            await self.server.aclose()
        await self.feishu.__aexit__(*exc)
        await self.slack.__aexit__(*exc)
        await self.telegram.__aexit__(*exc)

    async def start(self) -> ServerProcess:
        env = {
            **FAST,
            "TELEGRAM_API_BASE_URL": self.telegram.base_url,
            "SLACK_API_BASE_URL": self.slack.api_url,
            "FEISHU_API_BASE_URL": self.feishu.base_url,
        }
        self.server = await ServerProcess.start(
            "start", str(self.root), "--port", "0", "--bind", "127.0.0.1", env=env
        )
        self.port = await self.server.port()
        return self.server

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
            http.post(f"http://127.0.0.1:{self.port}{path}", data=body, headers=headers) as response,
        ):
            return response.status, await response.text()

    async def telegram_update(self, update: dict[str, Any], **extra: str) -> tuple[int, str]:
        headers = {"content-type": "application/json", "x-telegram-bot-api-secret-token": TG_SECRET}
        return await self.post("/telegram", json.dumps(update).encode(), {**headers, **extra})

    async def slack_event(self, event: dict[str, Any], **extra: str) -> tuple[int, str]:
        body, signed = self.slack.event(event, secret=SLACK_SECRET)
        return await self.post("/slack", body, {**signed, **extra})

    async def feishu_event(self, text: str, **extra: str) -> tuple[int, str]:
        body, headers = self.feishu.delivery(self.feishu.envelope(text, chat_id="oc_traced"))
        return await self.post("/feishu", body, {**headers, **extra})

    async def github_issue(self, number: int, **extra: str) -> tuple[int, str]:
        body = json.dumps({"action": "opened", "issue": {"number": number, "title": "Crash"}}).encode()
        headers = {
            "content-type": "application/json",
            "x-github-event": "issues",
            "x-github-delivery": f"7c0a0f80-0000-4000-8000-{number:012d}",
            "x-hub-signature-256": sign_payload(GH_SECRET, body),
        }
        return await self.post("/webhook", body, {**headers, **extra})

    def named(self, name: str) -> list[Any]:
        return [s for s in self.receiver.spans if s.name == name]


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def stack(tmp_path: Path, model: FakeOpenAI) -> AsyncIterator[Stack]:
    async with OtlpReceiver() as receiver, Stack(tmp_path / "agent", model, receiver) as running:
        yield running


def journaled_traces(journal: Path) -> list[str]:
    """The ``traceparent`` of every turn the journal added."""
    found = []
    for line in journal.read_text().splitlines():
        op = json.loads(line)["e"]  # {"g": generation, "e": operation}
        if op.get("op") == "add":
            found.append(op["turn"].get("traceparent"))
    return found


def assert_continues(stack: Stack, root: Any, trace: tuple[str, str]) -> None:
    """``root`` is a child of the caller's span, the turn and model request spans are under it,
    and the model request's ``traceparent`` names its own span in the caller's trace."""
    assert (root.trace_id.hex(), root.parent_span_id.hex()) == trace
    assert root.kind == CONSUMER and attributes(root.attributes)["fastagent.trigger"] == "channel"
    [turn] = [s for s in stack.named("invoke_agent") if s.parent_span_id == root.span_id]
    [chat] = [s for s in stack.named("chat small") if s.parent_span_id == turn.span_id]
    assert turn.trace_id.hex() == chat.trace_id.hex() == trace[0]
    sent = [r.headers.get("traceparent") for r in stack.model.requests]
    assert f"00-{trace[0]}-{chat.span_id.hex()}-01" in sent


@pytest.mark.timeout(120)
async def test_each_platforms_webhook_turn_continues_the_callers_trace(stack: Stack) -> None:
    stack.model.answer_always(openai_reply("traced answer", usage=(10, 2)))
    server = await stack.start()
    updates = Updates()
    tg, slack, feishu, github = caller(1), caller(2), caller(3), caller(4)
    assert await stack.telegram_update(updates.message("hello", chat_id=42), **header(tg)) == (200, "")
    assert await stack.slack_event(message("hello", ts="100.1"), **header(slack)) == (200, "")
    assert await stack.feishu_event("hello", **header(feishu)) == (200, "")
    assert await stack.github_issue(12, **header(github)) == (202, "")
    # no header, and a malformed one: each turn a trace of its own
    assert await stack.telegram_update(updates.message("untraced", chat_id=43)) == (200, "")
    bad = {"traceparent": f"00-{'0' * 32}-{tg[1]}-01"}
    assert await stack.telegram_update(updates.message("bad header", chat_id=44), **bad) == (200, "")
    roots = ("telegram turn", "slack turn", "feishu turn", "github turn")
    await stack.receiver.wait_for(
        lambda: len(stack.named("telegram turn")) == 3 and all(stack.named(name) for name in roots)
    )
    await stack.receiver.wait_for(lambda: len(stack.named("chat small")) == 6)
    for name, trace in zip(roots, (tg, slack, feishu, github), strict=True):
        found = [s for s in stack.named(name) if s.trace_id.hex() == trace[0]]
        assert len(found) == 1, (name, [(s.name, s.trace_id.hex()) for s in stack.receiver.spans])
        root = found[0]
        assert_continues(stack, root, trace)
    others = [s for s in stack.named("telegram turn") if s.trace_id.hex() != tg[0]]
    assert len(others) == 2 and all(not s.parent_span_id for s in others)
    assert len({s.trace_id for s in others}) == 2
    assert "cannot export" not in server.text


@pytest.mark.timeout(120)
async def test_a_turn_replayed_after_kill_9_continues_the_callers_trace(stack: Stack) -> None:
    stack.model.enqueue_hold([])  # the first run never gets its answer
    stack.model.answer_always(openai_reply("after the restart", usage=(10, 2)))
    first = await stack.start()
    tg, slack = caller(5), caller(6)
    assert await stack.telegram_update(Updates().message("BLOCK", chat_id=42), **header(tg)) == (200, "")
    await stack.telegram.wait_until(lambda: stack.model.requests, what="the turn reaching the model")
    assert stack.model.requests[0].headers["traceparent"].startswith(f"00-{tg[0]}-")
    journal = stack.root / ".fastagent" / "channels" / "telegram" / "turns.jsonl"
    assert journaled_traces(journal) == [f"00-{tg[0]}-{tg[1]}-01"]  # the record keeps it
    first.process.send_signal(signal.SIGKILL)
    await first.wait()

    second = await stack.start()
    await second.wait_for(r"\[telegram\] recovering 1 unfinished turn\(s\) from a prior run")
    await stack.telegram.wait_for_text(42, "after the restart")
    await stack.receiver.wait_for(lambda: stack.named("telegram turn") and stack.named("chat small"))
    [root] = stack.named("telegram turn")  # the killed process sent none of its spans
    assert_continues(stack, root, tg)
    assert attributes(root.attributes)["gen_ai.conversation.id"] == "42"
    # and a Slack delivery to the restarted process continues its own caller's trace
    assert await stack.slack_event(message("hello", ts="200.1"), **header(slack)) == (200, "")
    await stack.receiver.wait_for(lambda: stack.named("slack turn") and len(stack.named("chat small")) == 2)
    [slack_root] = stack.named("slack turn")
    assert_continues(stack, slack_root, slack)
