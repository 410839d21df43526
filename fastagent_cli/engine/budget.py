"""Spend limits and the usage a run records: ``[limits]`` in ``fastagent.toml``.

Every model answer of a run is recorded in the agent's usage ledger
(:mod:`fastagent_cli.state.usage`). Before each model request the run checks the limits: what the
turn (the run, continuations included), the session and the UTC day have spent, plus what the
request about to be sent would cost for its input (estimated as the context budget estimates it,
at the model's input price), must stay within each limit set. A request that would pass one is
not sent: the run fails with ``failed{code: budget_exceeded}`` (not retryable), whose message names
the limit, its value and its window. Cost limits are in USD from the catalog's prices (or
``models.json`` ``cost``); the token limits count every model's tokens (input, output, cache
reads and writes) and are what bounds a model without prices.

A ledger that cannot be written loses that line with a warning (the answer is in the session
record either way); a turn never fails because of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from fastagent_cli.errors import FastagentError
from fastagent_cli.messages import Usage, now_ms
from fastagent_cli.models.context_budget import context_tokens
from fastagent_cli.models.token_counts import conversation_counts
from fastagent_cli.models.types import ModelRequest
from fastagent_cli.state.usage import UsageEntry, UsageLedger, day_start_ms, entry_from_usage

__all__ = ["BUDGET_EXCEEDED", "BudgetExceeded", "SpendLimits", "UsageMeter"]

log = logging.getLogger("fastagent.agent")

BUDGET_EXCEEDED = "budget_exceeded"


@dataclass(frozen=True, slots=True)
class SpendLimits:
    max_cost_per_turn: float | None = None
    max_cost_per_session: float | None = None
    max_cost_per_day: float | None = None
    max_tokens_per_turn: int | None = None
    max_tokens_per_session: int | None = None
    max_tokens_per_day: int | None = None

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    @property
    def needs_totals(self) -> bool:
        """Whether checking needs the ledger's session or day sums (not just the turn's)."""
        return any(
            v is not None
            for v in (
                self.max_cost_per_session,
                self.max_cost_per_day,
                self.max_tokens_per_session,
                self.max_tokens_per_day,
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {
            _camel(f.name): getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class BudgetExceeded(FastagentError):
    """A request the spend limits refuse (``failed{code: budget_exceeded}``, not retryable)."""

    retryable = False

    def __init__(self, message: str, limit: str, window: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.window = window


_WINDOWS = {"turn": "this turn", "session": "this session", "day": "today (UTC)"}


def _amount(value: float, cost: bool) -> str:
    if not cost:
        return f"{int(value):,} tokens"
    return f"${value:.4f}".rstrip("0").rstrip(".") if value else "$0"


def _refusal(limit: str, window: str, value: float, spent: float, cost: bool) -> BudgetExceeded:
    where = _WINDOWS[window]
    tail = " (the day resets at 00:00 UTC)" if window == "day" else ""
    message = (
        f"spend limit reached: {limit} = {_amount(value, cost)} per {window}; {where} has used "
        f"{_amount(spent, cost)} and the next model request would pass it{tail}"
    )
    return BudgetExceeded(message, limit, window)


class UsageMeter:
    """One run's view of the ledger and the limits: :meth:`check` before each request,
    :meth:`record` after each answer."""

    def __init__(
        self,
        ledger: UsageLedger | None,
        limits: SpendLimits,
        session: str,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.ledger = ledger
        self.limits = limits
        self.session = session
        self.clock = clock
        self._warned = False

    async def check(self, turn: Usage, request: ModelRequest) -> None:
        """Raise :class:`BudgetExceeded` when ``request`` would pass a limit."""
        limits = self.limits
        if not limits.any:
            return
        counts = conversation_counts(request.memo)
        incoming = context_tokens(request.messages, request.system, request.tools, counts=counts)
        price = float(request.model.cost.get("input", 0.0) or 0.0)
        extra_cost = incoming * price / 1e6
        turn_tokens = _tokens(turn)
        turn_cost = float(turn["cost"]["total"])
        spent: dict[str, tuple[float, int]] = {"turn": (turn_cost, turn_tokens)}
        if limits.needs_totals and self.ledger is not None:
            sessions = await self.ledger.session_totals([self.session])
            session = sessions.get(self.session)
            spent["session"] = (session.cost, session.tokens) if session else (0.0, 0)
            day = await self.ledger.since(day_start_ms(self.clock()))
            spent["day"] = (day.cost, day.tokens)
        for window in ("turn", "session", "day"):
            if window not in spent:
                continue
            cost, tokens = spent[window]
            cost_limit = getattr(limits, f"max_cost_per_{window}")
            if cost_limit is not None and cost + extra_cost > cost_limit:
                raise _refusal(f"max_cost_per_{window}", window, cost_limit, cost, True)
            token_limit = getattr(limits, f"max_tokens_per_{window}")
            if token_limit is not None and tokens + incoming > token_limit:
                raise _refusal(f"max_tokens_per_{window}", window, token_limit, tokens, False)

    async def record(self, model: str, usage: Mapping[str, Any]) -> UsageEntry | None:
        """Add one answer's usage to the ledger (a failing ledger is warned about once)."""
        if self.ledger is None:
            return None
        entry = entry_from_usage(self.clock(), self.session, model, usage)
        try:
            await self.ledger.add(entry)
        except (OSError, FastagentError) as exc:
            if not self._warned:
                self._warned = True
                log.warning("[agent] could not record usage for session %s: %s", self.session, exc)
            return None
        return entry


def _tokens(usage: Usage) -> int:
    return int(usage["input"]) + int(usage["output"]) + int(usage["cacheRead"]) + int(usage["cacheWrite"])
