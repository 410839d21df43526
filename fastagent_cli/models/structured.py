"""Structured output: a JSON Schema the answer must match, how each API is asked for it, and the
check of what came back.

* :func:`parse_schema`: what a user types (``--schema``, ``[output] schema``): a file, inline JSON,
  or llm's concise form ``'name str, age int, bio: a short bio'`` (comma or newline separated;
  a field without a type is a string; ``int``, ``float``, ``str``, ``bool``; text after ``:`` is
  the field's description). The concise form makes every field required and forbids others, so
  OpenAI's strict mode can take it.
* :func:`native_mode`: ``response_format`` (OpenAI chat completions), ``text_format`` (the
  Responses API), ``tool`` (Anthropic: a forced output tool) or ``None`` (asked in the system
  prompt only; the scripted model, a server whose ``compat.supportsStructuredOutputs`` is false).
* :func:`check_answer`: the object in an answer (an output tool's arguments, or the text: a bare
  JSON object, or one inside a fenced block) validated with :mod:`jsonschema`; the error text goes
  back to the model when it does not match.

:mod:`jsonschema` is imported only when a schema is used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fastagent_cli.errors import UsageError

__all__ = [
    "OUTPUT_TOOL",
    "OutputFormat",
    "check_answer",
    "check_schema",
    "is_strict_compatible",
    "native_mode",
    "output_format",
    "output_instruction",
    "parse_schema",
]

OUTPUT_TOOL = "final_result"
"""The name of the tool an Anthropic model is made to call with its answer."""

NativeMode = Literal["response_format", "text_format", "tool"]
_TYPES = {"str": "string", "string": "string", "int": "integer", "integer": "integer",
          "float": "number", "number": "number", "bool": "boolean", "boolean": "boolean"}  # fmt: skip
_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """The schema a run's answer must match, as the wire clients send it."""

    name: str
    schema: Mapping[str, Any]
    strict: bool


def output_format(schema: Mapping[str, Any]) -> OutputFormat:
    """The wire form of ``schema`` (named by its ``title``, else ``answer``)."""
    title = schema.get("title")
    name = _NAME.sub("_", title).strip("_")[:64] if isinstance(title, str) else ""
    return OutputFormat(name or "answer", schema, is_strict_compatible(schema))


def parse_schema(text: str, base: Path | None = None) -> dict[str, Any]:
    """A JSON Schema from a file path, inline JSON or the concise form; UsageError when none."""
    source = text.strip()
    if not source:
        raise UsageError("the schema is empty")
    if source.startswith("{"):
        return _checked(_json_object(source, "the inline schema"), "the inline schema")
    path = Path(source).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    if source.endswith(".json") or path.is_file():
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read the schema file {source}: {exc.strerror or exc}") from None
        return _checked(_json_object(raw, f"the schema file {source}"), f"the schema file {source}")
    return concise_schema(source)


def concise_schema(text: str) -> dict[str, Any]:
    """llm's concise form as a JSON Schema object."""
    properties: dict[str, Any] = {}
    for part in re.split(r"[,\n]", text):
        field, _, description = part.partition(":")
        words = field.split()
        if not words:
            continue
        if len(words) > 2:
            raise UsageError(f"cannot read schema field {part.strip()!r}: write NAME [TYPE][: description]")
        kind = words[1].lower() if len(words) == 2 else "str"
        if kind not in _TYPES:
            raise UsageError(
                f"unknown type {words[1]!r} in schema field {words[0]!r} (int, float, str, bool)"
            )
        prop: dict[str, Any] = {"type": _TYPES[kind]}
        if description.strip():
            prop["description"] = description.strip()
        properties[words[0]] = prop
    if not properties:
        raise UsageError("the schema names no fields")
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _json_object(raw: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} is not a JSON object")
    return value


def _checked(schema: dict[str, Any], what: str) -> dict[str, Any]:
    error = check_schema(schema)
    if error is not None:
        raise UsageError(f"{what} is not a valid JSON Schema: {error}")
    return schema


def check_schema(schema: Any) -> str | None:
    """Why ``schema`` is not a usable JSON Schema (an object whose answer is an object), or None."""
    if not isinstance(schema, Mapping):
        return "a schema must be a JSON object"
    from jsonschema import SchemaError, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"{exc.message} (at {_where(exc.absolute_path)})"
    kind = schema.get("type")
    if kind is not None and kind != "object":
        return f'the answer must be a JSON object: its schema has "type": {json.dumps(kind)}'
    return None


def is_strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether OpenAI's strict mode accepts ``schema``: every object closed and all its
    properties required (checked through properties, items and ``$defs``)."""
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(props):
            return False
        if not all(isinstance(p, Mapping) and is_strict_compatible(p) for p in props.values()):
            return False
    items = schema.get("items")
    if isinstance(items, Mapping) and not is_strict_compatible(items):
        return False
    for key in ("anyOf", "$defs", "definitions"):
        nested = schema.get(key)
        values = nested.values() if isinstance(nested, Mapping) else nested or ()
        if not all(isinstance(v, Mapping) and is_strict_compatible(v) for v in values):
            return False
    return True


def native_mode(api: str, compat: Mapping[str, Any]) -> NativeMode | None:
    """How a model of ``api`` is asked for structured output natively (``None``: it is not)."""
    if compat.get("supportsStructuredOutputs") is False:
        return None
    if api == "openai-completions":
        return "response_format"
    if api in ("openai-responses", "openai-codex-responses"):
        return "text_format"
    if api == "anthropic-messages":
        return "tool"
    return None


def output_instruction(fmt: OutputFormat, mode: NativeMode | None) -> str:
    """What the system prompt adds for a structured run."""
    if mode == "tool":
        return (
            f"When you have the final answer, call the `{OUTPUT_TOOL}` tool with it as its arguments "
            "(they must match its input schema); do not answer in text."
        )
    schema = json.dumps(fmt.schema, ensure_ascii=False)
    return (
        "Your final answer must be a single JSON object that matches this JSON Schema, with no other "
        f"text before or after it:\n{schema}"
    )


def check_answer(value: Any, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    """``(object, None)`` when ``value`` (tool arguments, or answer text) matches ``schema``, else
    ``(None, why)`` in words the model can act on."""
    if isinstance(value, str):
        parsed = _parse_text(value)
        if isinstance(parsed, str):
            return None, parsed
        value = parsed[0]
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return value, None
    shown = "; ".join(f"{_where(e.absolute_path)}: {e.message}" for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return None, f"{shown}{more}"


def _parse_text(text: str) -> tuple[Any] | str:
    body = text.strip()
    if not body:
        return "the answer was empty, not a JSON object"
    fenced = _FENCE.search(body)
    candidates = [body] + ([fenced.group(1)] if fenced else [])
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start : end + 1])
    first_error = ""
    for candidate in candidates:
        try:
            return (json.loads(candidate),)
        except ValueError as exc:
            first_error = first_error or str(exc)
    return f"the answer is not a JSON object ({first_error})"


def _where(path: Any) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return f"${parts}"
