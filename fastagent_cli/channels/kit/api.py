"""The base of every chat platform's API client: one transport and retry policy, one error type.

A platform client (Telegram's ``BotApi``, ``SlackApi``, ``FeishuApi``) builds each request and
says what an answer means (:meth:`PlatformClient.read`); :meth:`PlatformClient.request` owns the
rest, the same for every platform:

* each attempt has the client's ``timeout``, end to end;
* a rate-limited answer (HTTP ``429``, or the platform's own rate-limit code) is retried up to
  :data:`RETRIES` times after the wait the platform asked for (its body's hint, else the
  ``Retry-After`` header, else 1 s, 2 s, 3 s); a wait over :data:`MAX_RETRY_AFTER_S` fails at once,
  visibly, as does the last refusal;
* a network failure or a ``5xx`` is retried (1 s, 2 s, 4 s) only where repeating cannot duplicate
  anything: the request never left (a refused connection), or the call is idempotent. A message
  send whose answer was lost is not repeated: it may have been delivered;
* an answer that says the credential went stale is retried once, right away, after
  :meth:`PlatformClient.reauthorize`;
* every failure is a :class:`~fastagent_cli.errors.ChannelApiError` naming the platform and the
  call, with the credentials scrubbed from its words (:meth:`PlatformClient.scrub`).

Downloads share :meth:`PlatformClient.downloading` (one time limit, failures as errors) and
:meth:`PlatformClient.read_capped`: the bytes of a streamed answer, at most a cap, counted as they
arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from fastagent_cli.errors import ChannelApiError, one_line

__all__ = [
    "MAX_RETRY_AFTER_S",
    "RETRIES",
    "Answer",
    "ChannelApiError",
    "PlatformClient",
    "json_object",
]

log = logging.getLogger("fastagent.channel")

RETRIES = 3
MAX_RETRY_AFTER_S = 30.0

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Answer:
    """What a platform's answer means: ``ok`` (with ``data``), or a refusal.

    ``limited``: rate limited (``retry_after`` the wait the body asked for, if it named one);
    ``stale_credential``: the credential must be fetched again (then the call is repeated once).
    """

    ok: bool
    data: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    code: int | str | None = None
    limited: bool = False
    retry_after: float | None = None
    stale_credential: bool = False


def json_object(raw: bytes) -> dict[str, Any]:
    """A body's JSON object, or ``{}`` when it is not one."""
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class PlatformClient:
    """The transport of one platform's API client (see the module doc)."""

    platform = "channel"

    def __init__(
        self,
        *,
        timeout: float,
        sleep: Sleep = asyncio.sleep,
        client: httpx.AsyncClient | None = None,
        follow_redirects: bool = False,
    ) -> None:
        self.timeout = timeout
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), follow_redirects=follow_redirects
        )
        self._owns_client = client is None
        self._sleep = sleep

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # --- what a platform says ---------------------------------------------------------------------

    def read(self, response: httpx.Response) -> Answer:
        """What ``response`` means (a platform overrides it: success is its body's own flag)."""
        data = json_object(response.content)
        return Answer(ok=response.status_code == 200, data=data, limited=response.status_code == 429)

    def scrub(self, text: str) -> str:
        """``text`` without the client's credentials, on one line (a platform adds its secrets)."""
        return one_line(text, 500)

    async def reauthorize(self) -> None:
        """Drop a stale credential so the next attempt fetches a fresh one (default: nothing)."""

    def error(
        self, call: str, status: int, description: str, code: int | str | None = None
    ) -> ChannelApiError:
        return ChannelApiError(self.platform, call, status, self.scrub(description), code)

    def describe(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError | httpx.TimeoutException):
            return f"no answer within {self.timeout:g} s"
        return self.scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    # --- the pipeline -------------------------------------------------------------------------------

    async def request(
        self,
        call: str,
        send: Callable[[], Awaitable[httpx.Response]],
        *,
        idempotent: bool = False,
        attempt_s: float | None = None,
    ) -> dict[str, Any]:
        """``send()`` under the policy; the answer's data (``attempt_s``: another time limit per
        attempt). Raises :class:`ChannelApiError`."""
        attempt = 0
        reauthorized = False
        while True:
            try:
                async with asyncio.timeout(attempt_s or self.timeout):
                    response = await send()
            except (httpx.TransportError, TimeoutError) as exc:
                never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                if attempt < RETRIES and (never_sent or idempotent):
                    await self._backoff(call, attempt, self.describe(exc))
                    attempt += 1
                    continue
                raise self.error(call, 0, self.describe(exc)) from None
            answer = self.read(response)
            if answer.ok:
                return answer.data
            status = response.status_code
            description = answer.description or f"the answer was not the expected {self.platform} JSON"
            if answer.stale_credential and not reauthorized:
                reauthorized = True
                await self.reauthorize()
                continue
            if answer.limited or status == 429:
                wait = _wait(answer, response, attempt)
                if wait > MAX_RETRY_AFTER_S:
                    over = f"retry_after {wait:g} s is over the {MAX_RETRY_AFTER_S:g} s cap"
                    raise self.error(call, status, f"{description} ({over})", answer.code)
                if attempt < RETRIES:
                    why = "429 Too Many Requests" if status == 429 else f"rate limited ({answer.code})"
                    log.warning(
                        "[%s] %s: %s; retrying in %g s (%d/%d)",
                        self.platform,
                        call,
                        why,
                        wait,
                        attempt + 1,
                        RETRIES,
                    )
                    await self._sleep(wait)
                    attempt += 1
                    continue
                raise self.error(
                    call, status, f"{description} (gave up after {RETRIES} retries)", answer.code
                )
            if status >= 500 and idempotent and attempt < RETRIES:
                await self._backoff(call, attempt, f"{status} {description}")
                attempt += 1
                continue
            raise self.error(call, status, description, answer.code)

    async def _backoff(self, call: str, attempt: int, why: str) -> None:
        delay = float(2**attempt)
        log.warning(
            "[%s] %s failed (%s); retrying in %g s (%d/%d)",
            self.platform,
            call,
            why,
            delay,
            attempt + 1,
            RETRIES,
        )
        await self._sleep(delay)

    # --- downloads ----------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def downloading(self, call: str, within: float) -> AsyncIterator[None]:
        """A download's time limit (``within``, end to end) and its transport failures, as errors."""
        try:
            async with asyncio.timeout(within):
                yield
        except TimeoutError:
            raise self.error(call, 0, f"no complete answer within {within:g} s") from None
        except httpx.TransportError as exc:
            raise self.error(call, 0, self.describe(exc)) from None

    async def read_capped(
        self, response: httpx.Response, call: str, max_bytes: int, too_large: str, status: int = 200
    ) -> bytes:
        """The bytes of a streamed ``response``, refused with ``too_large`` past ``max_bytes``."""
        chunks: list[bytes] = []
        received = 0
        async for chunk in response.aiter_bytes():
            received += len(chunk)
            if received > max_bytes:
                raise self.error(call, status, too_large)
            chunks.append(chunk)
        return b"".join(chunks)


def _wait(answer: Answer, response: httpx.Response, attempt: int) -> float:
    if answer.retry_after is not None:
        return answer.retry_after
    header = response.headers.get("retry-after")
    if header is not None:
        try:
            value = float(header)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
    return float(attempt + 1)
