"""Remote MCP servers: the test server (built on the ``mcp`` SDK) served over streamable HTTP
and over the legacy HTTP+SSE transport on 127.0.0.1, started by the test as a real process:
tools and calls, ``$VAR`` headers, the tool call span's ``traceparent`` (telemetry on), a server
restart mid-session (reconnected, the call answered),
a server that is gone (each call fails at once with the reason, and reconnects with backoff),
and watches over HTTP."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from fastagent_cli import telemetry
from fastagent_cli.control import Notice
from fastagent_cli.telemetry.spans import Span, install
from fastagent_cli.tools.base import ToolContext, ToolResult
from fastagent_cli.tools.mcp import McpToolSource
from fastagent_cli.tools.mcp_config import McpServerConfig

HTTP_SERVER = str(Path(__file__).parent / "mcp_http_server.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class HttpServer:
    """The test server as a process on 127.0.0.1:``port``; :meth:`start` again after :meth:`stop`."""

    def __init__(self, transport: str, env: dict[str, str]) -> None:
        self.transport = transport
        self.port = _free_port()
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self.started_once = False

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        """Run the server and wait until it says it listens. A port taken meanwhile (another
        test's server got it first) makes the first start pick another one; a connection alone
        would have reached the other server."""
        for _ in range(5):
            if self._launch():
                return
            if self.started_once:
                break  # a restart keeps its port: the test is about the same URL
            self.port = _free_port()
        raise RuntimeError(f"the test MCP server did not start listening on port {self.port}")

    def _launch(self) -> bool:
        import os
        import tempfile

        with tempfile.TemporaryFile() as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                [sys.executable, HTTP_SERVER, str(self.port), self.transport],
                env={**os.environ, **self.env},
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                log.seek(0)
                if b"Uvicorn running on" in log.read():
                    self.started_once = True
                    return True
                if self.process.poll() is not None:  # it could not bind the port
                    self.process = None
                    return False
                time.sleep(0.05)
        self.stop()
        return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[str], HttpServer]]:
    started: list[HttpServer] = []

    def make(transport: str) -> HttpServer:
        server = HttpServer(transport, {"NOTE_FILE": str(tmp_path / "note.txt")})
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
async def sources(tmp_path: Path) -> AsyncIterator[Callable[..., McpToolSource]]:
    made: list[McpToolSource] = []

    def make(**config: object) -> McpToolSource:
        source = McpToolSource({"remote": McpServerConfig.model_validate(config)}, tmp_path)
        made.append(source)
        return source

    yield make
    for source in made:
        await source.aclose()


async def call(source: McpToolSource, tool_name: str, **args: object) -> tuple[bool, str]:
    tool = next(t for t in await source.tools() if t.name == tool_name)
    result: ToolResult = await tool.execute(args, ToolContext(cwd=Path.cwd()))
    return result.is_error, " ".join(b["text"] for b in result.content if b["type"] == "text")


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_remote_server_lists_and_calls_its_tools_with_its_headers(
    serve: Callable[[str], HttpServer],
    sources: Callable[..., McpToolSource],
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = serve(transport)
    monkeypatch.setenv("REMOTE_TOKEN", "s3cret")
    source = sources(
        url=server.url,
        transport=transport,
        headers={"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Team": "blue"},
    )
    names = [t.name for t in await source.tools()]
    assert "remote__add" in names and "remote__header" in names
    assert await call(source, "remote__add", a=2, b=3) == (False, "5")
    assert await call(source, "remote__header", name="authorization") == (False, "Bearer s3cret")
    assert await call(source, "remote__header", name="x-team") == (False, "blue")
    assert source.diagnostics() == []


class _Spans:
    capture_content = False

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def submit(self, span: Span) -> None:
        self.spans.append(span)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_call_carries_its_spans_traceparent_and_none_while_telemetry_is_off(
    serve: Callable[[str], HttpServer], sources: Callable[..., McpToolSource], transport: str
) -> None:
    server = serve(transport)
    source = sources(url=server.url, transport=transport)
    assert await call(source, "remote__header", name="traceparent") == (False, "")  # off: none
    install(_Spans())
    try:
        for _ in range(2):  # each call its own span, on the connection made before telemetry was on
            with telemetry.span("execute_tool remote__header") as span:
                assert span is not None
                answered = await call(source, "remote__header", name="traceparent")
            assert answered == (False, span.traceparent())
    finally:
        install(None)
    assert await call(source, "remote__header", name="traceparent") == (False, "")


async def test_a_header_whose_variable_is_not_set_is_a_clear_diagnostic(
    sources: Callable[..., McpToolSource], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISSING_TOKEN", raising=False)
    source = sources(url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer $MISSING_TOKEN"})
    assert await source.tools() == []
    assert source.diagnostics() == [
        'mcp server "remote": cannot start: header Authorization needs $MISSING_TOKEN, which is not set '
        "(set it in the environment or .env)"
    ]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_server_restart_mid_session_reconnects_and_a_dead_one_fails_at_once(
    serve: Callable[[str], HttpServer], sources: Callable[..., McpToolSource], transport: str
) -> None:
    server = serve(transport)
    source = sources(url=server.url, transport=transport, timeout=5)
    assert await call(source, "remote__add", a=1, b=1) == (False, "2")

    server.stop()
    server.start()  # a new process: it knows nothing of the connection before
    # today's wire has no session to lose (each request carries its envelope); the SSE
    # transport's stream broke, so the call goes to a new connection
    assert await call(source, "remote__add", a=2, b=2) == (False, "4")
    assert source.servers[0].starts == (1 if transport == "streamable-http" else 2)

    server.stop()
    await asyncio.sleep(0.5)  # the SSE stream notices the server is gone
    began = time.monotonic()
    failed, text = await call(source, "remote__add", a=3, b=3)
    if "was lost during the call" in text:  # the call that found the connection broken
        assert failed and text.endswith("; it will be reconnected on the next call")
        failed, text = await call(source, "remote__add", a=3, b=3)
    assert failed and text.startswith(f"MCP server remote is not reachable: cannot reach {server.url}: ")
    assert "ConnectError" in text
    # within the backoff every call fails at once with the reason, without trying the network
    again_failed, again = await call(source, "remote__add", a=3, b=3)
    assert again_failed and "trying again in" in again
    assert time.monotonic() - began < 10

    server.start()
    deadline = time.monotonic() + 20
    answer: tuple[bool, str] = (True, "")
    while time.monotonic() < deadline:  # the backoff ends, the next call reconnects
        answer = await call(source, "remote__add", a=4, b=4)
        if not answer[0]:
            break
        await asyncio.sleep(0.3)
    assert answer == (False, "8")


async def test_a_resource_on_a_remote_server_is_watched(
    serve: Callable[[str], HttpServer], sources: Callable[..., McpToolSource], tmp_path: Path
) -> None:
    server = serve("streamable-http")
    source = sources(url=server.url, watch=["note://current"], watch_debounce_ms=100)
    notices: list[Notice] = []
    assert await source.start_watches(notices.append, tmp_path / "watch-state.json") == []
    (tmp_path / "note.txt").write_text("remote note")
    deadline = time.monotonic() + 15
    while not notices and time.monotonic() < deadline:  # noqa: ASYNC110 (another process writes it)
        await asyncio.sleep(0.05)
    assert [n.text.rsplit("\n", 1)[-1] for n in notices] == ["remote note"]
