"""The metrics fastagent keeps while telemetry is on, summed in memory and exported cumulatively.

=====================================  =========  ==============================================
name                                   kind       attributes
=====================================  =========  ==============================================
``fastagent.turns``                    counter    ``outcome`` (completed, failed)
``fastagent.turn.failures``            counter    ``error.type`` (the failure code)
``fastagent.runs.active``              updown     (none)
``fastagent.channel.queued_turns``     updown     (none): turns waiting behind another of their session
``gen_ai.client.operation.duration``   histogram  ``gen_ai.operation.name``, ``gen_ai.request.model``
``gen_ai.client.token.usage``          histogram  ``gen_ai.token.type``, ``gen_ai.request.model``
``fastagent.cost``                     counter    ``gen_ai.request.model`` (USD)
=====================================  =========  ==============================================

Every function is a no-op while telemetry is off (one global check).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Metrics", "add", "install", "observe", "recorder"]

_DESCRIPTIONS: dict[str, tuple[str, str, str]] = {
    "fastagent.turns": ("counter", "Turns settled", "{turn}"),
    "fastagent.turn.failures": ("counter", "Turns that failed, by failure code", "{turn}"),
    "fastagent.runs.active": ("updown", "Runs in flight", "{run}"),
    "fastagent.channel.queued_turns": ("updown", "Channel turns waiting for their session", "{turn}"),
    "gen_ai.client.operation.duration": ("histogram", "Model request duration", "s"),
    "gen_ai.client.token.usage": ("histogram", "Tokens per model request", "{token}"),
    "fastagent.cost": ("counter", "Model spend from the catalog prices", "USD"),
}
_BOUNDS = {
    "gen_ai.client.operation.duration": (
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.64,
        1.28,
        2.56,
        5.12,
        10.24,
        20.48,
        40.96,
        81.92,
    ),
    "gen_ai.client.token.usage": (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304),
}


class Metrics:
    """Cumulative sums and histograms per ``(name, attributes)``."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, tuple[tuple[str, Any], ...]], float] = {}
        self.histograms: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}

    def add(self, name: str, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        key = (name, tuple(sorted((attributes or {}).items())))
        self.sums[key] = self.sums.get(key, 0.0) + value

    def observe(self, name: str, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        key = (name, tuple(sorted((attributes or {}).items())))
        point = self.histograms.get(key)
        if point is None:
            from fastagent_cli.telemetry.otlp import Histogram

            point = self.histograms[key] = Histogram(dict(key[1]), _BOUNDS.get(name, (1.0,)))
        point.record(value)

    def snapshot(self) -> list[tuple[str, str, str, str, list[Any]]]:
        """``(name, description, unit, kind, points)`` for :func:`~.otlp.encode_metrics`: copies, so
        the loop may go on recording while another thread encodes them."""
        from fastagent_cli.telemetry.otlp import MetricPoint

        grouped: dict[str, list[Any]] = {}
        for (name, attrs), value in self.sums.items():
            grouped.setdefault(name, []).append(MetricPoint(dict(attrs), value))
        for (name, _), point in self.histograms.items():
            grouped.setdefault(name, []).append(point.copy())  # encoded in the sender's thread
        out = []
        for name, points in grouped.items():
            kind, description, unit = _DESCRIPTIONS.get(name, ("counter", "", ""))
            out.append((name, description, unit, kind, points))
        return out


_metrics: Metrics | None = None


def install(metrics: Metrics | None) -> None:
    global _metrics
    _metrics = metrics


def recorder() -> Metrics | None:
    return _metrics


def add(name: str, value: float = 1, attributes: Mapping[str, Any] | None = None) -> None:
    if _metrics is not None:
        _metrics.add(name, value, attributes)


def observe(name: str, value: float, attributes: Mapping[str, Any] | None = None) -> None:
    if _metrics is not None:
        _metrics.observe(name, value, attributes)
