"""``read``: pi's limits, continuation hints, offsets, images and error messages."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from fastagent_cli.tools.coding.read import MAX_IMAGE_BYTES
from tests.tools.coding.helpers import run_tool, text_of

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))


def lines(count: int, trailing_newline: bool = False) -> str:
    body = "\n".join(f"line {i}" for i in range(1, count + 1))
    return body + ("\n" if trailing_newline else "")


async def test_small_file_is_returned_verbatim(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
    result = await run_tool("read", tmp_path, path="a.txt")
    assert not result.is_error
    assert text_of(result) == "hello\nworld\n"
    assert result.details is None


async def test_path_normalisation(tmp_path: Path, isolated_env: Path) -> None:
    (tmp_path / "my file.txt").write_text("spaced", encoding="utf-8")
    (isolated_env / "home.txt").write_text("at home", encoding="utf-8")
    assert text_of(await run_tool("read", tmp_path, path="@my file.txt")) == "spaced"
    assert text_of(await run_tool("read", tmp_path, path="my\u00a0file.txt")) == "spaced"
    assert text_of(await run_tool("read", tmp_path, path="~/home.txt")) == "at home"
    assert text_of(await run_tool("read", tmp_path, path=str(tmp_path / "my file.txt"))) == "spaced"
    (tmp_path / "sub").mkdir()
    assert text_of(await run_tool("read", tmp_path / "sub", path="../my file.txt")) == "spaced"


async def test_macos_screenshot_name_is_found(tmp_path: Path) -> None:
    (tmp_path / "Shot 10.00.00\u202fAM.png.txt").write_text("found", encoding="utf-8")
    assert text_of(await run_tool("read", tmp_path, path="Shot 10.00.00 AM.png.txt")) == "found"


async def test_line_limit_boundary(tmp_path: Path) -> None:
    (tmp_path / "exact.txt").write_text(lines(2000), encoding="utf-8")
    assert text_of(await run_tool("read", tmp_path, path="exact.txt")) == lines(2000)
    (tmp_path / "over.txt").write_text(lines(2001), encoding="utf-8")
    result = await run_tool("read", tmp_path, path="over.txt")
    assert text_of(result) == lines(2000) + "\n\n[Showing lines 1-2000 of 2001. Use offset=2001 to continue.]"
    assert result.details["truncation"]["truncatedBy"] == "lines"


async def test_trailing_newline_counts_as_a_line_in_the_total_as_pi_does(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(lines(2500, trailing_newline=True), encoding="utf-8")
    text = text_of(await run_tool("read", tmp_path, path="f.txt"))
    assert text.endswith("\n\n[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]")


async def test_byte_limit_keeps_whole_lines(tmp_path: Path) -> None:
    row = "x" * 99  # 100 bytes with its newline: 512 rows make 51199 bytes, 513 would pass 51200
    (tmp_path / "wide.txt").write_text("\n".join([row] * 600), encoding="utf-8")
    result = await run_tool("read", tmp_path, path="wide.txt")
    text = text_of(result)
    assert (
        text
        == "\n".join([row] * 512)
        + "\n\n[Showing lines 1-512 of 600 (50.0KB limit). Use offset=513 to continue.]"
    )
    assert result.details["truncation"]["truncatedBy"] == "bytes"
    (tmp_path / "exact.txt").write_text("y" * (50 * 1024), encoding="utf-8")
    assert text_of(await run_tool("read", tmp_path, path="exact.txt")) == "y" * (50 * 1024)


async def test_continuing_with_offset(tmp_path: Path) -> None:
    (tmp_path / "over.txt").write_text(lines(2001), encoding="utf-8")
    assert text_of(await run_tool("read", tmp_path, path="over.txt", offset=2001)) == "line 2001"


async def test_offset_and_limit(tmp_path: Path) -> None:
    (tmp_path / "ten.txt").write_text(lines(10), encoding="utf-8")
    text = text_of(await run_tool("read", tmp_path, path="ten.txt", offset=3, limit=2))
    assert text == "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    assert text_of(await run_tool("read", tmp_path, path="ten.txt", offset=9, limit=5)) == "line 9\nline 10"


async def test_offset_beyond_end(tmp_path: Path) -> None:
    (tmp_path / "ten.txt").write_text(lines(10), encoding="utf-8")
    result = await run_tool("read", tmp_path, path="ten.txt", offset=11)
    assert result.is_error
    assert text_of(result) == "Offset 11 is beyond end of file (10 lines total)"


async def test_first_line_over_the_byte_limit(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("z" * 60000 + "\nshort\n", encoding="utf-8")
    result = await run_tool("read", tmp_path, path="big.txt")
    assert not result.is_error
    assert (
        text_of(result)
        == "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' big.txt | head -c 51200]"
    )


async def test_missing_file_is_nodes_message(tmp_path: Path) -> None:
    result = await run_tool("read", tmp_path, path="nope.txt")
    assert result.is_error
    assert text_of(result) == f"ENOENT: no such file or directory, access '{tmp_path / 'nope.txt'}'"


async def test_directory_is_an_error(tmp_path: Path) -> None:
    result = await run_tool("read", tmp_path, path=".")
    assert result.is_error
    assert text_of(result).startswith("EISDIR: illegal operation on a directory")


async def test_image_is_returned_as_image_content(tmp_path: Path) -> None:
    (tmp_path / "pic.bin").write_bytes(PNG)  # detected by magic bytes, not by name
    result = await run_tool("read", tmp_path, path="pic.bin")
    assert not result.is_error
    assert result.content == [
        {"type": "text", "text": "Read image file [image/png]"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
    ]
    for name, head, mime in [
        ("a.jpg", b"\xff\xd8\xff\xe0rest", "image/jpeg"),
        ("a.gif", b"GIF89a" + b"\x00" * 10, "image/gif"),
        ("a.webp", b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
    ]:
        (tmp_path / name).write_bytes(head)
        result = await run_tool("read", tmp_path, path=name)
        assert result.content[1]["type"] == "image" and result.content[1]["mimeType"] == mime


async def test_image_over_the_size_limit_is_an_error(tmp_path: Path) -> None:
    with open(tmp_path / "huge.png", "wb") as handle:
        handle.write(PNG)
        handle.truncate(MAX_IMAGE_BYTES + 1)
    result = await run_tool("read", tmp_path, path="huge.png")
    assert result.is_error
    assert "huge.png is 4.5MB, over the 4.5MB image limit" in text_of(result)


async def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "bin.txt").write_bytes(b"ok \xff\xfe end")
    assert text_of(await run_tool("read", tmp_path, path="bin.txt")) == "ok \ufffd\ufffd end"


async def test_invalid_arguments_are_a_result(tmp_path: Path) -> None:
    result = await run_tool("read", tmp_path, path=5)
    assert result.is_error
    assert text_of(result).startswith("Invalid arguments: path:")
    result = await run_tool("read", tmp_path, path="x", offset="soon")
    assert result.is_error and text_of(result).startswith("Invalid arguments: offset:")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a mode-000 file")
async def test_unreadable_file(tmp_path: Path) -> None:
    target = tmp_path / "secret.txt"
    target.write_text("x", encoding="utf-8")
    target.chmod(0)
    result = await run_tool("read", tmp_path, path="secret.txt")
    assert text_of(result) == f"EACCES: permission denied, access '{target}'"
