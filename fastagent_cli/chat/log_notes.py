"""The engine's warnings in the terminal chat: printed as notes in the conversation.

Without a handler of its own, a ``fastagent.*`` warning (an unknown session model, a store that
could not record a partial answer) reaches Python's last-resort handler, which writes it to stderr
straight over the spinner line the turn is drawing. Routed through the renderer it is printed
above the live region, like every other line of the turn, and the spinner is redrawn below it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["TURN_OUTCOME_LOG", "warnings_as_notes"]

TURN_OUTCOME_LOG = "[agent] turn session="


class _Notes(Protocol):
    def note(self, text: str, style: str = ...) -> None: ...


class _NoteHandler(logging.Handler):
    def __init__(self, notes: _Notes) -> None:
        super().__init__(logging.WARNING)
        self.notes = notes

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(TURN_OUTCOME_LOG):
            return  # the server log's line for a failed turn: the chat shows the failure itself
        try:
            style = "red" if record.levelno >= logging.ERROR else "yellow"
            word = "error" if record.levelno >= logging.ERROR else "warning"
            self.notes.note(f"{word}: {record.getMessage()}", style)
        except Exception:
            self.handleError(record)


@contextmanager
def warnings_as_notes(notes: _Notes, logger_name: str = "fastagent") -> Iterator[None]:
    """While the chat runs, ``fastagent.*`` warnings and errors become notes (when no handler
    was configured for them: a ``FASTAGENT_LOG_LEVEL`` setup keeps its own)."""
    logger = logging.getLogger(logger_name)
    if logger.handlers:
        yield
        return
    handler = _NoteHandler(notes)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
