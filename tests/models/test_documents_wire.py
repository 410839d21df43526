"""PDF documents in the wire clients (issue 34): which models take them (``supports_pdf``), and
what a model without PDF input reads for a PDF an earlier model of the session was sent (a note,
never the base64), on each API; a PDF counts in the context estimate by its size."""

from __future__ import annotations

import json
from typing import Any

from fastagent_cli.messages import UserMessage
from fastagent_cli.models.anthropic_request import build_messages_request
from fastagent_cli.models.context_budget import estimate_tokens
from fastagent_cli.models.openai_request import build_chat_request
from fastagent_cli.models.responses_request import build_responses_request
from fastagent_cli.models.types import ModelInfo, ModelRequest

VISION = ("text", "image")
PDF: UserMessage = {
    "role": "user",
    "content": [
        {"type": "text", "text": "read"},
        {"type": "document", "data": "JVBERi0=" * 100, "mimeType": "application/pdf", "name": "a.pdf"},
    ],
    "timestamp": 0,
}
NOTE = "(document a.pdf omitted: this model does not accept PDF input)"


def info(provider: str, api: str, input: tuple[str, ...] = VISION, **compat: Any) -> ModelInfo:
    return ModelInfo(provider, "m", api, base_url="http://127.0.0.1:9", input=input, compat=compat)


def test_which_models_take_pdfs() -> None:
    assert info("anthropic", "anthropic-messages").supports_pdf
    assert info("openai", "openai-completions").supports_pdf
    assert info("openai", "openai-responses").supports_pdf
    assert info("openrouter", "openai-completions").supports_pdf
    assert info("scripted", "scripted", ("text",)).supports_pdf
    assert not info("anthropic", "anthropic-messages", ("text",)).supports_pdf  # no vision, no PDFs
    assert not info("groq", "openai-completions").supports_pdf
    assert not info("local", "openai-completions", ("text",)).supports_pdf
    assert not info("openai-codex", "openai-codex-responses").supports_pdf
    assert info("local", "openai-completions", ("text",), supportsPdf=True).supports_pdf
    assert not info("anthropic", "anthropic-messages", supportsPdf=False).supports_pdf


def test_a_model_without_pdf_input_reads_a_note_for_an_earlier_pdf() -> None:
    def body(model: ModelInfo, build: Any) -> str:
        return json.dumps(build(ModelRequest(model, "", [PDF]))[2])

    for model, build in [
        (info("anthropic", "anthropic-messages", supportsPdf=False), build_messages_request),
        (info("local", "openai-completions", ("text",)), build_chat_request),
        (info("x", "openai-responses"), build_responses_request),
    ]:
        sent = body(model, build)
        assert NOTE in sent and "JVBERi0" not in sent, (model.api, sent)
    chat = build_chat_request(ModelRequest(info("local", "openai-completions", ("text",)), "", [PDF]))[2]
    assert chat["messages"][-1]["content"] == f"read\n{NOTE}"  # still a plain string for local servers


def test_a_pdf_counts_by_its_size_in_the_estimate() -> None:
    text_only: UserMessage = {"role": "user", "content": [{"type": "text", "text": "read"}], "timestamp": 0}
    assert estimate_tokens(PDF) - estimate_tokens(text_only) == 800 / 4
