"""Cron arithmetic and the process clock: fields, nicknames, errors, strictly-after, time zones,
``FASTAGENT_CLOCK_OFFSET`` and the ISO form of state files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from fastagent_cli.errors import ConfigError
from fastagent_cli.state.clock import format_instant, parse_instant, system_clock
from fastagent_cli.state.cron import cron_error, next_after
from tests.schedules.helpers import at


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("* * * *", 'cron "* * * *" has 4 field(s); it needs 5 (minute hour day-of-month month day-of-week)'),
        (
            "0 9 * * * *",
            'cron "0 9 * * * *" has 6 field(s); it needs 5 (minute hour day-of-month month day-of-week)',
        ),
        ("", 'cron "" has 0 field(s); it needs 5 (minute hour day-of-month month day-of-week)'),
        ("61 * * * *", 'invalid cron "61 * * * *": [61 * * * *] is not acceptable, out of range'),
        (
            "@sometimes",
            'unknown cron nickname "@sometimes" (known: @yearly, @annually, @monthly, @weekly, @daily, '
            "@midnight, @hourly)",
        ),
    ],
)
def test_bad_expressions_are_explained(expr: str, problem: str) -> None:
    assert cron_error(expr) == problem


def test_an_unknown_zone_is_explained() -> None:
    for tz in ("Mars/Olympus", "../../etc/passwd", ""):
        assert cron_error("0 9 * * *", tz) == (
            f'unknown time zone "{tz}" (use an IANA name such as "Europe/Paris" or "UTC")'
        )


@pytest.mark.parametrize(
    "expr", ["0 9 * * MON-FRI", "*/15 9-17 * * 1-5", "0 0 L * *", "0 9 * * 5#2", "@daily", "@HOURLY"]
)
def test_good_expressions(expr: str) -> None:
    assert cron_error(expr, "Europe/Paris") is None


def test_next_is_strictly_after_and_in_utc() -> None:
    assert next_after("0 9 * * *", "UTC", at("2025-01-06 09:00")) == at("2025-01-07 09:00")
    assert next_after("0 9 * * *", "UTC", at("2025-01-06 08:59:59.999")) == at("2025-01-06 09:00")
    assert next_after("@hourly", "UTC", at("2025-01-06 09:00:01")) == at("2025-01-06 10:00")
    paris = next_after("0 9 * * *", "Europe/Paris", at("2025-07-01 00:00"))
    assert paris == at("2025-07-01 07:00") and paris.tzinfo == UTC
    assert next_after("0 0 30 2 *", "UTC", at("2025-01-06 09:00")) is None


def test_the_clock_offset_moves_now() -> None:
    assert system_clock({}).offset == timedelta(0)
    shifted = system_clock({"FASTAGENT_CLOCK_OFFSET": "-3600.5"})
    assert abs((datetime.now(UTC) - shifted.now()).total_seconds() - 3600.5) < 5
    for bad in ("soon", "nan", "inf"):
        with pytest.raises(ConfigError, match=f'FASTAGENT_CLOCK_OFFSET="{bad}" is not a number of seconds'):
            system_clock({"FASTAGENT_CLOCK_OFFSET": bad})


def test_instants_are_utc_milliseconds_with_z() -> None:
    moment = datetime(2025, 1, 6, 10, 0, 0, 123999, tzinfo=timezone(timedelta(hours=1)))
    assert format_instant(moment) == "2025-01-06T09:00:00.123Z"
    assert parse_instant("2025-01-06T09:00:00.123Z") == at("2025-01-06 09:00:00.123")
    assert parse_instant("2025-01-06T10:00:00+01:00") == at("2025-01-06 09:00")
    with pytest.raises(ValueError, match="has no UTC offset"):
        parse_instant("2025-01-06T09:00:00")
