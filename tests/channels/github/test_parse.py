"""The ``/approve`` / ``/deny`` commands of a comment, the issue a delivery is about, and the
channel's own comments."""

from __future__ import annotations

import pytest

from fastagent_cli.channels.github.parse import (
    MARKER,
    MAX_REASON,
    Command,
    Thread,
    is_own_comment,
    parse_command,
    thread_of,
)

ID = "ap_0123456789abcdef"


@pytest.mark.parametrize(
    ("body", "command"),
    [
        ("/approve", Command("approve")),
        ("  /APPROVE  \n", Command("approve")),
        (f"/approve {ID}", Command("approve", ID)),
        (f"/approve {ID} looks fine", Command("approve", ID)),
        ("/approve looks fine", Command("approve")),  # a note, never a reason
        ("/deny", Command("deny")),
        ("/deny not on a Friday", Command("deny", None, "not on a Friday")),
        (f"/deny {ID} not on a Friday", Command("deny", ID, "not on a Friday")),
        (f"/deny {ID}", Command("deny", ID)),
        ("/deny\nthe staging run failed\nsee #12", Command("deny", None, "the staging run failed\nsee #12")),
        (f"/Deny\t{ID}\tno", Command("deny", ID, "no")),
    ],
)
def test_commands(body: str, command: Command) -> None:
    assert parse_command(body) == command


@pytest.mark.parametrize(
    "body",
    [
        "",
        "approve",
        "/approved",
        "/approve-all",
        "/deny_it",
        "/denyall reason",
        "please /approve",
        "> /approve\nquoted, not mine",
        "LGTM\n/approve",
        None,
        42,
    ],
)
def test_not_commands(body: object) -> None:
    assert parse_command(body) is None


def test_a_reason_is_capped() -> None:
    command = parse_command("/deny " + "x" * (MAX_REASON + 50))
    assert command is not None and command.reason == "x" * MAX_REASON


def test_the_thread_of_an_issue_a_pull_request_and_a_comment() -> None:
    repository = {"full_name": "octo/shop"}
    assert thread_of({"repository": repository, "issue": {"number": 7}}) == Thread("octo/shop", 7)
    assert thread_of({"repository": repository, "pull_request": {"number": 8}}) == Thread("octo/shop", 8)
    comment = {"repository": repository, "issue": {"number": 9, "pull_request": {}}, "comment": {"id": 1}}
    assert thread_of(comment) == Thread("octo/shop", 9)


@pytest.mark.parametrize(
    "payload",
    [
        {"ref": "refs/heads/main", "repository": {"full_name": "octo/shop"}},  # a push
        {"repository": {"full_name": "octo/shop"}, "issue": {"number": True}},
        {"repository": {"full_name": "octo/shop"}, "issue": {"number": 0}},
        {"repository": {"full_name": "octo/shop"}, "issue": {"number": "7"}},
        {"repository": {"full_name": "../etc/passwd"}, "issue": {"number": 7}},
        {"repository": {"full_name": "octo/.."}, "issue": {"number": 7}},
        {"repository": {"full_name": "../shop"}, "issue": {"number": 7}},
        {"repository": "octo/shop", "issue": {"number": 7}},
        {"issue": {"number": 7}},
    ],
)
def test_no_thread(payload: dict[str, object]) -> None:
    assert thread_of(payload) is None


def test_own_comments_carry_the_marker() -> None:
    assert is_own_comment({"comment": {"body": f"{MARKER}\n🔐 **Approval needed**"}})
    assert not is_own_comment({"comment": {"body": f"/approve {MARKER}"}})
    assert not is_own_comment({"comment": {"body": None}})
    assert not is_own_comment({})
