"""The requests of a run: the messages a turn adds, the request for the context it has, and the
fit to the model's context window (:mod:`fastagent_cli.models.context_budget`).

* Every request asks for no more output than the model's context window leaves after its input;
  a request that would leave no room for an answer is not sent: it counts as an overflow
  (:class:`~fastagent_cli.engine.turn.TurnFailure` with ``overflow``).
* Once the tool budget is exhausted, the request withdraws the tools and ends with a user note
  that says so (:data:`~fastagent_cli.messages.TOOL_BUDGET_NOTE`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fastagent_cli.contract import Prompt
from fastagent_cli.control import Notice
from fastagent_cli.engine.turn import TurnFailure, TurnSetup
from fastagent_cli.messages import (
    TOOL_BUDGET_NOTE,
    AssistantMessage,
    Message,
    ToolCall,
    UserBlock,
    UserMessage,
    now_ms,
)
from fastagent_cli.models.context_budget import ContextFit, fit_request, overflow_message
from fastagent_cli.models.token_counts import conversation_counts
from fastagent_cli.models.types import ModelRequest

__all__ = ["build_request", "fit", "fit_of", "notice_content", "tool_calls", "user_message"]


def user_message(prompt: Prompt) -> UserMessage:
    content: list[UserBlock] = [{"type": "text", "text": prompt.text}]
    for image in prompt.images:
        content.append({"type": "image", "data": image.data, "mimeType": image.mime_type})
    for doc in prompt.documents:
        content.append({"type": "document", "data": doc.data, "mimeType": doc.mime_type, "name": doc.name})
    return {"role": "user", "content": content, "timestamp": now_ms()}


def notice_content(notice: Notice) -> str:
    """The text the model reads for a notice."""
    source = notice.source.replace('"', "'")
    return f'<notice source="{source}">\n{notice.text}\n</notice>'


def tool_calls(message: AssistantMessage) -> list[ToolCall]:
    return [b for b in message["content"] if b.get("type") == "toolCall"]  # type: ignore[misc]


def fit_of(request: ModelRequest, wanted: int | None, kept: bool = True) -> ContextFit:
    """How ``request`` fits its model's window, asking for ``wanted`` output; ``kept``: measured
    with the conversation's kept token counts (not for a one-off list of messages)."""
    counts = conversation_counts(request.memo) if kept else None
    return fit_request(
        request.model, request.system, request.messages, request.tools, wanted, request.server_ratio, counts
    )


def fit(request: ModelRequest) -> ModelRequest:
    """Cap the request's output at what the context window leaves (by default at most a share of
    the window, so the next turn has room too); an overflow (TurnFailure) when that is not enough
    for an answer: sending it would only fail, or fail silently."""
    fitted = fit_of(request, request.max_tokens)
    if not fitted.fits:
        raise TurnFailure(overflow_message(request.model, fitted), overflow=True)
    request.output_limit = fitted.max_output
    return request


def _with_note(messages: Sequence[Message]) -> list[Message]:
    note: UserMessage = {
        "role": "user",
        "content": [{"type": "text", "text": TOOL_BUDGET_NOTE}],
        "timestamp": now_ms(),
    }
    return [*messages, note]


def build_request(
    setup: TurnSetup,
    system: str,
    history: Sequence[Message],
    exhausted: bool,
    server_ratio: float | None,
) -> ModelRequest:
    """The request for ``history``: the run's model and key, its active tools (none once the tool
    budget is ``exhausted``, which ends the messages with the note saying so)."""
    base = setup.request
    active = setup.activation.active()
    tools = setup.tools
    return ModelRequest(
        model=base.model,
        system=system,
        messages=_with_note(history) if exhausted else list(history),
        tools=() if exhausted else [tools[n].spec for n in active if n in tools],
        thinking=base.thinking,
        api_key=base.api_key,
        max_tokens=base.max_tokens,
        session_id=base.session_id,
        memo=base.memo,
        output=setup.output,
        server_ratio=server_ratio,
    )
