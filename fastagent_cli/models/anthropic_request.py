"""The request side of ``anthropic-messages``: pi messages, tools and thinking level to a streaming
``POST /v1/messages`` body (merged same-role turns, tool results as ``user`` ``tool_result``
blocks, signed thinking replayed, budget-based extended thinking).

Auth: an API key goes out as ``x-api-key``; a Claude Pro/Max token (``sk-ant-oat...``) as a Bearer
token with Claude Code's identity (see :mod:`.claude_code`); GitHub Copilot's token as a plain
Bearer token with its per-request headers."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from fastagent_cli.models._wire import default_max_tokens, document_note, transform_messages
from fastagent_cli.models.claude_code import (
    CLAUDE_CODE_IDENTITY,
    is_oauth_token,
    oauth_headers,
    to_claude_code_name,
)
from fastagent_cli.models.copilot import COPILOT_PROVIDER, copilot_headers
from fastagent_cli.models.structured import OUTPUT_TOOL, native_mode
from fastagent_cli.models.types import (
    AssistantMessage,
    ContentBlock,
    Message,
    ModelRequest,
    ToolResultMessage,
    UserBlock,
)

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "THINKING_BUDGETS",
    "build_messages_request",
    "normalize_tool_id",
    "uses_claude_code",
    "wire_turn",
]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384, "max": 16384}
_MIN_BUDGET = 1024
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_IMAGE_NOTE = "(image omitted: this model does not accept images)"


def normalize_tool_id(value: str) -> str:
    """A tool-call id matching ``^[a-zA-Z0-9_-]{1,64}$``, deterministic so calls and results agree."""
    cleaned = _BAD_ID_CHARS.sub("_", value)
    if cleaned and len(cleaned) <= 64:
        return cleaned
    digest = hashlib.sha1(value.encode()).hexdigest()[:10]
    return f"{cleaned[:53]}_{digest}" if cleaned else f"toolu_{digest}"


def _content_blocks(
    content: list[UserBlock] | list[ContentBlock] | str, images: bool, pdf: bool = False
) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    blocks: list[dict[str, Any]] = []
    for block in content:
        if block["type"] == "text":
            if block["text"].strip():  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": block["text"]})
        elif block["type"] == "document":
            if pdf:
                source = {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}
                blocks.append({"type": "document", "source": source, "title": block["name"]})
            else:
                blocks.append({"type": "text", "text": document_note(block)})
        elif images:
            source = {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}
            blocks.append({"type": "image", "source": source})
        else:
            blocks.append({"type": "text", "text": _IMAGE_NOTE})
    return blocks


def _assistant_blocks(message: AssistantMessage, claude_code: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message["content"]:
        if block["type"] == "text":
            if block["text"].strip():
                blocks.append({"type": "text", "text": block["text"]})
        elif block["type"] == "thinking":
            # Only this model's signed thinking can be replayed (transform_messages turned another
            # model's thinking into text already); unsigned thinking is dropped.
            signature = block.get("thinkingSignature")
            if signature:
                blocks.append({"type": "thinking", "thinking": block["thinking"], "signature": signature})
        else:
            name = to_claude_code_name(block["name"]) if claude_code else block["name"]
            blocks.append({"type": "tool_use", "id": block["id"], "name": name, "input": block["arguments"]})
    return blocks


def _tool_result_block(message: ToolResultMessage, images: bool) -> dict[str, Any]:
    parts = _content_blocks(message["content"], images)
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message["toolCallId"]}
    if parts and all(p["type"] == "text" for p in parts):
        result["content"] = "\n".join(p["text"] for p in parts)
    elif parts:
        result["content"] = parts
    result["is_error"] = message["isError"]
    return result


def wire_turn(message: Message, request: ModelRequest, claude_code: bool) -> tuple[str, list[dict[str, Any]]]:
    """The (role, content blocks) of one transformed message (a tool result is a ``user`` turn)."""
    images = request.model.supports_images
    if message["role"] == "user":
        return "user", _content_blocks(message["content"], images, request.model.supports_pdf)
    if message["role"] == "assistant":
        return "assistant", _assistant_blocks(message, claude_code)
    return "user", [_tool_result_block(message, images)]


def _convert_messages(request: ModelRequest, claude_code: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in transform_messages(request.messages, request.model, normalize_tool_id):
        role, blocks = wire_turn(message, request, claude_code)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:  # the API wants strictly alternating roles
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def uses_claude_code(request: ModelRequest) -> bool:
    """The request authenticates with a Claude Pro/Max subscription token."""
    return request.model.provider != COPILOT_PROVIDER and is_oauth_token(request.api_key)


def messages_url(base_url: str) -> str:
    base = (base_url or ANTHROPIC_BASE_URL).rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def _output_tool(body: dict[str, Any], request: ModelRequest, thinking: bool) -> None:
    """A structured run: the schema is the input of a tool the model is made to call (any tool
    when it has others to use first; with thinking on the API allows only ``auto``: the system
    prompt asks for it and the answer is checked all the same)."""
    out = request.output
    assert out is not None
    name = OUTPUT_TOOL
    tool = {"name": name, "description": "Give the final answer.", "input_schema": dict(out.schema)}
    body.setdefault("tools", []).append(tool)
    if thinking:
        body["tool_choice"] = {"type": "auto"}
    elif len(body["tools"]) > 1:
        body["tool_choice"] = {"type": "any"}
    else:
        body["tool_choice"] = {"type": "tool", "name": name}


def build_messages_request(
    request: ModelRequest, *, convert: bool = True
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The URL, headers and JSON body of a streaming Messages API request (``convert=False``: the
    body's ``messages`` left empty, in their place, for
    :func:`~fastagent_cli.models.anthropic_encode.encode_messages_request`)."""
    model = request.model
    copilot = model.provider == COPILOT_PROVIDER
    claude_code = uses_claude_code(request)
    max_tokens = default_max_tokens(request)
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens, "stream": True}
    if claude_code:
        body["system"] = [{"type": "text", "text": CLAUDE_CODE_IDENTITY}]
        if request.system:
            body["system"].append({"type": "text", "text": request.system})
    elif request.system:
        body["system"] = request.system
    body["messages"] = _convert_messages(request, claude_code) if convert else []
    if request.tools:
        body["tools"] = [
            {
                "name": to_claude_code_name(t.name) if claude_code else t.name,
                "description": t.description,
                "input_schema": dict(t.parameters),
            }
            for t in request.tools
        ]
    thinking = model.reasoning and request.thinking != "off"
    if request.output is not None and native_mode(model.api, model.compat) == "tool":
        _output_tool(body, request, thinking)
    if thinking:
        budgets = {**THINKING_BUDGETS, **dict(model.compat.get("thinkingBudgets") or {})}
        budget = int(budgets[request.thinking])
        max_tokens = min(max_tokens + budget, model.max_tokens, request.output_limit or model.max_tokens)
        if max_tokens <= budget:
            budget = max_tokens - 1024
        if budget >= _MIN_BUDGET:  # below the API's minimum: answer without thinking
            body["max_tokens"] = max_tokens
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    headers = {"anthropic-version": ANTHROPIC_VERSION, "accept": "text/event-stream"}
    if claude_code and request.api_key:
        headers.update(oauth_headers(request.api_key))
    elif copilot and request.api_key:
        headers["authorization"] = f"Bearer {request.api_key}"
    elif request.api_key:
        headers["x-api-key"] = request.api_key
    headers.update(model.headers)
    headers.update(copilot_headers(request))
    return messages_url(model.base_url), headers, body
