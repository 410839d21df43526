"""A llama-server-like model with a small context window, behind :class:`FakeOpenAI`.

It counts tokens its own way (not the engine's estimate: a word of letters is one token per five
letters, every digit, symbol and newline one token, as a BPE vocabulary of a small model splits
them, plus 4 tokens of chat template per message), and it behaves as upstream llama.cpp does with
``-c 4096``:

With ``fixed_chars_per_token`` it counts the fixed part of a request (the system message and the
tool schemas) as a BPE vocabulary does, one token per that many characters (quotes, colons and
braces merged with the words around them), which the engine's estimate, counting every symbol and
newline as a token of its own, overrates (about 1.3x with 4, as a real llama.cpp server counts
SmolLM2's prompts).

* a prompt longer than the window is a 400 ``exceed_context_size_error`` naming the counts;
* an answer stops at ``max_tokens`` or where the window ends (``finish_reason: length``);
* usage is streamed at the end (``prompt_tokens``, ``completion_tokens``).

What it answers is ``script(prompt_text) -> tokens``: how long an answer the model would write
(the text is a run of five-letter words); a summary request (the engine's summariser system
prompt) gets a summary of ``summary_tokens``. ``seen`` keeps ``(prompt_tokens, max_tokens,
refused)`` of every request, for the tests to check that nothing was sent that could not fit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .fake_providers import FakeOpenAI
from .wire_builders import openai_chunk, openai_usage_chunk

__all__ = ["SmallWindowModel", "count_tokens"]

_PIECES = re.compile(r"[A-Za-z]+|[0-9]|[^\sA-Za-z0-9]|\n")
TEMPLATE_TOKENS = 4


def count_tokens(text: str, digit_cost: int = 1) -> int:
    """The fake tokenizer (``digit_cost``: tokens a digit costs)."""
    total = 0
    for piece in _PIECES.findall(text):
        if piece[0].isalpha():
            total += math.ceil(len(piece) / 5)
        else:
            total += digit_cost if piece.isdigit() else 1
    return total


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


@dataclass
class SmallWindowModel:
    window: int = 4096
    script: Callable[[str], int] = lambda prompt: 120
    summary_tokens: int = 300
    digit_cost: int = 1
    """Tokens a digit costs (2: a tokenizer that splits finer than the engine's estimate)."""
    fixed_chars_per_token: int | None = None
    """The system message and the tool schemas at one token per this many characters."""
    seen: list[tuple[int, int, bool]] = field(default_factory=list)
    summaries: int = 0

    def attach(self, fake: FakeOpenAI) -> None:
        fake.respond_with(self.respond)

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        total = 0
        for message in body.get("messages") or []:
            text = _message_text(message)
            fixed = message.get("role") == "system"
            total += TEMPLATE_TOKENS + (self.fixed_tokens(text) if fixed else self.count(text))
        for tool in body.get("tools") or []:
            total += self.fixed_tokens(json.dumps(tool))
        return total

    def count(self, text: str) -> int:
        return count_tokens(text, self.digit_cost)

    def fixed_tokens(self, text: str) -> int:
        if self.fixed_chars_per_token is None:
            return self.count(text)
        return math.ceil(len(text) / self.fixed_chars_per_token)

    def respond(self, body: Any) -> tuple[int, Any] | list[Any]:
        prompt = self.prompt_tokens(body)
        wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or self.window)
        if prompt > self.window:
            self.seen.append((prompt, wanted, True))
            return 400, {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt,
                    "n_ctx": self.window,
                }
            }
        self.seen.append((prompt, wanted, False))
        messages = body.get("messages") or []
        system = _message_text(messages[0]) if messages and messages[0].get("role") == "system" else ""
        last = _message_text(messages[-1]) if messages else ""
        if system.startswith("You are a context summarization assistant"):
            self.summaries += 1
            length = self.summary_tokens
        else:
            length = self.script(last)
        room = min(wanted, self.window - prompt)
        produced = min(length, room)
        text = " ".join(["words"] * produced)  # five letters: one token each
        reason = "length" if produced < length else "stop"
        chunks = [openai_chunk({"role": "assistant", "content": ""})]
        step = 40
        words = text.split(" ")
        for i in range(0, len(words), step):
            piece = " ".join(words[i : i + step]) + (" " if i + step < len(words) else "")
            chunks.append(openai_chunk({"content": piece}))
        chunks.append(openai_chunk({}, finish_reason=reason))
        chunks.append(openai_usage_chunk(prompt, produced))
        return chunks
