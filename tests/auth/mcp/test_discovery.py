"""Discovery as the MCP authorization spec orders it, against small servers on 127.0.0.1 that
publish only the forms under test: the challenge's ``resource_metadata`` or the well-known
fallbacks, an issuer with a path (RFC 8414 then OpenID Connect forms), the legacy server that is
its own authorization server, and the refusals (another issuer, no PKCE S256, another resource)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from fastagent_cli.auth.mcp.discovery import NoLoginNeeded, discover, parse_challenge
from fastagent_cli.errors import CredentialError

Serve = Callable[[dict[str, Any]], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """``await serve({path: answer})``: the origin of a server answering GETs of ``path`` with
    ``answer`` (JSON; ``{origin}`` replaced), and every ``/mcp`` request with ``answer["/mcp"]``."""
    runners: list[web.AppRunner] = []

    async def start(routes: dict[str, Any]) -> str:
        origin: list[str] = []

        async def handle(request: web.Request) -> web.StreamResponse:
            answer = routes.get(request.path)
            if answer is None:
                return web.Response(status=404)
            if isinstance(answer, web.Response):
                return answer
            text = web.json_response(answer).text or ""
            return web.Response(text=text.replace("{origin}", origin[0]), content_type="application/json")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        origin.append(f"http://127.0.0.1:{runner.addresses[0][1]}")
        return origin[0]

    yield start
    for runner in runners:
        await runner.cleanup()


def challenge(value: str = "Bearer") -> web.Response:
    return web.Response(status=401, headers={"WWW-Authenticate": value})


def metadata(issuer: str, **extra: Any) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "code_challenge_methods_supported": ["S256"],
        **extra,
    }


def test_challenges_parse_quoted_and_bare_parameters() -> None:
    header = 'Bearer error="invalid_token", resource_metadata="https://x/.well-known/a", scope=read'
    assert parse_challenge(header) == {
        "error": "invalid_token",
        "resource_metadata": "https://x/.well-known/a",
        "scope": "read",
    }
    assert parse_challenge("Bearer") == {}
    assert parse_challenge('Basic realm="x"') is None


async def test_without_resource_metadata_the_path_well_known_form_is_found(serve: Serve) -> None:
    routes: dict[str, Any] = {
        "/mcp": challenge('Bearer scope="tools:read tools:call"'),
        "/.well-known/oauth-protected-resource/mcp": {
            "resource": "{origin}/mcp",
            "authorization_servers": ["{origin}/tenant"],
        },
        # an issuer with a path: the RFC 8414 form is missing, the OpenID Connect one answers
        "/.well-known/openid-configuration/tenant": metadata(
            "{origin}/tenant", registration_endpoint="{origin}/r"
        ),
    }
    origin = await serve(routes)
    found = await discover(f"{origin}/mcp", {})
    assert found.issuer == f"{origin}/tenant" and found.resource == f"{origin}/mcp"
    assert found.scopes == ["tools:read", "tools:call"]  # the challenge's scope wins
    assert found.registration_endpoint == f"{origin}/r"
    assert found.token_endpoint == f"{origin}/tenant/token"


async def test_the_root_well_known_and_the_issuer_path_openid_form(serve: Serve) -> None:
    routes: dict[str, Any] = {
        "/mcp": challenge(),
        "/.well-known/oauth-protected-resource": {
            "resource": "{origin}",
            "authorization_servers": ["{origin}/t2"],
            "scopes_supported": ["a", "b"],
        },
        "/t2/.well-known/openid-configuration": metadata("{origin}/t2"),
    }
    origin = await serve(routes)
    found = await discover(f"{origin}/mcp", {})
    assert (found.issuer, found.resource, found.scopes) == (f"{origin}/t2", origin, ["a", "b"])
    assert found.registration_endpoint is None


async def test_a_legacy_server_is_its_own_authorization_server(serve: Serve) -> None:
    routes: dict[str, Any] = {
        "/mcp": challenge(),
        "/.well-known/oauth-authorization-server": metadata("{origin}"),
    }
    origin = await serve(routes)
    found = await discover(f"{origin}/mcp", {})
    assert found.issuer == origin and found.authorization_endpoint == f"{origin}/authorize"


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (metadata("https://elsewhere.example"), "names another issuer"),
        (metadata("{origin}", code_challenge_methods_supported=["plain"]), "does not offer PKCE S256"),
        (metadata("{origin}", token_endpoint="http://as.example/token"), "plain-http token_endpoint"),
    ],
)
async def test_metadata_that_cannot_be_trusted_or_used_is_refused(
    serve: Serve, meta: dict[str, Any], message: str
) -> None:
    origin = await serve({"/mcp": challenge(), "/.well-known/oauth-authorization-server": meta})
    with pytest.raises(CredentialError, match=message):
        await discover(f"{origin}/mcp", {})


async def test_resource_metadata_for_another_resource_is_refused(serve: Serve) -> None:
    routes: dict[str, Any] = {
        "/mcp": challenge('Bearer resource_metadata="{origin}/prm"'),
        "/prm": {"resource": "https://other.example/mcp", "authorization_servers": ["{origin}"]},
    }
    origin = await serve(routes)
    routes["/mcp"] = challenge(f'Bearer resource_metadata="{origin}/prm"')
    with pytest.raises(CredentialError, match="is for another resource"):
        await discover(f"{origin}/mcp", {})


async def test_a_401_without_a_bearer_challenge_and_no_401_at_all(serve: Serve) -> None:
    origin = await serve({"/mcp": challenge('Basic realm="x"'), "/open": {"jsonrpc": "2.0"}})
    with pytest.raises(CredentialError, match="without a Bearer challenge"):
        await discover(f"{origin}/mcp", {})
    with pytest.raises(NoLoginNeeded, match="needs no login: it answered 200"):
        await discover(f"{origin}/open", {})
    with pytest.raises(CredentialError, match="cannot reach http://127.0.0.1:9/mcp"):
        await discover("http://127.0.0.1:9/mcp", {})
