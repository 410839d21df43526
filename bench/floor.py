"""The floor for ``bench/hotpath.py`` (issue 35): a bare aiohttp relay of the same fake model.

    python bench/floor.py --model-port M --port P     # serves /health and POST /invoke
    python bench/floor.py --model-port M --once TEXT  # one-shot: streams one answer to stdout

What a Python stack cannot go under: one streaming chat-completions request to the model per
turn, each delta relayed as an SSE event (``data: {"type":"text",...}``), the events of what one loop
tick read coalesced into one write, a ``completed`` event at the end. No engine, no sessions, no
prompt, no tools, no logging: every figure of fastagent is read as a ratio against this one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

_COMPLETED = b'data: {"type":"completed"}\n\n'
Write = Callable[[bytes], Awaitable[None]]


def _request_body(text: str) -> dict[str, object]:
    return {
        "model": "fast",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": text}],
    }


async def _stream(http: aiohttp.ClientSession, model_url: str, text: str, write: Write) -> None:
    """Every read takes what arrived by this loop tick: its deltas leave in one write."""
    rest = b""
    async with http.post(model_url, json=_request_body(text)) as response:
        async for chunk in response.content.iter_any():
            lines = (rest + chunk).split(b"\n")
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


def app(model_url: str) -> web.Application:
    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def invoke(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        await _stream(request.app["http"], model_url, str(body["text"]), response.write)
        await response.write_eof()
        return response

    async def client(application: web.Application):  # type: ignore[no-untyped-def]
        connector = aiohttp.TCPConnector(limit=0)
        application["http"] = aiohttp.ClientSession(connector=connector)
        yield
        await application["http"].close()

    application = web.Application()
    application.router.add_get("/health", health)
    application.router.add_post("/invoke", invoke)
    application.cleanup_ctx.append(client)
    return application


async def once(model_url: str, text: str) -> None:
    async def write(chunk: bytes) -> None:
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()

    async with aiohttp.ClientSession() as http:
        await _stream(http, model_url, text, write)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-port", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--once", metavar="TEXT")
    args = parser.parse_args()
    model_url = f"http://127.0.0.1:{args.model_port}/v1/chat/completions"
    if args.once is not None:
        asyncio.run(once(model_url, args.once))
        return
    web.run_app(app(model_url), host="127.0.0.1", port=args.port, print=None, access_log=None, backlog=4096)


if __name__ == "__main__":
    main()
