"""What a failed turn tells its caller, and what stays in the server log.

A ``failed`` event travels to whoever called: an HTTP client, a chat-platform user. It carries a
code, a plain message and a redacted detail: no exception class names, no absolute server paths
(a file is named by its last component), no command lines, never the configured API key. The
specifics (paths, exception types, the provider's whole answer) go to the server log, one line
per failed turn, with the key redacted there too.

=======================  ==========================================================  =============
``code``                 when                                                        retryable
=======================  ==========================================================  =============
``model_error``          the model API failed; details: status and its own message   as classified
``session_store_error``  the session record cannot be read or written                disk full
``config_error``         credentials, model or definition stop the turn              no
``context_overflow``     the session no longer fits the model's context window,      no
                         even after compacting once
``invalid_output``       a structured run got no answer matching its schema          no
``invalid_schema``       a structured run's schema is not a usable JSON Schema       no
``budget_exceeded``      a spend limit (``[limits]``) refused the next model request  no
``internal_error``       a bug; details are just ``internal error``                  no
=======================  ==========================================================  =============

A failure of the turn's own rules (the tool budget ran out) has no code. ``session_busy`` and
``aborted`` are the contract's own codes (:mod:`fastagent_cli.contract`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fastagent_cli.contract import Failed
from fastagent_cli.engine.budget import BUDGET_EXCEEDED, BudgetExceeded
from fastagent_cli.errors import (
    ConfigError,
    CredentialError,
    FastagentError,
    ModelError,
    ProviderError,
    SessionError,
    one_line,
)

__all__ = [
    "BUDGET_EXCEEDED",
    "CONFIG_ERROR",
    "INTERNAL_ERROR",
    "MODEL_ERROR",
    "SESSION_STORE_ERROR",
    "CONTEXT_OVERFLOW",
    "describe_failure",
    "first_failure",
    "redact",
]

MODEL_ERROR = "model_error"
SESSION_STORE_ERROR = "session_store_error"
CONTEXT_OVERFLOW = "context_overflow"
CONFIG_ERROR = "config_error"
INTERNAL_ERROR = "internal_error"

_REDACTED = "[redacted]"
_KEY_LIKE = re.compile(r"\b((?:sk|pk|rk)-(?:ant-|proj-)?)[A-Za-z0-9_\-]{12,}")
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE)
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~\-])(/(?:[^\s/'\"()<>:;,]+/)+)([^\s/'\"()<>:;,]*)")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without the given secrets, key-shaped tokens, bearer credentials and directories of
    absolute paths (``/srv/agent/.fastagent/sessions/s1.jsonl`` becomes ``s1.jsonl``)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, _REDACTED)
    text = _KEY_LIKE.sub(lambda m: m.group(1) + _REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {_REDACTED}", text)
    return _ABSOLUTE_PATH.sub(lambda m: m.group(2) or m.group(1).rstrip("/").rsplit("/", 1)[-1], text)


def describe_failure(exc: BaseException, secrets: Iterable[str | None] = ()) -> tuple[Failed, str]:
    """The ``failed`` event for a turn that raised ``exc``, and the line for the server log."""
    keys = [s for s in secrets if s]
    if isinstance(exc, BaseExceptionGroup):
        exc = first_failure(exc)  # a task group's: what one of its tasks raised
    if isinstance(exc, FastagentError):
        full = exc.message
        if isinstance(exc, SessionError) and exc.path:
            full = f"{full} ({exc.path})"
        log_line = redact_secrets_only(one_line(full), keys)
        shown = one_line(redact(exc.public or exc.message, keys))
        if isinstance(exc, SessionError):
            return Failed(shown, exc.retryable, SESSION_STORE_ERROR), log_line
        if isinstance(exc, BudgetExceeded):
            return Failed(shown, False, BUDGET_EXCEEDED), log_line
        code = getattr(exc, "failed_code", None)
        if isinstance(code, str):  # a failure that names its own code (invalid_output)
            return Failed(shown, bool(getattr(exc, "retryable", False)), code), log_line
        if getattr(exc, "overflow", False):
            return Failed(shown, False, CONTEXT_OVERFLOW), log_line
        if isinstance(exc.__cause__, ProviderError) or isinstance(exc, ProviderError):
            return Failed(shown, bool(getattr(exc, "retryable", False)), MODEL_ERROR), log_line
        if isinstance(exc, ConfigError | CredentialError | ModelError) or type(exc) is FastagentError:
            return Failed(shown, False, CONFIG_ERROR), log_line
        return Failed(shown, bool(getattr(exc, "retryable", False))), log_line
    log_line = redact_secrets_only(one_line(f"{type(exc).__name__}: {exc}"), keys)
    return Failed("internal error", False, INTERNAL_ERROR), log_line


def first_failure(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error a task group carried: the first fastagent error in it, else its first error."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            pending[:0] = list(exc.exceptions)
        else:
            leaves.append(exc)
    known = [exc for exc in leaves if isinstance(exc, FastagentError)]
    return (known or leaves)[0]


def redact_secrets_only(text: str, secrets: Iterable[str]) -> str:
    """For the server log: the key never appears, paths stay (the operator needs them)."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, _REDACTED)
    return text
