"""OpenTelemetry for fastagent, opt-in: traces and metrics over OTLP/HTTP (protobuf).

Off (the default) nothing is exported and nothing beyond :mod:`.spans` and :mod:`.metrics`
(standard library only) is imported; :func:`span` / :func:`root_span` yield ``None`` after one
check. :func:`activate` (assembly calls it once per process, from ``[telemetry]`` and the
``OTEL_*`` variables, :mod:`.settings`) installs :class:`~.exporter.OtlpExporter`;
:func:`shutdown` sends what is left.

Hosts open one root span per trigger with :func:`root_span` (``trigger``: ``http``, ``channel``,
``schedule``, ``control`` or a face's name; ``traceparent``: the request's header, to continue the
caller's trace). The engine opens ``invoke_agent`` under it, ``chat <model>`` per model request
and ``execute_tool <tool>`` per tool call; the model clients send :func:`traceparent` with each
request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastagent_cli.telemetry import metrics
from fastagent_cli.telemetry.spans import (
    CLIENT,
    CONSUMER,
    INTERNAL,
    SERVER,
    Span,
    current_span,
    parse_traceparent,
    root_span,
    span,
    traceparent,
)
from fastagent_cli.telemetry.spans import install as _install_spans
from fastagent_cli.telemetry.spans import sink as _sink

if TYPE_CHECKING:
    from fastagent_cli.telemetry.settings import TelemetrySettings

__all__ = [
    "CLIENT",
    "CONSUMER",
    "INTERNAL",
    "SERVER",
    "Span",
    "activate",
    "capture_content",
    "current_span",
    "enabled",
    "metrics",
    "parse_traceparent",
    "root_span",
    "shutdown",
    "span",
    "traceparent",
]


def enabled() -> bool:
    return _sink() is not None


def capture_content() -> bool:
    """Whether prompts, answers and tool arguments go into spans (``capture_content = true``)."""
    current = _sink()
    return current is not None and current.capture_content


def activate(settings: TelemetrySettings | None) -> None:
    """Install the exporter for ``settings`` (``None``: leave telemetry off). Once per process:
    a second call with settings keeps the first exporter."""
    if settings is None or _sink() is not None:
        return
    from fastagent_cli.telemetry.exporter import OtlpExporter

    exporter = OtlpExporter(settings)
    _install_spans(exporter)
    metrics.install(exporter.metrics)


async def shutdown() -> None:
    """Send what is buffered and turn telemetry off."""
    current = _sink()
    if current is None:
        return
    _install_spans(None)
    metrics.install(None)
    close = getattr(current, "aclose", None)
    if close is not None:
        await close()
