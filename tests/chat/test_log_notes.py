"""An engine warning during a turn is a line of the conversation, printed above the spinner, not
written over it by Python's last-resort handler."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from fastagent_cli.chat.log_notes import warnings_as_notes
from fastagent_cli.chat.render import ChatRenderer


def test_a_warning_during_a_turn_is_a_note_above_the_spinner() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    renderer = ChatRenderer(console)
    logger = logging.getLogger("fastagent.agent")
    with warnings_as_notes(renderer):
        renderer.begin_turn()
        logger.warning("[agent] session model local/gone is unknown; using local/small")
        logger.warning("[agent] turn session=s failed: boom")  # the chat shows a failure itself
        renderer.end_turn()
    text = out.getvalue()
    line = next(li for li in text.replace("\r", "\n").splitlines() if "unknown" in li)
    assert line.strip().endswith("warning: [agent] session model local/gone is unknown; using local/small")
    assert "boom" not in text
    assert not logging.getLogger("fastagent").handlers  # removed after the chat


def test_a_configured_log_handler_is_kept() -> None:
    logger = logging.getLogger("fastagent")
    handler = logging.StreamHandler(io.StringIO())
    logger.addHandler(handler)
    try:
        renderer = ChatRenderer(Console(file=io.StringIO()))
        with warnings_as_notes(renderer):
            assert logger.handlers == [handler]
    finally:
        logger.removeHandler(handler)
