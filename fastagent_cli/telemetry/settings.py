"""Whether telemetry is on and where it goes: ``[telemetry]`` in ``fastagent.toml`` and the
standard ``OTEL_*`` variables (which win, as the OpenTelemetry SDKs read them).

* ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``otlp_endpoint``): the collector's OTLP/HTTP base URL;
  traces go to ``<base>/v1/traces``, metrics to ``<base>/v1/metrics``
  (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``: a signal's full URL);
* ``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value,...`` sent with every export (an API key);
* ``OTEL_SERVICE_NAME`` (else ``service_name``, else the agent's name), ``OTEL_RESOURCE_ATTRIBUTES``
  (``key=value,...``);
* ``OTEL_SDK_DISABLED=true``: off whatever the file says;
* ``OTEL_METRIC_EXPORT_INTERVAL`` (ms, default 60000), ``OTEL_BSP_SCHEDULE_DELAY`` (ms, default 1000).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from fastagent_cli._version import __version__
from fastagent_cli.errors import ConfigError

__all__ = ["TelemetrySettings", "resolve_telemetry"]


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    traces_url: str
    metrics_url: str
    resource: Mapping[str, str]
    headers: Mapping[str, str] = field(default_factory=dict)
    capture_content: bool = False
    span_delay_s: float = 1.0
    metric_interval_s: float = 60.0


def _pairs(raw: str, name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{name}: {item.strip()!r} is not key=value")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def _url(value: str, name: str) -> str:
    text = value.strip()
    if not text.startswith(("http://", "https://")):
        raise ConfigError(f"{name}: {text!r} is not an http:// or https:// URL (OTLP/HTTP)")
    return text.rstrip("/")


def _ms(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw) / 1000
    except ValueError:
        raise ConfigError(f"{name}={raw}: not a number of milliseconds") from None
    return max(0.01, value)


def resolve_telemetry(
    endpoint: str | None,
    *,
    capture_content: bool,
    service_name: str,
    env: Mapping[str, str],
) -> TelemetrySettings | None:
    """The settings, or ``None`` when telemetry is off; ConfigError for a value that is wrong."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    base_raw = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or (endpoint or "")
    traces_raw = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    metrics_raw = env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip()
    if not (base_raw or traces_raw or metrics_raw):
        return None
    where = (
        "OTEL_EXPORTER_OTLP_ENDPOINT"
        if env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        else "[telemetry] otlp_endpoint"
    )
    base = _url(base_raw, where) if base_raw else ""
    traces = _url(traces_raw, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") if traces_raw else f"{base}/v1/traces"
    metrics = (
        _url(metrics_raw, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") if metrics_raw else f"{base}/v1/metrics"
    )
    resource = {
        "telemetry.sdk.name": "fastagent",
        "telemetry.sdk.language": "python",
        "service.version": __version__,
    }
    resource.update(_pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""), "OTEL_RESOURCE_ATTRIBUTES"))
    resource["service.name"] = (
        env.get("OTEL_SERVICE_NAME", "").strip() or resource.get("service.name") or service_name
    )
    return TelemetrySettings(
        traces_url=traces,
        metrics_url=metrics,
        resource=resource,
        headers=_pairs(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), "OTEL_EXPORTER_OTLP_HEADERS"),
        capture_content=capture_content,
        span_delay_s=_ms(env, "OTEL_BSP_SCHEDULE_DELAY", 1.0),
        metric_interval_s=_ms(env, "OTEL_METRIC_EXPORT_INTERVAL", 60.0),
    )
