"""The coding tool set: names, order, pi's descriptions and prompt snippets; mcp stays unimported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fastagent_cli.tools.coding import CODING_TOOL_NAMES, coding_tools


def test_canonical_order_and_only_the_names_given(tmp_path: Path) -> None:
    assert [t.name for t in coding_tools(["write", "read"], tmp_path)] == ["read", "write"]
    assert [t.name for t in coding_tools(CODING_TOOL_NAMES, tmp_path)] == ["read", "bash", "edit", "write"]
    assert coding_tools([], tmp_path) == []


def test_unknown_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown coding tool"):
        coding_tools(["read", "grep"], tmp_path)


def test_pi_descriptions_and_snippets(tmp_path: Path) -> None:
    tools = {t.name: t for t in coding_tools(CODING_TOOL_NAMES, tmp_path)}
    assert tools["read"].description == (
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent "
        "as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). "
        "Use offset/limit for large files. When you need the full file, continue with offset until complete."
    )
    assert tools["bash"].description == (
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is "
        "truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved "
        "to a temp file. Optionally provide a timeout in seconds."
    )
    assert tools["edit"].description == (
        "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). "
        "Use this for precise, surgical edits."
    )
    assert tools["write"].description == (
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
        "Automatically creates parent directories."
    )
    assert {n: t.prompt_snippet for n, t in tools.items()} == {
        "read": "Read file contents",
        "bash": "Execute bash commands (ls, grep, find, etc.)",
        "edit": "Make surgical edits to files (find exact text and replace)",
        "write": "Create or overwrite files",
    }
    assert tools["edit"].parameters["required"] == ["path", "edits"]
    assert tools["bash"].parameters["required"] == ["command"]


def test_coding_tools_do_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, fastagent_cli.tools.coding\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
