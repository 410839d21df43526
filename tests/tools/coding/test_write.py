"""``write``: parent directories, pi's count (UTF-16 units), bytes on disk, errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import ToolEnded
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.tools.coding import coding_tools
from tests.conformance.suite import drain
from tests.tools.coding.helpers import run_tool, text_of


async def test_creates_parent_directories(tmp_path: Path) -> None:
    result = await run_tool("write", tmp_path, path="a/b/c.txt", content="hello")
    assert not result.is_error
    assert text_of(result) == "Successfully wrote 5 bytes to a/b/c.txt"
    assert (tmp_path / "a/b/c.txt").read_text() == "hello"


async def test_count_is_utf16_units_like_pi(tmp_path: Path) -> None:
    text = "h\u00e9llo \U0001f600"  # 7 code points, 8 UTF-16 units, 11 UTF-8 bytes
    result = await run_tool("write", tmp_path, path="u.txt", content=text)
    assert text_of(result) == "Successfully wrote 8 bytes to u.txt"
    assert (tmp_path / "u.txt").read_bytes() == text.encode("utf-8")


async def test_overwrites_and_keeps_bytes_verbatim(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old content that is longer", encoding="utf-8")
    await run_tool("write", tmp_path, path="f.txt", content="new\r\nline\n")
    assert (tmp_path / "f.txt").read_bytes() == b"new\r\nline\n"


async def test_empty_content(tmp_path: Path) -> None:
    assert (
        text_of(await run_tool("write", tmp_path, path="empty", content=""))
        == "Successfully wrote 0 bytes to empty"
    )
    assert (tmp_path / "empty").read_bytes() == b""


async def test_lone_surrogate_is_written_as_replacement_character(tmp_path: Path) -> None:
    await run_tool("write", tmp_path, path="s.txt", content="a\ud800b")
    assert (tmp_path / "s.txt").read_bytes() == "a\ufffdb".encode()


async def test_paths_absolute_home_and_at(tmp_path: Path, isolated_env: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "x.txt"
    assert text_of(await run_tool("write", tmp_path / "ws", path=str(elsewhere), content="1")).endswith(
        str(elsewhere)
    )
    assert elsewhere.read_text() == "1"
    await run_tool("write", tmp_path, path="~/notes/n.txt", content="2")
    assert (isolated_env / "notes/n.txt").read_text() == "2"
    await run_tool("write", tmp_path, path="@at.txt", content="3")
    assert (tmp_path / "at.txt").read_text() == "3"


async def test_parent_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    result = await run_tool("write", tmp_path, path="file/sub/y.txt", content="1")
    assert result.is_error
    assert text_of(result).startswith("ENOTDIR: not a directory, mkdir ")


async def test_invalid_arguments_are_a_result(tmp_path: Path) -> None:
    result = await run_tool("write", tmp_path, path="x.txt")
    assert result.is_error and text_of(result) == "Invalid arguments: content: Field required"


async def test_writes_and_edits_to_one_file_do_not_interleave(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("base\n", encoding="utf-8")
    writes = [run_tool("write", tmp_path, path="f.txt", content=f"version {i}\n" * 2000) for i in range(10)]
    results = await asyncio.gather(*writes)
    assert all(not r.is_error for r in results)
    lines = set((tmp_path / "f.txt").read_text().splitlines())
    assert len(lines) == 1, "two writes were interleaved"


async def test_write_then_read_through_the_engine(tmp_path: Path) -> None:
    model = ScriptedModel.from_script(
        [
            {"toolCalls": [{"name": "write", "args": {"path": "notes/todo.md", "content": "- ship it\n"}}]},
            {"toolCalls": [{"name": "read", "args": {"path": "notes/todo.md"}}]},
            "done",
        ]
    )
    agent = create_agent(model=model, tools=coding_tools(["read", "write"], tmp_path), cwd=tmp_path)
    events = await drain(agent.invoke("s", "note it"))
    ended = [e.content for e in events if isinstance(e, ToolEnded)]
    assert ended == [
        [{"type": "text", "text": "Successfully wrote 10 bytes to notes/todo.md"}],
        [{"type": "text", "text": "- ship it\n"}],
    ]
