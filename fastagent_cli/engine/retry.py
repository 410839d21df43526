"""Backoff for transient model failures (429, 5xx, resets, timeouts).

Delays grow ``base * 2**(attempt-1)`` (pi's 2 s, 4 s, 8 s by default), a server's
``Retry-After`` wins when it is longer, and every delay is capped at ``max_delay_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60_000

    def delay_ms(self, attempt: int, retry_after: float | None = None) -> int:
        backoff: int = self.base_delay_ms * (1 << max(attempt - 1, 0))
        if retry_after is not None and retry_after >= 0:
            backoff = max(backoff, int(retry_after * 1000)) if retry_after > 0 else 0
        return max(0, min(backoff, self.max_delay_ms))
