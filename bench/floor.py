"""The floor for ``bench/hotpath.py`` (issue 35): a bare relay of the same fake model.

    python bench/floor.py --model-port M --port P     # serves /health and POST /invoke
    python bench/floor.py --model-port M --once TEXT  # one-shot: streams one answer to stdout

What a Python stack cannot go under: one streaming chat-completions request to the model per
turn, each delta relayed as an SSE event (``data: {"type":"text",...}``), the events of what one loop
tick read coalesced into one write, a ``completed`` event at the end. No engine, no sessions, no
prompt, no tools, no logging: every figure of fastagent is read as a ratio against this one.

The serving side is aiohttp's server, as fastagent's is. The model side is not an HTTP client
library: a raw :mod:`asyncio` stream (kept-alive connections, HTTP/1.1 written and chunked
transfer decoded by hand, the SSE lines split off the bytes one read returned), so the floor is
the physical limit of reading the model's stream in Python, not aiohttp's client's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

_COMPLETED = b'data: {"type":"completed"}\n\n'
Write = Callable[[bytes], Awaitable[None]]
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ModelLink:
    """Kept-alive HTTP/1.1 connections to the model: a streaming POST per turn, read raw."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._idle: list[Connection] = []

    async def stream(self, body: bytes) -> AsyncIterator[bytes]:
        """The response body's bytes, one piece per read (what arrived by then, de-chunked)."""
        reader, writer = (
            self._idle.pop() if self._idle else await asyncio.open_connection("127.0.0.1", self.port)
        )
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        try:
            writer.write(head + body)
            status = await reader.readuntil(b"\r\n\r\n")
            if not status.startswith(b"HTTP/1.1 200"):
                raise RuntimeError("the model answered " + status.split(b"\r\n", 1)[0].decode())
            if b"transfer-encoding: chunked" in status.lower():
                pending, done = b"", False
                while not done:
                    data = await reader.read(65536)
                    if not data:
                        raise ConnectionError("the model closed the stream")
                    out, pending, done = _dechunk(pending + data)
                    if out:
                        yield out
            else:
                length = int(status.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
                yield await reader.readexactly(length)
        except BaseException:
            writer.close()  # a connection left mid-response cannot be reused
            raise
        self._idle.append((reader, writer))

    def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


def _dechunk(data: bytes) -> tuple[bytes, bytes, bool]:
    """(the complete chunks' payload, the bytes left for later, whether the last chunk came)."""
    out: list[bytes] = []
    at = 0
    while True:
        eol = data.find(b"\r\n", at)
        if eol < 0:
            break
        size = int(data[at:eol].split(b";", 1)[0], 16)
        if size == 0:
            if len(data) < eol + 4:
                break
            return b"".join(out), b"", True
        end = eol + 2 + size
        if len(data) < end + 2:
            break
        out.append(data[eol + 2 : end])
        at = end + 2
    return b"".join(out), data[at:], False


def _request_body(text: str) -> bytes:
    body = {
        "model": "fast",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": text}],
    }
    return json.dumps(body, separators=(",", ":")).encode()


async def _stream(link: ModelLink, text: str, write: Write) -> None:
    """Every read takes what arrived by this loop tick: its deltas leave in one write."""
    rest = b""
    async for piece in link.stream(_request_body(text)):
        lines = (rest + piece).split(b"\n")
        rest = lines.pop()
        events = []
        for line in lines:
            if not line.startswith(b"data: {"):
                continue
            for choice in json.loads(line[6:])["choices"]:
                content = choice["delta"].get("content")
                if content:
                    event = json.dumps({"type": "text", "text": content}, separators=(",", ":"))
                    events.append(b"data: " + event.encode() + b"\n\n")
        if events:
            await write(b"".join(events))
    await write(_COMPLETED)


def app(model_port: int) -> web.Application:
    link = ModelLink(model_port)

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def invoke(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        await _stream(link, str(body["text"]), response.write)
        await response.write_eof()
        return response

    async def close(_: web.Application) -> None:
        link.close()

    application = web.Application()
    application.router.add_get("/health", health)
    application.router.add_post("/invoke", invoke)
    application.on_cleanup.append(close)
    return application


async def once(model_port: int, text: str) -> None:
    async def write(chunk: bytes) -> None:
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()

    link = ModelLink(model_port)
    await _stream(link, text, write)
    link.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-port", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--once", metavar="TEXT")
    args = parser.parse_args()
    if args.once is not None:
        asyncio.run(once(args.model_port, args.once))
        return
    web.run_app(
        app(args.model_port), host="127.0.0.1", port=args.port, print=None, access_log=None, backlog=4096
    )


if __name__ == "__main__":
    main()
