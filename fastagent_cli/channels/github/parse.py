"""Pure reading of GitHub deliveries: their signature, the event, the intents, the issue a delivery
is about, and the ``/approve`` / ``/deny`` commands of a comment.

A command is the comment's first non-empty line starting with ``/approve`` or ``/deny`` (any
case), then optionally an approval id (``ap_...``), then for ``/deny`` the reason, the rest of the
comment (lines after the first included)::

    /approve                    the one request waiting on this issue
    /approve ap_0123456789abcdef
    /deny not on a Friday       the reason is the tool result the model reads
    /deny ap_0123456789abcdef not on a Friday

Text after ``/approve`` (and its id) is a note, not a reason: it changes nothing. ``/approved``,
``/deny-all`` or a command quoted (``> /approve``) further down are not commands.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastagent_cli.control import Decision

__all__ = [
    "KIND",
    "MARKER",
    "MAX_REASON",
    "MAX_WEBHOOK_BYTES",
    "Command",
    "GithubEvent",
    "Intent",
    "On",
    "ROUTE",
    "Thread",
    "is_own_comment",
    "parse_command",
    "sign_payload",
    "thread_of",
]

KIND = "github"
ROUTE = "/webhook"
"""The webhook's one route (the Payload URL's path)."""
MARKER = "<!-- fastagent:approval -->"
"""The first line of every comment the channel posts: a delivery of one is its own, ignored."""
MAX_REASON = 2000
MAX_WEBHOOK_BYTES = 25 << 20
_COMMAND = re.compile(r"/(approve|deny)(?![\w-])(.*)", re.IGNORECASE | re.DOTALL)
_ID = re.compile(r"ap_[A-Za-z0-9]+")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/(?!\.\.?$)[A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class GithubEvent:
    """A verified delivery."""

    event: str
    """``X-GitHub-Event`` (``pull_request``, ``issue_comment``...)."""
    action: str | None
    """``payload["action"]`` when there is one (``opened``...)."""
    delivery_id: str
    """``X-GitHub-Delivery``: unique per delivery (a redelivery keeps it)."""
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Intent:
    """One turn to run: a session and the prompt text."""

    session: str
    text: str


On = Callable[[GithubEvent], Any]
"""``on(event) -> [Intent, ...]`` (or an awaitable of it; an intent may also be a mapping)."""


@dataclass(frozen=True, slots=True)
class Thread:
    """An issue or pull request: where a turn's approval requests are posted as comments."""

    repo: str
    """``owner/name`` (``repository.full_name``)."""
    number: int


@dataclass(frozen=True, slots=True)
class Command:
    """A ``/approve`` or ``/deny`` comment."""

    decision: Decision
    approval_id: str | None = None
    reason: str | None = None


def sign_payload(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def parse_command(body: object) -> Command | None:
    """The command ``body`` holds (see the module doc), or ``None``: not a command."""
    if not isinstance(body, str):
        return None
    text = body.strip()
    match = _COMMAND.fullmatch(text)
    if match is None:
        return None
    decision: Decision = "approve" if match.group(1).lower() == "approve" else "deny"
    rest = match.group(2)
    if rest and not rest[0].isspace():
        return None
    rest = rest.strip()
    approval_id = None
    head = rest.split(maxsplit=1)
    if head and _ID.fullmatch(head[0]):
        approval_id = head[0]
        rest = head[1].strip() if len(head) > 1 else ""
    if decision == "approve":
        return Command(decision, approval_id)
    reason = rest[:MAX_REASON] or None
    return Command(decision, approval_id, reason)


def thread_of(payload: Mapping[str, Any]) -> Thread | None:
    """The issue or pull request a delivery's payload is about (``repository.full_name`` and
    ``issue``/``pull_request``'s ``number``), or ``None``: a push, a release, a star..."""
    repository = payload.get("repository")
    repo = repository.get("full_name") if isinstance(repository, Mapping) else None
    if not isinstance(repo, str) or _REPO.fullmatch(repo) is None:
        return None
    for key in ("issue", "pull_request"):
        item = payload.get(key)
        number = item.get("number") if isinstance(item, Mapping) else None
        if isinstance(number, int) and not isinstance(number, bool) and number > 0:
            return Thread(repo, number)
    return None


def is_own_comment(payload: Mapping[str, Any]) -> bool:
    """Is the delivery's comment one the channel posted (its body starts with :data:`MARKER`)?"""
    comment = payload.get("comment")
    body = comment.get("body") if isinstance(comment, Mapping) else None
    return isinstance(body, str) and body.lstrip().startswith(MARKER)
