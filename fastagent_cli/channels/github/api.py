"""The GitHub REST client of the channel: issue comments and a collaborator's permission.

The token is ``token=`` or ``GITHUB_TOKEN`` (a fine-grained token with *Issues* and *Pull
requests* read and write on the repositories, a classic ``repo`` token, or a GitHub App's
installation token); the API base is ``api_url=`` or ``GITHUB_API_URL``, by default
``https://api.github.com`` (GitHub Enterprise Server: ``https://<host>/api/v3``). Every request
sends ``Accept: application/vnd.github+json``, ``X-GitHub-Api-Version`` and a ``User-Agent``
(GitHub refuses a request without one).

The transport is the kit's (:class:`~fastagent_cli.channels.kit.api.PlatformClient`): success is a
``2xx``; a rate limit (``429``, or a ``403`` with ``x-ratelimit-remaining: 0`` or a
"secondary rate limit" message) waits as GitHub asks: the primary limit until
``x-ratelimit-reset``, the secondary one its ``Retry-After``; reads and edits are retried after a
network failure or a ``5xx``, a comment post is not (it may have been made). Failures are
:class:`~fastagent_cli.errors.ChannelApiError` with GitHub's ``message``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx

from fastagent_cli._version import __version__
from fastagent_cli.channels.kit.api import Answer, PlatformClient, json_object
from fastagent_cli.errors import ChannelApiError, one_line

__all__ = [
    "API_TIMEOUT_S",
    "API_VERSION",
    "DEFAULT_API_URL",
    "GITHUB_API_URL_ENV",
    "GITHUB_TOKEN_ENV",
    "WRITE_ROLES",
    "GithubApi",
    "resolve_api_url",
]

API_TIMEOUT_S = 15.0
API_VERSION = "2022-11-28"
DEFAULT_API_URL = "https://api.github.com"
GITHUB_TOKEN_ENV = "GITHUB_TOKEN"
GITHUB_API_URL_ENV = "GITHUB_API_URL"
WRITE_ROLES = frozenset({"admin", "maintain", "write"})
"""The repository roles that may answer an approval (``role_name`` of the permission lookup)."""


def resolve_api_url(api_url: str | None) -> str:
    return (api_url or os.environ.get(GITHUB_API_URL_ENV) or DEFAULT_API_URL).rstrip("/")


class GithubApi(PlatformClient):
    platform = "github"

    def __init__(
        self,
        token: str,
        api_url: str = DEFAULT_API_URL,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(timeout=API_TIMEOUT_S, sleep=sleep, client=client)
        self.base = api_url.rstrip("/")
        self._token = token
        self._headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"fastagent/{__version__}",
        }

    def scrub(self, text: str) -> str:
        return one_line(text.replace(self._token, "<token>"), 500)

    def read(self, response: httpx.Response) -> Answer:
        data = json_object(response.content)
        status = response.status_code
        if 200 <= status < 300:
            return Answer(ok=True, data=data)
        message = str(data.get("message") or f"HTTP {status}")
        primary = status == 403 and response.headers.get("x-ratelimit-remaining") == "0"
        secondary = status in (403, 429) and "rate limit" in message.lower()
        wait = None
        if primary:  # wait until the window resets (the kit caps the wait)
            try:
                wait = max(0.0, float(response.headers.get("x-ratelimit-reset", "")) - time.time())
            except ValueError:
                wait = None
        return Answer(
            ok=False,
            data=data,
            description=message,
            limited=primary or secondary or status == 429,
            retry_after=wait,
        )

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        url = self.base + path
        call = f"{method} {path}"
        return await self.request(
            call,
            lambda: self._client.request(method, url, json=body, headers=self._headers),
            idempotent=method in ("GET", "PATCH"),
        )

    async def create_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        """``POST /repos/{repo}/issues/{number}/comments`` (an issue or a pull request)."""
        return await self._call("POST", f"/repos/{_repo(repo)}/issues/{number}/comments", {"body": body})

    async def edit_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        """``PATCH /repos/{repo}/issues/comments/{comment_id}``."""
        return await self._call("PATCH", f"/repos/{_repo(repo)}/issues/comments/{comment_id}", {"body": body})

    async def role(self, repo: str, login: str) -> str:
        """The user's role on ``repo`` (``role_name``: ``admin``, ``maintain``, ``write``,
        ``triage``, ``read``; ``none`` when they are no collaborator, GitHub's 404)."""
        path = f"/repos/{_repo(repo)}/collaborators/{quote(login, safe='')}/permission"
        try:
            data = await self._call("GET", path)
        except ChannelApiError as exc:
            if exc.status == 404:
                return "none"
            raise
        role = data.get("role_name") or data.get("permission")
        return role if isinstance(role, str) else "none"


def _repo(repo: str) -> str:
    owner, _, name = repo.partition("/")
    return f"{quote(owner, safe='')}/{quote(name, safe='')}"
