"""The OTLP/HTTP exporter: finished spans and the metrics, handed to a sender thread in batches.

:meth:`OtlpExporter.submit` only appends to a bounded buffer (the oldest spans are dropped past
:data:`MAX_BUFFERED`), so a turn never waits on the collector and pays nothing per span but the
append. A task wakes every ``span_delay_s``: it takes what is buffered (and every
``metric_interval_s`` a copy of the metrics, cumulative sums since the start) and hands it to the
:class:`~.transport.Sender` thread, which encodes and posts it; the loop only awaits the result.
A collector that does not answer costs one warning (and one line when it answers again); what
could not be sent is dropped. :meth:`aclose` sends what is left, waiting at most half a second (a
serve's whole shutdown has 0.8 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque

from fastagent_cli.telemetry.metrics import Metrics
from fastagent_cli.telemetry.otlp import encode_metrics, encode_spans
from fastagent_cli.telemetry.settings import TelemetrySettings
from fastagent_cli.telemetry.spans import Span
from fastagent_cli.telemetry.transport import Problem, Sender

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
        self._sender = Sender(settings.headers)
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
            metrics = loop.time() - self._last_metrics >= self.settings.metric_interval_s
            if metrics:
                self._last_metrics = loop.time()
            await self._export(metrics)

    async def _export(self, metrics: bool) -> None:
        """Hand the buffered spans (and with ``metrics`` a snapshot of the metrics) to the sender."""
        batches: list[list[Span]] = []
        while self._spans:
            batches.append([self._spans.popleft() for _ in range(min(_BATCH, len(self._spans)))])
        snapshot = self.metrics.snapshot() if metrics else []
        if not batches and not snapshot:
            return
        resource, settings, now_ns = self.settings.resource, self.settings, time.time_ns()

        def encode() -> list[tuple[str, bytes]]:
            bodies = [(settings.traces_url, encode_spans(resource, batch)) for batch in batches]
            if snapshot:
                bodies.append(
                    (settings.metrics_url, encode_metrics(resource, self._started_ns, now_ns, snapshot))
                )
            return bodies

        problem = await asyncio.wrap_future(self._sender.send(encode))
        if problem is None:
            self.sent_spans += sum(len(batch) for batch in batches)
        self._report(problem)

    def _report(self, problem: Problem | None) -> None:
        if problem is not None and not self._failing:
            self._failing = True
            log.warning("[telemetry] cannot export to %s (%s): dropping telemetry until it answers", *problem)
        elif problem is None and self._failing:
            self._failing = False
            log.info("[telemetry] exporting to %s again", self.settings.traces_url)

    async def aclose(self) -> None:
        """Stop the background task and send what is left (waiting at most half a second)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_CLOSE_S):
                await self._export(metrics=True)
        self._sender.close()
