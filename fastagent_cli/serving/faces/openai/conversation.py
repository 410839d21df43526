"""Which session an OpenAI request's turn runs in, and what the model sees (the session rule).

1. **An explicit session wins**: the ``X-Fastagent-Session`` header, else ``metadata.session``,
   else ``user``. The conversation lives in the agent's session store like any ``/invoke``
   session (compaction keeps it within the model's window); the turn's prompt is the request's
   last user message, and the earlier messages a client re-sends are not written again (the
   session has them). A client system message is context for the session's first turn.
2. **Chat completions without one**: the history the client sends is what the model sees. The
   turn runs in a one-off session seeded with the messages before the last user message (as
   real user / assistant messages, images included), and that session is deleted once the turn
   settles. Nothing grows between requests: a client that sends the whole conversation each time
   (Open WebUI, most SDK code) owns it, and editing or regenerating an earlier message just works.
3. **Responses without one**: a new session seeded the same way, kept (``store: false``: deleted
   after the turn), and every response id maps to a session position (the session and its leaf
   entry once the turn settled, appended to ``<state>/openai/responses.jsonl``).
   ``previous_response_id`` continues that session when it still ends there, else forks it at
   that position into a new session (the conversation moved on from another response), so two
   continuations of one response never see each other.

The client's ``system`` / ``developer`` messages (and ``instructions``) never replace the agent's
system prompt: they go before the conversation's first user message, marked as context.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.assembly import SessionOwner
from fastagent_cli.contract import Prompt, Scope
from fastagent_cli.serving.faces.openai.content import RequestError, Turn, history_messages, with_context
from fastagent_cli.state.atomic import (
    append_jsonl,
    atomic_write_text,
    dumps_line,
    make_private_dir,
    read_jsonl,
)

__all__ = ["Planned", "ResponseIndex", "plan_turn", "prompt_of"]

log = logging.getLogger("fastagent.host")

ONE_OFF_PREFIX = "openai-"
RESPONSE_PREFIX = "resp-"
MAX_RESPONSES = 100_000
"""Response ids remembered; past twice as many the file is rewritten with the newest ones (an
older id answers ``previous_response_not_found``, as one whose session was deleted)."""


@dataclass(frozen=True, slots=True)
class Planned:
    scope: Scope
    prompt: Prompt
    one_off: bool
    """Delete the session once the turn settled."""


def _first_user(turns: list[Turn], system: str | None) -> list[Turn]:
    if not system:
        return turns
    out = list(turns)
    index = next(i for i, turn in enumerate(out) if turn.role == "user")
    out[index] = with_context(out[index], system)
    return out


def prompt_of(turns: list[Turn]) -> Prompt:
    """Several new user messages as one prompt (their texts joined, their images and PDFs kept)."""
    if any(turn.role != "user" for turn in turns):
        raise RequestError(
            "input continuing a response holds the new user message(s) only, no assistant messages",
            "input",
        )
    if len(turns) == 1:
        return turns[0].prompt()
    return Prompt(
        "\n\n".join(t.text for t in turns),
        tuple(i for t in turns for i in t.images),
        documents=tuple(d for t in turns for d in t.documents),
    )


async def plan_turn(
    sessions: SessionOwner,
    explicit: str | None,
    system: str | None,
    turns: list[Turn],
    *,
    prefix: str,
    keep: bool,
) -> Planned:
    """Rules 1-3 above, for a request with no ``previous_response_id``."""
    if explicit is not None:
        last = turns[-1]
        if not await sessions.exists(explicit):
            last = with_context(last, system)
        return Planned(Scope(explicit), last.prompt(), one_off=False)
    session = f"{prefix}{uuid.uuid4().hex}"
    turns = _first_user(turns, system)
    if len(turns) > 1:
        await sessions.seed(session, history_messages(turns[:-1]))
    return Planned(Scope(session), turns[-1].prompt(), one_off=not keep)


class ResponseIndex:
    """Response id -> ``(session, leaf entry)``: whole JSONL lines, read once on first use, at
    most ``2 * limit`` of them (then the newest ``limit`` are kept)."""

    def __init__(self, path: Path, limit: int = MAX_RESPONSES) -> None:
        self.path = path
        self.limit = limit
        self._known: dict[str, tuple[str, str | None]] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> dict[str, tuple[str, str | None]]:
        if self._known is None:
            self._known = await asyncio.to_thread(self._read)
        return self._known

    def _read(self) -> dict[str, tuple[str, str | None]]:
        known: dict[str, tuple[str, str | None]] = {}
        try:
            for line in read_jsonl(self.path):
                rid, session, leaf = line.get("id"), line.get("session"), line.get("leaf")
                if (
                    isinstance(rid, str)
                    and isinstance(session, str)
                    and (leaf is None or isinstance(leaf, str))
                ):
                    known[rid] = (session, leaf)
        except FileNotFoundError:
            pass
        return known

    async def find(self, response_id: str) -> tuple[str, str | None] | None:
        return (await self._load()).get(response_id)

    async def record(self, response_id: str, session: str, leaf: str | None) -> None:
        async with self._lock:
            known = await self._load()
            line = {"id": response_id, "session": session, "leaf": leaf}
            await asyncio.to_thread(self._append, line)
            known[response_id] = (session, leaf)
            if len(known) > 2 * self.limit:
                newest = list(known.items())[-self.limit :]
                self._known = known = dict(newest)
                await asyncio.to_thread(self._rewrite, newest)

    def _append(self, line: dict[str, str | None]) -> None:
        make_private_dir(self.path.parent)
        append_jsonl(self.path, [line], fsync=True)

    def _rewrite(self, entries: list[tuple[str, tuple[str, str | None]]]) -> None:
        lines = (dumps_line({"id": rid, "session": s, "leaf": leaf}) + "\n" for rid, (s, leaf) in entries)
        atomic_write_text(self.path, "".join(lines))


async def continue_response(
    sessions: SessionOwner, index: ResponseIndex, previous: str, system: str | None, turns: list[Turn]
) -> Planned:
    """Rule 3's ``previous_response_id``: the session it ended, or a fork at its position."""
    prompt = prompt_of(turns)
    if system:
        prompt = with_context(Turn("user", prompt.text, prompt.images, prompt.documents), system).prompt()
    found = await index.find(previous)
    view = None if found is None else await sessions.read(found[0])
    if found is None or view is None:
        raise RequestError(
            f"Previous response with id '{previous}' not found.",
            "previous_response_id",
            "previous_response_not_found",
        )
    session, leaf = found
    if view.leaf_id == leaf or leaf is None:
        return Planned(Scope(session), prompt, one_off=False)
    into = f"{RESPONSE_PREFIX}{uuid.uuid4().hex}"
    result = await sessions.fork(session, leaf, into)
    if not result.ok:
        reason = result.error.message if result.error is not None else "refused"
        raise RequestError(
            f"Previous response with id '{previous}' cannot be continued: {reason}",
            "previous_response_id",
            "previous_response_not_found",
        )
    return Planned(Scope(into), prompt, one_off=False)
