"""The summary call of a compaction: pi's prompts, serialisation and file lists (§5.5).

The conversation is serialised as ``[User]:`` / ``[Assistant thinking]:`` / ``[Assistant]:`` /
``[Assistant tool calls]:`` / ``[Tool result]:`` paragraphs (tool results cut at 2 000
characters) and sent to the session's own model with a summariser system prompt, as one user
message ``<conversation>…</conversation>`` (+ ``<previous-summary>`` when updating) + the prompt
(+ ``Additional focus: <instructions>``), ``max_tokens`` 0.8 × ``reserve_tokens``, thinking
``high`` when the model reasons. A split turn's prefix gets a second call (0.5 ×
``reserve_tokens``). The cumulative file lists are appended to the summary. A conversation
longer than the window leaves for the summary request is shortened in its middle
(:func:`shorten`: the first quarter and the last three quarters of what fits, with a note of what
was left out), so a small window can always be summarised.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fastagent_cli.messages import Message
from fastagent_cli.models.context_budget import estimate_text

__all__ = [
    "SUMMARIZATION_PROMPT",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TURN_PREFIX_PROMPT",
    "UPDATE_SUMMARIZATION_PROMPT",
    "file_lists",
    "serialize_conversation",
    "shorten",
    "summary_prompt",
    "turn_prefix_prompt",
]

SUMMARIZATION_SYSTEM_PROMPT = (
    "You are a context summarization assistant. Your task is to read a conversation between a user "
    "and an AI coding assistant, then produce a structured summary following the exact format "
    "specified.\n\nDo NOT continue the conversation. Do NOT respond to any questions in the "
    "conversation. ONLY output the structured summary."
)

_FORMAT_TAIL = "\n\nKeep each section concise. Preserve exact file paths, function names, and error messages."

SUMMARIZATION_PROMPT = (
    "The messages above are a conversation to summarize. Create a structured context checkpoint "
    "summary that another LLM will use to continue the work.\n\n"
    "Use this EXACT format:\n\n"
    "## Goal\n[What is the user trying to accomplish? Can be multiple items if the session covers "
    "different tasks.]\n\n"
    "## Constraints & Preferences\n- [Any constraints, preferences, or requirements mentioned by user]\n"
    '- [Or "(none)" if none were mentioned]\n\n'
    "## Progress\n### Done\n- [x] [Completed tasks/changes]\n\n### In Progress\n- [ ] [Current work]\n\n"
    "### Blocked\n- [Issues preventing progress, if any]\n\n"
    "## Key Decisions\n- **[Decision]**: [Brief rationale]\n\n"
    "## Next Steps\n1. [Ordered list of what should happen next]\n\n"
    "## Critical Context\n- [Any data, examples, or references needed to continue]\n"
    '- [Or "(none)" if not applicable]' + _FORMAT_TAIL
)

UPDATE_SUMMARIZATION_PROMPT = (
    "The messages above are NEW conversation messages to incorporate into the existing summary "
    "provided in <previous-summary> tags.\n\n"
    "Update the existing structured summary with new information. RULES:\n"
    "- PRESERVE all existing information from the previous summary\n"
    "- ADD new progress, decisions, and context from the new messages\n"
    '- UPDATE the Progress section: move items from "In Progress" to "Done" when completed\n'
    '- UPDATE "Next Steps" based on what was accomplished\n'
    "- PRESERVE exact file paths, function names, and error messages\n"
    "- If something is no longer relevant, you may remove it\n\n"
    "Use this EXACT format:\n\n"
    "## Goal\n[Preserve existing goals, add new ones if the task expanded]\n\n"
    "## Constraints & Preferences\n- [Preserve existing, add new ones discovered]\n\n"
    "## Progress\n### Done\n- [x] [Include previously done items AND newly completed items]\n\n"
    "### In Progress\n- [ ] [Current work - update based on progress]\n\n"
    "### Blocked\n- [Current blockers - remove if resolved]\n\n"
    "## Key Decisions\n- **[Decision]**: [Brief rationale] (preserve all previous, add new)\n\n"
    "## Next Steps\n1. [Update based on current state]\n\n"
    "## Critical Context\n- [Preserve important context, add new if needed]" + _FORMAT_TAIL
)

TURN_PREFIX_PROMPT = (
    "This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.\n\n"
    "Summarize the prefix to provide context for the retained suffix:\n\n"
    "## Original Request\n[What did the user ask for in this turn?]\n\n"
    "## Early Progress\n- [Key decisions and work done in the prefix]\n\n"
    "## Context for Suffix\n- [Information needed to understand the retained recent work]\n\n"
    "Be concise. Focus on what's needed to understand the kept suffix."
)

SPLIT_TURN_JOIN = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY = "No prior history."
TOOL_RESULT_CHARS = 2000


def _text(content: Any, kinds: Iterable[str] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    wanted = set(kinds)
    return "".join(str(b.get("text", "")) for b in content or [] if b.get("type") in wanted)


def _truncate(text: str, limit: int = TOOL_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n[... {len(text) - limit} more characters truncated]"


def _call(block: Mapping[str, Any]) -> str:
    args = block.get("arguments") or {}
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{block.get('name', '')}({shown})"


def serialize_conversation(messages: Sequence[Message]) -> str:
    parts: list[str] = []
    for message in messages:
        role = message["role"]
        if role == "user":
            text = _text(message["content"])
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            blocks: Sequence[Mapping[str, Any]] = message["content"]  # type: ignore[assignment]
            thinking = [str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"]
            texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
            calls = [_call(b) for b in blocks if b.get("type") == "toolCall"]
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = _text(message["content"])
            if text:
                parts.append(f"[Tool result]: {_truncate(text)}")
    return "\n\n".join(parts)


Fit = Callable[[str], str]
"""Shortens a serialised conversation to what the summary request has room for."""


def shorten(conversation: str, tokens: int) -> str:
    """``conversation`` cut to about ``tokens`` (estimated): its first quarter and its last three
    quarters, with a note in between saying how much was left out."""
    estimate = estimate_text(conversation)
    if estimate <= tokens:
        return conversation
    keep = int(len(conversation) * tokens / estimate * 0.95)
    head = keep // 4
    tail = keep - head
    omitted = len(conversation) - head - tail
    note = f"\n\n[... {omitted} characters left out to fit the model's context window ...]\n\n"
    return conversation[:head] + note + conversation[len(conversation) - tail :]


def summary_prompt(
    messages: Sequence[Message], previous: str | None, instructions: str | None, fit: Fit | None = None
) -> str:
    prompt = UPDATE_SUMMARIZATION_PROMPT if previous else SUMMARIZATION_PROMPT
    if instructions:
        prompt = f"{prompt}\n\nAdditional focus: {instructions}"
    conversation = serialize_conversation(messages)
    text = f"<conversation>\n{fit(conversation) if fit else conversation}\n</conversation>\n\n"
    if previous:
        text += f"<previous-summary>\n{previous}\n</previous-summary>\n\n"
    return text + prompt


def turn_prefix_prompt(messages: Sequence[Message], fit: Fit | None = None) -> str:
    conversation = serialize_conversation(messages)
    shown = fit(conversation) if fit else conversation
    return f"<conversation>\n{shown}\n</conversation>\n\n{TURN_PREFIX_PROMPT}"


def file_lists(read: set[str], modified: set[str]) -> tuple[list[str], list[str], str]:
    """``(read-only files, modified files, the text appended to the summary)``."""
    modified_files = sorted(modified)
    read_files = sorted(read - modified)
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return read_files, modified_files, ("\n\n" + "\n\n".join(sections)) if sections else ""
