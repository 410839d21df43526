"""The router rules (API reference, "Route types"), against the real host on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp
import pytest
from aiohttp import web
from yarl import URL

from fastagent_cli.errors import ServeError
from fastagent_cli.serving.router import Handler, RouteKey, build_router, parse_route_key
from tests.serving.conftest import StartServer, raw_get, raw_http, split_response


def answer(label: str) -> Handler:
    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        return web.Response(text=f"{label} {request.method}\n")

    return handler


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


async def test_any_method_key_answers_every_method(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    base = await start_server(build_router({"/x": answer("x")}))
    for method in ("GET", "POST", "DELETE", "PATCH"):
        async with http.request(method, f"{base}/x") as resp:
            assert resp.status == 200
            assert await resp.text() == f"x {method}\n"


async def test_method_keys_and_405_with_allow(start_server: StartServer, http: aiohttp.ClientSession) -> None:
    base = await start_server(build_router({"GET /s": answer("get"), "POST /s": answer("post")}))
    async with http.get(f"{base}/s") as resp:
        assert await resp.text() == "get GET\n"
    async with http.post(f"{base}/s") as resp:
        assert await resp.text() == "post POST\n"
    async with http.put(f"{base}/s") as resp:
        assert resp.status == 405
        assert resp.headers["Content-Type"].startswith("text/plain")
        assert resp.headers["Allow"] == "GET, HEAD, POST"
        assert await resp.text() == "method not allowed\n"


async def test_unknown_path_is_404(start_server: StartServer, http: aiohttp.ClientSession) -> None:
    base = await start_server(build_router({"/x": answer("x")}))
    for path in ("/y", "/x/", "/X", "/"):
        async with http.get(f"{base}{path}") as resp:
            assert resp.status == 404, path
            assert resp.headers["Content-Type"].startswith("text/plain")
            assert await resp.text() == "not found\n"


async def test_query_string_is_not_part_of_the_path(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    base = await start_server(build_router({"GET /x": answer("x")}))
    async with http.get(f"{base}/x?a=1&b=/y") as resp:
        assert await resp.text() == "x GET\n"


async def test_paths_match_as_they_arrive_without_percent_decoding(start_server: StartServer) -> None:
    router = build_router({"/a/b": answer("ab"), "/caf%C3%A9": answer("cafe"), "/%41": answer("pct")})
    port = port_of(await start_server(router))
    status, _, body = split_response(await raw_http(port, raw_get("/a%2Fb")))
    assert (status, body) == (404, b"not found\n")
    status, _, body = split_response(await raw_http(port, raw_get("/caf%C3%A9")))
    assert (status, body) == (200, b"cafe GET\n")
    status, _, _ = split_response(await raw_http(port, raw_get("/A")))
    assert status == 404  # "/%41" is a literal: it does not match its decoded form
    status, _, body = split_response(await raw_http(port, raw_get("/%41")))
    assert (status, body) == (200, b"pct GET\n")


async def test_colon_and_star_are_ordinary_characters(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    base = await start_server(build_router({"/users/:id": answer("id"), "/files/*": answer("star")}))
    for path in ("/users/42", "/files/a.txt", "/files/"):
        async with http.get(f"{base}{path}") as resp:
            assert resp.status == 404, path
    async with http.get(URL(f"{base}/users/:id", encoded=True)) as resp:
        assert await resp.text() == "id GET\n"
    async with http.get(URL(f"{base}/files/*", encoded=True)) as resp:
        assert await resp.text() == "star GET\n"


async def test_head_is_answered_by_get_without_the_body(start_server: StartServer) -> None:
    port = port_of(await start_server(build_router({"GET /g": answer("g"), "POST /p": answer("p")})))
    status, headers, body = split_response(await raw_http(port, raw_get("/g", "HEAD")))
    assert status == 200
    assert body == b""
    assert headers["content-length"] == str(len("g HEAD\n"))
    status, _, _ = split_response(await raw_http(port, raw_get("/p", "HEAD")))
    assert status == 405


async def test_an_explicit_head_route_wins(start_server: StartServer) -> None:
    calls: list[str] = []

    async def head(request: web.BaseRequest) -> web.StreamResponse:
        calls.append("head")
        return web.Response(headers={"X-Route": "head"})

    port = port_of(await start_server(build_router({"GET /g": answer("g"), "HEAD /g": head})))
    status, headers, body = split_response(await raw_http(port, raw_get("/g", "HEAD")))
    assert (status, headers["x-route"], body, calls) == (200, "head", b"", ["head"])


async def test_a_mount_owns_its_whole_prefix(start_server: StartServer, http: aiohttp.ClientSession) -> None:
    router = build_router({"/x": answer("x")}, mounts={"/control": answer("control")})
    base = await start_server(router)
    for path in ("/control", "/control/", "/control/sessions/a"):
        async with http.post(f"{base}{path}") as resp:
            assert await resp.text() == "control POST\n", path
    async with http.get(f"{base}/controlled") as resp:
        assert resp.status == 404


def refusal(build: Callable[[], object]) -> str:
    with pytest.raises(ServeError) as caught:
        build()
    return caught.value.message


def test_two_keys_naming_the_same_route_are_refused_naming_both() -> None:
    message = refusal(lambda: build_router({"/x": answer("a"), "GET /x": answer("b")}))
    assert '"/x"' in message and '"GET /x"' in message
    assert refusal(lambda: build_router({"/x": answer("a"), "POST /x": answer("b")}))
    build_router({"GET /x": answer("a"), "POST /x": answer("b"), "/y": answer("c")})  # distinct: fine


def test_a_route_inside_a_mount_is_refused() -> None:
    mounts = {"/control": answer("m")}
    for key in ("/control", "/control/x", "GET /control/a/b"):
        routes = {key: answer("a")}
        message = refusal(lambda: build_router(routes, mounts=mounts))  # noqa: B023
        assert key in message and '"/control"' in message
    build_router({"/controlled": answer("a")}, mounts={"/control": answer("m")})


@pytest.mark.parametrize(
    "key",
    ["/a?b", "/a#b", "/a/./b", "/a/../b", "/..", "/a/.", "/a/%2e%2E/b", "/a/.%2e", "/a b", "/é", "/a\\b"],
)
def test_paths_a_url_would_rewrite_are_refused(key: str) -> None:
    message = refusal(lambda: parse_route_key(key))
    assert key in message and "never match" in message


@pytest.mark.parametrize("key", ["x", "", "get /x", "GET x", "GET", "GET  /x", "/x ", "GET /x?"])
def test_malformed_keys_are_refused(key: str) -> None:
    assert refusal(lambda: build_router({key: answer("a")}))


def test_keys_parse_to_method_and_path() -> None:
    assert parse_route_key("/x") == RouteKey(None, "/x")
    assert parse_route_key("POST /hooks/github") == RouteKey("POST", "/hooks/github")
    assert parse_route_key("/") == RouteKey(None, "/")
    assert parse_route_key("/a/%2F/b") == RouteKey(None, "/a/%2F/b")
    assert str(RouteKey("GET", "/x")) == "GET /x"
    assert RouteKey(None, "/x").overlaps(RouteKey("GET", "/x"))
    assert not RouteKey("GET", "/x").overlaps(RouteKey("POST", "/x"))
