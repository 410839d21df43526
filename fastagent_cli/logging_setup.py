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

``--log-format json`` (or ``FASTAGENT_LOG_FORMAT=json``) writes one JSON object per line instead::

    {"time": "2026-12-02T04:30:00.123Z", "level": "warn", "logger": "fastagent.agent",
     "message": "[agent] turn session=s1 failed: ...", "session": "s1", "turn": "r3", "trace": "4bf9..."}

``session`` / ``turn`` (the run id) / ``trace`` (the turn's trace id, with telemetry on) come from
:func:`log_context`, which the engine binds for each run's task (tasks it starts inherit it). The
messages are the text lines' messages, so what is redacted there is redacted here.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

__all__ = [
    "LEVELS",
    "LOG_FORMATS",
    "LOG_FORMAT_ENV",
    "LOG_LEVEL_ENV",
    "TURN_FAILURE",
    "bind_log_context",
    "configure_logging",
    "drop_turn_failures",
    "log_context",
    "resolve_format",
    "resolve_level",
]

LOG_LEVEL_ENV = "FASTAGENT_LOG_LEVEL"
LOG_FORMAT_ENV = "FASTAGENT_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
_NO_IDS: Mapping[str, str] = MappingProxyType({})
_CONTEXT: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "fastagent_log_context", default=_NO_IDS
)


def bind_log_context(**ids: str | None) -> None:
    """Add ``session`` / ``turn`` / ``trace`` ids to every line logged from this task (and the
    tasks it starts) from now on."""
    merged = dict(_CONTEXT.get())
    merged.update({k: v for k, v in ids.items() if v})
    _CONTEXT.set(merged)


@contextmanager
def log_context(**ids: str | None) -> Iterator[None]:
    """:func:`bind_log_context` for a block."""
    token = _CONTEXT.set({**_CONTEXT.get(), **{k: v for k, v in ids.items() if v}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


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


_JSON_LEVELS = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}


class _JsonFormatter(logging.Formatter):
    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        level = _JSON_LEVELS.get(record.levelno) or ("error" if record.levelno > logging.ERROR else "debug")
        line: dict[str, object] = {
            "time": f"{stamp}.{int(record.msecs):03d}Z",
            "level": level,
            "logger": record.name,
            "message": self.prefix + record.getMessage(),
        }
        line.update(_CONTEXT.get())
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


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


def resolve_format(env: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """``(format, warning)``: ``text`` or ``json`` from ``FASTAGENT_LOG_FORMAT``, and the warning
    to print when the variable holds something else."""
    environ = os.environ if env is None else env
    raw = environ.get(LOG_FORMAT_ENV, "").strip()
    if not raw or raw.lower() in LOG_FORMATS:
        return (raw.lower() or "text"), None
    return "text", f'[fastagent] {LOG_FORMAT_ENV}="{raw}" is not one of text, json; using text'


def configure_logging(default_level: str = "info", env: Mapping[str, str] | None = None) -> int:
    """Route every ``fastagent.*`` logger to stderr at the chosen level, as text lines or JSON
    objects (``FASTAGENT_LOG_FORMAT``); returns the level.

    ``default_level`` is ``"debug"`` for ``dev`` and ``"info"`` for ``start``. Calling it again
    replaces the previous configuration (one handler, never duplicated lines).
    """
    level, warning = resolve_level(default_level, env)
    fmt, format_warning = resolve_format(env)
    _install(logging.getLogger(_ROOT), level, "", fmt)
    # aiohttp's own warnings and errors (malformed requests, server errors) in the same format.
    _install(logging.getLogger("aiohttp"), max(level, logging.WARNING), "[host] aiohttp: ", fmt)
    for problem in (warning, format_warning):
        if problem is not None:
            logging.getLogger(_ROOT).warning(problem)
    return level


def _install(logger: logging.Logger, level: int, prefix: str, fmt: str = "text") -> None:
    for handler in list(logger.handlers):
        if isinstance(handler, _StderrHandler):
            logger.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(_JsonFormatter(prefix) if fmt == "json" else _Formatter(prefix))
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
