from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fastagent_cli.errors import SessionBusyError, SessionError
from fastagent_cli.sessions.layout import record_name
from fastagent_cli.sessions.record import INTERRUPTED_TOOL_TEXT
from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore
from tests.conftest import record_files


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def path_of(store: FileSessionStore, session: str) -> Path:
    path = store.location(session)
    assert path is not None
    return path


async def test_the_record_is_published_when_created(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    record = await store.open_or_create("-1001234567890")
    path = path_of(store, "-1001234567890")
    header = lines(path)[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]  # pi's header, in pi's order
    assert header["type"] == "session" and header["version"] == 3
    assert header["cwd"] == str(tmp_path) and header["id"] == "s-1001234567890"  # the spec's spelling
    stamp = str(header["timestamp"]).replace(":", "-").replace(".", "-")
    assert path == tmp_path / "s" / "agent-session" / f"{stamp}_s-1001234567890.jsonl"
    record.append_message({"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1})
    assert lines(path)[1]["message"]["content"][0]["text"] == "q"
    again = await store.open_or_create("-1001234567890")
    assert again.header == header and len(again.entries) == 1
    assert not list((tmp_path / "s").glob(".*.tmp"))


async def test_entries_form_a_tree_with_the_last_as_leaf(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    record = await store.open_or_create("t")
    a = record.append("label", targetId="x", label="a")
    b = record.append("label", targetId="x", label="b")
    assert a["parentId"] is None and b["parentId"] == a["id"]
    assert len(a["id"]) == 8 and a["timestamp"].endswith("Z")
    reopened = await store.open_if_exists("t")
    assert reopened is not None and reopened.leaf_id == b["id"]
    assert [e["id"] for e in reopened.path()] == [a["id"], b["id"]]


async def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    record = await store.open_or_create("torn")
    record.append_message({"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1})
    path = path_of(store, "torn")
    with open(path, "a") as fh:
        fh.write('{"type":"message","id":"dead","parentId":')
    reopened = await store.open_if_exists("torn")
    assert reopened is not None and len(reopened.entries) == 1


async def test_a_dangling_tool_call_is_repaired_on_open(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    record = await store.open_or_create("crash")
    record.append_message({"role": "user", "content": [{"type": "text", "text": "run it"}], "timestamp": 1})
    record.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "c1", "name": "slow", "arguments": {}},
                {"type": "toolCall", "id": "c2", "name": "fast", "arguments": {}},
            ],
            "api": "scripted",
            "provider": "scripted",
            "model": "x",
            "usage": {},
            "stopReason": "toolUse",
            "timestamp": 2,
        }  # type: ignore[typeddict-item]
    )
    record.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c2",
            "toolName": "fast",
            "content": [{"type": "text", "text": "ok"}],
            "isError": False,
            "timestamp": 3,
        }
    )
    reopened = await store.open_if_exists("crash")
    assert reopened is not None
    repaired = reopened.entries[-1]["message"]
    assert repaired["toolCallId"] == "c1" and repaired["isError"] is True
    assert repaired["content"][0]["text"] == INTERRUPTED_TOOL_TEXT
    assert repaired["details"] == {"fastagent": "interrupted-tool-call"}
    assert (await store.open_if_exists("crash")).dangling_tool_calls() == []  # type: ignore[union-attr]
    assert len(lines(path_of(store, "crash"))) == 5  # header + 3 + one repair, not two


async def test_open_if_exists_never_creates(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "nothing", tmp_path)
    assert await store.open_if_exists("ghost") is None
    assert not (tmp_path / "nothing").exists()


async def test_a_foreign_file_is_a_session_error(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    store.files.directory.mkdir()
    (store.files.directory / record_name("2026-01-01T00:00:00.000Z", "bad")).write_text('{"hello": 1}\n')
    with pytest.raises(SessionError, match="not a session record"):
        await store.open_if_exists("bad")


def test_the_lease_is_exclusive_within_a_process(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    release = store.try_lease("a")
    assert release is not None
    assert store.try_lease("a") is None
    assert FileSessionStore(tmp_path, tmp_path).try_lease("a") is None
    other = store.try_lease("b")
    assert other is not None
    release()
    other()
    again = store.try_lease("a")
    assert again is not None
    again()


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_leased_holds_the_lease_for_the_block_and_frees_it_however_it_ends(
    tmp_path: Path, kind: str
) -> None:
    store = FileSessionStore(tmp_path, tmp_path) if kind == "file" else MemorySessionStore()
    async with store.leased("a") as lease:
        assert lease.session == "a"
        assert store.try_lease("a") is None  # held
        with pytest.raises(SessionBusyError, match="session a is busy") as busy:
            async with store.leased("a"):
                raise AssertionError("a held lease was entered twice")
        assert busy.value.retryable and busy.value.session == "a"
        async with store.leased("b"):  # another session is another lease
            pass
    with pytest.raises(KeyError):
        async with store.leased("a"):
            raise KeyError("the block failed")
    async with store.leased("a"):  # freed by the failure too
        pass
    lease = store.leased("a")
    async with lease:
        pass
    with pytest.raises(RuntimeError, match="entered already"):
        async with lease:
            pass


async def test_a_lease_handed_over_outlives_its_block(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    async with contextlib.AsyncExitStack() as held:
        await held.enter_async_context(store.leased("a"))
        handed = held.pop_all()
    with pytest.raises(SessionBusyError):  # still held by whoever took the stack
        async with store.leased("a"):
            pass
    await handed.aclose()
    async with store.leased("a"):
        pass


def test_the_lease_is_exclusive_across_processes_and_freed_by_death(tmp_path: Path) -> None:
    holder = textwrap.dedent(
        f"""
        import sys, time
        from fastagent_cli.sessions.store import FileSessionStore
        release = FileSessionStore({str(tmp_path)!r}).try_lease("shared")
        print("held" if release else "busy", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        assert FileSessionStore(tmp_path).try_lease("shared") is None
    finally:
        proc.kill()
        proc.communicate()
    release = FileSessionStore(tmp_path).try_lease("shared")
    assert release is not None
    release()


async def test_memory_store_behaves_like_a_reopen() -> None:
    store = MemorySessionStore("/w")
    record = await store.open_or_create("m")
    record.append("label", targetId="x")
    view = await store.open_if_exists("m")
    assert view is not None and len(view.entries) == 1 and view.header["cwd"] == "/w"
    assert store.try_lease("m") is not None and store.try_lease("m") is None


async def test_concurrent_creators_publish_one_record(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio
        from fastagent_cli.sessions.store import FileSessionStore
        async def main():
            r = await FileSessionStore({str(tmp_path)!r}).open_or_create("race")
            print(r.header["timestamp"])
        asyncio.run(main())
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    ids = {p.communicate()[0].strip() for p in procs}
    assert len(ids) == 1
    assert len(record_files(tmp_path)) == 1


async def test_appends_after_a_torn_line_start_on_their_own_line(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    await store.open_or_create("torn2")
    with open(path_of(store, "torn2"), "a") as fh:
        fh.write('{"type":"message","id":"dead"')  # a crash mid-write
    fresh = FileSessionStore(tmp_path, tmp_path)
    record = await fresh.open_if_exists("torn2")
    assert record is not None
    record.append("label", targetId="x", label="after the crash")
    reopened = await FileSessionStore(tmp_path, tmp_path).open_if_exists("torn2")
    assert reopened is not None
    assert [e.get("label") for e in reopened.entries] == ["after the crash"]


async def test_reads_are_incremental_and_see_other_writers(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path, tmp_path)
    record = await store.open_or_create("inc")
    record.append("label", targetId="a", label="mine")
    other = FileSessionStore(tmp_path, tmp_path)  # another process's view of the same file
    theirs = await other.open_if_exists("inc")
    assert theirs is not None
    theirs.append("label", targetId="b", label="theirs")
    path = path_of(store, "inc")
    with open(path, "a") as fh:
        fh.write('{"type":"label","id":"half","parentId":null,"timestamp":"t","label":"hal')
    seen = await store.open_if_exists("inc")
    assert seen is not None and [e["label"] for e in seen.entries] == ["mine", "theirs"]
    with open(path, "a") as fh:
        fh.write('f"}\n')  # the writer finishes its line
    seen = await store.open_if_exists("inc")
    assert seen is not None and [e["label"] for e in seen.entries] == ["mine", "theirs", "half"]
    replacement = path.with_suffix(".new")
    replacement.write_text(path.read_text().splitlines()[0] + "\n")
    os.replace(replacement, path)  # a new file (new inode) is parsed from the start
    seen = await store.open_if_exists("inc")
    assert seen is not None and seen.entries == []


def test_the_parse_cache_keeps_within_its_byte_budget(tmp_path: Path) -> None:
    from fastagent_cli.sessions.parsed import ParsedFiles

    parsed = ParsedFiles(max_bytes=1000)
    files = []
    for i in range(5):
        path = tmp_path / f"f{i}.jsonl"
        path.write_text(json.dumps({"n": i, "pad": "x" * 300}) + "\n")
        files.append(path)
        assert parsed.read(path)[0]["n"] == i
        assert parsed.cached_bytes <= 1000
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"pad": "y" * 5000}) + "\n")
    assert parsed.read(big)[0]["pad"] == "y" * 5000  # too big to keep, still read correctly
    assert parsed.cached_bytes <= 1000
    assert parsed.read(files[0])[0]["n"] == 0


async def test_records_and_their_directories_are_private_from_creation(tmp_path: Path) -> None:
    previous = os.umask(0)  # even a permissive umask must not widen what the store creates
    try:
        state = tmp_path / ".fastagent"
        store = FileSessionStore(state / "sessions", tmp_path)
        release = store.try_lease("s1")
        assert release is not None
        record = await store.open_or_create("s1")
        record.append_message({"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1})
        release()
    finally:
        os.umask(previous)
    modes = {
        path.relative_to(tmp_path).as_posix(): oct(path.stat().st_mode & 0o777)
        for path in [state, *sorted(state.rglob("*"))]
    }
    records = ".fastagent/sessions/agent-session"
    assert modes == {
        ".fastagent": "0o700",
        ".fastagent/sessions": "0o700",
        ".fastagent/sessions/.locks": "0o700",
        ".fastagent/sessions/.locks/ss1.lock": "0o600",
        ".fastagent/sessions/.locks/create.lock": "0o600",
        ".fastagent/sessions/.locks/create.generation": "0o600",
        ".fastagent/sessions/.staging": "0o700",
        records: "0o700",
        f"{records}/{path_of(store, 's1').name}": "0o600",
    }


async def test_a_corrupt_middle_line_is_skipped_with_a_warning_and_the_older_history_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    record = await store.open_or_create("c")
    for text in ("one", "two", "three", "four"):
        record.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
    path = path_of(store, "c")
    rows = path.read_text(encoding="utf-8").splitlines()
    rows[2] = rows[2][: len(rows[2]) // 2]  # line 3 ("two") cut in half by some accident
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")

    with caplog.at_level("WARNING", "fastagent.sessions"):
        reopened = await FileSessionStore(tmp_path / "s", tmp_path).open_if_exists("c")
    assert reopened is not None
    texts = [m["content"][0]["text"] for m in reopened.context().messages]  # type: ignore[index]
    assert texts == ["one", "three", "four"]
    (warning,) = [r.getMessage() for r in caplog.records]
    assert (
        warning == f"[sessions] {path}: line 3 is not a JSON object; skipped (the entries around it are kept)"
    )

    reopened.append_message({"role": "user", "content": [{"type": "text", "text": "five"}], "timestamp": 1})
    again = await store.open_if_exists("c")
    assert again is not None
    assert [m["content"][0]["text"] for m in again.context().messages] == ["one", "three", "four", "five"]  # type: ignore[index]


async def test_a_leaf_entry_of_the_original_moves_the_leaf(tmp_path: Path) -> None:
    """pi's harness (the original's ``navigate``) records a leaf move as a ``leaf`` entry."""
    store = FileSessionStore(tmp_path, tmp_path)
    record = await store.open_or_create("nav")
    a = record.append("label", targetId="x", label="a")
    b = record.append("label", targetId="x", label="b")
    record.append("leaf", targetId=a["id"])  # navigated back to a
    reopened = await store.open_if_exists("nav")
    assert reopened is not None and reopened.leaf_id == a["id"]
    assert [e["id"] for e in reopened.path()] == [a["id"]]
    c = reopened.append("label", targetId="x", label="c")
    assert c["parentId"] == a["id"] and b["id"] not in [e["id"] for e in reopened.path()]


async def test_records_are_private_from_creation(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    await store.open_or_create("private")
    path = path_of(store, "private")
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert not list((tmp_path / "s" / ".staging").iterdir())  # the staged copy is gone


async def test_workspaces_sharing_a_sessions_directory_keep_their_own_records(tmp_path: Path) -> None:
    # agent-session/ holds every workspace's records (as the original after 0.18 keeps them):
    # a store opens and lists only those whose header names its workspace
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shared = tmp_path / "shared"
    a = FileSessionStore(shared, tmp_path / "a")
    b = FileSessionStore(shared, tmp_path / "b")
    first = await a.open_or_create("-100")
    first.append_message({"role": "user", "content": [{"type": "text", "text": "in a"}], "timestamp": 1})
    assert await b.open_if_exists("-100") is None  # a's record is not b's
    second = await b.open_or_create("-100")
    second.append_message({"role": "user", "content": [{"type": "text", "text": "in b"}], "timestamp": 1})
    assert path_of(a, "-100") != path_of(b, "-100")
    assert {p.parent.name for p in (path_of(a, "-100"), path_of(b, "-100"))} == {"agent-session"}
    assert [s.first_prompt for s in a.list_sessions()] == ["in a"]
    assert [s.first_prompt for s in b.list_sessions()] == ["in b"]
    reopened = await FileSessionStore(shared, tmp_path / "a").open_if_exists("-100")  # a new process
    assert reopened is not None and reopened.entries[0]["message"]["content"][0]["text"] == "in a"
    assert await a.delete("-100") and await b.open_if_exists("-100") is not None


async def test_an_older_layout_record_is_continued_in_place_and_the_spec_one_wins(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    older = store.files.directory  # --<workspace>--/: the original 0.18's, and this package's before
    older.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "telegram%3A-5", "timestamp": "2026-01-01T00:00:00.000Z"}
    path = older / record_name("2026-01-01T00:00:00.000Z", "telegram:-5")
    path.write_text(json.dumps({**header, "cwd": str(tmp_path)}) + "\n")
    record = await store.open_or_create("telegram:-5")
    record.append_message({"role": "user", "content": [{"type": "text", "text": "more"}], "timestamp": 1})
    assert path_of(store, "telegram:-5") == path and len(lines(path)) == 2  # appended where it was
    assert not (tmp_path / "s" / "agent-session").exists()  # nothing moved, nothing created
    # the same id in the spec's layout (the original after 0.18 created one): that one is opened
    spec = tmp_path / "s" / "agent-session" / "2026-01-01T00-00-00-000Z_stelegram_3A-5.jsonl"
    spec.parent.mkdir()
    spec.write_text(json.dumps({**header, "id": "stelegram_3A-5", "cwd": str(tmp_path)}) + "\n")
    again = FileSessionStore(tmp_path / "s", tmp_path)
    assert path_of(again, "telegram:-5") == spec
    assert [s.session for s in again.list_sessions()].count("telegram:-5") == 1
