"""What a tool is to the engine: a name, a description, a JSON schema and an ``execute``.

Authors rarely build :class:`Tool` by hand: :func:`fastagent_cli.tools.define.define_tool` turns a
typed function into one. The engine hands every execution a :class:`ToolContext` carrying the
workspace, a read-only view of the session and the activation bridge for deferred tools.
Cancellation is Python's: a running tool is cancelled with its task.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fastagent_cli.messages import ContentBlock
from fastagent_cli.models.types import ToolSpec
from fastagent_cli.tools.approval import ApprovalFlag

if TYPE_CHECKING:
    from fastagent_cli.sessions.record import SessionRecord

__all__ = [
    "ReadonlySession",
    "RunScope",
    "Tool",
    "ToolActivation",
    "ToolContext",
    "NestedApproval",
    "ToolResult",
    "text_result",
]


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: content blocks for the model, ``details`` for UIs and logs only."""

    content: list[ContentBlock]
    details: Any = None
    is_error: bool = False
    added_tool_names: list[str] = field(default_factory=list)


def text_result(text: str, *, is_error: bool = False, details: Any = None) -> ToolResult:
    return ToolResult([{"type": "text", "text": text}], details=details, is_error=is_error)


class ToolActivation(Protocol):
    """The bridge deferred-tool loaders use: additive, unknown names ignored."""

    def active(self) -> list[str]: ...

    def registered(self) -> list[str]: ...

    def activate(self, names: Sequence[str]) -> list[str]: ...


class ReadonlySession:
    """The session as a tool may see it: the caller's id, the header, the active branch."""

    def __init__(self, record: SessionRecord) -> None:
        self._record = record

    def get_session_id(self) -> str:
        return self._record.session

    def get_header(self) -> Mapping[str, Any]:
        return dict(self._record.header)

    def get_branch(self) -> list[Mapping[str, Any]]:
        return [dict(e) for e in self._record.path()]


T = TypeVar("T")
log = logging.getLogger("fastagent.tools")


class RunScope:
    """What tools keep for one run (a run is a turn plus its follow-ups): made on first use,
    closed when the run settles, whatever the outcome (code mode's sandbox lives here)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._values: dict[str, Any] = {}
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.closed = False

    def get(
        self, key: str, factory: Callable[[], T], close: Callable[[T], Awaitable[None]] | None = None
    ) -> T:
        """The value kept under ``key`` (built by ``factory`` the first time; ``close`` runs at the
        run's end)."""
        if self.closed:
            raise RuntimeError("the run is over")
        if key not in self._values:
            value = factory()
            self._values[key] = value
            if close is not None:
                self._closers.append(lambda: close(value))
        return self._values[key]  # type: ignore[no-any-return]

    @property
    def holds(self) -> bool:
        """Whether anything needs closing."""
        return bool(self._closers)

    async def aclose(self) -> None:
        """Close everything in reverse order of creation; a failing closer is logged, never raised."""
        self.closed = True
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            try:
                await close()
            except Exception as exc:
                log.warning("[tools] closing a run resource failed: %s: %s", type(exc).__name__, exc)
        self._values.clear()


@dataclass(slots=True)
class ToolContext:
    cwd: str
    session: ReadonlySession | None = None
    tools: ToolActivation | None = None
    tool_call_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    progress: Callable[[Any], None] | None = None
    """Where :meth:`report` goes (the engine publishes it as ``tool_progress``)."""
    run: RunScope | None = None
    """The run this call belongs to (``None`` outside the engine)."""
    approve: NestedApproval | None = None
    """For a tool that calls other tools (code mode): ``await ctx.approve(call_id, tool, args)``
    is ``None`` when the nested call may run, else the denial (it may wait for a person)."""

    def report(self, partial: Any) -> None:
        """Report progress: ``partial`` is the whole result so far (a snapshot that replaces the
        previous one, e.g. ``{"content": [{"type": "text", "text": tail}]}``), never a delta."""
        if self.progress is not None:
            self.progress(partial)


Execute = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]
NestedApproval = Callable[[str, "Tool", Mapping[str, Any]], Awaitable[ToolResult | None]]


@dataclass(slots=True)
class Tool:
    """A tool the engine can offer to a model.

    ``execute`` receives the raw JSON arguments; validation is the tool's own job (the
    :func:`define_tool` wrapper validates with pydantic and answers invalid arguments as a result).
    ``sequential`` tools make their whole batch run one call at a time. ``timeout`` (seconds)
    overrides the engine's default limit for one call of this tool. ``approval`` (see
    :mod:`fastagent_cli.tools.approval`) makes its calls wait for a person's answer.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: Execute
    deferred: bool = False
    sequential: bool = False
    prompt_snippet: str | None = None
    source: str = "builtin"
    timeout: float | None = None
    output_schema: Mapping[str, Any] | None = None
    """The JSON Schema of the tool's structured result, where it declares one (MCP ``outputSchema``,
    a typed tool's return annotation): code mode types the sandbox function with it."""
    annotations: Mapping[str, Any] | None = None
    """MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ...) where the tool has them."""
    approval: ApprovalFlag = None
    """``True`` or a predicate over the arguments: a call waits for a person's answer."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)
