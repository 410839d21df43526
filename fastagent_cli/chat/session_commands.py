"""The slash commands chat and ``attach`` share: they act on the session the screen shows, through
a :class:`SessionOps` that is local (chat's :class:`~fastagent_cli.chat.controller.ChatController`,
on the in-process session hub) or remote (attach's
:class:`~fastagent_cli.chat.attach.ops.RemoteOps`, on ``/control``).

``/model [spec]``, ``/thinking [level]``, ``/thinking-display [on|off]``, ``/compact
[instructions]``, ``/navigate [n|entry id]`` (move the session's leaf back to one of its earlier
prompts: the next message branches from there) and ``/attach [path...|clear]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from fastagent_cli.chat.attachments import PendingAttachments, attach_command
from fastagent_cli.control import ActionResult, Session
from fastagent_cli.errors import UsageError, one_line

__all__ = ["SHARED", "SessionOps", "SharedCommand", "SharedUI", "navigate", "navigation_points"]


class SharedUI(Protocol):
    show_thinking: bool

    def info(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...

    def rows(self, title: str, rows: list[tuple[str, str]]) -> None: ...

    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None: ...


class SessionOps(Protocol):
    """What the shared commands need of the session on the screen."""

    attachments: PendingAttachments

    @property
    def model(self) -> str: ...

    @property
    def thinking(self) -> str: ...

    async def thinking_help(self) -> str:
        """The line ``/thinking`` without a level shows."""
        ...

    async def model_choices(self) -> Sequence[str]: ...

    async def set_model(self, spec: str) -> str: ...

    async def set_thinking(self, level: str) -> str: ...

    async def compact(self, instructions: str | None = None) -> str: ...

    def control_session(self) -> Session:
        """The session on its hub (local or remote): what the commands read."""
        ...

    async def move_leaf(self, leaf: str) -> ActionResult:
        """Move the session's leaf to entry ``leaf`` (``/navigate``)."""
        ...


Handler = Callable[[SessionOps, SharedUI, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SharedCommand:
    name: str
    args: str
    help: str
    run: Handler


async def _model(ops: SessionOps, ui: SharedUI, arg: str) -> None:
    spec = arg.strip()
    if not spec:
        specs = list(await ops.model_choices())
        if not specs:
            raise UsageError("this serve does not let a client choose the model")
        options = [(s, s + ("  (current)" if s == ops.model else "")) for s in specs]
        picked = await ui.choose(f"Model for this session (now {ops.model}):", options)
        if picked is None:
            return
        spec = picked
    ui.info(await ops.set_model(spec))


async def _thinking(ops: SessionOps, ui: SharedUI, arg: str) -> None:
    level = arg.strip()
    ui.info(await ops.set_thinking(level) if level else await ops.thinking_help())


async def _thinking_display(ops: SessionOps, ui: SharedUI, arg: str) -> None:
    value = arg.strip().lower()
    if value not in ("", "on", "off"):
        raise UsageError("usage: /thinking-display [on|off]")
    ui.show_thinking = (not ui.show_thinking) if not value else value == "on"
    ui.info(f"thinking is {'shown' if ui.show_thinking else 'hidden'} (Ctrl+T toggles)")


async def _compact(ops: SessionOps, ui: SharedUI, arg: str) -> None:
    ui.info(await ops.compact(arg.strip() or None))


async def _attach(ops: SessionOps, ui: SharedUI, arg: str) -> None:
    await attach_command(ops.attachments, ui, arg)


async def navigation_points(session: Session) -> list[tuple[str, str]]:
    """The prompts on the session's active path, newest first: ``(entry id, label)``."""
    read = await session.entries()
    by_id = {e.id: e for e in read.entries}
    current = by_id.get(read.leaf_entry_id) if read.leaf_entry_id is not None else None
    points: list[tuple[str, str]] = []
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        if current.kind == "user":
            points.append((current.id, one_line(str(current.data.get("text", "")), 70)))
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    return points


async def navigate(ops: SessionOps, target: str) -> str:
    """Move ``session``'s leaf to just before the prompt ``target`` (an entry id, or ``n``: the
    n-th prompt back): the next message branches from there; the line to show."""
    session = ops.control_session()
    points = await navigation_points(session)
    if target.isdigit() and 1 <= int(target) <= len(points) and target not in dict(points):
        target = points[int(target) - 1][0]
    read = await session.entries()
    entry = next((e for e in read.entries if e.id == target), None)
    if entry is None:
        raise UsageError(f"no entry {target!r} in session {session.id} (/navigate lists its prompts)")
    leaf = entry.parent_id if entry.kind == "user" else entry.id
    if leaf is None:
        raise UsageError("that is the session's first prompt: /new starts an empty session")
    result = await ops.move_leaf(leaf)
    if not result.ok:
        raise UsageError(result.error.message if result.error is not None else "navigate failed")
    what = f"before {one_line(str(entry.data.get('text', '')), 60)!r}" if entry.kind == "user" else "there"
    return f"moved session {session.id} back to {what}: the next message branches from it"


async def _navigate(ops: SessionOps, ui: SharedUI, arg: str) -> None:
    session = ops.control_session()
    target = arg.strip()
    if not target:
        points = await navigation_points(session)
        if not points:
            ui.info("no prompts in this session yet")
            return
        options = [(ident, f"{label}  ({ident})") for ident, label in points]
        picked = await ui.choose("Go back to before which prompt? (number or entry id)", options)
        if picked is None:
            return
        target = picked
    ui.info(await navigate(ops, target))


SHARED: dict[str, SharedCommand] = {
    c.name: c
    for c in (
        SharedCommand("model", "[spec]", "change the model for this session", _model),
        SharedCommand("thinking", "[level]", "set the thinking level for this session", _thinking),
        SharedCommand("thinking-display", "[on|off]", "show or hide thinking", _thinking_display),
        SharedCommand("compact", "[instructions]", "summarise older history to free the context", _compact),
        SharedCommand("navigate", "[n|id]", "go back to before an earlier prompt (branches)", _navigate),
        SharedCommand(
            "attach", "[path|clear]", "attach an image, a PDF or a text file to the next message", _attach
        ),
    )
}
