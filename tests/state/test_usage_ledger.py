"""The usage ledger on files: whole lines appended, sums per session and per UTC day that see
every process's lines, a torn last line skipped, a fresh reader (a restart) seeing everything."""

from __future__ import annotations

from pathlib import Path

from fastagent_cli.state.usage import (
    FileUsageLedger,
    UsageEntry,
    UsageTotals,
    day_of,
    day_start_ms,
    entry_from_usage,
    group_totals,
)

DAY = 86_400_000
T0 = 1_764_633_600_000  # 2025-12-02T00:00:00Z


def entry(at: int, session: str = "s1", model: str = "p/m", cost: float = 0.5) -> UsageEntry:
    return UsageEntry(at, session, model, input=100, output=10, cache_read=5, cache_write=1, cost=cost)


async def test_sums_per_session_and_day_see_other_writers(tmp_path: Path) -> None:
    one, other = FileUsageLedger(tmp_path), FileUsageLedger(tmp_path)  # two processes
    await one.add(entry(T0 - 1000, "s1"))  # yesterday (UTC)
    await one.add(entry(T0 + 1000, "s1"))
    assert (await one.session_totals(["s1"]))["s1"].requests == 2
    await other.add(entry(T0 + 2000, "s2", cost=0.25))
    sums = await one.session_totals(["s1", "s2", "absent"])
    assert set(sums) == {"s1", "s2"}
    assert sums["s1"].cost == 1.0 and sums["s1"].tokens == 2 * 116
    assert sums["s2"].cost == 0.25
    today = await one.since(day_start_ms(T0 + 5000))
    assert (today.requests, today.cost) == (2, 0.75)
    assert (await one.since(T0 + 1500)).requests == 1  # not a day's start: summed from the entries
    restarted = FileUsageLedger(tmp_path)
    assert (await restarted.since(T0 - DAY)).requests == 3
    assert [e.session for e in await restarted.entries(T0)] == ["s1", "s2"]


async def test_a_torn_last_line_is_skipped_and_later_lines_count(tmp_path: Path) -> None:
    ledger = FileUsageLedger(tmp_path)
    await ledger.add(entry(T0))
    with open(ledger.path, "ab") as handle:
        handle.write(b'{"at": 1, "sess')  # a crash in the middle of a line
    assert (await ledger.session_totals(["s1"]))["s1"].requests == 1
    await ledger.add(entry(T0 + 1))  # starts on a line of its own
    assert (await ledger.session_totals(["s1"]))["s1"].requests == 2
    assert len(await FileUsageLedger(tmp_path).entries()) == 2


async def test_no_file_means_no_usage(tmp_path: Path) -> None:
    ledger = FileUsageLedger(tmp_path / "missing")
    assert await ledger.session_totals(["s"]) == {}
    assert (await ledger.since(0)).requests == 0
    assert await ledger.entries() == []


def test_entries_from_pi_usage_and_grouping() -> None:
    usage = {"input": 10, "output": 5, "cacheRead": 2, "cacheWrite": 0, "cost": {"total": 0.001}}
    made = entry_from_usage(T0, "s", "anthropic/claude", usage)
    assert (made.tokens, made.cost) == (17, 0.001)
    assert entry_from_usage(T0, "s", "x/y", {}).tokens == 0  # a server that reported nothing
    entries = [entry(T0, "a", "p/x"), entry(T0 + DAY, "b", "p/y"), entry(T0 + DAY + 1, "a", "p/x")]
    assert (
        list(group_totals(entries, "day")) == [day_of(T0), day_of(T0 + DAY)] == ["2025-12-02", "2025-12-03"]
    )
    by_session = group_totals(entries, "session")
    assert by_session["a"].requests == 2 and by_session["b"].requests == 1
    assert set(group_totals(entries, "model")) == {"p/x", "p/y"}
    assert UsageTotals.of(entries).to_json()["totalTokens"] == 3 * 116
