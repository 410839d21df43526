"""The reconnect policy of ``attach``: budgets of 30 s local, 120 s remote, 15 s at start-up; a
restarted local serve is reattached at once; a refused token ends it."""

from __future__ import annotations

from fastagent_cli.chat.attach.link import (
    LOCAL_BUDGET_S,
    REMOTE_BUDGET_S,
    STARTUP_BUDGET_S,
    Endpoint,
    decide,
)
from fastagent_cli.control import SessionEventsClosed
from fastagent_cli.errors import ControlRequestError

DOWN = ControlRequestError("GET /control/capabilities: cannot reach http://127.0.0.1:1 (refused)")
REFUSED = ControlRequestError("GET /control/capabilities: 401 unauthorized", status=401)
DROPPED = SessionEventsClosed("disconnected", "the event stream's connection failed")
FRESH = Endpoint("http://127.0.0.1:2", "new")


def test_the_budgets() -> None:
    assert (LOCAL_BUDGET_S, REMOTE_BUDGET_S, STARTUP_BUDGET_S) == (30, 120, 15)
    local = {"local": True, "discovery": "unavailable", "fresh": None, "startup": False}
    assert decide(DROPPED, down_s=29.0, **local).kind == "retry"
    gone = decide(DROPPED, down_s=30.0, **local)
    assert gone.kind == "exit" and "unreachable for ~30 s" in gone.message
    remote = {"local": False, "discovery": "unavailable", "fresh": None, "startup": False}
    assert decide(DROPPED, down_s=119.0, **remote).kind == "retry"
    assert decide(DROPPED, down_s=120.0, **remote).kind == "exit"
    startup = {"local": True, "discovery": "unavailable", "fresh": None, "startup": True}
    assert decide(DOWN, down_s=14.0, **startup).kind == "retry"
    waited = decide(DOWN, down_s=15.0, **startup)
    assert waited.kind == "exit" and waited.message.endswith("(waited 15 s)")


def test_a_restarted_local_serve_is_reattached_before_any_verdict() -> None:
    for error in (DOWN, REFUSED, DROPPED):
        decision = decide(error, local=True, discovery="changed", fresh=FRESH, down_s=100.0, startup=False)
        assert decision.kind == "reattach" and decision.fresh == FRESH


def test_a_refused_token_ends_it() -> None:
    stale = decide(REFUSED, local=True, discovery="unchanged", fresh=None, down_s=0.0, startup=False)
    assert stale.kind == "exit" and "belongs to another" in stale.message
    # the file is gone (the serve restarting): the budget decides
    assert decide(
        REFUSED, local=True, discovery="unavailable", fresh=None, down_s=1.0, startup=False
    ).kind == ("retry")
    remote = decide(REFUSED, local=False, discovery="unavailable", fresh=None, down_s=0.0, startup=False)
    assert remote.kind == "exit" and "check --token" in remote.message


def test_a_remote_endpoint_that_never_worked_fails_at_once() -> None:
    decision = decide(DOWN, local=False, discovery="unavailable", fresh=None, down_s=0.0, startup=True)
    assert decision.kind == "exit" and decision.message == str(DOWN)
