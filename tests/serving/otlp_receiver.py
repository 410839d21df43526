"""A small OTLP/HTTP receiver on 127.0.0.1: ``/v1/traces`` and ``/v1/metrics`` bodies decoded
with the official ``opentelemetry-proto`` messages, kept for the test to read."""

from __future__ import annotations

import asyncio
from typing import Any, Self

from aiohttp import web
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

__all__ = ["OtlpReceiver", "attributes"]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.resources: list[dict[str, Any]] = []
        self.metrics: list[Any] = []
        self.bodies: list[bytes] = []
        self.content_types: list[str] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._changed = asyncio.Event()

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/metrics", self._metrics)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.bodies.append(body)
        self.content_types.append(request.content_type)
        message = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        for resource_spans in message.resource_spans:
            self.resources.append(attributes(resource_spans.resource.attributes))
            for scope_spans in resource_spans.scope_spans:
                self.spans.extend(scope_spans.spans)
        self._changed.set()
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def _metrics(self, request: web.Request) -> web.Response:
        body = await request.read()
        message = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in message.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                self.metrics.extend(scope_metrics.metrics)
        self._changed.set()
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def wait_for(self, check: Any, within: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + within
        while not check():
            remaining = deadline - asyncio.get_running_loop().time()
            assert remaining > 0, f"timed out; spans: {[s.name for s in self.spans]}"
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                pass
