"""``edit``: pi's multi-edit rules and exact messages, line endings, BOM, fuzzy matching and
per-file serialisation."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastagent_cli.tools.coding.edit_match import normalize_for_fuzzy_match
from tests.tools.coding.helpers import run_tool, text_of

MUST_MATCH = "must match exactly including all whitespace and newlines."
NOT_FOUND = f"Could not find the exact text in f.txt. The old text {MUST_MATCH}"
MORE_CONTEXT = "Please provide more context to make it unique."


def write(tmp_path: Path, text: str, name: str = "f.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


async def edit(tmp_path: Path, *edits: tuple[str, str], path: str = "f.txt") -> tuple[bool, str]:
    result = await run_tool(
        "edit", tmp_path, path=path, edits=[{"oldText": o, "newText": n} for o, n in edits]
    )
    return result.is_error, text_of(result)


async def test_single_edit(tmp_path: Path) -> None:
    target = write(tmp_path, "alpha\nbeta\ngamma\n")
    assert await edit(tmp_path, ("beta", "BETA")) == (False, "Successfully replaced 1 block(s) in f.txt.")
    assert target.read_text() == "alpha\nBETA\ngamma\n"


async def test_legacy_top_level_old_and_new_text(tmp_path: Path) -> None:
    target = write(tmp_path, "one two three")
    result = await run_tool("edit", tmp_path, path="f.txt", oldText="two", newText="2")
    assert text_of(result) == "Successfully replaced 1 block(s) in f.txt."
    assert target.read_text() == "one 2 three"


async def test_edits_sent_as_json_text(tmp_path: Path) -> None:
    target = write(tmp_path, "one two three")
    result = await run_tool("edit", tmp_path, path="f.txt", edits='[{"oldText": "one", "newText": "1"}]')
    assert not result.is_error and target.read_text() == "1 two three"


async def test_several_edits_match_the_original(tmp_path: Path) -> None:
    target = write(tmp_path, "a = 1\nb = 2\nc = 3\n")
    # the second edit's text exists only in the original, not after the first edit is applied
    assert await edit(tmp_path, ("a = 1\nb", "a = 10\nbb"), ("c = 3", "c = b = 2")) == (
        False,
        "Successfully replaced 2 block(s) in f.txt.",
    )
    assert target.read_text() == "a = 10\nbb = 2\nc = b = 2\n"


async def test_details_carry_the_diff(tmp_path: Path) -> None:
    write(tmp_path, "".join(f"line {i}\n" for i in range(1, 21)))
    result = await run_tool(
        "edit", tmp_path, path="f.txt", edits=[{"oldText": "line 10\n", "newText": "ten\n"}]
    )
    assert result.details["firstChangedLine"] == 10
    assert "-10 line 10" in result.details["diff"] and "+10 ten" in result.details["diff"]
    assert result.details["patch"].startswith("--- f.txt\n+++ f.txt\n@@ -6,9 +6,9 @@\n")


async def test_not_found_messages(tmp_path: Path) -> None:
    write(tmp_path, "alpha\nbeta\n")
    assert await edit(tmp_path, ("delta", "x")) == (True, NOT_FOUND)
    assert await edit(tmp_path, ("alpha", "a"), ("delta", "x")) == (
        True,
        f"Could not find edits[1] in f.txt. The oldText {MUST_MATCH}",
    )
    assert (tmp_path / "f.txt").read_text() == "alpha\nbeta\n", "a failed edit changes nothing"


async def test_ambiguous_messages(tmp_path: Path) -> None:
    write(tmp_path, "x\nx\ny y y\n")
    assert await edit(tmp_path, ("x", "z")) == (
        True,
        f"Found 2 occurrences of the text in f.txt. The text must be unique. {MORE_CONTEXT}",
    )
    assert await edit(tmp_path, ("y", "z"), ("x\nx", "w")) == (
        True,
        f"Found 3 occurrences of edits[0] in f.txt. Each oldText must be unique. {MORE_CONTEXT}",
    )


async def test_overlap_message(tmp_path: Path) -> None:
    write(tmp_path, "abcdef\n")
    assert await edit(tmp_path, ("abcd", "1"), ("cdef", "2")) == (
        True,
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions.",
    )


async def test_empty_old_text_messages(tmp_path: Path) -> None:
    write(tmp_path, "abc\n")
    assert await edit(tmp_path, ("", "x")) == (True, "oldText must not be empty in f.txt.")
    assert await edit(tmp_path, ("abc", "x"), ("", "y")) == (
        True,
        "edits[1].oldText must not be empty in f.txt.",
    )


async def test_no_change_messages(tmp_path: Path) -> None:
    write(tmp_path, "abc\ndef\n")
    assert await edit(tmp_path, ("abc", "abc")) == (
        True,
        "No changes made to f.txt. The replacement produced identical content. This might indicate an issue "
        "with special characters or the text not existing as expected.",
    )
    assert await edit(tmp_path, ("abc", "abc"), ("def", "def")) == (
        True,
        "No changes made to f.txt. The replacements produced identical content.",
    )


async def test_empty_edit_list(tmp_path: Path) -> None:
    write(tmp_path, "abc\n")
    assert await edit(tmp_path) == (
        True,
        "Edit tool input is invalid. edits must contain at least one replacement.",
    )


async def test_missing_file(tmp_path: Path) -> None:
    assert await edit(tmp_path, ("a", "b"), path="nope.txt") == (True, "File not found: nope.txt")


async def test_invalid_arguments_are_a_result(tmp_path: Path) -> None:
    write(tmp_path, "abc\n")
    result = await run_tool("edit", tmp_path, path="f.txt", edits=[{"oldText": "abc"}])
    assert result.is_error and text_of(result) == "Invalid arguments: edits.0.newText: Field required"


async def test_crlf_and_bom_are_kept(tmp_path: Path) -> None:
    target = write(tmp_path, "\ufeffone\r\ntwo\r\nthree\r\n")
    assert await edit(tmp_path, ("two\nthree", "2\n3")) == (
        False,
        "Successfully replaced 1 block(s) in f.txt.",
    )
    assert target.read_bytes() == "\ufeffone\r\n2\r\n3\r\n".encode()


async def test_fuzzy_match_keeps_untouched_lines_byte_for_byte(tmp_path: Path) -> None:
    original = "keep \u201cquotes\u201d  \nsay(\u201chi\u201d)   \nlast\u2014line  \n"
    target = write(tmp_path, original)
    assert await edit(tmp_path, ('say("hi")', 'say("bye")')) == (
        False,
        "Successfully replaced 1 block(s) in f.txt.",
    )
    assert target.read_text() == 'keep \u201cquotes\u201d  \nsay("bye")\nlast\u2014line  \n'


async def test_fuzzy_normalisation() -> None:
    assert normalize_for_fuzzy_match("a\u00a0b\u2013c \u2018d\u2019  \n\ufb01") == "a b-c 'd'\nfi"


async def test_fuzzy_duplicates_count_as_duplicates(tmp_path: Path) -> None:
    write(tmp_path, 'x = \u201cv\u201d\nx = "v"  \n')
    assert await edit(tmp_path, ('x = "v"\n', "y\n")) == (
        True,
        f"Found 2 occurrences of the text in f.txt. The text must be unique. {MORE_CONTEXT}",
    )


async def test_edits_to_one_file_are_serialised(tmp_path: Path) -> None:
    count = 30
    target = write(tmp_path, "".join(f"slot {i}\n" for i in range(count)))
    results = await asyncio.gather(*(edit(tmp_path, (f"slot {i}\n", f"done {i}\n")) for i in range(count)))
    assert all(not failed for failed, _ in results)
    assert target.read_text() == "".join(f"done {i}\n" for i in range(count))
