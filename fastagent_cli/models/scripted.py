"""The scripted model: ``scripted/<name>``, an offline model for tests and CI.

It speaks the same stream as a real wire client (text and thinking deltas, tool calls, usage,
HTTP-status errors, delays), so an agent's tools, prompts and failure handling run for real with
no network. ``<name>`` is one of:

* ``echo``: answers ``echo: <your text>``;
* a script file: ``scripts/<name>.json`` in the agent directory, or a path ending in ``.json``
  (relative to the agent directory, or absolute);
* a Python callable ``module:function`` (the agent directory is importable) that receives a
  :class:`ScriptedRequest` and returns a step (sync or async).

A script is a list of rules; the first rule whose ``match`` fits the latest user text answers
(``match`` is a case-insensitive substring, or ``/regex/``; a rule without one is the default).
Each model request inside a turn takes the rule's next step (the round is the number of assistant
replies since that user message)::

    {"rules": [
      {"match": "weather", "steps": [
        {"toolCalls": [{"name": "get_weather", "args": {"city": "Paris"}}]},
        {"text": "It is sunny in Paris."}]},
      {"steps": [{"thinking": "A greeting.", "text": "Hello!", "chunkDelayMs": 20}]}
    ]}

``{"steps": [...]}`` or a bare list of steps is one default rule; a string step is a text reply.
Step keys: ``text``, ``thinking``, ``toolCalls`` (``name``, ``args``, optional ``id``),
``delayMs`` (before the reply), ``chunkDelayMs`` / ``chunkSize`` (streaming pace),
``usage`` (``input``, ``output``), and ``error`` (``status``, ``message``, ``retryAfter``,
``times``): an error step fails the request ``times`` times (default 1) for the same
conversation, then the next step answers, which is how a retried 429 or 500 is scripted.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeAlias, cast

from fastagent_cli.errors import ModelError, ProviderError
from fastagent_cli.messages import TOOL_BUDGET_NOTE, is_failed_turn, now_ms
from fastagent_cli.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    StreamDelta,
    ToolCall,
    ToolSpec,
    empty_usage,
)

__all__ = ["TOOL_BUDGET_NOTE", "ScriptedModel", "ScriptedRequest", "load_scripted"]

Step: TypeAlias = Mapping[str, Any] | str
Responder: TypeAlias = Callable[["ScriptedRequest"], Step | Awaitable[Step]]


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """What a scripted callable receives."""

    model: str
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    thinking: str
    last_user_text: str
    round: int


@dataclass(slots=True)
class _Rule:
    match: re.Pattern[str] | None
    steps: list[Mapping[str, Any]]


@dataclass(slots=True)
class ScriptedModel:
    """A :class:`~fastagent_cli.models.types.ModelClient` that replays a script or a callable."""

    rules: list[_Rule] = field(default_factory=list)
    responder: Responder | None = None
    path: Path | None = None
    """The script file, re-read when it changes (so a running chat or server follows edits)."""
    _stamp: tuple[int, int] | None = None
    _served: dict[tuple[str, int, int], int] = field(default_factory=dict)

    @classmethod
    def from_script(cls, script: Any, source: str = "script") -> ScriptedModel:
        return cls(rules=_parse_script(script, source))

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        model = cls(path=path)
        model._reload()
        return model

    def _reload(self) -> None:
        assert self.path is not None
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                return
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ModelError(f"{self.path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        except OSError as exc:
            raise ModelError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        self.rules = _parse_script(doc, str(self.path))
        self._stamp = stamp
        self._served.clear()

    @classmethod
    def from_callable(cls, fn: Responder) -> ScriptedModel:
        return cls(responder=fn)

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta | AssistantMessage]:
        # like every wire client, it never sees a failed or aborted turn of the history
        request = replace(request, messages=[m for m in request.messages if not is_failed_turn(m)])
        text, round_ = _latest_user(request.messages)
        step = await self._step(request, text, round_)
        yield_delay = float(step.get("delayMs", 0)) / 1000
        if yield_delay:
            await asyncio.sleep(yield_delay)
        error = step.get("error")
        if isinstance(error, Mapping):
            status = int(error.get("status", 500))
            retryable = status == 429 or status >= 500 or status == 408
            retry_after = error.get("retryAfter")
            raise ProviderError(
                f"scripted: {status} {error.get('message', 'scripted error')}",
                status=status,
                retryable=bool(error.get("retryable", retryable)),
                retry_after=None if retry_after is None else float(retry_after),
            )
        pace = float(step.get("chunkDelayMs", 0)) / 1000
        size = int(step.get("chunkSize", 0))
        content: list[Any] = []
        for kind in ("thinking", "text"):
            value = step.get(kind)
            if not value:
                continue
            for piece in _chunks(str(value), size):
                yield StreamDelta(kind, piece)
                await asyncio.sleep(pace)
            content.append({"type": kind, kind: str(value)})
        calls = step.get("toolCalls") or []
        for i, call in enumerate(calls):
            args = call.get("args", call.get("arguments", {}))
            tool_call: ToolCall = {
                "type": "toolCall",
                "id": str(call.get("id") or f"call_{round_}_{i}"),
                "name": str(call["name"]),
                "arguments": dict(args) if isinstance(args, Mapping) else {},
            }
            content.append(tool_call)
        usage = empty_usage()
        given = step.get("usage") or {}
        usage["input"] = int(given.get("input", _estimate(request)))
        usage["output"] = int(given.get("output", sum(len(json.dumps(c)) for c in content) // 4))
        usage["totalTokens"] = usage["input"] + usage["output"]
        message: AssistantMessage = {
            "role": "assistant",
            "content": content,
            "api": "scripted",
            "provider": "scripted",
            "model": request.model.id,
            "usage": usage,
            "stopReason": "toolUse" if calls else "length" if step.get("stopReason") == "length" else "stop",
            "timestamp": now_ms(),
        }
        yield message

    async def _step(self, request: ModelRequest, text: str, round_: int) -> Mapping[str, Any]:
        if self.responder is not None:
            scripted = ScriptedRequest(
                model=request.model.id,
                system=request.system,
                messages=request.messages,
                tools=request.tools,
                thinking=request.thinking,
                last_user_text=text,
                round=round_,
            )
            try:
                result = self.responder(scripted)
                if inspect.isawaitable(result):
                    result = await result
            except ProviderError:
                raise  # a scripted failure (a 503, a 429 to retry): the function meant it
            except Exception as exc:  # the author's bug: one line naming it, not a traceback
                raise _responder_error(self.responder, exc) from None
            return _normalise_step(result)
        if self.path is not None:
            self._reload()
        rule_index, rule = next(
            ((i, r) for i, r in enumerate(self.rules) if r.match is None or r.match.search(text)),
            (-1, None),
        )
        if rule is None:
            raise ProviderError(f"scripted: 400 no rule matches {text[:80]!r}", status=400)
        fingerprint: str | None = None
        answered = 0
        for index, step in enumerate(rule.steps):
            error = step.get("error")
            if isinstance(error, Mapping):
                if fingerprint is None:  # only scripts with error steps pay for it
                    fingerprint = _fingerprint(request.messages)
                key = (fingerprint, rule_index, index)
                if answered == round_ and self._served.get(key, 0) < int(error.get("times", 1)):
                    self._served[key] = self._served.get(key, 0) + 1
                    return step
                continue
            if answered == round_:
                return step
            answered += 1
        last = rule.steps[-1] if rule.steps else None
        if last is not None and isinstance(last.get("error"), Mapping) and answered == round_:
            return last
        raise ProviderError(f"scripted: 400 the script has no step for round {round_ + 1}", status=400)


def _responder_error(fn: Responder, exc: Exception) -> ProviderError:
    """``scripted: the model function mod:fn raised ValueError: ... (at file.py:12)``."""
    import traceback

    name = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return ProviderError(f"scripted: the model function {name} raised {detail}{where}", retryable=False)


def _latest_user(messages: Sequence[Message]) -> tuple[str, int]:
    round_ = 0
    for message in reversed(messages):
        role = message["role"]
        if role == "assistant":
            round_ += 1
        elif role == "user":
            text = _text_of(message.get("content", ""))
            if text != TOOL_BUDGET_NOTE:
                return text, round_
    return "", round_


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text")


def _chunks(text: str, size: int) -> list[str]:
    if size > 0:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _fingerprint(messages: Sequence[Message]) -> str:
    """Which conversation a request belongs to (a retry sends the same messages)."""
    return hashlib.sha1(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()


def _estimate(request: ModelRequest) -> int:
    """Input tokens, estimated at four characters a token."""
    chars = len(request.system)
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
            continue
        for block in content or []:
            text = block.get("text") or block.get("thinking") or ""
            chars += len(text) if isinstance(text, str) else 64
    return chars // 4


def _normalise_step(step: Any) -> Mapping[str, Any]:
    if isinstance(step, str):
        return {"text": step}
    if isinstance(step, Mapping):
        return step
    raise ModelError(f"a scripted step must be a string or an object, not {type(step).__name__}")


def _compile(match: Any, source: str) -> re.Pattern[str] | None:
    if match is None:
        return None
    if not isinstance(match, str):
        raise ModelError(f"{source}: match must be a string")
    if len(match) >= 2 and match.startswith("/") and match.endswith("/"):
        try:
            return re.compile(match[1:-1], re.IGNORECASE)
        except re.error as exc:
            raise ModelError(f"{source}: bad regex {match!r}: {exc}") from None
    return re.compile(re.escape(match), re.IGNORECASE)


def _parse_script(script: Any, source: str) -> list[_Rule]:
    if isinstance(script, list):
        script = {"steps": script}
    if not isinstance(script, Mapping):
        raise ModelError(f"{source}: a script is an object with rules or steps, or a list of steps")
    raw_rules = script.get("rules")
    if raw_rules is None:
        raw_rules = [{"steps": script.get("steps", [])}]
    if not isinstance(raw_rules, list):
        raise ModelError(f"{source}: rules must be a list")
    rules: list[_Rule] = []
    for i, raw in enumerate(raw_rules):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("steps"), list):
            raise ModelError(f"{source}: rules[{i}] needs a steps list")
        steps = [_normalise_step(s) for s in raw["steps"]]
        for j, step in enumerate(steps):
            for call in step.get("toolCalls") or []:
                if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                    raise ModelError(f"{source}: rules[{i}].steps[{j}].toolCalls entries need a name")
        rules.append(_Rule(_compile(raw.get("match"), source), steps))
    return rules


def _echo(request: ScriptedRequest) -> Step:
    return {"text": f"echo: {request.last_user_text}"}


BUILTINS: dict[str, Responder] = {"echo": _echo}


def load_scripted(name: str, base_dir: Path | None) -> ScriptedModel:
    """Build the scripted model ``scripted/<name>`` for an agent in ``base_dir``."""
    if name in BUILTINS:
        return ScriptedModel.from_callable(BUILTINS[name])
    base = base_dir or Path.cwd()
    if ":" in name and not name.endswith(".json"):
        module_name, _, attr = name.partition(":")
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))
        try:
            fn = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ModelError(f"scripted model {name!r}: cannot import {module_name}:{attr} ({exc})") from None
        if not callable(fn):
            raise ModelError(f"scripted model {name!r}: {attr} is not callable")
        return ScriptedModel.from_callable(cast(Responder, fn))
    candidates = [Path(name)] if name.endswith(".json") else [base / "scripts" / f"{name}.json"]
    for candidate in candidates:
        path = candidate if candidate.is_absolute() else base / candidate
        if path.is_file():
            return ScriptedModel.from_file(path)
    looked = ", ".join(str(c if c.is_absolute() else base / c) for c in candidates)
    raise ModelError(
        f'scripted model "{name}": no script found (looked for {looked}); built-in: {", ".join(BUILTINS)}'
    )
