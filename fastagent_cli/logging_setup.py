"""One leveled logger to stderr for the serving commands.

Lines read ``LEVEL msg`` with the level padded to 5 characters::

    INFO  [fastagent] http host on :8787 (all interfaces)
    DEBUG [agent] ▶ turn session=s1 ← hello
    WARN  [channel] telegram: reconnecting

Every fastagent logger lives under ``fastagent`` (``fastagent.agent``, ``fastagent.host``,
``fastagent.channel``...); a message starts with its subsystem prefix (``[fastagent]``,
``[agent]``, ``[host]``, ``[channel]``, ``[schedule]``...). ``FASTAGENT_LOG_LEVEL``
(``debug|info|warn|error``) wins over the command's default (``dev``: debug, ``start``: info); an
invalid value warns and falls back to the default. aiohttp's own warnings and errors are routed
into the same format with a ``[host] aiohttp:`` prefix.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

__all__ = [
    "LEVELS",
    "LOG_LEVEL_ENV",
    "TURN_FAILURE",
    "configure_logging",
    "drop_turn_failures",
    "resolve_level",
]

LOG_LEVEL_ENV = "FASTAGENT_LOG_LEVEL"
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
_ALIASES = {"warning": "warn"}
_NAMES = {logging.DEBUG: "DEBUG", logging.INFO: "INFO", logging.WARNING: "WARN", logging.ERROR: "ERROR"}
_ROOT = "fastagent"
TURN_FAILURE = {"fastagent_turn_failure": True}
"""``extra=`` of the engine's "turn failed" log line: a command that shows the failed event itself
(``invoke``, ``fire``) drops the line instead of printing the reason twice."""


class _Formatter(logging.Formatter):
    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        name = _NAMES.get(record.levelno) or ("ERROR" if record.levelno > logging.ERROR else "DEBUG")
        line = f"{name:<5} {self.prefix}{record.getMessage()}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def resolve_level(default: str, env: Mapping[str, str] | None = None) -> tuple[int, str | None]:
    """``(level, warning)``: the level from ``FASTAGENT_LOG_LEVEL`` or ``default``, and the warning
    to print when the variable holds something else."""
    environ = os.environ if env is None else env
    fallback = LEVELS[_ALIASES.get(default.lower(), default.lower())]
    raw = environ.get(LOG_LEVEL_ENV, "").strip()
    if not raw:
        return fallback, None
    key = _ALIASES.get(raw.lower(), raw.lower())
    if key in LEVELS:
        return LEVELS[key], None
    return fallback, (
        f'[fastagent] {LOG_LEVEL_ENV}="{raw}" is not one of {", ".join(LEVELS)}; using {default.lower()}'
    )


def configure_logging(default_level: str = "info", env: Mapping[str, str] | None = None) -> int:
    """Route every ``fastagent.*`` logger to stderr at the chosen level; returns the level.

    ``default_level`` is ``"debug"`` for ``dev`` and ``"info"`` for ``start``. Calling it again
    replaces the previous configuration (one handler, never duplicated lines).
    """
    level, warning = resolve_level(default_level, env)
    _install(logging.getLogger(_ROOT), level, "")
    # aiohttp's own warnings and errors (malformed requests, server errors) in the same format.
    _install(logging.getLogger("aiohttp"), max(level, logging.WARNING), "[host] aiohttp: ")
    if warning is not None:
        logging.getLogger(_ROOT).warning(warning)
    return level


def _install(logger: logging.Logger, level: int, prefix: str) -> None:
    for handler in list(logger.handlers):
        if isinstance(handler, _StderrHandler):
            logger.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(_Formatter(prefix))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def _not_a_turn_failure(record: logging.LogRecord) -> bool:
    return not getattr(record, "fastagent_turn_failure", False)


def drop_turn_failures() -> None:
    """Drop the engine's "turn failed" log lines in this process (the caller reports the failed
    event on its own). Other warnings still reach stderr."""
    logger = logging.getLogger(f"{_ROOT}.agent")
    if _not_a_turn_failure not in logger.filters:
        logger.addFilter(_not_a_turn_failure)
