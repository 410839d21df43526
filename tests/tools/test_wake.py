"""The ``wake`` / ``unwake`` tools: every guardrail message, the stored entries, session scoping and
the pair rule (features E12, E13, J11-J13, J16-J18)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.state.claims import open_schedule_claims
from fastagent_cli.tools.base import ReadonlySession, Tool, ToolContext
from fastagent_cli.tools.define import tool
from fastagent_cli.tools.wake import MAX_PENDING_WAKEUPS, make_wake_tools, parse_delay, with_wake_tools
from tests.schedules.helpers import FakeClock, at

NOW = at("2025-01-06 09:00")


def ctx(session: str | None = "chat-1") -> ToolContext:
    if session is None:
        return ToolContext(cwd=".")
    return ToolContext(cwd=".", session=ReadonlySession(SessionRecord(session, {}, [])))


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, Tool]:
    return {t.name: t for t in make_wake_tools(open_schedule_claims(tmp_path), FakeClock(NOW))}


async def call(tool_: Tool, args: dict[str, Any], session: str | None = "chat-1") -> str:
    result = await tool_.execute(args, ctx(session))
    assert not result.is_error, result.content
    text = result.content[0]["text"]
    assert isinstance(text, str)
    return text


def stored(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "schedule" / "wakeups.json"
    return json.loads(path.read_text()) if path.exists() else []


async def test_a_one_shot_is_recorded_and_answered(tools: dict[str, Tool], tmp_path: Path) -> None:
    text = await call(tools["wake"], {"in": "30m", "prompt": "check the build"})
    [entry] = stored(tmp_path)
    assert entry == {
        "id": entry["id"],
        "session": "chat-1",
        "prompt": "check the build",
        "fireAt": "2025-01-06T09:30:00.000Z",
    }
    assert text == (
        f"OK — I'll wake up at 2025-01-06T09:30:00.000Z (id {entry['id']}) to: check the build. "
        f'Use unwake({{ id: "{entry["id"]}" }}) if it becomes unnecessary.'
    )


@pytest.mark.parametrize(
    ("delay", "seconds"),
    [
        (90, 90.0),
        (60.5, 60.5),
        ("90s", 90.0),
        ("2m", 120.0),
        ("1.5h", 5400.0),
        ("1d", 86400.0),
        (" 3 H ", 10800.0),
    ],
)
def test_in_accepts_seconds_or_a_unit(delay: str | float, seconds: float) -> None:
    assert parse_delay(delay) == seconds


@pytest.mark.parametrize("delay", ["120", "2 weeks", "-5m", "0m", "m", "", "1e3s", 0, -3, float("inf")])
def test_in_refuses_anything_else(delay: str | float) -> None:
    assert parse_delay(delay) is None


async def test_a_bare_numeral_string_is_refused(tools: dict[str, Tool], tmp_path: Path) -> None:
    text = await call(tools["wake"], {"in": "120", "prompt": "x"})
    assert text == (
        'couldn\'t parse "in" ("120") — use a unit like "30m" / "2h" / "1d", or a number of seconds '
        '(a bare number as text like "120" is rejected).'
    )
    assert stored(tmp_path) == []


async def test_the_minimum_delay_is_sixty_seconds(tools: dict[str, Tool], tmp_path: Path) -> None:
    assert await call(tools["wake"], {"in": 59, "prompt": "x"}) == "too soon — the minimum wake delay is 60s."
    assert (
        await call(tools["wake"], {"in": "59s", "prompt": "x"}) == "too soon — the minimum wake delay is 60s."
    )
    assert stored(tmp_path) == []
    assert (await call(tools["wake"], {"in": 60, "prompt": "x"})).startswith(
        "OK — I'll wake up at 2025-01-06T09:01:00"
    )


async def test_a_wake_too_far_ahead_is_refused(tools: dict[str, Tool]) -> None:
    assert await call(tools["wake"], {"in": "4000d", "prompt": "x"}) == (
        "too far — a wake-up can be at most 3650 days ahead."
    )


async def test_exactly_one_of_in_and_cron(tools: dict[str, Tool]) -> None:
    both = {"in": "1h", "cron": "0 9 * * *", "prompt": "x"}
    expected = "pass exactly one of `in` (one-shot) or `cron` (recurring)."
    assert await call(tools["wake"], both) == expected
    assert await call(tools["wake"], {"prompt": "x"}) == expected


async def test_invalid_arguments_go_back_as_an_error(tools: dict[str, Tool]) -> None:
    for args in (
        {"in": True, "prompt": "x"},
        {"in": "1h", "prompt": ""},
        {"in": "1h", "prompt": "x", "at": "9"},
    ):
        result = await tools["wake"].execute(args, ctx())
        assert result.is_error
        assert result.content[0]["text"].startswith("Invalid arguments: ")


async def test_a_recurring_wake_is_recorded_with_its_first_instant(
    tools: dict[str, Tool], tmp_path: Path
) -> None:
    text = await call(tools["wake"], {"cron": "0 9 * * 1-5", "tz": "Europe/Paris", "prompt": "stand-up"})
    [entry] = stored(tmp_path)
    assert entry == {
        "id": entry["id"],
        "session": "chat-1",
        "prompt": "stand-up",
        "fireAt": "2025-01-07T08:00:00.000Z",  # 09:00 Paris tomorrow (today's passed)
        "cron": "0 9 * * 1-5",
        "tz": "Europe/Paris",
    }
    assert text == (
        f'OK — recurring wake {entry["id"]} (cron "0 9 * * 1-5" Europe/Paris), first at '
        f'2025-01-07T08:00:00.000Z: stand-up. Use unwake({{ id: "{entry["id"]}" }}) to stop it.'
    )


@pytest.mark.parametrize("cron", ["*/5 * * * *", "0,5 9 * * *", "* 9 * * *", "0,1 12 * * *", "0,1 9 * * *"])
async def test_a_recurring_wake_fires_at_most_every_ten_minutes(tools: dict[str, Tool], cron: str) -> None:
    text = await call(tools["wake"], {"cron": cron, "prompt": "x"})
    assert text == "too frequent — a recurring wake must fire at most every 10 minutes."


async def test_a_recurring_wake_every_ten_minutes_is_allowed(tools: dict[str, Tool]) -> None:
    assert (await call(tools["wake"], {"cron": "*/10 * * * *", "prompt": "x"})).startswith(
        "OK — recurring wake"
    )


async def test_a_bad_cron_or_zone_is_explained(tools: dict[str, Tool], tmp_path: Path) -> None:
    assert await call(tools["wake"], {"cron": "61 * * * *", "prompt": "x"}) == (
        'invalid cron/tz: invalid cron "61 * * * *": [61 * * * *] is not acceptable, out of range'
    )
    assert await call(tools["wake"], {"cron": "0 9 * * *", "tz": "Mars/Olympus", "prompt": "x"}) == (
        'invalid cron/tz: unknown time zone "Mars/Olympus" (use an IANA name such as "Europe/Paris" or "UTC")'
    )
    assert await call(tools["wake"], {"cron": "0 0 30 2 *", "prompt": "x"}) == (
        "this cron never fires (or fires only once) — use `in` for a one-shot."
    )
    assert stored(tmp_path) == []


async def test_twenty_pending_per_conversation(tools: dict[str, Tool], tmp_path: Path) -> None:
    for i in range(MAX_PENDING_WAKEUPS):
        await call(tools["wake"], {"in": f"{i + 2}m", "prompt": f"task {i} " + "y" * 70})
    text = await call(tools["wake"], {"in": "1h", "prompt": "one more"})
    assert text.startswith(
        "too many pending wake-ups for this conversation (20) — wait for some to fire, "
        "or unwake one. Pending: "
    )
    first = stored(tmp_path)[0]
    assert f"{first['id']} at 2025-01-06T09:02:00.000Z: task 0 {'y' * 53}…" in text  # 60-char previews
    assert len(stored(tmp_path)) == 20
    other = await call(tools["wake"], {"in": "1h", "prompt": "mine"}, session="chat-2")
    assert other.startswith("OK — I'll wake up")  # the cap is per conversation


async def test_outside_a_conversation_nothing_is_recorded(tools: dict[str, Tool], tmp_path: Path) -> None:
    assert await call(tools["wake"], {"in": "1h", "prompt": "x"}, session=None) == (
        "wake is only available inside a conversation (there is no session to resume)."
    )
    assert (
        await call(tools["unwake"], {"id": "abc"}, session=None)
        == "unwake is only available inside a conversation."
    )
    assert not (tmp_path / "schedule").exists()


async def test_unwake_cancels_only_this_conversations_wakes(tools: dict[str, Tool], tmp_path: Path) -> None:
    await call(tools["wake"], {"in": "1h", "prompt": "theirs"}, session="chat-2")
    theirs = stored(tmp_path)[0]["id"]
    assert await call(tools["unwake"], {"id": theirs}) == (
        f"no pending wake-up {theirs} in this conversation (already fired, or not yours)."
    )
    assert [e["id"] for e in stored(tmp_path)] == [theirs]
    assert (
        await call(tools["unwake"], {"id": theirs}, session="chat-2") == f"OK — wake-up {theirs} cancelled."
    )
    assert stored(tmp_path) == []


def test_the_pair_is_suppressed_by_an_agent_tool_named_either(tmp_path: Path) -> None:
    @tool
    def wake(note: str) -> str:
        """Mine."""
        return note

    claims, clock = open_schedule_claims(tmp_path), FakeClock(NOW)
    mounted, warnings = with_wake_tools([wake], claims, clock)
    assert [t.name for t in mounted] == ["wake"] and mounted[0] is wake
    assert warnings == [
        f'the agent\'s own "wake" ({wake.source}) replaces the built-in wake and unwake '
        "(they are mounted as a pair)"
    ]
    mounted, warnings = with_wake_tools([], claims, clock)
    assert [t.name for t in mounted] == ["wake", "unwake"] and warnings == []
    assert re.search(r"NOT delivered", mounted[0].description)
    assert mounted[0].parameters["properties"]["in"] == {
        "anyOf": [{"type": "string"}, {"type": "number"}],
        "description": 'one-shot delay: a duration with a unit ("30m", "2h", "1d") or a number of seconds',
    }
