"""The request side of the OpenAI Responses API, in its two dialects.

* ``openai-responses``: ``POST {base_url}/responses`` with an API key (OpenAI, GitHub Copilot, any
  compatible server); the system prompt is the first input item (``developer`` role for reasoning
  models), ``max_output_tokens`` is sent, ``store`` is off.
* ``openai-codex-responses``: the ChatGPT subscription backend, ``POST {base_url}/codex/responses``
  with the login's access token, its ``chatgpt-account-id`` and the Codex headers; the system
  prompt goes in ``instructions`` and no output limit is sent (the backend rejects one).

History becomes input items: user turns as ``input_text``/``input_image`` parts, assistant text as
``message`` items, this model's reasoning replayed as the item it streamed (encrypted content
included, so the model keeps its chain of thought across tool rounds), tool calls as
``function_call`` items and their results as ``function_call_output``. A tool-call id from this
API is ``<call_id>|<item_id>``; the item id is sent back only for this very model's calls.
"""

from __future__ import annotations

import base64
import json
import platform
import re
from typing import Any

from fastagent_cli.errors import ProviderError
from fastagent_cli.models._wire import (
    default_max_tokens,
    document_note,
    is_same_model,
    pdf_data_url,
    transform_messages,
    wire_arguments,
)
from fastagent_cli.models.copilot import copilot_headers
from fastagent_cli.models.structured import native_mode
from fastagent_cli.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolResultMessage,
    UserBlock,
)

__all__ = [
    "CODEX_API",
    "CODEX_ORIGINATOR",
    "HISTORY",
    "RESPONSES_API",
    "build_responses_request",
    "codex_account_id",
    "codex_responses_url",
    "normalize_call_id",
    "text_signature",
    "wire_items",
]

RESPONSES_API = "openai-responses"
CODEX_API = "openai-codex-responses"
OPENAI_BASE_URL = "https://api.openai.com/v1"
CODEX_BASE_URL = "https://chatgpt.com/backend-api"
CODEX_ORIGINATOR = "fastagent"
_JWT_CLAIM = "https://api.openai.com/auth"
_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_IMAGE_NOTE = "(image omitted: this model does not accept images)"
_NO_REASONING_NOTE = "# Juice: 0 !important"  # the only way to turn gpt-5 reasoning off


def normalize_call_id(value: str) -> str:
    """``call|item`` ids made acceptable again (safe characters, ``fc`` item prefix, at most 64
    characters, no trailing underscores); other providers' ids pass through."""
    if "|" not in value:
        return value
    call, item = value.split("|", 1)
    call = _UNSAFE_ID_CHARS.sub("_", call)[:64].rstrip("_")
    item = _UNSAFE_ID_CHARS.sub("_", item)
    item = (item if item.startswith("fc") else f"fc_{item}")[:64].rstrip("_")
    return f"{call}|{item}"


def text_signature(item_id: str, phase: str | None = None) -> str:
    """pi's text signature: which Responses message item a text block came from."""
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return json.dumps(payload, separators=(",", ":"))


def _signature_id(signature: str | None) -> str | None:
    if not signature:
        return None
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            return None
        return parsed.get("id") if isinstance(parsed, dict) and isinstance(parsed.get("id"), str) else None
    return signature


def _user_parts(content: list[UserBlock] | str, images: bool, pdf: bool = False) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    parts: list[dict[str, Any]] = []
    for block in content:
        if block["type"] == "text":
            parts.append({"type": "input_text", "text": block["text"]})
        elif block["type"] == "document":
            if pdf:
                parts.append(
                    {"type": "input_file", "filename": block["name"], "file_data": pdf_data_url(block)}
                )
            else:
                parts.append({"type": "input_text", "text": document_note(block)})
        elif images:
            url = f"data:{block['mimeType']};base64,{block['data']}"
            parts.append({"type": "input_image", "detail": "auto", "image_url": url})
        else:
            parts.append({"type": "input_text", "text": _IMAGE_NOTE})
    return parts


def _assistant_items(message: AssistantMessage, same: bool, index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in message["content"]:
        if block["type"] == "thinking":
            # Only this model's reasoning can be replayed (another model's became text already).
            try:
                item = json.loads(block.get("thinkingSignature") or "null")
            except ValueError:
                item = None
            if isinstance(item, dict) and item.get("type") == "reasoning":
                items.append(item)
        elif block["type"] == "text":
            if not block["text"]:
                continue
            item_id = _signature_id(block.get("textSignature")) or f"msg_{index}"
            part = {"type": "output_text", "text": block["text"], "annotations": []}
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [part],
                    "status": "completed",
                    "id": item_id if len(item_id) <= 64 else f"msg_{index}",
                }
            )
        else:
            call_id, _, item_id = block["id"].partition("|")
            call: dict[str, Any] = {"type": "function_call", "call_id": call_id, "name": block["name"]}
            if same and item_id.startswith("fc"):
                call["id"] = item_id  # another model's item id would fail reasoning pairing
            call["arguments"] = wire_arguments(block["arguments"])
            items.append(call)
    return items


def _tool_output(message: ToolResultMessage, images: bool) -> dict[str, Any]:
    text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text")
    pictures = [b for b in message["content"] if b["type"] == "image"]
    output: str | list[dict[str, Any]]
    if pictures and images:
        output = [{"type": "input_text", "text": text}] if text else []
        output += [
            {"type": "input_image", "detail": "auto", "image_url": f"data:{b['mimeType']};base64,{b['data']}"}
            for b in pictures
        ]
    else:
        notes = [f"(image {b['mimeType']} omitted from the tool result)" for b in pictures]
        output = "\n".join([text, *notes] if text else notes)
    return {
        "type": "function_call_output",
        "call_id": message["toolCallId"].partition("|")[0],
        "output": output,
    }


HISTORY: dict[str, Any] = {}
"""Where the conversation's items go in a body built with ``convert=False`` (this very object:
:func:`~fastagent_cli.models.responses_encode.encode_responses_request` puts their JSON there)."""


def wire_items(message: Message, index: int, request: ModelRequest) -> list[dict[str, Any]]:
    """The input items of one transformed message (``index``: its place in the transformed
    conversation, which names an assistant text's item when it has no id of its own)."""
    model = request.model
    if message["role"] == "user":
        parts = _user_parts(message["content"], model.supports_images, model.supports_pdf)
        return [{"role": "user", "content": parts}] if parts else []
    if message["role"] == "assistant":
        return _assistant_items(message, is_same_model(message, model), index)
    return [_tool_output(message, model.supports_images)]


def _input_items(request: ModelRequest, convert: bool = True) -> list[dict[str, Any]]:
    if not convert:
        return [HISTORY]
    items: list[dict[str, Any]] = []
    for index, message in enumerate(transform_messages(request.messages, request.model, normalize_call_id)):
        items += wire_items(message, index, request)
    return items


def _tools(request: ModelRequest, strict: bool | None) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": dict(t.parameters),
            "strict": strict,
        }
        for t in request.tools
    ]


def _effort(request: ModelRequest) -> str:
    efforts = dict(request.model.compat.get("reasoningEffortMap") or {})
    return str(efforts.get(request.thinking, request.thinking))


def codex_responses_url(base_url: str) -> str:
    base = (base_url or CODEX_BASE_URL).rstrip("/")
    if base.endswith("/codex/responses"):
        return base
    return f"{base}/responses" if base.endswith("/codex") else f"{base}/codex/responses"


def codex_account_id(token: str) -> str | None:
    """The ChatGPT account id inside a Codex access token (a JWT), or ``None``."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, UnicodeDecodeError):
        return None
    auth = claims.get(_JWT_CLAIM) if isinstance(claims, dict) else None
    account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    return account if isinstance(account, str) and account else None


def _codex_effort(model_id: str, effort: str) -> str:
    """pi's per-model clamps for the subscription backend."""
    name = model_id.rsplit("/", 1)[-1]
    if name.startswith(("gpt-5.2", "gpt-5.3", "gpt-5.4")) and effort == "minimal":
        return "low"
    if name == "gpt-5.1" and effort == "xhigh":
        return "high"
    if name == "gpt-5.1-codex-mini":
        return "high" if effort in ("high", "xhigh") else "medium"
    return effort


def _user_agent() -> str:
    system = f"{platform.system().lower()} {platform.release()}; {platform.machine()}"
    return f"{CODEX_ORIGINATOR} ({system})"


def _codex_request(request: ModelRequest, convert: bool) -> tuple[str, dict[str, str], dict[str, Any]]:
    model = request.model
    token = request.api_key or ""
    account = codex_account_id(token)
    if account is None:
        raise ProviderError(
            f"{model.provider}: the access token carries no ChatGPT account id; "
            f"log in again with `fastagent login {model.provider}`"
        )
    body: dict[str, Any] = {
        "model": model.id,
        "store": False,
        "stream": True,
        "instructions": request.system,
        "input": _input_items(request, convert),
        "text": {"verbosity": "medium"},
        "include": ["reasoning.encrypted_content"],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }
    if request.session_id:
        body["prompt_cache_key"] = request.session_id
    if request.tools:
        body["tools"] = _tools(request, None)
    _text_format(body, request)
    if model.reasoning and request.thinking != "off":
        body["reasoning"] = {"effort": _codex_effort(model.id, _effort(request)), "summary": "auto"}
    headers = {
        "Authorization": f"Bearer {token}",
        "chatgpt-account-id": account,
        "originator": CODEX_ORIGINATOR,
        "User-Agent": _user_agent(),
        "OpenAI-Beta": "responses=experimental",
        "Accept": "text/event-stream",
    }
    if request.session_id:
        headers["session_id"] = request.session_id
    headers.update(model.headers)
    return codex_responses_url(model.base_url), headers, body


def _text_format(body: dict[str, Any], request: ModelRequest) -> None:
    """A structured run's schema as ``text.format`` (the Responses API's structured output)."""
    out = request.output
    if out is None or native_mode(request.model.api, request.model.compat) != "text_format":
        return
    text = body.setdefault("text", {})
    schema = dict(out.schema)
    text["format"] = {"type": "json_schema", "name": out.name, "schema": schema, "strict": out.strict}


def build_responses_request(
    request: ModelRequest, *, convert: bool = True
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The URL, headers and JSON body of a streaming Responses request (either dialect;
    ``convert=False``: the conversation's items left out, :data:`HISTORY` in their place)."""
    model = request.model
    if model.api == CODEX_API:
        return _codex_request(request, convert)
    base = model.base_url or (OPENAI_BASE_URL if model.provider == "openai" else "")
    if not base:
        raise ProviderError(f"{model.provider}: model {model.spec} has no base URL")
    items = _input_items(request, convert)
    if request.system:
        items.insert(0, {"role": "developer" if model.reasoning else "system", "content": request.system})
    body: dict[str, Any] = {
        "model": model.id,
        "input": items,
        "stream": True,
        "store": False,
        "max_output_tokens": default_max_tokens(request),
    }
    if request.session_id:
        body["prompt_cache_key"] = request.session_id
    if request.tools:
        body["tools"] = _tools(request, False)
    _text_format(body, request)
    if model.reasoning:
        if request.thinking != "off":
            body["reasoning"] = {"effort": _effort(request), "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        elif model.id.startswith("gpt-5"):
            items.append(
                {"role": "developer", "content": [{"type": "input_text", "text": _NO_REASONING_NOTE}]}
            )
    headers = {"Accept": "text/event-stream"}
    if request.api_key:
        headers["Authorization"] = f"Bearer {request.api_key}"
    headers.update(model.headers)
    headers.update(copilot_headers(request))
    return f"{base.rstrip('/')}/responses", headers, body
