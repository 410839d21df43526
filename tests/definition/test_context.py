"""Project context (the AGENTS.md walk) and persona.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastagent_cli.definition.context import load_context_files, read_persona
from fastagent_cli.errors import ConfigError


def test_walk_order_agent_dir_first_then_root_down_to_workspace(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    workspace = root / "a" / "b"
    agent = workspace / "fastagent"
    agent.mkdir(parents=True)
    (root / "AGENTS.md").write_text("top")
    (root / "a" / "CLAUDE.md").write_text("middle (CLAUDE.md fallback)")
    (workspace / "AGENTS.md").write_text("nearest")
    (workspace / "CLAUDE.md").write_text("ignored: AGENTS.md wins in its directory")
    (agent / "AGENTS.md").write_text("agent")
    files = load_context_files(agent, workspace)
    assert [f.content for f in files] == ["agent", "top", "middle (CLAUDE.md fallback)", "nearest"]
    assert files[0].path == agent / "AGENTS.md"


def test_flat_agent_file_is_used_once(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("once")
    files = load_context_files(tmp_path, tmp_path)
    assert [f.content for f in files] == ["once"]


def test_unreadable_context_file_is_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "AGENTS.md").write_text("unreadable")
    (tmp_path / "CLAUDE.md").write_text("fallback")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "AGENTS.md":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    warnings: list[str] = []
    files = load_context_files(tmp_path, tmp_path, warnings.append)
    assert [f.content for f in files] == ["fallback"]  # pi: the next candidate in that directory
    assert warnings == [f"cannot read context file {tmp_path / 'AGENTS.md'}: Permission denied (skipped)"]


def test_persona(tmp_path: Path) -> None:
    assert read_persona(tmp_path) is None
    (tmp_path / "persona.md").write_text("  \n")
    assert read_persona(tmp_path) is None
    (tmp_path / "persona.md").write_text("\nYou are X.\n")
    assert read_persona(tmp_path) == "You are X."
    (tmp_path / "persona.md").unlink()
    (tmp_path / "persona.md").mkdir()
    with pytest.raises(ConfigError, match="cannot read .*persona.md"):
        read_persona(tmp_path)
