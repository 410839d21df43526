"""Recognising a context overflow in a provider's error text (pi's ``isContextOverflow`` patterns,
``ai/src/utils/overflow.ts``), so the error can say what happened and what to do."""

from __future__ import annotations

import re

from fastagent_cli.models.context_budget import OVERFLOW_ADVICE

__all__ = ["is_context_overflow", "with_overflow_advice"]

_PATTERNS = re.compile(
    "|".join(
        (
            r"prompt is too long",
            r"input is too long for requested model",
            r"exceeds the context window",
            r"input token count.*exceeds the maximum",
            r"maximum prompt length is \d+",
            r"reduce the length of the messages",
            r"maximum context length is \d+ tokens",
            r"exceeds the limit of \d+",
            r"exceeds the available context size",
            r"greater than the context length",
            r"context window exceeds limit",
            r"exceeded model token limit",
            r"too large for model with \d+ maximum context length",
            r"model_context_window_exceeded",
            r"context[_ ]length[_ ]exceeded",
            r"too many tokens",
            r"token limit exceeded",
            r"exceed(?:s)? context window of \d+",  # llama-cpp-python's own words
            r"likely a context overflow",  # fastagent's own: an empty stream from a full window
        )
    ),
    re.IGNORECASE,
)
_NO_BODY = re.compile(r"^4(00|13)\s*(status code)?\s*\(no body\)", re.IGNORECASE)


def is_context_overflow(text: str) -> bool:
    """The error text says the request did not fit the model's context window (pi §4.8); the run
    then compacts once and tries again (:mod:`fastagent_cli.engine.run_loop`)."""
    return bool(_PATTERNS.search(text) or _NO_BODY.search(text.strip()))


def with_overflow_advice(text: str) -> str:
    """``text`` plus what to do, when it reports an overflow; else ``text`` unchanged."""
    if not is_context_overflow(text):
        return text
    return f"{text} (the conversation no longer fits the model's context window: {OVERFLOW_ADVICE})"
