"""The engine's spans and metrics (:mod:`fastagent_cli.telemetry`), kept out of the run's code:
``invoke_agent`` per run, ``chat <model>`` per model request, ``execute_tool <name>`` per tool
call, with the OpenTelemetry GenAI semantic conventions' attribute names. Prompts, answers and
tool arguments are recorded only with ``capture_content = true``. Off, each hook is one check.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from fastagent_cli import telemetry
from fastagent_cli.contract import Failed
from fastagent_cli.engine.failures import redact
from fastagent_cli.logging_setup import bind_log_context
from fastagent_cli.messages import AssistantMessage
from fastagent_cli.models.types import ModelRequest

__all__ = ["ModelSpan", "model_span", "tool_span", "traced_turn"]


class _Settles(Protocol):
    terminal: Any


@contextmanager
def traced_turn(session: str, run_id: str) -> Iterator[Callable[[Any], Any]]:
    """The run's ``invoke_agent`` span; yields ``settle(settled) -> settled``, which records the
    outcome (failed: status and ``error.type``) and the turn metrics."""
    telemetry.metrics.add("fastagent.runs.active", 1)
    try:
        with telemetry.span(
            "invoke_agent",
            telemetry.INTERNAL,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": session,
                "fastagent.run.id": run_id,
            },
        ) as span:
            if span is not None:
                bind_log_context(trace=span.trace_hex)

            def settle(settled: _Settles) -> Any:
                terminal = settled.terminal
                if isinstance(terminal, Failed):
                    code = terminal.code or "failed"
                    telemetry.metrics.add("fastagent.turns", 1, {"outcome": "failed"})
                    telemetry.metrics.add("fastagent.turn.failures", 1, {"error.type": code})
                    if span is not None:
                        span.fail(terminal.details, code)
                else:
                    telemetry.metrics.add("fastagent.turns", 1, {"outcome": "completed"})
                    usage = terminal.data.get("usage") if isinstance(terminal.data, Mapping) else None
                    if span is not None and isinstance(usage, Mapping):
                        span.update(_usage_attributes(usage))
                return settled

            yield settle
    finally:
        telemetry.metrics.add("fastagent.runs.active", -1)


def _usage_attributes(usage: Mapping[str, Any]) -> dict[str, Any]:
    cost = usage.get("cost")
    return {
        "gen_ai.usage.input_tokens": int(usage.get("input") or 0),
        "gen_ai.usage.output_tokens": int(usage.get("output") or 0),
        "gen_ai.usage.cache_read.input_tokens": int(usage.get("cacheRead") or 0) or None,
        "gen_ai.usage.cache_creation.input_tokens": int(usage.get("cacheWrite") or 0) or None,
        "fastagent.cost.usd": float(cost.get("total") or 0.0) if isinstance(cost, Mapping) else None,
    }


class ModelSpan:
    """What :func:`model_span` yields: record retries and the answer on the span and metrics."""

    def __init__(self, span: telemetry.Span | None, request: ModelRequest) -> None:
        self.span = span
        self.request = request
        self.started = time.monotonic()

    def retry(self, attempt: int, delay_ms: int, error: str) -> None:
        if self.span is not None:
            self.span.event(
                "retry",
                {
                    "fastagent.retry.attempt": attempt,
                    "fastagent.retry.delay_ms": delay_ms,
                    "error.message": error,
                },
            )

    def answered(self, message: AssistantMessage) -> None:
        model = self.request.model
        usage: Mapping[str, Any] = message["usage"]
        attrs = {"gen_ai.request.model": model.id, "gen_ai.provider.name": model.provider}
        telemetry.metrics.observe(
            "gen_ai.client.operation.duration",
            time.monotonic() - self.started,
            {**attrs, "gen_ai.operation.name": "chat"},
        )
        telemetry.metrics.observe(
            "gen_ai.client.token.usage", int(usage.get("input") or 0), {**attrs, "gen_ai.token.type": "input"}
        )
        telemetry.metrics.observe(
            "gen_ai.client.token.usage",
            int(usage.get("output") or 0),
            {**attrs, "gen_ai.token.type": "output"},
        )
        cost = usage.get("cost")
        if isinstance(cost, Mapping) and cost.get("total"):
            telemetry.metrics.add("fastagent.cost", float(cost["total"]), {"gen_ai.request.model": model.id})
        span = self.span
        if span is None:
            return
        span.update(_usage_attributes(usage))
        span.update(
            {
                "gen_ai.response.model": message["model"],
                "gen_ai.response.finish_reasons": [str(message.get("stopReason"))],
            }
        )
        if telemetry.capture_content():
            text = "".join(str(b.get("text", "")) for b in message["content"] if b.get("type") == "text")
            span.update(
                {
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": text}]}],
                        ensure_ascii=False,
                    )
                }
            )


@contextmanager
def model_span(request: ModelRequest) -> Iterator[ModelSpan]:
    """``chat <model>`` (a CLIENT span) around one model request and its retries."""
    model = request.model
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": model.provider,
        "gen_ai.request.model": model.id,
        "gen_ai.conversation.id": request.session_id,
        "server.address": _host(model.base_url),
    }
    if request.output_limit:
        attrs["gen_ai.request.max_tokens"] = request.output_limit
    with telemetry.span(f"chat {model.id}", telemetry.CLIENT, attrs) as span:
        if span is not None and telemetry.capture_content():
            span.update(_input_messages(request))
        try:
            yield ModelSpan(span, request)
        except Exception as exc:
            if span is not None:  # the failed event's wording, never the key
                overflow = getattr(exc, "overflow", False)
                span.fail(
                    redact(str(exc), [request.api_key]), "context_overflow" if overflow else "model_error"
                )
            raise


@functools.lru_cache(maxsize=64)
def _host(url: str) -> str | None:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname if url else None


def _input_messages(request: ModelRequest) -> dict[str, Any]:
    def text_of(message: Any) -> str:
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "".join(
            b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"
        )

    messages = [
        {"role": m.get("role"), "parts": [{"type": "text", "content": text_of(m)}]} for m in request.messages
    ]
    return {
        "gen_ai.system_instructions": json.dumps(
            [{"type": "text", "content": request.system}], ensure_ascii=False
        ),
        "gen_ai.input.messages": json.dumps(messages, ensure_ascii=False),
    }


@contextmanager
def tool_span(name: str, call_id: str, arguments: Any) -> Iterator[Callable[[bool, Any], None]]:
    """``execute_tool <name>`` around one tool call; yields ``done(is_error, content)``."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }
    with telemetry.span(f"execute_tool {name}", telemetry.INTERNAL, attrs) as span:

        def done(is_error: bool, content: Any) -> None:
            if span is None:
                return
            if telemetry.capture_content():
                span.update(
                    {
                        "gen_ai.tool.call.arguments": json.dumps(arguments, ensure_ascii=False, default=str),
                        "gen_ai.tool.call.result": json.dumps(content, ensure_ascii=False, default=str)[
                            :8192
                        ],
                    }
                )
            if is_error:
                span.fail("the tool returned an error", "tool_error")

        yield done
