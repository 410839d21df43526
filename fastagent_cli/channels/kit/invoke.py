"""Running one channel turn against the Agent, and the prompt wording every channel shares.

* :func:`stream_turn`: ``agent.invoke`` with the busy-wait of feature K11. A channel serialises its
  own turns per session, so a ``failed{code: session_busy}`` as the *first* event means an outside
  holder (a scheduled wake, another process) has the session; the turn never started, so it is
  retried every :attr:`BusyRetry.delay_s` up to :attr:`BusyRetry.max_wait_s`, then surfaced.
  ``on_completed`` runs at the ``completed`` event: the commit point of durable channel state.
* :class:`ChannelFailure` and :func:`default_error_message`: the user-facing failure text (K12).
* :func:`attached_files_manifest`, :func:`missing_attachments_note`, :func:`attributed_file_name`:
  prompt suffixes that state facts (K13); :func:`attachments_suffix` is the note, then the manifest.
* :func:`referent`: a quoted message, whole up to :data:`REFERENT_MAX_CODE_POINTS` (K14).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from fastagent_cli.contract import SESSION_BUSY_CODE, Agent, AgentEvent, Completed, Failed, Prompt, Scope

__all__ = [
    "DEFAULT_BUSY_RETRY",
    "REFERENT_MAX_CODE_POINTS",
    "REFERENT_UNAVAILABLE",
    "BusyRetry",
    "ChannelFailure",
    "ManifestFile",
    "OnError",
    "attached_files_manifest",
    "attachments_suffix",
    "attributed_file_name",
    "default_error_message",
    "missing_attachments_note",
    "referent",
    "stream_turn",
    "truncate",
]

log = logging.getLogger("fastagent.channel")

REFERENT_MAX_CODE_POINTS = 4096
"""How much of a quoted message reaches the prompt: at least the largest Telegram message."""
REFERENT_UNAVAILABLE = "[the quoted message could not be loaded]"


@dataclass(frozen=True, slots=True)
class BusyRetry:
    delay_s: float = 5.0
    max_wait_s: float = 600.0


DEFAULT_BUSY_RETRY = BusyRetry()


@dataclass(frozen=True, slots=True)
class ChannelFailure:
    """A failed turn as a channel's ``on_error`` receives it (the details always go to the log)."""

    details: str
    retryable: bool
    code: str | None = None


OnError = Callable[[ChannelFailure], "str | None"]
"""A channel's ``on_error(failure)``: the text a user reads when a turn fails (``""``: say nothing)."""


def default_error_message(failed: ChannelFailure) -> str:
    """The neutral user-facing text: no internals, always a next step."""
    if failed.code == BUDGET_EXCEEDED_CODE:
        return (
            f"⚠️ I've reached the spending limit this agent is allowed, so I can't answer now. {_when(failed)}"
        )
    if failed.retryable:
        return "⚠️ Temporary problem — please try again in a moment."
    return "⚠️ Sorry, something went wrong. Try rephrasing, or check I have access to what you need."


BUDGET_EXCEEDED_CODE = "budget_exceeded"


def _when(failed: ChannelFailure) -> str:
    """When a refused asker may try again, from the limit the refusal names."""
    if "per day" in failed.details:
        return "The daily limit resets at 00:00 UTC."
    if "per session" in failed.details:
        return "This conversation has used its share; ask the operator to raise the limit or start a new one."
    return "This request needed more than one turn may spend; try a smaller request."


async def stream_turn(
    agent: Agent,
    scope: Scope,
    prompt: Prompt,
    *,
    label: str,
    on_completed: Callable[[], Awaitable[None] | None] | None = None,
    busy_retry: BusyRetry = DEFAULT_BUSY_RETRY,
) -> AsyncIterator[AgentEvent]:
    """The turn's events, waiting out an outside holder of the session (see the module doc)."""
    deadline = time.monotonic() + busy_retry.max_wait_s
    while True:
        retry = False
        first = True
        events = agent.invoke(scope, prompt)
        try:
            async for event in events:
                if (
                    first
                    and isinstance(event, Failed)
                    and event.code == SESSION_BUSY_CODE
                    and time.monotonic() + busy_retry.delay_s < deadline
                ):
                    retry = True
                    break
                first = False
                if isinstance(event, Completed) and on_completed is not None:
                    result = on_completed()
                    if inspect.isawaitable(result):
                        await result
                yield event
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        if not retry:
            return
        log.info(
            "%s session %s is busy (another turn holds it); retrying in %g s",
            label,
            scope.session,
            busy_retry.delay_s,
        )
        await asyncio.sleep(busy_retry.delay_s)


@dataclass(frozen=True, slots=True)
class ManifestFile:
    name: str
    size: int
    path: str

    def attributed(self, sender: str, message: str | int | None = None) -> ManifestFile:
        """The same file shown as a buffered one (see :func:`attributed_file_name`)."""
        return ManifestFile(attributed_file_name(self.name, sender, message), self.size, self.path)


def attachments_suffix(files: Sequence[ManifestFile], missing: int) -> str:
    """What follows a prompt for its attachments: the note on ``missing`` ones, then the manifest."""
    return missing_attachments_note(missing) + attached_files_manifest(files)


def attached_files_manifest(files: Sequence[ManifestFile]) -> str:
    """``[attached files: - name (N bytes) → path]``, or nothing. It states; it does not instruct."""
    if not files:
        return ""
    lines = "\n".join(f"- {f.name} ({f.size} bytes) → {f.path}" for f in files)
    return f"\n\n[attached files:\n{lines}\n]"


def attributed_file_name(name: str, sender: str, message: str | int | None = None) -> str:
    """A buffered file's display name with who posted it, the way the fold attributes lines."""
    where = f", msg {message}" if message is not None else ""
    return f"{name} (from {sender}{where}, earlier discussion)"


def missing_attachments_note(missing: int) -> str:
    """Counts every earlier attachment the turn does not carry, so the model never pretends."""
    if missing <= 0:
        return ""
    return (
        f"\n[note: {missing} attachment(s) from the earlier discussion are not loaded "
        "(no longer available, or older than the most recent few)]"
    )


def truncate(text: str, limit: int, marker: str = "…") -> str:
    """At most ``limit`` code points, ``marker`` replacing the cut tail."""
    if len(text) <= limit:
        return text
    if limit <= len(marker):
        return marker[:limit]
    return text[: limit - len(marker)] + marker


def referent(text: str | None) -> str:
    """A quoted message for the prompt: whole up to the cap, or a marker when it could not be read."""
    if text is None:
        return REFERENT_UNAVAILABLE
    return truncate(text, REFERENT_MAX_CODE_POINTS)
