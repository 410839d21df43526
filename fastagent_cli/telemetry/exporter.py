"""The OTLP/HTTP exporter: finished spans and the metrics, posted from a background task.

:meth:`OtlpExporter.submit` only appends to a bounded buffer (the oldest spans are dropped past
:data:`MAX_BUFFERED`), so a turn never waits on the collector. A task posts the buffer every
``span_delay_s`` and the metrics every ``metric_interval_s`` (cumulative sums since the start).
A collector that does not answer costs one warning (and one line when it answers again); what
could not be sent is dropped. :meth:`aclose` sends what is left, for at most half a second (a
serve's whole shutdown has 0.8 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from fastagent_cli.telemetry.metrics import Metrics
from fastagent_cli.telemetry.otlp import encode_metrics, encode_spans
from fastagent_cli.telemetry.settings import TelemetrySettings
from fastagent_cli.telemetry.spans import Span

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_BUFFERED", "OtlpExporter"]

log = logging.getLogger("fastagent.telemetry")
MAX_BUFFERED = 4096
_BATCH = 512
_CLOSE_S = 0.5  # within the serving shutdown's budget (0.8 s)


class OtlpExporter:
    def __init__(self, settings: TelemetrySettings) -> None:
        self.settings = settings
        self.capture_content = settings.capture_content
        self.metrics = Metrics()
        self._spans: deque[Span] = deque(maxlen=MAX_BUFFERED)
        self._started_ns = time.time_ns()
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._client: httpx.AsyncClient | None = None
        self._failing = False
        self._last_metrics = 0.0
        self.sent_spans = 0

    def submit(self, span: Span) -> None:
        self._spans.append(span)
        if self._task is None or self._task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop (a span closed at interpreter exit): it goes with aclose, or not at all
            self._last_metrics = loop.time()
            self._task = loop.create_task(self._run(), name="fastagent-otlp-export")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.span_delay_s)
            await self._send_spans()
            if loop.time() - self._last_metrics >= self.settings.metric_interval_s:
                self._last_metrics = loop.time()
                await self._send_metrics()

    async def _send_spans(self) -> None:
        while self._spans:
            batch = [self._spans.popleft() for _ in range(min(_BATCH, len(self._spans)))]
            body = encode_spans(self.settings.resource, batch)
            if await self._post(self.settings.traces_url, body):
                self.sent_spans += len(batch)

    async def _send_metrics(self) -> None:
        snapshot = self.metrics.snapshot()
        if snapshot:
            body = encode_metrics(self.settings.resource, self._started_ns, time.time_ns(), snapshot)
            await self._post(self.settings.metrics_url, body)

    async def _post(self, url: str, body: bytes) -> bool:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, connect=2.0))
        headers = {**self.settings.headers, "content-type": "application/x-protobuf"}
        try:
            response = await self._client.post(url, content=body, headers=headers)
            problem = None if response.is_success else f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            problem = str(exc) or type(exc).__name__
        if problem is not None:
            if not self._failing:
                self._failing = True
                log.warning(
                    "[telemetry] cannot export to %s (%s): dropping telemetry until it answers", url, problem
                )
            return False
        if self._failing:
            self._failing = False
            log.info("[telemetry] exporting to %s again", url)
        return True

    async def aclose(self) -> None:
        """Stop the background task and send what is left (at most half a second)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_CLOSE_S):
                await self._send_spans()
                await self._send_metrics()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
