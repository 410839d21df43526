"""GitHub approvals through the real ``fastagent start`` against the fake GitHub API, with signed
webhook deliveries: the request is a comment on the issue; a ``/approve`` from a commenter without
write access gets a reply and changes nothing; one with write access approves (the request comment
says who); a ``/deny <reason>`` from someone on ``[approval] allow_from`` denies and the model reads
the reason; an ``/approve`` with nothing waiting is told so; the channel's own comments never reach
``on(event)``; and after a SIGKILL and a restart an ``/approve`` resumes the turn, no new request."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.channels.approvals_agent import TWO_CALLS, asked_then_killed, start_args, write_agent
from tests.fakes.fake_github import Comment, FakeGithub, comment_created, issue_opened, user
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

SECRET = "gh-approvals-secret"
TOKEN = "ghp_approvals0123"
REPO = "octo/shop"
DAVE = user("dave", 11)  # opened the issue; read access
MALLORY = user("mallory", 12)  # read access
MARIA = user("maria", 13)  # write access
CAROL = user("carol", 14)  # read access, on [approval] allow_from
CHANNEL = """
from fastagent_cli.channels import Intent, github_channel


def on(event):
    if event.event == "issues" and event.action == "opened":
        issue = event.payload["issue"]
        return [Intent(session=f"issue-{issue['number']}", text=issue["title"])]
    if event.event == "issue_comment":
        return [Intent(session=f"comment-{event.delivery_id}", text="a comment")]
    if event.event == "push":
        return [Intent(session="pushes", text="ship the push")]
    return []


channel = github_channel(on=on)
"""


@dataclass
class Hub:
    fake: FakeGithub
    root: Path
    log: Path

    @property
    def env(self) -> dict[str, str]:
        return {"GITHUB_API_URL": self.fake.base_url, "APPROVALS_LOG": str(self.log)}

    def results(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    async def deliver(self, port: int, event: str, payload: dict[str, Any]) -> int:
        body, headers = self.fake.delivery(event, payload, SECRET)
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
            http.post(f"http://127.0.0.1:{port}/webhook", data=body, headers=headers) as response,
        ):
            return response.status

    async def comment(self, port: int, number: int, body: str, sender: dict[str, Any]) -> int:
        return await self.deliver(port, "issue_comment", comment_created(REPO, number, body, sender))

    async def request(self, number: int) -> Comment:
        found = await self.fake.wait_until(
            lambda: self.fake.requests(REPO, number), what="the request comment"
        )
        assert len(found) == 1
        return found[0]

    async def reply(self, number: int, contains: str) -> str:
        return await self.fake.wait_until(
            lambda: next((r for r in self.fake.replies(REPO, number) if contains in r), None),
            what=f"a reply containing {contains!r}",
        )


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    root = tmp_path / "agent"
    files = {
        "channels/github.py": CHANNEL,
        ".env": f"GITHUB_WEBHOOK_SECRET={SECRET}\nGITHUB_TOKEN={TOKEN}\n",
    }
    write_agent(root, files, config='\n[approval]\nallow_from = ["carol"]\n')
    async with FakeGithub(token=TOKEN, roles={"maria": "write", "mallory": "read"}) as fake:
        yield Hub(fake, root, tmp_path / "results.log")


async def test_only_write_access_approves_and_the_comment_says_who(hub: Hub) -> None:
    async with ServerProcess.spawn(*start_args(hub.root), env=hub.env) as server:
        port = await server.port()
        assert await hub.deliver(port, "issues", issue_opened(REPO, 7, "ship it", DAVE)) == 202
        request = await hub.request(7)
        found = re.search(r"Request `(ap_[0-9a-f]+)`", request.body)
        assert found is not None and f"waits for an answer (approval {found[1]})" in server.text
        assert "`deploy`" in request.body
        assert (
            '"env": "prod"' in request.body
            and "/approve" in request.body
            and "/deny <reason>" in request.body
        )
        assert "expires " in request.body
        method, path, headers = next(c for c in hub.fake.calls if c[0] == "POST")
        assert path == f"/repos/{REPO}/issues/7/comments"
        assert headers["Accept"] == "application/vnd.github+json" and headers["X-GitHub-Api-Version"]
        assert headers["User-Agent"].startswith("fastagent/")

        # the request comment comes back as a delivery: the channel's own, never a turn
        own = comment_created(
            REPO, 7, request.body, {"login": "fastagent-bot[bot]", "id": 9001, "type": "Bot"}
        )
        assert await hub.deliver(port, "issue_comment", own) == 202

        assert await hub.comment(port, 7, "/approve", MALLORY) == 202
        refused = await hub.reply(7, "@mallory")
        assert "may not answer" in refused and f"write access to {REPO}" in refused
        assert hub.fake.lookups == ["mallory"] and not request.edits and hub.results() == []

        assert await hub.comment(port, 7, "/approve", MARIA) == 202
        await hub.fake.wait_until(lambda: request.edits, what="the request comment edited")
        assert "✅ **Approved** by @maria" in request.body and "/deny <reason>" not in request.body
        await hub.fake.wait_until(hub.results, what="the tool's result reaching the model")
        assert hub.results() == ["deployed prod"]
        await server.wait_for(r"\[approval\] session=issue-7 deploy approve(d)? by github:maria")
        await server.wait_for(r"\[github\] turn done: turn=\S+#0 session=issue-7 ")
        assert len(request.edits) == 1  # answered by a comment: the call's end edits nothing more

        assert await hub.comment(port, 7, "/approve", MARIA) == 202
        assert "Nothing on this thread is waiting" in await hub.reply(7, "@maria")
        assert server.count(r"turn start: .* event=issue_comment") == 0
        assert len(hub.fake.requests(REPO, 7)) == 1


async def test_deny_with_a_reason_from_the_allow_list(hub: Hub) -> None:
    async with ServerProcess.spawn(*start_args(hub.root), env=hub.env) as server:
        port = await server.port()
        assert await hub.deliver(port, "issues", issue_opened(REPO, 8, "ship it", DAVE)) == 202
        request = await hub.request(8)
        assert await hub.comment(port, 8, "/deny not on a Friday", CAROL) == 202
        await hub.fake.wait_until(lambda: request.edits, what="the request comment edited")
        assert "❌ **Denied** by @carol: not on a Friday" in request.body
        await hub.fake.wait_until(hub.results, what="the denial reaching the model")
        assert hub.results() == ["Denied: not on a Friday"]
        assert hub.fake.lookups == []  # on the allow-list: no permission lookup
        await server.wait_for(r"\[approval\] session=issue-8 deploy den\w* by github:carol")


async def test_an_approve_after_a_restart_resumes_the_turn(hub: Hub) -> None:
    async def ask(server: ServerProcess, port: int) -> Comment:
        assert await hub.deliver(port, "issues", issue_opened(REPO, 9, "ship it", DAVE)) == 202
        request = await hub.request(9)
        await server.wait_for(r"\[github\] approval ap_\w+ asked on octo/shop#9 \(comment \d+\)")
        return request

    request = await asked_then_killed(hub.root, hub.env, ask)
    assert hub.results() == []
    async with ServerProcess.spawn(*start_args(hub.root), env=hub.env) as second:
        port = await second.port()
        assert await hub.comment(port, 9, "/approve", MARIA) == 202
        await hub.fake.wait_until(lambda: request.edits, what="the request comment edited")
        assert "✅ **Approved** by @maria" in request.body
        await hub.fake.wait_until(hub.results, what="the resumed turn's tool result")
        assert hub.results() == ["deployed prod"]
        assert len(hub.fake.requests(REPO, 9)) == 1  # no new request after the restart


async def test_several_requests_on_one_issue_are_answered_by_id(hub: Hub) -> None:
    (hub.root / "apmodel.py").write_text(TWO_CALLS)
    async with ServerProcess.spawn(*start_args(hub.root), env=hub.env) as server:
        port = await server.port()
        assert await hub.deliver(port, "issues", issue_opened(REPO, 10, "ship both", DAVE)) == 202
        requests = await hub.fake.wait_until(
            lambda: len(hub.fake.requests(REPO, 10)) == 2 and hub.fake.requests(REPO, 10), what="two requests"
        )
        ids = [re.findall(r"Request `(ap_[0-9a-f]+)`", r.body)[0] for r in requests]
        assert '"env": "prod"' in requests[0].body and '"env": "staging"' in requests[1].body

        assert await hub.comment(port, 10, "/approve", MARIA) == 202
        several = await hub.reply(10, "several requests")
        assert f"`/approve {ids[0]}`" in several and f"`/approve {ids[1]}`" in several
        assert await hub.comment(port, 10, "/approve ap_0000000000000000", MARIA) == 202
        assert "`ap_0000000000000000` is not waiting here" in await hub.reply(10, "ap_0000000000000000")
        assert not requests[0].edits and not requests[1].edits

        assert await hub.comment(port, 10, f"/deny {ids[1]} staging is frozen", MARIA) == 202
        await hub.fake.wait_until(lambda: requests[1].edits, what="the second request edited")
        assert "❌ **Denied** by @maria: staging is frozen" in requests[1].body and not requests[0].edits
        assert await hub.comment(port, 10, f"/approve {ids[0]}", MARIA) == 202
        await hub.fake.wait_until(lambda: requests[0].edits, what="the first request edited")
        await hub.fake.wait_until(hub.results, what="both results reaching the model")
        assert hub.results() == ["deployed prod | Denied: staging is frozen"]
        await server.wait_for(r"\[github\] turn done: turn=\S+#0 session=issue-10 ")


async def test_a_turn_about_no_issue_waits_for_the_control_plane_and_says_so_once(hub: Hub) -> None:
    (hub.root / "apmodel.py").write_text(TWO_CALLS)
    async with ServerProcess.spawn(*start_args(hub.root), env=hub.env) as server:
        port = await server.port()
        push = {"ref": "refs/heads/main", "repository": {"full_name": REPO}, "sender": MARIA}
        assert await hub.deliver(port, "push", push) == 202
        first = await server.wait_for(r"deploy waits for an answer \(approval (ap_\w+)\)")
        await server.wait_for(rf"deploy waits for an answer \(approval (?!{first[1]})ap_\w+\)")
        await server.wait_for(
            r"\[github\] turn \S+#0: approval ap_\w+ \(deploy\) waits for an answer from the control plane "
            r"or the web chat: its delivery is about no issue or pull request to comment on"
        )
        assert server.count(r"waits for an answer from the control plane") == 1  # once for the turn
        assert hub.fake.comments == [] and not any(c[0] == "POST" for c in hub.fake.calls)


async def test_an_expired_request_says_so_on_its_comment(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    files = {"channels/github.py": CHANNEL, ".env": f"GITHUB_WEBHOOK_SECRET={SECRET}\nGITHUB_TOKEN={TOKEN}\n"}
    write_agent(root, files, config="\n[approval]\ntimeout = 1\n")
    async with FakeGithub(token=TOKEN) as fake:
        hub = Hub(fake, root, tmp_path / "results.log")
        async with ServerProcess.spawn(*start_args(root), env=hub.env) as server:
            port = await server.port()
            assert await hub.deliver(port, "issues", issue_opened(REPO, 11, "ship it", DAVE)) == 202
            request = await hub.request(11)
            await fake.wait_until(lambda: request.edits, what="the request comment closed")
            assert "it was answered outside GitHub" in request.body and "/deny <reason>" not in request.body
            await fake.wait_until(hub.results, what="the expiry reaching the model")
            assert hub.results() == ["Denied: the approval request expired"]
            await server.wait_for(r"\[github\] turn done: turn=\S+#0 session=issue-11 ")
            assert await hub.comment(port, 11, "/approve", MARIA) == 202
            assert "Nothing on this thread is waiting" in await hub.reply(11, "@maria")
