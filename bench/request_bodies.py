"""The model request body's cost by its place in a long session (issue 35 item 2), per API: the
body the wire client sends at turn 10 and at turn 200 of one conversation, built afresh on every
request (``build``: the conversion and ``json`` of the whole history, as ``anthropic-messages``
and ``openai-responses`` did before) and encoded with the record's memo (``encode``: only the new messages).

    .venv/bin/python bench/request_bodies.py [--turns 200] [--repeat 200]

Each turn adds a 300-character question, an answer with a tool call, its result and a 60-word
answer. Prints microseconds per request (median of ``--repeat``; the memo'd figure is the request
that follows one more appended turn, as in a live session).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from fastagent_cli.contract import json_text
from fastagent_cli.models.anthropic_encode import encode_messages_request
from fastagent_cli.models.anthropic_request import build_messages_request
from fastagent_cli.models.openai_request import build_chat_request, encode_chat_request
from fastagent_cli.models.responses_encode import encode_responses_request
from fastagent_cli.models.responses_request import build_responses_request
from fastagent_cli.models.types import Message, ModelInfo, ModelRequest, ToolSpec

TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


def turn(i: int, api: str) -> list[Message]:
    meta: dict[str, Any] = {"api": api, "provider": "fake", "model": "m", "usage": {}, "timestamp": i}
    call = {"type": "toolCall", "id": f"call_{i}", "name": "read", "arguments": {"path": f"f{i}.txt"}}
    return [
        {"role": "user", "content": f"question {i} " + "x" * 300, "timestamp": i},  # type: ignore[list-item]
        {"role": "assistant", "content": [call], "stopReason": "toolUse", **meta},  # type: ignore[list-item]
        {  # type: ignore[list-item]
            "role": "toolResult",
            "toolCallId": f"call_{i}",
            "toolName": "read",
            "content": [{"type": "text", "text": "line\n" * 20}],
            "isError": False,
            "timestamp": i,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "word " * 60}],
            "stopReason": "stop",
            **meta,
        },  # type: ignore[list-item]
    ]


def per_request_us(messages: list[Message], api: str, memo: bool, repeat: int) -> float:
    info = ModelInfo(provider="fake", id="m", api=api, base_url="http://127.0.0.1:9")
    ways: dict[str, tuple[Callable[[ModelRequest], Any], Callable[[ModelRequest], Any]]] = {
        "anthropic-messages": (build_messages_request, encode_messages_request),
        "openai-completions": (build_chat_request, encode_chat_request),
        "openai-responses": (build_responses_request, encode_responses_request),
    }
    build, encode = ways[api]
    send: Callable[[ModelRequest], Any] = encode if memo else (lambda r: json_text(build(r)[2]))
    times = []
    for _ in range(repeat):
        kept: dict[Any, Any] | None = {} if memo else None
        if memo:  # the memo as the last request left it: one turn shorter
            send(ModelRequest(info, "You are terse.", messages[:-4], tools=TOOLS, api_key="k", memo=kept))
        request = ModelRequest(info, "You are terse.", messages, tools=TOOLS, api_key="k", memo=kept)
        started = time.perf_counter()
        send(request)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    print(f"{'api':<22}{'way':<8}{'turn 10 us':>12}{f'turn {args.turns} us':>14}{'last/first':>12}")
    for api in ("anthropic-messages", "openai-completions", "openai-responses"):
        history = [m for i in range(args.turns) for m in turn(i, api)]
        for way, memo in (("build", False), ("encode", True)):
            first = per_request_us(history[: 10 * 4], api, memo, args.repeat)
            last = per_request_us(history, api, memo, max(20, args.repeat // 10) if not memo else args.repeat)
            print(f"{api:<22}{way:<8}{first:>12.1f}{last:>14.1f}{last / first:>12.2f}")


if __name__ == "__main__":
    main()
