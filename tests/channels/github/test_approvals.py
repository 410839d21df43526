"""GitHub approval comments against the fake GitHub API and a scripted session hub: what a
command comes to when GitHub or the hub refuses a step (the permission lookup fails, the request
was answered elsewhere, the request comment cannot be edited, its id was never learnt)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.channels.github.api import GithubApi
from fastagent_cli.channels.github.approvals import GithubApprovals
from fastagent_cli.channels.github.parse import Command, Thread
from fastagent_cli.channels.kit.approvals import GONE, ApprovalAsks
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import (
    APPROVAL_CLOSED,
    ActionResult,
    PendingApproval,
    SessionState,
    accepted,
    rejected,
)
from fastagent_cli.state.channel_state import FileChannelState
from tests.fakes.fake_github import FakeGithub, comment_created, user

REPO = "octo/shop"
THREAD = Thread(REPO, 7)
TOKEN = "ghp_unit_approvals_0123"
EVENT = ApprovalRequested("ap_0123456789abcdef", "call-1", "deploy", {"env": "prod"}, None)


@dataclass
class Hub:
    """The part of the session hub approvals use: ``state().approvals`` and ``answer_approval``."""

    pending: list[str] = field(default_factory=lambda: [EVENT.id])
    result: ActionResult = field(default_factory=lambda: accepted("run-2"))
    answers: list[tuple[str, str, str, str | None]] = field(default_factory=list)

    @property
    def sessions(self) -> Hub:
        return self

    def get(self, session: str) -> Hub:
        return self

    async def state(self) -> SessionState:
        return SessionState(
            approvals=tuple(PendingApproval(i, "call-1", "deploy", {}, 0) for i in self.pending)
        )

    async def answer_approval(
        self, approval_id: str, decision: str, *, by: str, reason: str | None = None
    ) -> ActionResult:
        self.answers.append((approval_id, decision, by, reason))
        return self.result


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[tuple[FakeGithub, GithubApprovals, Hub]]:
    async with FakeGithub(token=TOKEN, roles={"maria": "write"}) as fake:
        asks = ApprovalAsks(FileChannelState(tmp_path / "github"), label="[github]")
        await asks.open()
        api = GithubApi(TOKEN, fake.base_url)
        hub = Hub()
        yield fake, GithubApprovals(api, hub, asks), hub  # type: ignore[arg-type]
        await api.aclose()
        await asks.aclose()


def payload(body: str, login: str = "maria") -> dict[str, Any]:
    return comment_created(REPO, 7, body, user(login, 13))


async def test_a_failed_permission_lookup_answers_nothing(setup: Any) -> None:
    fake, approvals, hub = setup
    await approvals.ask("issue-7", THREAD, "dave", EVENT)
    fake.fail("GET", "/permission", 502, "Server Error", times=4)
    await approvals.command(payload("/approve"), Command("approve"))
    assert hub.answers == [] and approvals.asks.get(EVENT.id) is not None
    assert fake.replies(REPO, 7)[-1].endswith("@maria your access could not be checked just now; try again.")


async def test_a_request_answered_elsewhere_is_gone(setup: Any) -> None:
    fake, approvals, hub = setup
    await approvals.ask("issue-7", THREAD, "dave", EVENT)
    hub.result = rejected(APPROVAL_CLOSED, "already answered")
    await approvals.command(payload("/deny no"), Command("deny", None, "no"))
    assert hub.answers == [(EVENT.id, "deny", "github:maria", "no")]
    assert fake.replies(REPO, 7)[-1].endswith(f"@maria {GONE}")
    assert approvals.asks.get(EVENT.id) is None and not fake.requests(REPO, 7)[0].edits


async def test_an_ask_no_session_holds_any_more_is_dropped(setup: Any) -> None:
    fake, approvals, hub = setup
    await approvals.ask("issue-7", THREAD, "dave", EVENT)
    hub.pending = []  # expired, or answered on the control plane
    await approvals.command(payload("/approve"), Command("approve"))
    assert fake.replies(REPO, 7)[-1].endswith("Nothing on this thread is waiting for an approval.")
    assert approvals.asks.get(EVENT.id) is None and hub.answers == [] and fake.lookups == []


async def test_an_uneditable_request_comment_is_logged_and_the_answer_stands(setup: Any, caplog: Any) -> None:
    fake, approvals, hub = setup
    await approvals.ask("issue-7", THREAD, "dave", EVENT)
    fake.fail("PATCH", "/issues/comments/", 404, "Not Found")
    with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
        await approvals.command(payload("/approve"), Command("approve"))
    assert hub.answers == [(EVENT.id, "approve", "github:maria", None)]
    assert f"approval {EVENT.id} answered; could not edit its comment" in caplog.text
    assert "404 Not Found" in caplog.text


async def test_a_request_whose_comment_id_was_lost_gets_the_verdict_as_a_reply(setup: Any) -> None:
    fake, approvals, hub = setup
    fake.fail("POST", "/issues/7/comments", 502, "Server Error")  # the post is not repeated
    await approvals.ask("issue-7", THREAD, "dave", EVENT)
    assert fake.comments == [] and approvals.asks.get(EVENT.id) is not None  # kept: still answerable
    await approvals.command(payload("/approve"), Command("approve"))
    assert fake.replies(REPO, 7) == [
        f"<!-- fastagent:approval -->\n✅ **Approved** by @maria (request `{EVENT.id}`)"
    ]
