"""Tool approvals on GitHub: a comment asks, a ``/approve`` or ``/deny <reason>`` comment answers.

When a turn started by a delivery about an issue or a pull request reaches a tool call that waits
for approval (the contract's ``approval_requested``), the channel comments there: the tool, its
arguments, the request id, its expiry and how to answer. The ask is kept in the channel's
``approvals`` state before the comment is posted
(:class:`~fastagent_cli.channels.kit.approvals.ApprovalAsks`), so an answer after ``start``
restarted still finds its session.

An ``issue_comment`` ``created`` delivery holding a command (:func:`~.parse.parse_command`) is
answered here, never by ``on(event)``: the commenter must have write access to the repository
(``GET /repos/{repo}/collaborators/{login}/permission``: ``admin``, ``maintain`` or ``write``) or be
on ``[approval] allow_from`` (a login or a numeric user id). Anyone else gets a reply saying so and
nothing changes. The answer goes through the session hub (``by="github:<login>"``, audited as the
other surfaces' are) and the request comment is edited to say who decided what (and why). With
nothing waiting on that issue, or several and no id named, the reply says so. A request answered
elsewhere or expired (its call ended, no comment answered it) has its comment edited to say so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fastagent_cli.channels.github.api import WRITE_ROLES, GithubApi
from fastagent_cli.channels.github.parse import MARKER, Command, Thread, thread_of
from fastagent_cli.channels.kit.approvals import GONE, ApprovalAsks, Ask, answer_press, new_ask
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import SessionControl
from fastagent_cli.errors import ChannelApiError

__all__ = ["ANSWERED_ELSEWHERE", "NOTHING_WAITING", "GithubApprovals", "request_summary"]

log = logging.getLogger("fastagent.channel")

NOTHING_WAITING = "Nothing on this thread is waiting for an approval."
ANSWERED_ELSEWHERE = (
    "_This request waits no more: it was answered outside GitHub (the control plane, the web chat) "
    "or it expired._"
)
_ARGS_MAX = 3000


def request_summary(event: ApprovalRequested) -> str:
    """The request comment without its how-to-answer part (what the edit keeps)."""
    args = json.dumps(event.args, ensure_ascii=False, indent=2)
    if len(args) > _ARGS_MAX:
        args = args[: _ARGS_MAX - 1] + "…"
    fence = "```"
    while fence in args:
        fence += "`"
    if event.expires_at is None:
        expiry = "it does not expire"
    else:
        when = datetime.fromtimestamp(event.expires_at / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
        expiry = f"it expires {when} (then the call is denied)"
    return (
        f"{MARKER}\n🔐 **Approval needed**: the agent wants to run `{event.tool}` with\n\n"
        f"{fence}json\n{args}\n{fence}\n\nRequest `{event.id}`; {expiry}."
    )


def _how_to_answer(event: ApprovalRequested) -> str:
    who = "people with write access to this repository"
    if event.answerers:
        who += " (or on the agent's approval list)"
    return (
        f"Reply `/approve` to let it run, or `/deny <reason>` to refuse it (the agent reads the "
        f"reason). With several requests waiting, name this one: `/approve {event.id}` or "
        f"`/deny {event.id} <reason>`. Only {who} can answer."
    )


class GithubApprovals:
    """The approval comments of one mounted channel (its open asks: :attr:`asks`)."""

    def __init__(self, api: GithubApi, control: SessionControl | None, asks: ApprovalAsks) -> None:
        self.api = api
        self.control = control
        self.asks = asks
        self._deciding: set[str] = set()
        """Requests a comment is answering now (their turn's call ends before the edit)."""

    async def ask(self, session: str, thread: Thread, sender: str | None, event: ApprovalRequested) -> None:
        """Keep the request, then comment it on ``thread`` (a failed post is logged: answer it on
        the control plane or the web chat)."""
        summary = request_summary(event)
        ask = new_ask(session, None, event, repo=thread.repo, number=thread.number, sender=sender)
        ask["summary"] = summary
        await self.asks.add(event.id, ask)
        where = f"{thread.repo}#{thread.number}"
        try:
            posted = await self.api.create_comment(
                thread.repo, thread.number, f"{summary}\n\n{_how_to_answer(event)}"
            )
        except ChannelApiError as exc:
            log.warning(
                "[github] could not post approval %s on %s (answer it elsewhere): %s", event.id, where, exc
            )
            return
        comment = posted.get("id")
        if isinstance(comment, int) and not isinstance(comment, bool):
            await self.asks.add(event.id, {**ask, "comment": comment})
        log.info("[github] approval %s asked on %s (comment %s)", event.id, where, comment)

    async def command(self, payload: Mapping[str, Any], command: Command) -> None:
        """Answer a ``/approve`` or ``/deny`` comment (see the module doc); never raises for the
        platform's refusals (they are logged)."""
        thread = thread_of(payload)
        user = (payload.get("comment") or {}).get("user") or {}
        login = user.get("login") if isinstance(user, Mapping) else None
        if thread is None or not isinstance(login, str) or not login:
            return
        try:
            await self._command(thread, login, str(user.get("id", "")), command)
        except ChannelApiError as exc:
            log.warning(
                "[github] could not answer %s's /%s on %s#%d: %s",
                login,
                command.decision,
                thread.repo,
                thread.number,
                exc,
            )

    async def _command(self, thread: Thread, login: str, user_id: str, command: Command) -> None:
        waiting = await self._waiting(thread)
        if command.approval_id is not None:
            if command.approval_id not in waiting:
                await self._reply(thread, f"@{login} request `{command.approval_id}` is not waiting here.")
                return
            approval_id = command.approval_id
        elif not waiting:
            await self._reply(thread, f"@{login} {NOTHING_WAITING}")
            return
        elif len(waiting) > 1:
            named = ", ".join(f"`/{command.decision} {key}`" for key in waiting)
            await self._reply(thread, f"@{login} several requests wait here; name one: {named}.")
            return
        else:
            approval_id = next(iter(waiting))
        ask = waiting[approval_id]
        try:
            allowed = await self._may_answer(thread, ask, login, user_id)
        except ChannelApiError as exc:
            log.warning("[github] could not look up %s's permission on %s: %s", login, thread.repo, exc)
            await self._reply(thread, f"@{login} your access could not be checked just now; try again.")
            return
        if not allowed:
            log.info("[github] %s may not answer approval %s on %s: refused", login, approval_id, thread.repo)
            await self._reply(
                thread,
                f"@{login} you may not answer approval requests here: that needs write access to "
                f"{thread.repo} (or a place on the agent's approval list). Nothing changed.",
            )
            return
        self._deciding.add(approval_id)
        try:
            press, _ = await answer_press(
                self.asks,
                self.control,
                approval_id,
                login,
                command.decision,
                by=f"github:{login}",
                reason=command.reason,
                vouched=True,
            )
        finally:
            self._deciding.discard(approval_id)
        if press == "gone":
            await self._reply(thread, f"@{login} {GONE}")
        elif press == "failed":
            await self._reply(thread, f"@{login} the answer could not be recorded just now; try again.")
        else:
            verdict = (
                f"✅ **Approved** by @{login}"
                if command.decision == "approve"
                else f"❌ **Denied** by @{login}"
            )
            if command.reason:
                verdict += f": {command.reason}"
            await self._close(thread, approval_id, ask, verdict)

    async def settled(self, approval_id: str) -> None:
        """The turn's call of ``approval_id`` ended; when no comment answered it (the control
        plane, the web chat, the expiry), the request comment says it waits no more."""
        ask = self.asks.get(approval_id)
        if ask is None or approval_id in self._deciding:
            return
        self.asks.discard(approval_id)
        thread = Thread(str(ask.get("repo")), int(ask.get("number") or 0))
        await self._close(thread, approval_id, ask, ANSWERED_ELSEWHERE, reply_if_unknown=False)

    async def _close(
        self, thread: Thread, approval_id: str, ask: Ask, verdict: str, *, reply_if_unknown: bool = True
    ) -> None:
        """Edit the request comment to say who decided (the decision is recorded already)."""
        comment = ask.get("comment")
        if not isinstance(comment, int):  # the post's answer was lost (a crash right after it)
            if reply_if_unknown:
                await self._reply(thread, f"{verdict} (request `{approval_id}`)")
            return
        try:
            await self.api.edit_comment(thread.repo, comment, f"{ask.get('summary', MARKER)}\n\n{verdict}")
        except ChannelApiError as exc:
            log.warning(
                "[github] approval %s answered; could not edit its comment %d: %s", approval_id, comment, exc
            )

    async def _waiting(self, thread: Thread) -> dict[str, Ask]:
        """The asks of ``thread`` still waiting in their sessions (the others are dropped)."""
        mine = {
            k: a
            for k, a in self.asks.state.items()
            if a.get("repo") == thread.repo and a.get("number") == thread.number
        }
        if self.control is None:
            return {}
        live: set[str] = set()
        for session in {a["session"] for a in mine.values()}:
            state = await self.control.sessions.get(session).state()
            live.update(request.id for request in state.approvals)
        for key in set(mine) - live:
            self.asks.discard(key)
        return dict(sorted(((k, a) for k, a in mine.items() if k in live), key=lambda item: item[1]["at"]))

    async def _may_answer(self, thread: Thread, ask: Ask, login: str, user_id: str) -> bool:
        listed = {str(who).lower() for who in ask.get("answerers", ())}
        if login.lower() in listed or (user_id and user_id in listed):
            return True
        return await self.api.role(thread.repo, login) in WRITE_ROLES

    async def _reply(self, thread: Thread, text: str) -> None:
        await self.api.create_comment(thread.repo, thread.number, f"{MARKER}\n{text}")
