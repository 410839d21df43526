"""Check an API key at once with one minimal, free request per API shape.

* ``openai-completions``: ``GET {baseUrl}/models`` with ``Authorization: Bearer <key>``;
* ``anthropic-messages``: ``GET {baseUrl}/v1/models`` with ``x-api-key`` and ``anthropic-version``
  (listing models costs nothing, unlike a 1-token message, and answers 401 for a bad key).

A 2xx answer is ``valid``; 401/403 is ``invalid``; anything else (a network failure, 429 quota,
5xx, a redirect, an endpoint without a model list) is ``inconclusive`` with the provider's own
message as one line: the key may well be good, we just could not tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fastagent_cli.models.registry import ProviderInfo

if TYPE_CHECKING:
    import httpx

__all__ = ["Outcome", "Verdict", "verification_request", "verify_key"]

Outcome = Literal["valid", "invalid", "inconclusive"]
ANTHROPIC_API = "anthropic-messages"
_DEFAULT_BASES = {
    "openai-completions": "https://api.openai.com/v1",
    ANTHROPIC_API: "https://api.anthropic.com",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    message: str = ""
    """Empty when valid; the provider's message (one line) otherwise."""

    @property
    def valid(self) -> bool:
        return self.outcome == "valid"

    @property
    def invalid(self) -> bool:
        return self.outcome == "invalid"


def verification_request(provider: ProviderInfo, key: str) -> tuple[str, dict[str, str]]:
    """The URL and headers of the one request that checks ``key`` against ``provider``."""
    base = (provider.base_url or _DEFAULT_BASES.get(provider.api, "")).rstrip("/")
    if provider.api == ANTHROPIC_API:
        from fastagent_cli.models.anthropic_request import ANTHROPIC_VERSION

        url = f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"
        headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    else:
        url = f"{base}/models"
        headers = {"Authorization": f"Bearer {key}"}
    headers["Accept"] = "application/json"
    headers.update(provider.headers)
    return url, headers


async def verify_key(
    provider: ProviderInfo,
    key: str,
    *,
    request_timeout: float = 15.0,
    client: httpx.AsyncClient | None = None,
) -> Verdict:
    """One request; never raises for HTTP or network trouble (that is ``inconclusive``)."""
    import httpx

    from fastagent_cli.models.http_errors import error_from_exception, error_from_response

    url, headers = verification_request(provider, key)
    own = client is None
    http = client or httpx.AsyncClient(
        timeout=httpx.Timeout(request_timeout, connect=min(request_timeout, 10.0))
    )
    try:
        response = await http.get(url, headers=headers, follow_redirects=False)
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        return Verdict("inconclusive", error_from_exception(provider.name, exc).message)
    finally:
        if own:
            await http.aclose()
    if 200 <= response.status_code < 300:
        return Verdict("valid")
    error = error_from_response(provider.name, response.status_code, response.content, response.headers)
    if response.status_code in (401, 403):
        return Verdict("invalid", error.message)
    return Verdict("inconclusive", error.message)
