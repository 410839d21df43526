"""The request side of ``openai-completions``: pi messages, tools and thinking level to a
streaming chat-completions body (system/developer role, tool results as ``role: "tool"``, compat
flags from ``models.json``)."""

from __future__ import annotations

from typing import Any

from fastagent_cli.errors import ProviderError
from fastagent_cli.models._wire import default_max_tokens, transform_messages, wire_arguments
from fastagent_cli.models.copilot import copilot_headers
from fastagent_cli.models.types import ContentBlock, ModelRequest

__all__ = ["OPENAI_BASE_URL", "build_chat_request"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_IMAGE_NOTE = "(image omitted: this model does not accept images)"


def _user_content(content: list[ContentBlock] | str, images: bool) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    has_image = False
    for block in content:
        if block["type"] == "text":
            texts.append(block["text"])
            parts.append({"type": "text", "text": block["text"]})
        elif images:
            has_image = True
            url = f"data:{block['mimeType']};base64,{block['data']}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            texts.append(_IMAGE_NOTE)
    # Plain strings for text-only turns: some local servers' chat templates cannot render parts.
    return parts if has_image else "\n".join(texts)


def _tool_result_text(content: list[ContentBlock]) -> str:
    return "\n".join(
        b["text"] if b["type"] == "text" else f"(image {b['mimeType']} omitted from the tool result)"
        for b in content
    )


def _convert_messages(request: ModelRequest) -> list[dict[str, Any]]:
    model, compat = request.model, request.model.compat
    out: list[dict[str, Any]] = []
    if request.system:
        developer = model.reasoning and compat.get("supportsDeveloperRole", model.provider == "openai")
        out.append({"role": "developer" if developer else "system", "content": request.system})

    def normalize(value: str) -> str:
        return value[:40] if model.provider == "openai" else value

    previous = ""
    for message in transform_messages(request.messages, model, normalize):
        if message["role"] == "user":
            if previous == "toolResult" and compat.get("requiresAssistantAfterToolResult"):
                out.append({"role": "assistant", "content": "I have processed the tool results."})
            out.append({"role": "user", "content": _user_content(message["content"], model.supports_images)})
        elif message["role"] == "assistant":
            text = "\n\n".join(b["text"] for b in message["content"] if b["type"] == "text" and b["text"])
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": wire_arguments(b["arguments"])},
                }
                for b in message["content"]
                if b["type"] == "toolCall"
            ]
            if not text and not calls:
                continue
            # content must be a string: llama-cpp-python answers 500 to ``content: null``.
            wire: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                wire["tool_calls"] = calls
            out.append(wire)
        else:
            result = {
                "role": "tool",
                "tool_call_id": message["toolCallId"],
                "content": _tool_result_text(message["content"]),
            }
            if compat.get("requiresToolResultName"):
                result["name"] = message["toolName"]
            out.append(result)
        previous = message["role"]
    return out


def build_chat_request(request: ModelRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The URL, headers and JSON body of a streaming chat-completions request."""
    model, compat = request.model, request.model.compat
    base = model.base_url or (OPENAI_BASE_URL if model.provider == "openai" else "")
    if not base:
        raise ProviderError(f"{model.provider}: model {model.spec} has no base URL")
    body: dict[str, Any] = {"model": model.id, "messages": _convert_messages(request), "stream": True}
    if compat.get("supportsUsageInStreaming", True) is not False:
        body["stream_options"] = {"include_usage": True}
    max_field = compat.get("maxTokensField") or (
        "max_completion_tokens" if model.provider == "openai" else "max_tokens"
    )
    body[max_field] = default_max_tokens(request)
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in request.tools
        ]
    if model.reasoning:
        thinking_format = compat.get("thinkingFormat")
        enabled = request.thinking != "off"
        if thinking_format in ("zai", "qwen"):
            body["enable_thinking"] = enabled
        elif thinking_format == "qwen-chat-template":
            body["chat_template_kwargs"] = {"enable_thinking": enabled}
        elif enabled and compat.get("supportsReasoningEffort", True) is not False:
            efforts = {**_EFFORT, **dict(compat.get("reasoningEffortMap") or {})}
            body["reasoning_effort"] = efforts.get(request.thinking, request.thinking)
    headers = {"Accept": "text/event-stream"}
    if request.api_key:
        headers["Authorization"] = f"Bearer {request.api_key}"
    headers.update(model.headers)
    headers.update(copilot_headers(request))
    return f"{base.rstrip('/')}/chat/completions", headers, body
