"""A structured run's answer: taken from the output tool call or the text, checked against the
schema, and asked for again (bounded) when it does not match.

* Anthropic answers by calling the output tool (:data:`~fastagent_cli.models.structured.OUTPUT_TOOL`):
  every call of that message gets its tool result (the output call: accepted, or the validation
  error, ``isError``; any other call: not run), so the history stays valid for the next request.
* Any other answer is its text (a model that was asked natively still gets checked).
* A text answer that does not match gets a ``custom_message`` (``customType:
  "fastagent:output_retry"``, the model reads it as a user turn) with the validation error.
* After :data:`OUTPUT_RETRIES` retries the run fails with ``invalid_output``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastagent_cli.contract import INVALID_OUTPUT_CODE
from fastagent_cli.engine.turn import TurnFailure
from fastagent_cli.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, now_ms
from fastagent_cli.models.structured import OUTPUT_TOOL, OutputFormat, check_answer, native_mode
from fastagent_cli.sessions.record import SessionRecord, entry_message

__all__ = ["OUTPUT_RETRIES", "RETRY_TYPE", "OutputState"]

OUTPUT_RETRIES = 2
"""How many times an answer that does not match the schema is sent back (3 answers in all)."""

RETRY_TYPE = "fastagent:output_retry"
_ACCEPTED = "The final answer was accepted."
_NOT_RUN = "Not run: the final answer was given in the same message."


class OutputState:
    """What a structured run has answered so far."""

    def __init__(self, fmt: OutputFormat, api: str, compat: Any) -> None:
        self.format = fmt
        self.mode = native_mode(api, compat)
        self.attempts = 0
        self.value: Any = None

    def output_call(self, calls: Sequence[ToolCall]) -> ToolCall | None:
        if self.mode != "tool":
            return None
        return next((c for c in calls if c["name"] == OUTPUT_TOOL), None)

    def take_call(
        self, calls: Sequence[ToolCall], final: ToolCall, record: SessionRecord, messages: list[Message]
    ) -> bool:
        """Check the output call's arguments; answer every call of the message. True: accepted."""
        value, error = check_answer(final["arguments"], self.format.schema)
        for call in calls:
            if call is final:
                text = _ACCEPTED if error is None else _retry_text(error, self.mode)
                failed = error is not None
            else:
                text, failed = _NOT_RUN, True
            result: ToolResultMessage = {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": text}],
                "isError": failed,
                "timestamp": now_ms(),
            }
            record.append_message(result)
            messages.append(result)
        if error is None:
            self.value = value
            return True
        self._count(error)
        return False

    def take_text(self, assistant: AssistantMessage, record: SessionRecord, messages: list[Message]) -> bool:
        """Check a text answer. True: accepted; else the error is sent back for another answer."""
        text = "".join(b["text"] for b in assistant["content"] if b.get("type") == "text")  # type: ignore[typeddict-item]
        value, error = check_answer(text, self.format.schema)
        if error is None:
            self.value = value
            return True
        self._count(error)
        entry = record.append(
            "custom_message",
            customType=RETRY_TYPE,
            content=[{"type": "text", "text": _retry_text(error, self.mode)}],
            display=False,
            details={"error": error, "attempt": self.attempts},
        )
        message = entry_message(entry)
        if message is not None:
            messages.append(message)
        return False

    def _count(self, error: str) -> None:
        self.attempts += 1
        if self.attempts > OUTPUT_RETRIES:
            raise TurnFailure(
                f"the answer did not match the schema after {self.attempts} attempts: {error}",
                code=INVALID_OUTPUT_CODE,
            )


def _retry_text(error: str, mode: str | None) -> str:
    again = (
        f"Call the `{OUTPUT_TOOL}` tool with the corrected answer."
        if mode == "tool"
        else "Answer again with only the corrected JSON object."
    )
    return f"Your answer does not match the required JSON Schema: {error}\n{again}"
