"""The host: binding, bind errors, the 500 guard, close, and the public ``serve`` name."""

from __future__ import annotations

import asyncio
import importlib
import socket

import aiohttp
import pytest
from aiohttp import web

import fastagent_cli
from fastagent_cli.errors import ServeError
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.router import build_router
from tests.serving.conftest import StartServer


async def ok(request: web.BaseRequest) -> web.StreamResponse:
    return web.Response(text="ok\n")


async def test_listening_resolves_to_the_bound_port(http: aiohttp.ClientSession) -> None:
    server = serve(ok, port=0, host="127.0.0.1")
    try:
        port = await server.listening
        assert port > 0 and server.port == port
        async with http.get(f"http://127.0.0.1:{port}/anything") as resp:
            assert await resp.text() == "ok\n"
    finally:
        await server.close()
        await server.close()  # twice is fine
    with pytest.raises(aiohttp.ClientConnectionError):
        async with http.get(f"http://127.0.0.1:{port}/") as resp:
            await resp.read()


async def test_localhost_binds_127_0_0_1(http: aiohttp.ClientSession) -> None:
    server = serve(ok, port=0, host="localhost")
    try:
        port = await server.listening
        assert server.host == "127.0.0.1"
        async with http.get(f"http://127.0.0.1:{port}/") as resp:
            assert resp.status == 200
    finally:
        await server.close()


async def test_a_port_in_use_is_a_serve_error_suggesting_port() -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    server = serve(ok, port=port, host="127.0.0.1")
    try:
        with pytest.raises(ServeError) as caught:
            await server.listening
        assert "already in use" in caught.value.message and "--port" in caught.value.message
        assert str(port) in caught.value.message
    finally:
        await server.close()
        blocker.close()


async def test_an_unbindable_address_is_a_serve_error() -> None:
    server = serve(ok, port=0, host="192.0.2.1")  # TEST-NET: not an address of this machine
    try:
        with pytest.raises(ServeError) as caught:
            await server.listening
        assert "192.0.2.1" in caught.value.message and "--bind" in caught.value.message
    finally:
        await server.close()


async def test_a_handler_that_raises_before_responding_is_500(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    async def broken(request: web.BaseRequest) -> web.StreamResponse:
        raise KeyError("bug")

    base = await start_server(build_router({"/b": broken}))
    async with http.get(f"{base}/b") as resp:
        assert resp.status == 500
        assert resp.headers["Content-Type"].startswith("text/plain")
        assert await resp.text() == "internal error\n"
    async with http.get(f"{base}/nothing") as resp:  # the server keeps serving
        assert resp.status == 404


async def test_a_handler_that_raises_mid_response_cuts_the_connection(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    async def half(request: web.BaseRequest) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"partial")
        raise RuntimeError("bug")

    base = await start_server(half)
    async with http.get(f"{base}/") as resp:
        assert resp.status == 200
        with pytest.raises(aiohttp.ClientPayloadError):
            await asyncio.wait_for(resp.read(), 10)


async def test_http_exceptions_are_answered_as_aiohttp_answers_them(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    async def teapot(request: web.BaseRequest) -> web.StreamResponse:
        raise web.HTTPForbidden(text="no\n")

    base = await start_server(teapot)
    async with http.get(f"{base}/") as resp:
        assert (resp.status, await resp.text()) == (403, "no\n")


async def test_close_all_connections_cuts_idle_keepalive_connections(http: aiohttp.ClientSession) -> None:
    server = serve(ok, port=0, host="127.0.0.1")
    try:
        port = await server.listening
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        await asyncio.wait_for(reader.readuntil(b"ok\n"), 10)
        server.close_all_connections()
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
    finally:
        await server.close()


async def test_the_public_api_names_the_serving_functions() -> None:
    importlib.import_module("fastagent_cli.serving.host")
    from fastagent_cli import create_agent_service, create_invoke_handler, read_body_capped, serve
    from fastagent_cli.serving import host, invoke_http, service

    assert serve is host.serve and fastagent_cli.serve is host.serve
    server = serve(ok, port=0, host="127.0.0.1")
    try:
        assert await server.listening > 0
    finally:
        await server.close()
    assert create_agent_service is service.create_agent_service
    assert create_invoke_handler is invoke_http.create_invoke_handler
    assert callable(read_body_capped)
