"""``bash``: merged output, exit codes, tail truncation with the spool file, timeouts,
cancellation that leaves no process behind, and ``PI_SESSION_ID``."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import ToolEnded
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.tools.base import ToolContext
from fastagent_cli.tools.coding import coding_tools
from tests.conformance.suite import drain
from tests.tools.coding.helpers import run_tool, text_of

SPOOL = re.compile(r"Full output: (\S+/pi-bash-[0-9a-f]{16}\.log)\]$")


@pytest.fixture(autouse=True)
def spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Spool files go to a per-test TMPDIR."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    yield spool


def gone(pid: int, group: bool = False) -> bool:
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def wait_gone(pid: int, group: bool = False, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if gone(pid, group):
            return True
        await asyncio.sleep(0.05)
    return gone(pid, group)


async def wait_for_file(path: Path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def test_output_and_working_directory(tmp_path: Path) -> None:
    result = await run_tool("bash", tmp_path, command="echo hello; pwd")
    assert not result.is_error
    assert text_of(result) == f"hello\n{tmp_path}\n"


async def test_no_output(tmp_path: Path) -> None:
    assert text_of(await run_tool("bash", tmp_path, command="true")) == "(no output)"


async def test_stdout_and_stderr_merge_in_arrival_order(tmp_path: Path) -> None:
    text = text_of(await run_tool("bash", tmp_path, command="echo a; echo b >&2; echo c; echo d >&2"))
    assert text == "a\nb\nc\nd\n"


async def test_stdin_is_closed(tmp_path: Path) -> None:
    started = time.monotonic()
    assert text_of(await run_tool("bash", tmp_path, command="cat")) == "(no output)"
    assert time.monotonic() - started < 10


async def test_nonzero_exit_is_an_error_result(tmp_path: Path) -> None:
    result = await run_tool("bash", tmp_path, command="echo oops; exit 7")
    assert result.is_error
    assert text_of(result) == "oops\n\n\nCommand exited with code 7"
    result = await run_tool("bash", tmp_path, command="exit 1")
    assert text_of(result) == "(no output)\n\nCommand exited with code 1"


async def test_tail_truncation_by_lines_writes_the_full_output(tmp_path: Path, spool_dir: Path) -> None:
    result = await run_tool("bash", tmp_path, command="seq 1 3000")
    text = text_of(result)
    assert not result.is_error
    body, _, notice = text.partition("\n\n[")
    assert body.split("\n") == [str(i) for i in range(1001, 3001)]
    match = SPOOL.search(text)
    assert match and notice.startswith("Showing lines 1001-3000 of 3000. Full output: ")
    spooled = Path(match.group(1))
    assert spooled.parent == spool_dir
    assert spooled.read_text() == "".join(f"{i}\n" for i in range(1, 3001))
    assert result.details["fullOutputPath"] == str(spooled)
    assert result.details["truncation"]["truncatedBy"] == "lines"


async def test_exactly_2000_lines_is_not_truncated(tmp_path: Path, spool_dir: Path) -> None:
    result = await run_tool("bash", tmp_path, command="seq 1 2000")
    assert text_of(result) == "".join(f"{i}\n" for i in range(1, 2001))
    assert result.details is None and list(spool_dir.iterdir()) == []


async def test_tail_truncation_by_bytes(tmp_path: Path) -> None:
    # 100 lines of 999 digits: 51 whole lines (50999 bytes) fit in 50 KB, 52 would not
    result = await run_tool("bash", tmp_path, command="for i in $(seq 1 100); do printf '%0999d\\n' $i; done")
    text = text_of(result)
    kept = text.split("\n\n[")[0].split("\n")
    assert len(kept) == 51 and kept[0] == f"{50:0999d}" and kept[-1] == f"{100:0999d}"
    assert re.search(r"\n\n\[Showing lines 50-100 of 100 \(50\.0KB limit\)\. Full output: .+\]$", text)
    match = SPOOL.search(text)
    assert match and Path(match.group(1)).stat().st_size == 100_000


async def test_a_single_huge_line_keeps_its_end(tmp_path: Path) -> None:
    result = await run_tool("bash", tmp_path, command="head -c 60000 /dev/zero | tr '\\0' x; echo -n END")
    text = text_of(result)
    body = text.split("\n\n[")[0]
    assert len(body) == 50 * 1024 and body.endswith("xxEND")
    assert re.search(r"\[Showing last 50\.0KB of line 1 \(line is 58\.6KB\)\. Full output: .+\]$", text)


async def test_large_output_keeps_memory_bounded_and_spools_everything(tmp_path: Path) -> None:
    result = await run_tool(
        "bash", tmp_path, command="yes 0123456789 | head -c 20000000; echo; echo tail-marker"
    )
    text = text_of(result)
    assert "tail-marker" in text
    match = SPOOL.search(text)
    assert match and Path(match.group(1)).stat().st_size == 20_000_000 + len("\ntail-marker\n")


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await run_tool(
        "bash", tmp_path, command="echo started; sleep 60 & echo $! > bg.pid; sleep 60", timeout=1
    )
    assert time.monotonic() - started < 10
    assert result.is_error
    assert text_of(result) == "started\n\n\nCommand timed out after 1 seconds"
    assert await wait_gone(int((tmp_path / "bg.pid").read_text()))


async def test_timeout_with_no_output_and_fractional_seconds(tmp_path: Path) -> None:
    result = await run_tool("bash", tmp_path, command="sleep 60", timeout=0.5)
    assert text_of(result) == "Command timed out after 0.5 seconds"


async def test_cancellation_kills_the_whole_group_promptly(tmp_path: Path) -> None:
    command = "echo $$ > pgid.txt; sleep 60 & sleep 60 & wait"
    task = asyncio.create_task(run_tool("bash", tmp_path, command=command))
    pgid = int(await wait_for_file(tmp_path / "pgid.txt"))
    await asyncio.sleep(0.1)
    assert not gone(pgid, group=True)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 5
    assert await wait_gone(pgid, group=True), "processes of the command survived the cancellation"


async def test_cancellation_escalates_to_sigkill(tmp_path: Path) -> None:
    command = "echo $$ > pgid.txt; (trap '' TERM; exec sleep 60) & trap '' TERM; wait"
    task = asyncio.create_task(run_tool("bash", tmp_path, command=command))
    pgid = int(await wait_for_file(tmp_path / "pgid.txt"))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_gone(pgid, group=True), "a TERM-ignoring process survived"


async def test_a_background_job_does_not_hold_the_call(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await run_tool("bash", tmp_path, command="sleep 60 & echo $! > bg.pid; echo done")
    assert time.monotonic() - started < 10
    assert text_of(result) == "done\n"
    pid = int((tmp_path / "bg.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    assert await wait_gone(pid)


async def test_the_event_loop_keeps_running(tmp_path: Path) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    beat = asyncio.create_task(ticker())
    try:
        await run_tool("bash", tmp_path, command="sleep 1")
    finally:
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
    assert ticks >= 5


async def test_session_id_is_exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_SESSION_ID", "inherited")
    monkeypatch.setenv("PI_SESSION_ID_ENCODING", "json")
    probe = 'printf "%s|%s" "${PI_SESSION_ID-unset}" "${PI_SESSION_ID_ENCODING-unset}"'
    assert text_of(await run_tool("bash", tmp_path, command=probe)) == "unset|unset"
    assert text_of(await run_tool("bash", tmp_path, session="chat-42", command=probe)) == "chat-42|unset"
    text = text_of(await run_tool("bash", tmp_path, session="a\x00b", command=probe))
    assert text == '"a\\u0000b"|json'
    text = text_of(await run_tool("bash", tmp_path, session='x\ud800y"z', command=probe))
    assert text == '"x\\ud800y\\"z"|json'
    text = text_of(await run_tool("bash", tmp_path, session="é\ud83d\ude00", command=probe))
    assert text == "é😀|unset"  # a surrogate pair is one character, not a lone surrogate


async def test_session_id_through_the_engine(tmp_path: Path) -> None:
    model = ScriptedModel.from_script(
        [{"toolCalls": [{"name": "bash", "args": {"command": 'printf "%s" "$PI_SESSION_ID"'}}]}, "ok"]
    )
    agent = create_agent(model=model, tools=coding_tools(["bash"], tmp_path), cwd=tmp_path)
    events = await drain(agent.invoke("telegram:-100123", "run it"))
    ended = next(e for e in events if isinstance(e, ToolEnded))
    assert ended.content == [{"type": "text", "text": "telegram:-100123"}]


async def test_invalid_arguments_are_a_result(tmp_path: Path) -> None:
    result = await run_tool("bash", tmp_path, command=5)
    assert result.is_error and text_of(result).startswith("Invalid arguments: command:")


async def test_missing_working_directory(tmp_path: Path) -> None:
    gone_dir = tmp_path / "was-here"
    gone_dir.mkdir()
    (tool,) = coding_tools(["bash"], gone_dir)
    shutil.rmtree(gone_dir)
    result = await tool.execute({"command": "true"}, ToolContext(cwd=str(gone_dir)))
    assert result.is_error
    assert text_of(result) == f"Working directory does not exist: {gone_dir}\nCannot execute bash commands."
