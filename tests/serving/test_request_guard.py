"""A web page must not drive a local agent: the real ``fastagent start`` refuses a foreign ``Host``
(DNS rebinding) and a foreign ``Origin`` on every route, ``/invoke`` takes JSON only (no
``text/plain`` simple request), and CORS names the configured origins, never ``*``."""

from __future__ import annotations

import asyncio

import aiohttp

from tests.conftest import AgentFactory
from tests.serving.conftest import split_response
from tests.serving.serving_proc import ServerProcess

BODY = b'{"session": "s", "text": "run bash"}'


async def raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 15)
    finally:
        writer.close()
    return split_response(data)


def post(path: str, headers: str, body: bytes = BODY) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )


async def test_a_rebinding_host_and_a_text_plain_post_never_reach_the_agent(make_agent: AgentFactory) -> None:
    agent = make_agent(config="[http]\nweb_chat = true\n")
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        json_type = "Content-Type: application/json\r\n"
        # DNS rebinding: the page's own name points at 127.0.0.1, so the browser sends it as Host
        for path in ("/invoke", "/health", "/", "/control/sessions", "/webchat/app.js", "/nowhere"):
            request = f"GET {path} HTTP/1.1\r\nHost: evil.example:{port}\r\nConnection: close\r\n\r\n"
            status, _, body = await raw(port, request.encode())
            assert (status, body) == (403, b"host not allowed\n"), path
        status, _, body = await raw(port, post("/invoke", f"Host: evil.example:{port}\r\n{json_type}"))
        assert (status, body) == (403, b"host not allowed\n")
        # the simple request a page may send cross-origin without asking: text/plain
        plain = f"Host: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\n"
        status, _, body = await raw(port, post("/invoke", plain))
        assert (status, body) == (415, b"Content-Type must be application/json\n")
        # a foreign Origin on a state-changing request, even with JSON and a loopback Host
        foreign = f"Host: 127.0.0.1:{port}\r\nOrigin: https://evil.example\r\n{json_type}"
        status, headers, body = await raw(port, post("/invoke", foreign))
        assert (status, body) == (403, b"origin not allowed\n")
        assert "Access-Control-Allow-Origin" not in headers
        status, headers, _ = await raw(port, post("/control/sessions/s/invoke", foreign))
        assert status == 403 and "Access-Control-Allow-Origin" not in headers
        # what still works: loopback names and addresses, the page's own origin, no Origin at all
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost"):
            status, _, body = await raw(
                port, f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
            )
            assert (status, body) == (200, b"ok\n"), host
        own = f"Host: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n{json_type}"
        status, _, body = await raw(port, post("/invoke", own))
        assert status == 200 and b'"type":"completed"' in body.replace(b" ", b"")
    assert "Traceback" not in server.text


async def test_cors_answers_the_configured_origins_only(make_agent: AgentFactory) -> None:
    agent = make_agent(
        config='session_control = true\n[http]\nallowed_origins = ["https://app.example.com"]\n'
        'allowed_hosts = ["agent.example.com"]\n'
    )
    env = {"FASTAGENT_CONTROL_TOKEN": "ctl-token-1234567890"}
    async with ServerProcess.spawn(
        "start", str(agent), "--port", "0", "--bind", "127.0.0.1", env=env
    ) as server:
        port = await server.port()
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            allowed = {"Origin": "https://app.example.com"}
            async with http.get(f"{base}/control/sessions", headers=allowed) as response:
                assert response.status == 401  # no token: still readable by the allowed origin
                assert response.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
                assert response.headers["Vary"] == "Origin"
            async with http.options(
                f"{base}/control/sessions", headers={**allowed, "Access-Control-Request-Method": "GET"}
            ) as response:
                assert response.status == 204
                assert response.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
                assert "authorization" in response.headers["Access-Control-Allow-Headers"]
            other = {"Origin": "https://evil.example"}
            async with http.get(f"{base}/control/sessions", headers=other) as response:
                assert response.status == 401 and "Access-Control-Allow-Origin" not in response.headers
            async with http.options(
                f"{base}/control/sessions", headers={**other, "Access-Control-Request-Method": "POST"}
            ) as response:
                assert response.status == 403 and "Access-Control-Allow-Origin" not in response.headers
            async with http.post(
                f"{base}/invoke", json={"session": "c", "text": "hi"}, headers=allowed
            ) as response:  # an allowed origin may drive it, and reads the stream
                assert response.status == 200
                assert response.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
                assert "completed" in await response.text()
            async with http.get(f"{base}/health", headers={"Host": "agent.example.com"}) as response:
                assert response.status == 200  # a configured name
            async with http.get(f"{base}/health", headers={"Host": "other.example.com"}) as response:
                assert response.status == 403
