"""The GitHub REST client: the headers GitHub expects, the kit's retry policy read GitHub's way
(primary and secondary rate limits on a 403), a 404 permission lookup as no access, errors with
GitHub's message and without the token."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest

from fastagent_cli.channels.github.api import API_VERSION, GithubApi, resolve_api_url
from fastagent_cli.errors import ChannelApiError

TOKEN = "ghp_unit0123456789"


def client(handler: Callable[[httpx.Request], httpx.Response]) -> tuple[GithubApi, list[float]]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return GithubApi(TOKEN, "https://ghe.example/api/v3/", sleep=sleep, client=http), waits


async def test_a_comment_is_posted_with_the_headers_github_expects() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": 5001, "body": json.loads(request.content)["body"]})

    api, _ = client(handler)
    posted = await api.create_comment("octo/shop", 7, "hello")
    assert posted["id"] == 5001
    (request,) = seen
    assert str(request.url) == "https://ghe.example/api/v3/repos/octo/shop/issues/7/comments"
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["x-github-api-version"] == API_VERSION
    assert request.headers["user-agent"].startswith("fastagent/")


async def test_the_primary_rate_limit_waits_until_its_reset() -> None:
    answers = [
        httpx.Response(
            403,
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 5)},
            json={"message": "API rate limit exceeded for installation ID 1."},
        ),
        httpx.Response(200, json={"id": 5001, "body": "edited"}),
    ]
    api, waits = client(lambda request: answers.pop(0))
    assert (await api.edit_comment("octo/shop", 5001, "edited"))["body"] == "edited"
    assert len(waits) == 1 and 3 <= waits[0] <= 6


async def test_the_secondary_rate_limit_follows_retry_after() -> None:
    answers = [
        httpx.Response(
            403, headers={"retry-after": "2"}, json={"message": "You have exceeded a secondary rate limit."}
        ),
        httpx.Response(201, json={"id": 1}),
    ]
    api, waits = client(lambda request: answers.pop(0))
    assert (await api.create_comment("octo/shop", 7, "x"))["id"] == 1
    assert waits == [2.0]


async def test_a_comment_post_is_not_repeated_after_a_5xx_but_a_read_is() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if request.method == "GET" and calls.count("GET") == 1:
            return httpx.Response(502, json={"message": "Server Error"})
        if request.method == "GET":
            return httpx.Response(200, json={"permission": "write", "role_name": "maintain"})
        return httpx.Response(502, json={"message": "Server Error"})

    api, _ = client(handler)
    with pytest.raises(ChannelApiError, match=r"github POST /repos/octo/shop/issues/7/comments failed: 502"):
        await api.create_comment("octo/shop", 7, "x")
    assert calls == ["POST"]
    assert await api.role("octo/shop", "maria") == "maintain"
    assert calls == ["POST", "GET", "GET"]


async def test_roles() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        login = request.url.path.split("/")[-2]
        if login == "ghost":
            return httpx.Response(404, json={"message": "Not Found"})
        if login == "legacy":
            return httpx.Response(200, json={"permission": "admin"})
        return httpx.Response(200, json={"permission": "read", "role_name": "triage"})

    api, _ = client(handler)
    assert await api.role("octo/shop", "ghost") == "none"
    assert await api.role("octo/shop", "legacy") == "admin"  # a GHES without role_name
    assert await api.role("octo/shop", "tri") == "triage"


async def test_an_error_names_the_call_with_githubs_message_and_no_token() -> None:
    message = f"Bad credentials (token {TOKEN})"
    api, _ = client(lambda request: httpx.Response(401, json={"message": message}))
    with pytest.raises(ChannelApiError) as raised:
        await api.edit_comment("octo/shop", 1, "x")
    assert raised.value.status == 401 and TOKEN not in str(raised.value)
    assert str(raised.value) == (
        "github PATCH /repos/octo/shop/issues/comments/1 failed: 401 Bad credentials (token <token>)"
    )


def test_the_api_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    assert resolve_api_url(None) == "https://api.github.com"
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example/api/v3/")
    assert resolve_api_url(None) == "https://ghe.example/api/v3"
    assert resolve_api_url("http://127.0.0.1:9") == "http://127.0.0.1:9"
