"""Chat's ``/model`` list in a 40-row terminal: it fits (the rest is "N more", reached by typing,
which the prompt filters as you type), and a typed name picks a model that was not shown."""

from __future__ import annotations

from pathlib import Path

from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command


def test_model_list_fits_40_rows_and_a_typed_name_picks(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\ncoding_tools = false\n')
    term = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path, rows=40, cols=100)
    try:
        term.read_until("› ")
        mark = len(term.text)
        term.send("/model\r")
        screen = term.read_until("number or name (Enter cancels)", start=mark)
        listing = screen[screen.index("Model for this session", mark) :]
        listing = listing[: listing.index("number or name")]
        assert len(listing.splitlines()) <= 39, listing
        assert "more: type a part of a name" in listing
        assert "xai/grok-4" not in listing  # far down the catalog: folded away
        mark = len(term.text)
        term.send("xai/grok-4\r")
        term.read_until("model xai/grok-4 for session", start=mark)
    finally:
        term.close()
