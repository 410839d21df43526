"""The Telegram channel mounted in-process against a fake Bot API and a scripted Agent."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.channels import telegram_channel
from fastagent_cli.channels.kit.stop import NOTHING_RUNNING, STOP_UNAVAILABLE, STOPPED
from fastagent_cli.channels.kit.turn_store import TurnStore
from fastagent_cli.channels.telegram.runner import DROPPED_NOTICE, HTML_HINT, QUEUED_NOTICE
from fastagent_cli.contract import (
    ABORTED_CODE,
    AgentEvent,
    Completed,
    Failed,
    Prompt,
    Scope,
    Text,
    ToolEnded,
    ToolStarted,
)
from fastagent_cli.control import NO_ACTIVE_RUN, SESSION_BUSY, ActionResult, accepted, rejected
from fastagent_cli.state.channel_state import FileChannelState
from tests.channels.conftest import SECRET, TOKEN, FakeAgent, Mount, answer, failing, idle
from tests.fakes.fake_telegram import FakeTelegram, Updates, mention

GROUP = -1001


def channel(telegram: FakeTelegram, **options: Any) -> Any:
    return telegram_channel(secret_token=SECRET, bot_token=TOKEN, api_base_url=telegram.base_url, **options)


async def test_requests_are_checked_in_order(telegram: FakeTelegram, mount: Mount) -> None:
    agent = FakeAgent()
    bot = await mount(channel(telegram), agent)
    async with bot.http.get(bot.url + "/telegram") as response:
        assert (response.status, await response.text()) == (405, "POST only\n")
    assert await bot.post("/telegram", {"update_id": 1}) == (401, "invalid secret token\n")
    assert await bot.update({"update_id": 1}, secret="wrong") == (401, "invalid secret token\n")
    big = b"{" + b" " * (1 << 20) + b"}"
    assert await bot.post("/telegram", big, {"x-telegram-bot-api-secret-token": SECRET}) == (
        413,
        "payload too large\n",
    )
    headers = {"x-telegram-bot-api-secret-token": SECRET}
    assert await bot.post("/telegram", b"{nope", headers) == (400, "invalid json\n")
    assert await bot.post("/telegram", b"[1, 2]", headers) == (400, "invalid json\n")
    assert agent.calls == []


async def test_a_private_message_is_answered_in_place_of_the_placeholder(
    telegram: FakeTelegram, mount: Mount
) -> None:
    agent = FakeAgent(answer("<b>Hello</b> & welcome"))
    bot = await mount(channel(telegram), agent)
    assert await bot.update(Updates().message("hi there")) == (200, "")
    await idle(bot)
    [message] = telegram.of_chat(42)
    [placeholder] = telegram.methods("sendMessage")
    assert placeholder.params["text"] == "💭 Thinking…" and "parse_mode" not in placeholder.params
    assert message.shown == "Hello & welcome"
    assert message.parse_mode == "HTML"
    assert message.reply_to is None  # private chats are not quoted
    [(scope, prompt)] = agent.calls
    assert scope.session == "42"
    assert prompt.text.startswith("[telegram: chat 42 (private), from @alice]\nhi there")
    assert prompt.text.endswith(HTML_HINT)


async def test_edits_and_other_updates_are_acknowledged_and_dropped(
    telegram: FakeTelegram, mount: Mount
) -> None:
    agent = FakeAgent()
    bot = await mount(channel(telegram), agent)
    edited = {"update_id": 5, "edited_message": Updates().message("x")["message"]}
    assert await bot.update(edited) == (200, "")
    assert await bot.update({"update_id": 6, "callback_query": {"id": "1", "data": "x"}}) == (200, "")
    await idle(bot)
    assert agent.calls == [] and telegram.messages == []


async def test_a_duplicate_delivery_runs_once(telegram: FakeTelegram, mount: Mount) -> None:
    agent = FakeAgent(answer("once"))
    bot = await mount(channel(telegram), agent)
    update = Updates().message("hello")
    results = await asyncio.gather(*(bot.update(update) for _ in range(3)))
    assert results == [(200, "")] * 3
    await idle(bot)
    assert await bot.update(update) == (200, "")
    await idle(bot)
    assert len(agent.calls) == 1
    assert telegram.shown(42) == ["once"]


async def test_group_discussion_is_folded_into_the_next_summon(telegram: FakeTelegram, mount: Mount) -> None:
    agent = FakeAgent(answer("Bob agreed."))
    bot = await mount(channel(telegram), agent)
    updates = Updates()
    bob = {"id": 8, "is_bot": False, "first_name": "Bob"}
    first = updates.message("shall we ship friday?", chat_id=GROUP, chat_type="supergroup")
    assert await bot.update(first) == (200, "")
    reply = updates.message("yes, friday", chat_id=GROUP, chat_type="supergroup", sender=bob,
                            reply_to=first["message"])  # fmt: skip
    await bot.update(reply)
    text = "@carol can you check?"
    await bot.update(
        updates.message(text, chat_id=GROUP, chat_type="supergroup", entities=mention(text, "carol"))
    )
    command = [{"type": "bot_command", "offset": 0, "length": 7}]
    await bot.update(updates.message("/deploy", chat_id=GROUP, chat_type="supergroup", entities=command))
    await idle(bot)
    assert agent.calls == []  # bystander talk, another mention and a command summon nobody
    ask = "@fa_test_bot what did Bob say?"
    summon = updates.message(ask, chat_id=GROUP, chat_type="supergroup", entities=mention(ask, "fa_test_bot"))
    await bot.update(summon)
    await idle(bot)
    [(scope, prompt)] = agent.calls
    assert scope.session == str(GROUP)
    assert prompt.text.startswith("[recent group discussion:\n@alice (msg 1): shall we ship friday?\n")
    assert "Bob (id 8) (msg 2, reply to msg 1): yes, friday" in prompt.text
    assert "[group chat — several people; each message names its sender]" in prompt.text
    answered = await telegram.wait_for_text(GROUP, "Bob agreed.")
    assert answered.reply_to == summon["message"]["message_id"]  # the summoner is quoted
    # The folded discussion was committed: a reply to the bot summons without it.
    bot_message = {
        "message_id": answered.message_id,
        "from": {"id": 123456, "is_bot": True, "first_name": "T"},
        "chat": {"id": GROUP, "type": "supergroup"},
        "text": "Bob agreed.",
    }
    await bot.update(updates.message("thanks", chat_id=GROUP, chat_type="supergroup", reply_to=bot_message))
    await idle(bot)
    assert len(agent.calls) == 2
    assert "[recent group discussion:" not in agent.calls[1][1].text
    assert f"[in reply to T (id 123456) (msg {answered.message_id}): Bob agreed.]" in agent.calls[1][1].text


async def test_a_reply_to_another_bot_does_not_summon(telegram: FakeTelegram, mount: Mount) -> None:
    agent = FakeAgent()
    bot = await mount(channel(telegram), agent)
    other = {
        "message_id": 9,
        "from": {"id": 999, "is_bot": True, "first_name": "Other"},
        "chat": {"id": GROUP},
    }
    await bot.update(Updates().message("hey", chat_id=GROUP, chat_type="group", reply_to=other))
    await idle(bot)
    assert agent.calls == []


def blocking(agent_release: asyncio.Event, text: str) -> Any:
    async def script(scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        await agent_release.wait()
        yield Text(f"{text}: {prompt.text.splitlines()[1]}")
        yield Completed()

    return script


async def test_a_busy_session_queues_and_edits_its_notice_into_the_answer(
    telegram: FakeTelegram, mount: Mount
) -> None:
    release = asyncio.Event()
    agent = FakeAgent(blocking(release, "done"))
    bot = await mount(channel(telegram), agent)
    updates = Updates()
    await bot.update(updates.message("first"))
    await telegram.wait_for_text(42, "Thinking")
    await bot.update(updates.message("second"))
    notice = await telegram.wait_for_text(42, "Queued")
    assert notice.shown == QUEUED_NOTICE
    release.set()
    await idle(bot)
    assert [c[1].text.splitlines()[1] for c in agent.calls] == ["first", "second"]
    assert telegram.shown(42) == ["done: first", "done: second"]
    assert notice.shown == "done: second"  # the notice became the answer


async def test_failures_reach_the_user_as_neutral_text(telegram: FakeTelegram, mount: Mount) -> None:
    bot = await mount(channel(telegram), FakeAgent(failing("boom: secret internals", retryable=True)))
    await bot.update(Updates().message("x"))
    await idle(bot)
    assert telegram.shown(42) == ["⚠️ Temporary problem — please try again in a moment."]


async def test_a_spend_limit_is_told_in_plain_words(telegram: FakeTelegram, mount: Mount) -> None:
    refusal = (
        "spend limit reached: max_cost_per_day = $5 per day; today (UTC) has used $5.01 and the next "
        "model request would pass it (the day resets at 00:00 UTC)"
    )
    bot = await mount(channel(telegram), FakeAgent(failing(refusal, code="budget_exceeded")))
    await bot.update(Updates().message("x"))
    await idle(bot)
    assert telegram.shown(42) == [
        "⚠️ I've reached the spending limit this agent is allowed, so I can't answer now. "
        "The daily limit resets at 00:00 UTC."
    ]


async def test_on_error_decides_the_failure_text_and_empty_deletes(
    telegram: FakeTelegram, mount: Mount
) -> None:
    bot = await mount(channel(telegram, on_error=lambda f: f"⚠️ {f.details}"), FakeAgent(failing("bad key")))
    await bot.update(Updates().message("x", chat_id=1))
    await idle(bot)
    assert telegram.shown(1) == ["⚠️ bad key"]
    quiet = await mount(
        channel(telegram, on_error=lambda f: ""),
        FakeAgent(failing("bad key")),
        state_root=bot.state_root / "b",
    )
    await quiet.update(Updates(500).message("x", chat_id=2))
    await idle(quiet)
    assert telegram.shown(2) == []  # nothing left behind (a placeholder that was sent is deleted)


async def test_an_empty_answer_says_no_reply(telegram: FakeTelegram, mount: Mount) -> None:
    bot = await mount(channel(telegram), FakeAgent(answer("")))
    await bot.update(Updates().message("x"))
    await idle(bot)
    assert telegram.shown(42) == ["(no reply)"]


async def test_stop_answers_without_becoming_a_turn(telegram: FakeTelegram, mount: Mount) -> None:
    agent = FakeAgent()
    bot = await mount(channel(telegram), agent)
    updates = Updates()
    await bot.update(updates.message("/stop"))
    await bot.update(updates.message("/stop@someone_else_bot"))
    await idle(bot)
    await telegram.wait_for_text(42, "Stop")
    assert telegram.shown(42) == [STOP_UNAVAILABLE]
    assert agent.calls == []


class FakeSession:
    def __init__(self, control: FakeControl, session: str) -> None:
        self.control = control
        self.session = session

    async def abort(self) -> ActionResult:
        self.control.aborted.append(self.session)
        return self.control.results.pop(0)


class FakeSessions:
    def __init__(self, control: FakeControl) -> None:
        self.control = control

    def get(self, session: str) -> FakeSession:
        return FakeSession(self.control, session)


class FakeControl:
    """The part of the session hub a stop command uses (``sessions.get(id).abort()``)."""

    def __init__(self, results: list[ActionResult]) -> None:
        self.results = results
        self.aborted: list[str] = []
        self.sessions = FakeSessions(self)


async def test_stop_aborts_through_the_session_hub(telegram: FakeTelegram, mount: Mount) -> None:
    control = FakeControl(
        [accepted("run-1"), rejected(NO_ACTIVE_RUN, "nothing to abort"), rejected(SESSION_BUSY, "compacting")]
    )
    bot = await mount(channel(telegram), FakeAgent(), control=control)
    updates = Updates()
    for text in ("/stop", "/stop@fa_test_bot", "/STOP"):
        await bot.update(updates.message(text))
    await telegram.wait_until(lambda: len(telegram.shown(42)) == 3)
    assert telegram.shown(42) == [STOPPED, NOTHING_RUNNING, "⚠️ Could not stop (session_busy)."]
    assert control.aborted == ["42"] * 3


def stoppable(release: asyncio.Event) -> Any:
    async def script(scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        if "partial" in prompt.text:
            yield Text("half an answer")
        await release.wait()
        yield Failed("the run was aborted", False, ABORTED_CODE)

    return script


async def test_an_aborted_turn_keeps_its_partial_answer_or_leaves_nothing(
    telegram: FakeTelegram, mount: Mount
) -> None:
    release = asyncio.Event()
    bot = await mount(channel(telegram), FakeAgent(stoppable(release)))
    updates = Updates()
    await bot.update(updates.message("partial please", chat_id=1))
    await bot.update(updates.message("nothing yet", chat_id=2))
    await telegram.wait_for_text(1, "Thinking")
    await telegram.wait_for_text(2, "Thinking")
    release.set()
    await idle(bot)
    assert telegram.shown(1) == ["half an answer"]
    assert telegram.shown(2) == []


async def test_a_long_answer_is_split_into_fresh_messages(telegram: FakeTelegram, mount: Mount) -> None:
    paragraphs = [f"<b>Part {i}</b> " + "lorem ipsum dolor sit amet " * 40 for i in range(10)]
    text = "\n\n".join(paragraphs)
    agent = FakeAgent(answer(text))
    bot = await mount(channel(telegram), agent)
    ask = "@fa_test_bot essay please"
    summon = Updates().message(
        ask, chat_id=GROUP, chat_type="supergroup", entities=mention(ask, "fa_test_bot")
    )
    await bot.update(summon)
    await idle(bot)
    parts = telegram.shown(GROUP)
    assert len(parts) in (3, 4)  # cut at paragraph breaks, never mid-paragraph
    assert all(2048 <= len(p) <= 4096 for p in parts[:-1])
    assert all(p.startswith("Part ") for p in parts)
    visible = [p.replace("<b>", "").replace("</b>", "") for p in paragraphs]
    assert "\n\n".join(parts) == "\n\n".join(visible).strip()
    live = [m for m in telegram.of_chat(GROUP) if not m.deleted]
    assert live[0].reply_to == summon["message"]["message_id"] and live[1].reply_to is None
    assert all(m.parse_mode == "HTML" for m in live)
    assert [m.deleted for m in telegram.of_chat(GROUP)][0] is True  # the placeholder went first


def slow_tools(release: asyncio.Event) -> Any:
    async def script(scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        yield ToolStarted("1", "mcp__github__create_issue", {"title": "Crash on start", "body": "..."})
        await asyncio.sleep(0.2)
        yield ToolEnded("1", False, "ok")
        await release.wait()
        yield Text("Filed it.")
        yield Completed()

    return script


async def test_the_preview_shows_tools_then_the_answer(telegram: FakeTelegram, mount: Mount) -> None:
    release = asyncio.Event()
    bot = await mount(channel(telegram), FakeAgent(slow_tools(release)))
    await bot.update(Updates().message("file a bug"))
    preview = await telegram.wait_for_text(42, "Github: create issue Crash on start ✓", within=10)
    release.set()
    await idle(bot)
    assert preview.shown == "Filed it."
    gaps = [b[0] - a[0] for a, b in zip(preview.edits, preview.edits[1:], strict=False)]
    assert all(gap >= 0.99 for gap in gaps), gaps


async def test_markup_telegram_rejects_falls_back_to_plain_text(telegram: FakeTelegram, mount: Mount) -> None:
    telegram.fail("editMessageText", 400, 'Bad Request: can\'t parse entities: Unsupported start tag "x"')
    bot = await mount(channel(telegram), FakeAgent(answer("<b>bold</b> done")))
    await bot.update(Updates().message("x"))
    await idle(bot)
    [message] = telegram.of_chat(42)
    assert message.parse_mode is None and message.text == "<b>bold</b> done"


async def test_a_429_is_retried_after_retry_after(telegram: FakeTelegram, mount: Mount, caplog: Any) -> None:
    telegram.fail("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    bot = await mount(channel(telegram), FakeAgent(answer("made it")))
    with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
        await bot.update(Updates().message("x"))
        await idle(bot)
    sends = telegram.methods("sendMessage")
    assert [c.status for c in sends] == [429, 200]
    assert sends[1].at - sends[0].at >= 0.95
    assert telegram.shown(42) == ["made it"]
    assert "sendMessage: 429 Too Many Requests; retrying in 1 s (1/3)" in caplog.text


async def test_a_flood_wait_over_the_cap_fails_visibly(
    telegram: FakeTelegram, mount: Mount, caplog: Any
) -> None:
    telegram.fail("sendMessage", 429, "Too Many Requests: retry after 120", retry_after=120, times=5)
    bot = await mount(channel(telegram), FakeAgent(answer("never shown")))
    with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
        await bot.update(Updates().message("x"))
        await idle(bot)
    assert "retry_after 120 s is over the 30 s cap" in caplog.text
    assert "turn failed" in caplog.text


async def test_photos_become_images_and_files_are_saved(telegram: FakeTelegram, mount: Mount) -> None:
    telegram.add_file("small", "photos/s.jpg", b"s" * 10)
    telegram.add_file("big", "photos/b.jpg", b"JPEGDATA")
    telegram.add_file("huge", "photos/h.jpg", b"h" * 100)
    telegram.add_file("doc", "documents/file_3.pdf", b"%PDF-1.7 report")
    agent = FakeAgent(answer("got it"))
    bot = await mount(channel(telegram), agent)
    photo = [
        {"file_id": "small", "file_unique_id": "a", "width": 90, "height": 60, "file_size": 10},
        {"file_id": "big", "file_unique_id": "b", "width": 1280, "height": 853, "file_size": 8},
        {"file_id": "huge", "file_unique_id": "c", "width": 2560, "height": 1706, "file_size": 100},
    ]
    document = {
        "file_id": "doc",
        "file_unique_id": "d",
        "file_name": "report.pdf",
        "mime_type": "application/pdf",
    }
    updates = Updates()
    await bot.update(updates.message(None, caption="what is this?", photo=photo))
    await bot.update(updates.message(None, caption="summarize", document=document))
    await idle(bot)
    (_, first), (_, second) = agent.calls
    assert [(i.mime_type, i.data) for i in first.images] == [("image/jpeg", "SlBFR0RBVEE=")]
    assert "what is this?" in first.text
    assert "[attached files:\n- report.pdf (15 bytes) → " in second.text
    path = Path(second.text.split("→ ")[1].split("\n")[0])
    assert path.read_bytes() == b"%PDF-1.7 report"
    assert path.parent == bot.state_root / "channels" / "telegram" / "files" / "42"


async def test_an_attachment_that_does_not_load_fails_the_turn_visibly(
    telegram: FakeTelegram, mount: Mount
) -> None:
    agent = FakeAgent()
    bot = await mount(channel(telegram, on_error=lambda f: f"⚠️ {f.details}"), agent)
    document = {"file_id": "gone", "file_unique_id": "x", "file_name": "a.txt"}
    await bot.update(Updates().message(None, caption="read it", document=document))
    await idle(bot)
    assert agent.calls == []
    [shown] = telegram.shown(42)
    assert shown.startswith(
        "⚠️ could not load an attachment: telegram getFile failed: 400 Bad Request: invalid file_id"
    )


async def test_a_pending_turn_replays_at_start_and_a_poisoned_one_is_dropped(
    telegram: FakeTelegram, mount: Mount, tmp_path: Path
) -> None:
    home = tmp_path / "state" / "channels" / "telegram"
    home.mkdir(parents=True)
    record = {
        "session": "42",
        "place": "42",
        "text": "[telegram: chat 42 (private)]\nstill there?",
        "chat": 42,
        "thread": None,
        "reply_to": None,
        "images": [],
        "files": [],
    }
    turns = {"7": {**record, "id": "7", "attempts": 1}, "9": {**record, "id": "9", "attempts": 3, "chat": 43}}
    (home / "turns.json").write_text(json.dumps({"generation": 1, "data": turns}))
    agent = FakeAgent(answer("yes"))
    bot = await mount(channel(telegram), agent)
    await idle(bot)
    assert [scope.session for scope, _ in agent.calls] == ["42"]
    assert telegram.shown(42) == ["yes"]
    assert telegram.shown(43) == [DROPPED_NOTICE]
    await bot.routes.aclose()
    after = TurnStore(FileChannelState(home), label="[test]")
    await after.open()
    assert after.recover() == []  # both finished: neither replays again


async def test_a_replayed_turn_is_not_run_again_when_telegram_redelivers_it(
    telegram: FakeTelegram, mount: Mount, tmp_path: Path
) -> None:
    # A kill before the seen ring's background write leaves the turn in the journal but not its
    # delivery id in the ring: the replay must mark it, or Telegram's redelivery is a second turn.
    home = tmp_path / "state" / "channels" / "telegram"
    home.mkdir(parents=True)
    update = Updates().message("still there?")
    record = {
        "session": "42",
        "place": "42",
        "text": "[telegram: chat 42 (private)]\nstill there?",
        "chat": 42,
        "thread": None,
        "reply_to": None,
        "images": [],
        "files": [],
        "id": str(update["update_id"]),
        "attempts": 1,
    }
    (home / "turns.json").write_text(json.dumps({"generation": 1, "data": {record["id"]: record}}))
    agent = FakeAgent(answer("yes"))
    bot = await mount(channel(telegram), agent)
    await idle(bot)
    assert await bot.update(update) == (200, "")
    await idle(bot)
    assert len(agent.calls) == 1
    assert telegram.shown(42) == ["yes"]


async def test_a_write_that_fails_answers_500_so_telegram_redelivers(
    telegram: FakeTelegram, mount: Mount, tmp_path: Path
) -> None:
    agent = FakeAgent(answer("late but once"))
    bot = await mount(channel(telegram), agent)
    journal = bot.state_root / "channels" / "telegram" / "turns.jsonl"
    journal.unlink(missing_ok=True)
    journal.mkdir(parents=True)  # an append now fails, even for root
    update = Updates().message("hello")
    assert await bot.update(update) == (500, "cannot persist the update\n")
    await idle(bot)
    assert agent.calls == []
    journal.rmdir()
    assert await bot.update(update) == (200, "")  # the redelivery is not a duplicate
    await idle(bot)
    assert telegram.shown(42) == ["late but once"]


async def test_privacy_mode_is_warned_about_once_at_start(mount: Mount, caplog: Any) -> None:
    async with FakeTelegram(privacy=True) as private:
        with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
            await mount(channel(private), FakeAgent())
        assert caplog.text.count("[telegram] privacy mode is on:") == 1
        assert "Disable it via @BotFather → /setprivacy." in caplog.text
        assert len(private.methods("getMe")) == 1


def test_mounting_without_tokens_is_an_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastagent_cli.errors import ServeError
    from fastagent_cli.serving.channels import ChannelContext

    monkeypatch.delenv("TELEGRAM_SECRET_TOKEN", raising=False)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "1:x")
    with pytest.raises(ServeError, match="set TELEGRAM_SECRET_TOKEN in .env"):
        telegram_channel()(ChannelContext(FakeAgent(), Path("/tmp/x")))
    monkeypatch.setenv("TELEGRAM_SECRET_TOKEN", "abc")
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN")
    with pytest.raises(ServeError, match="set TELEGRAM_BOT_TOKEN in .env"):
        telegram_channel()(ChannelContext(FakeAgent(), Path("/tmp/x")))


async def test_a_forum_topic_is_its_own_session_and_a_reply_chain_is_not(
    telegram: FakeTelegram, mount: Mount
) -> None:
    agent = FakeAgent(answer("here"))
    bot = await mount(channel(telegram), agent)
    updates = Updates()
    ask = "@fa_test_bot status?"
    topic = updates.message(
        ask, chat_id=GROUP, chat_type="supergroup", thread_id=55, entities=mention(ask, "fa_test_bot")
    )
    await bot.update(topic)
    chain = updates.message(
        ask, chat_id=GROUP, chat_type="supergroup", entities=mention(ask, "fa_test_bot"), message_thread_id=3
    )
    await bot.update(chain)
    await idle(bot)
    assert [scope.session for scope, _ in agent.calls] == [f"{GROUP}:55", str(GROUP)]
    threads = [c.params.get("message_thread_id") for c in telegram.methods("sendMessage")]
    assert threads == [55, None]


async def test_a_quick_answer_replaces_the_placeholder_at_once(telegram: FakeTelegram, mount: Mount) -> None:
    bot = await mount(channel(telegram), FakeAgent(answer("fast")))
    await bot.update(Updates().message("quick"))
    await idle(bot)
    [message] = telegram.of_chat(42)
    [(edited_at, text, _)] = message.edits
    assert text == "fast" and edited_at - message.sent_at < 0.9  # no wait after a bare placeholder
