"""Serving the web chat page: when (``[http] web_chat``, the command's default, ``session_control``,
channel routes), what (``GET /`` and ``/webchat/*``: types, CSP, ETag, gzip, 404/405), the control
plane it turns on, and the startup line that carries (or names) the token."""

from __future__ import annotations

import gzip
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.errors import ConfigError, ServeError
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.service import AgentService, create_agent_service
from fastagent_cli.serving.startup import startup_report
from fastagent_cli.serving.webchat import named_page
from fastagent_cli.serving.webchat.assets import CONTENT_SECURITY_POLICY, load_assets
from tests.conftest import AgentFactory

WEB = Path(__file__).resolve().parents[3] / "fastagent_cli" / "data" / "webchat"
ROOT_CHANNEL = """
from aiohttp import web


def channel(ctx):
    async def hello(request):
        return web.Response(text="channel root")

    return {"GET /": hello}
"""


@asynccontextmanager
async def served(
    agent: Path, **kwargs: Any
) -> AsyncIterator[tuple[str, AgentService, aiohttp.ClientSession]]:
    service = await create_agent_service(agent, **kwargs)
    server = serve(service.handler, port=0, host="127.0.0.1")
    port = await server.listening
    try:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=10), auto_decompress=False
        ) as http:
            yield f"http://127.0.0.1:{port}", service, http
    finally:
        await server.close()
        await service.close()


Get = Callable[..., Awaitable[tuple[int, Any, bytes]]]


def getter(http: aiohttp.ClientSession, base: str) -> Get:
    async def get(path: str, method: str = "GET", **headers: str) -> tuple[int, Any, bytes]:
        sent = {"Accept-Encoding": "identity", **headers}
        async with http.request(method, base + path, headers=sent) as response:
            return response.status, response.headers.copy(), await response.read()

    return get


async def test_dev_serves_the_page_its_files_and_the_plane_it_needs(make_agent: AgentFactory) -> None:
    agent = make_agent()
    async with served(agent, web_chat_default=True) as (base, service, http):
        get = getter(http, base)
        status, headers, body = await get("/")
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert (
            "script-src 'self'" in CONTENT_SECURITY_POLICY and "connect-src 'self'" in CONTENT_SECURITY_POLICY
        )
        assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
        page = named_page((WEB / "index.html").read_bytes(), "agent")  # the page names the agent
        assert headers["Cache-Control"] == "no-cache" and body == page
        assert b"<title>agent \xc2\xb7 fastagent</title>" in body
        status, headers, body = await get("/webchat/js/app.js")
        assert status == 200 and headers["Content-Type"] == "text/javascript; charset=utf-8"
        assert body == (WEB / "js" / "app.js").read_bytes()
        assert (await get("/", **{"If-None-Match": headers["ETag"]}))[0] == 200  # another file's tag
        status, again, body = await get("/webchat/js/app.js", **{"If-None-Match": headers["ETag"]})
        assert (status, body) == (304, b"") and again["ETag"] == headers["ETag"]
        status, packed, body = await get("/webchat/app.css", **{"Accept-Encoding": "gzip, br"})
        assert packed["Content-Encoding"] == "gzip" and packed["Vary"] == "Accept-Encoding"
        assert gzip.decompress(body) == (WEB / "app.css").read_bytes()
        status, headers, body = await get("/webchat/app.css", "HEAD")
        assert (
            status == 200
            and body == b""
            and int(headers["Content-Length"]) == len((WEB / "app.css").read_bytes())
        )
        for missing in ("/webchat/nope.js", "/webchat/index.html", "/webchat/", "/webchat/../fastagent.toml"):
            assert (await get(missing))[0] == 404, missing
        status, headers, _ = await get("/webchat/app.css", "POST")
        assert status == 405 and headers["Allow"] == "GET, HEAD"
        assert (await get("/", "POST"))[0] == 405
        # The page needs the plane: it is on, with the writes the page offers.
        assert service.web_chat.served and service.control is not None and service.control.minted
        auth = {"Authorization": f"Bearer {service.control.token}"}
        async with http.get(f"{base}/control/capabilities", headers=auth) as response:
            capabilities = await response.json()
        assert capabilities["fork"] and capabilities["delete"] and "name" in capabilities["updatable"]
        assert (await get("/health"))[0] == 200


async def test_start_serves_no_page_unless_asked(make_agent: AgentFactory) -> None:
    async with served(make_agent()) as (base, service, http):
        assert (await getter(http, base)("/"))[0] == 404
        assert not service.web_chat.served and service.control is None
    asked = make_agent(config="[http]\nweb_chat = true\n", name="asked")
    async with served(asked) as (base, service, http):
        assert (await getter(http, base)("/"))[0] == 200 and service.control is not None
    refused = make_agent(config="[http]\nweb_chat = false\n", name="refused")
    async with served(refused, web_chat_default=True) as (base, service, http):
        assert (await getter(http, base)("/"))[0] == 404 and service.web_chat.note is None


async def test_a_written_session_control_false_keeps_dev_from_serving_it(make_agent: AgentFactory) -> None:
    agent = make_agent(config="session_control = false\n")
    async with served(agent, web_chat_default=True) as (base, service, http):
        assert (await getter(http, base)("/"))[0] == 404 and service.control is None
        assert (
            service.web_chat.note
            == "web chat: off (session_control = false; the page needs the control plane)"
        )
    both = make_agent(config="session_control = false\n[http]\nweb_chat = true\n", name="both")
    with pytest.raises(ConfigError, match=r"web_chat = true needs the session control plane"):
        await create_agent_service(both)


async def test_a_channel_that_answers_the_root_keeps_it(make_agent: AgentFactory) -> None:
    agent = make_agent({"channels/root.py": ROOT_CHANNEL})
    async with served(agent, web_chat_default=True) as (base, service, http):
        status, _, body = await getter(http, base)("/")
        assert (status, body) == (200, b"channel root")
        assert (
            service.web_chat.note == 'web chat: off (the channel route "GET /" answers GET / or /webchat/*)'
        )
    agent.joinpath("fastagent.toml").write_text('model = "scripted/echo"\n[http]\nweb_chat = true\n')
    with pytest.raises(ServeError, match=r'the channel route "GET /" answers the page\'s paths'):
        await create_agent_service(agent)


async def test_the_startup_line_carries_the_token_only_under_dev(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(make_agent(), web_chat_default=True) as (_, service, _http):
        assert service.control is not None
        dev = startup_report(service, "127.0.0.1", 8787, reveal_token=True).serving
        assert f"web chat: http://127.0.0.1:8787/#token={service.control.token}" in dev
        start = startup_report(service, "127.0.0.1", 8787).serving
        assert "web chat: http://127.0.0.1:8787/ (sign in with the token in control.json)" in start
        assert not any(service.control.token in line for line in start)
        routes = next(line for line in startup_report(service, None, 1).lines if line.startswith("routes:"))
        assert "GET / and /webchat/* (web chat)" in routes and "/control/* (session control)" in routes
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", "chosen-by-the-deployer")
    async with served(make_agent(name="deployed"), web_chat_default=True) as (_, service, _http):
        lines = startup_report(service, "127.0.0.1", 8787, reveal_token=True).serving
        assert "web chat: http://127.0.0.1:8787/ (sign in with $FASTAGENT_CONTROL_TOKEN)" in lines
        assert not any("chosen-by-the-deployer" in line for line in lines)


async def test_a_boot_token_is_used_unless_the_environment_names_one(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastagent_cli.assembly import open_agent_dir
    from fastagent_cli.serving.service import open_agent_service

    service = await open_agent_service(open_agent_dir(make_agent()), web_chat_default=True, boot_token="kept")
    try:
        assert service.control is not None and (service.control.token, service.control.minted) == (
            "kept",
            True,
        )
    finally:
        await service.close()
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", "env")
    service = await open_agent_service(
        open_agent_dir(make_agent(name="b")), web_chat_default=True, boot_token="kept"
    )
    try:
        assert service.control is not None and service.control.token == "env"
    finally:
        await service.close()


def test_every_file_the_page_names_ships_and_nothing_comes_from_elsewhere() -> None:
    assets = load_assets()
    html = assets["index.html"].body.decode()
    named = set(re.findall(r'(?:src|href)="webchat/([^"]+)"', html))
    assert not re.search(r'(?:src|href)="(?!webchat/)', html)  # no file from another place
    for name, asset in assets.items():
        if not name.endswith(".js"):
            continue
        text = asset.body.decode()
        imports = re.findall(r'(?:from|import)\s*\(?\s*"([^"]+)"', text)
        assert all(spec.startswith("./") for spec in imports), (name, imports)
        named |= {f"{name.rsplit('/', 1)[0]}/{spec[2:]}" for spec in imports}
        assert all(not call.startswith(("http", "//")) for call in re.findall(r'fetch\(`?"?([^`"),]*)', text))
        assert "innerHTML" not in text and "eval(" not in text, name  # text is never parsed as HTML
    assert named and named <= set(assets), named - set(assets)
