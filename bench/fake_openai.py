"""A cheap OpenAI-compatible streaming model for benches: its own process, raw asyncio HTTP/1.1.

    python bench/fake_openai.py --tokens 300 --interval-ms 5      # prints "port N", serves

Every ``POST .../chat/completions`` is answered with a real chat-completions stream (chunked
transfer encoding, keep-alive, ``data: {...}\\n\\n`` chunks in OpenAI's shape, a usage chunk and
``data: [DONE]``): a role chunk, ``tokens`` content chunks, a finish chunk. Pacing:

* ``interval_ms > 0``: one token per stream per tick of the fake's single ticker, so each token
  leaves in its own TCP write, ``interval_ms`` apart, as a real model streams them; with many
  streams the ticker serves them all in one wake-up (the fake stays cheap at 1 000 streams);
* ``interval_ms == 0``: every chunk as its own write, back to back.

A request may ask for another length with a ``"[tokens=N]"`` marker in its last message. The
fake never parses the request's JSON (a long conversation costs it only the bytes it reads), so
what the bench measures is the server's work. Written by hand rather than on aiohttp so that the
fake's own CPU stays small next to the server it feeds on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Callable

_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
)
_TOKENS = re.compile(rb"\[tokens=(\d+)\]")


def _frame(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(delta: dict[str, object], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, object] = {
        "id": "chatcmpl-bench0001",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "fast",
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        body["choices"] = []
        body["usage"] = usage
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


class Answers:
    """Pre-encoded chunk frames per answer length (built once, reused by every stream)."""

    def __init__(self) -> None:
        self._cache: dict[int, list[bytes]] = {}

    def frames(self, tokens: int) -> list[bytes]:
        frames = self._cache.get(tokens)
        if frames is None:
            pieces = [_event({"role": "assistant", "content": ""})]
            pieces += [_event({"content": f" word{i % 100}"}) for i in range(tokens)]
            pieces.append(_event({}, "stop"))
            usage = {"prompt_tokens": 100, "completion_tokens": tokens, "total_tokens": 100 + tokens}
            pieces.append(_event({}, usage=usage))
            pieces.append(b"data: [DONE]\n\n")
            frames = [_frame(p) for p in pieces]
            frames[-1] += b"0\r\n\r\n"
            self._cache[tokens] = frames
        return frames


class Ticker:
    """One timer for every paced stream: each tick sends the next frame of every stream."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.streams: dict[int, tuple[asyncio.Transport, list[bytes], int, Callable[[], None]]] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._ticking = False
        self._next = 0

    def add(self, transport: asyncio.Transport, frames: list[bytes], done: Callable[[], None]) -> None:
        self._next += 1
        transport.write(_HEAD + frames[0])
        self.streams[self._next] = (transport, frames, 1, done)
        if self._handle is None and not self._ticking:
            loop = asyncio.get_running_loop()
            self._handle = loop.call_later(self.interval_s, self._tick)

    def _tick(self) -> None:
        self._handle = None
        self._ticking = True  # a stream added meanwhile (the next request) waits for this tick's timer
        for key, (transport, frames, at, done) in list(self.streams.items()):
            if transport.is_closing():
                del self.streams[key]
                continue
            transport.write(frames[at])
            if at + 1 == len(frames):
                del self.streams[key]
                done()
            else:
                self.streams[key] = (transport, frames, at + 1, done)
        self._ticking = False
        if self.streams:
            self._handle = asyncio.get_running_loop().call_later(self.interval_s, self._tick)


class Connection(asyncio.Protocol):
    def __init__(self, answers: Answers, ticker: Ticker | None, tokens: int) -> None:
        self.answers = answers
        self.ticker = ticker
        self.tokens = tokens
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next_request()

    def _next_request(self) -> None:
        if self.busy or self.transport is None:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).lower()
        match = re.search(rb"\ncontent-length:\s*(\d+)", head)
        length = int(match.group(1)) if match else 0
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        if not head.startswith(b"post ") or b"/chat/completions" not in head.split(b"\r\n", 1)[0]:
            self.transport.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            self._next_request()
            return
        at = body.rfind(b"[tokens=")  # the last message's marker (the newest is last in the body)
        marker = _TOKENS.match(body, at) if at >= 0 else None
        frames = self.answers.frames(int(marker.group(1)) if marker else self.tokens)
        self.busy = True
        if self.ticker is not None:
            self.ticker.add(self.transport, frames, self._done)
        else:
            self.transport.write(_HEAD)
            for frame in frames:
                self.transport.write(frame)
            self._done()

    def _done(self) -> None:
        self.busy = False
        if self.buffer:
            self._next_request()


async def serve(tokens: int, interval_ms: float, announce: Callable[[int], None]) -> None:
    loop = asyncio.get_running_loop()
    answers = Answers()
    ticker = Ticker(interval_ms / 1000) if interval_ms > 0 else None
    server = await loop.create_server(
        lambda: Connection(answers, ticker, tokens), "127.0.0.1", 0, backlog=4096
    )
    announce(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    args = parser.parse_args()

    def announce(port: int) -> None:
        print(f"port {port}", flush=True)

    try:
        asyncio.run(serve(args.tokens, args.interval_ms, announce))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
