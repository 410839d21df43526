"""The status line: model, thinking level, session, tokens and cost of the session.

Usage is summed from the session's assistant messages when a session is opened, then grows by the
``usage`` of every ``completed`` event (``{input, output, cacheRead, cacheWrite, totalTokens,
cost: {total, ...}}``). A reply that reports no tokens at all came from a server that sends no
usage (llama-cpp-python, some proxies): the status says so rather than showing ``0 tok``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prompt_toolkit.styles import Style

from fastagent_cli.state.usage import format_cost, format_tokens

__all__ = [
    "STYLE",
    "StatusInfo",
    "UsageTotals",
    "format_cost",
    "format_tokens",
    "status_fragments",
    "status_text",
]


STYLE = Style.from_dict(
    {
        "prompt": "bold #5fafff",
        "bottom-toolbar": "noreverse bg:#262626 #a8a8a8",
        "status.model": "bold #87afff",
        "status.cost": "#87d787",
        "status.hint": "#ffaf5f",
        "status.error": "#ff5f5f",
    }
)
"""The prompt and status line colours of the chat (and of attach)."""


@dataclass(slots=True)
class UsageTotals:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: float = 0.0
    known: bool = False
    """At least one turn reported usage."""
    unreported: int = 0
    """Replies whose server reported no usage at all."""

    def add(self, usage: Mapping[str, Any]) -> None:
        counts = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
        if not any(_int(usage.get(key)) for key in counts):
            self.unreported += 1
            return
        self.input += _int(usage.get("input"))
        self.output += _int(usage.get("output"))
        self.cache_read += _int(usage.get("cacheRead"))
        self.cache_write += _int(usage.get("cacheWrite"))
        total = _int(usage.get("totalTokens"))
        self.total_tokens += total or (
            _int(usage.get("input"))
            + _int(usage.get("output"))
            + _int(usage.get("cacheRead"))
            + _int(usage.get("cacheWrite"))
        )
        cost = usage.get("cost")
        if isinstance(cost, Mapping):
            self.cost += _float(cost.get("total"))
        self.known = True

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]]) -> UsageTotals:
        """The sum over every assistant message of a session record."""
        totals = cls()
        for entry in entries:
            message = entry.get("message") if entry.get("type") == "message" else None
            if (
                isinstance(message, Mapping)
                and message.get("role") == "assistant"
                and message.get("stopReason") not in ("error", "aborted")
            ):
                usage = message.get("usage")
                if isinstance(usage, Mapping):
                    totals.add(usage)
        return totals


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@dataclass(slots=True)
class StatusInfo:
    model: str
    thinking: str
    session: str
    usage: UsageTotals
    hint: str = ""


def _parts(info: StatusInfo) -> list[tuple[str, str]]:
    parts = [
        ("class:status.model", info.model),
        ("class:status", f" · thinking {info.thinking}"),
        ("class:status", f" · session {info.session}"),
    ]
    if info.usage.known:
        usage = info.usage
        tokens = f" · {format_tokens(usage.total_tokens)} tok"
        tokens += f" (↑{format_tokens(usage.input)} ↓{format_tokens(usage.output)}"
        if usage.cache_read:
            tokens += f" cache {format_tokens(usage.cache_read)}"
        tokens += ")"
        parts.append(("class:status", tokens))
        if usage.cost:  # catalog models price their usage; custom and scripted ones report 0
            parts.append(("class:status.cost", f" · {format_cost(usage.cost)}"))
    if info.usage.unreported:
        parts.append(("class:status", f" · {_unreported(info.usage)}"))
    if info.hint:
        parts.append(("class:status.hint", f"   {info.hint}"))
    return parts


def _unreported(usage: UsageTotals) -> str:
    if not usage.known:
        return "no token usage reported by the server"
    count = usage.unreported
    return f"{count} repl{'y' if count == 1 else 'ies'} without usage"


def status_fragments(info: StatusInfo) -> list[tuple[str, str]]:
    """prompt-toolkit formatted text for the bottom toolbar."""
    return [("class:status", " "), *_parts(info)]


def status_text(info: StatusInfo) -> str:
    return "".join(text for _, text in _parts(info))
