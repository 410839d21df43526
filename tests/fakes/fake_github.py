"""A fake GitHub REST API on 127.0.0.1 (aiohttp), and signed webhook deliveries, in the real shapes.

Implemented: ``POST /repos/{owner}/{repo}/issues/{number}/comments`` (``201``, the comment object),
``PATCH /repos/{owner}/{repo}/issues/comments/{id}`` (``200``, the edited comment; ``404`` for an
unknown one), ``GET /repos/{owner}/{repo}/collaborators/{user}/permission`` (``permission``,
``role_name``, ``user``; the roles come from ``roles``, a user not in it is a ``read`` outsider).
Every call needs ``Authorization: Bearer <token>`` (else ``401 Bad credentials``) and a
``User-Agent`` (else ``403``, as GitHub answers). Every call is recorded in :attr:`FakeGithub.calls`;
:meth:`FakeGithub.fail` makes the next matching calls fail.

:meth:`FakeGithub.delivery` signs a webhook delivery (``X-Hub-Signature-256``);
:func:`issue_opened` and :func:`comment_created` build the payloads GitHub sends.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from fastagent_cli.channels.github import sign_payload

BOT = {"login": "fastagent-bot[bot]", "id": 9001, "type": "Bot"}
_LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}


@dataclass
class Comment:
    id: int
    repo: str
    number: int
    body: str
    user: dict[str, Any]
    edits: list[str] = field(default_factory=list)

    def json(self, base: str) -> dict[str, Any]:
        url = f"{base}/repos/{self.repo}/issues/comments/{self.id}"
        stamp = "2026-12-02T18:00:00Z"
        return {
            "id": self.id,
            "node_id": f"IC_kwDO{self.id}",
            "url": url,
            "html_url": f"https://github.com/{self.repo}/issues/{self.number}#issuecomment-{self.id}",
            "issue_url": f"{base}/repos/{self.repo}/issues/{self.number}",
            "body": self.body,
            "user": self.user,
            "created_at": stamp,
            "updated_at": stamp,
            "author_association": "NONE",
        }


def user(login: str, user_id: int) -> dict[str, Any]:
    return {"login": login, "id": user_id, "type": "User"}


def repository(repo: str) -> dict[str, Any]:
    owner, name = repo.split("/")
    return {"id": 1296269, "name": name, "full_name": repo, "owner": {"login": owner}, "private": False}


def issue_opened(repo: str, number: int, title: str, sender: dict[str, Any]) -> dict[str, Any]:
    issue = {"number": number, "title": title, "state": "open", "user": sender, "body": ""}
    return {"action": "opened", "issue": issue, "repository": repository(repo), "sender": sender}


def comment_created(
    repo: str, number: int, body: str, sender: dict[str, Any], comment_id: int = 1
) -> dict[str, Any]:
    issue = {"number": number, "title": "an issue", "state": "open", "user": sender}
    comment = {"id": comment_id, "body": body, "user": sender, "author_association": "NONE"}
    return {
        "action": "created",
        "issue": issue,
        "comment": comment,
        "repository": repository(repo),
        "sender": sender,
    }


class FakeGithub:
    def __init__(self, *, token: str = "ghp_test", roles: dict[str, str] | None = None) -> None:
        self.token = token
        self.roles = roles or {}
        self.comments: list[Comment] = []
        self.calls: list[tuple[str, str, dict[str, str]]] = []
        self.lookups: list[str] = []
        self.failures: list[tuple[str, str, int, str]] = []
        self._ids = itertools.count(5000)
        self._deliveries = itertools.count(1)
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeGithub:
        app = web.Application(middlewares=[self._auth])
        app.router.add_post("/repos/{owner}/{repo}/issues/{number}/comments", self._create)
        app.router.add_patch("/repos/{owner}/{repo}/issues/comments/{id}", self._edit)
        app.router.add_get("/repos/{owner}/{repo}/collaborators/{user}/permission", self._permission)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- what the tests read ----------------------------------------------------------------------

    def fail(self, method: str, path_part: str, status: int, message: str, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` whose path holds ``path_part`` with an error."""
        self.failures.extend([(method, path_part, status, message)] * times)

    def on(self, repo: str, number: int) -> list[Comment]:
        return [c for c in self.comments if c.repo == repo and c.number == number]

    def requests(self, repo: str, number: int) -> list[Comment]:
        """The approval request comments on an issue."""
        return [c for c in self.on(repo, number) if "Approval needed" in c.body]

    def replies(self, repo: str, number: int) -> list[str]:
        return [c.body for c in self.on(repo, number) if "Approval needed" not in c.body]

    async def wait_until(self, check: Callable[[], Any], within: float = 30, what: str = "condition") -> Any:
        deadline = time.monotonic() + within
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                seen = [(c.repo, c.number, c.body[:80]) for c in self.comments]
                raise AssertionError(f"{what} not met within {within} s; comments: {seen}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), 0.5)
            except TimeoutError:
                pass

    def delivery(self, event: str, payload: dict[str, Any], secret: str) -> tuple[bytes, dict[str, str]]:
        """A webhook delivery as GitHub sends it: the body and its headers."""
        body = json.dumps(payload).encode()
        headers = {
            "content-type": "application/json",
            "user-agent": "GitHub-Hookshot/abc1234",
            "x-github-event": event,
            "x-github-delivery": f"72d3162e-cc78-11e3-81ab-{next(self._deliveries):012d}",
            "x-github-hook-id": "292430182",
            "x-hub-signature-256": sign_payload(secret, body),
        }
        return body, headers

    # --- the API ----------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        self.calls.append((request.method, request.path, dict(request.headers)))
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return _error(401, "Bad credentials")
        if not request.headers.get("user-agent"):
            return _error(
                403,
                "Request forbidden by administrative rules. "
                "Please make sure your request has a User-Agent header",
            )
        for failure in self.failures:
            method, part, status, message = failure
            if request.method == method and part in request.path:
                self.failures.remove(failure)
                return _error(status, message)
        response: web.StreamResponse = await handler(request)
        self._changed.set()
        return response

    async def _create(self, request: web.Request) -> web.Response:
        data = await request.json()
        repo = f"{request.match_info['owner']}/{request.match_info['repo']}"
        if not isinstance(data, dict) or not isinstance(data.get("body"), str):
            return _error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        comment = Comment(next(self._ids), repo, int(request.match_info["number"]), data["body"], BOT)
        self.comments.append(comment)
        return web.json_response(comment.json(self.base_url), status=201)

    async def _edit(self, request: web.Request) -> web.Response:
        data = await request.json()
        wanted = int(request.match_info["id"])
        comment = next((c for c in self.comments if c.id == wanted), None)
        if comment is None:
            return _error(404, "Not Found")
        comment.edits.append(comment.body)
        comment.body = data["body"]
        return web.json_response(comment.json(self.base_url))

    async def _permission(self, request: web.Request) -> web.Response:
        login = request.match_info["user"]
        self.lookups.append(login)
        role = self.roles.get(login, "read")
        body = {"permission": _LEGACY[role], "role_name": role, "user": user(login, 100 + len(login))}
        return web.json_response(body)


def _error(status: int, message: str) -> web.Response:
    body = {"message": message, "documentation_url": "https://docs.github.com/rest", "status": str(status)}
    return web.json_response(body, status=status)
