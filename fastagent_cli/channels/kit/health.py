"""Waiting for a public URL to serve before a platform is told about it (features M16, O18, N18).

A fresh tunnel or deploy needs a few seconds before it routes, and a platform checks a webhook URL
when it is registered, so registrars poll ``<base>/health`` first (every :data:`HEALTH_INTERVAL_S`,
up to :data:`HEALTH_TIMEOUT_S`). Refused connections, DNS not settled yet and non-200 answers all
mean "not yet".
"""

from __future__ import annotations

import asyncio
import time

import httpx

__all__ = ["HEALTH_INTERVAL_S", "HEALTH_TIMEOUT_S", "wait_for_health"]

HEALTH_TIMEOUT_S = 120.0
HEALTH_INTERVAL_S = 3.0
_PROBE_TIMEOUT_S = 5.0


async def wait_for_health(url: str, timeout_s: float, interval_s: float) -> bool:
    """Poll ``url`` until it answers 200 (``False`` when ``timeout_s`` passes first)."""
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=_PROBE_TIMEOUT_S) as client:
        while True:
            try:
                if (await client.get(url)).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            if time.monotonic() + interval_s > deadline:
                return False
            await asyncio.sleep(interval_s)
