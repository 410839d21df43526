"""The HTTP half every wire client shares: an owned or borrowed ``httpx.AsyncClient``, the timeouts,
and one streaming POST whose failures come out classified as
:class:`~fastagent_cli.errors.ProviderError` (status errors with the provider's own message,
connection resets and timeouts as retryable)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from fastagent_cli.models.http_errors import error_from_exception, error_from_response

__all__ = ["HttpStreamClient"]


class HttpStreamClient:
    def __init__(
        self,
        http: httpx.AsyncClient | None = None,
        *,
        connect_timeout: float = 15,
        read_timeout: float = 300,
    ) -> None:
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient()
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)

    async def aclose(self) -> None:
        """Close the HTTP client, if this object created it."""
        if self._owns_http:
            await self._http.aclose()

    @asynccontextmanager
    async def _post_stream(
        self, provider: str, url: str, headers: Mapping[str, str], body: Any
    ) -> AsyncIterator[httpx.Response]:
        """A successful streaming response; any HTTP failure, also while the body is read inside
        the ``with`` block, raises a classified ProviderError. Leaving the block closes the
        request (which is how a cancelled turn aborts it)."""
        try:
            async with self._http.stream(
                "POST", url, json=body, headers=dict(headers), timeout=self._timeout
            ) as response:
                if not response.is_success:
                    raw = await response.aread()
                    raise error_from_response(provider, response.status_code, raw, response.headers)
                yield response
        except httpx.HTTPError as exc:
            raise error_from_exception(provider, exc) from exc
