"""Slack's v0 request signature against Slack's documented example, the replay window, and tampering."""

from __future__ import annotations

from fastagent_cli.channels.slack.verify import sign_slack_request, verify_slack_signature

# "Verifying requests from Slack" (api.slack.com/authentication/verifying-requests-from-slack).
DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOC_TIMESTAMP = "1531420618"
DOC_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&"
    b"channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&"
    b"response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
    b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
DOC_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def test_the_documented_example_verifies() -> None:
    assert sign_slack_request(DOC_SECRET, DOC_TIMESTAMP, DOC_BODY) == DOC_SIGNATURE
    assert verify_slack_signature(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, now=1531420618 + 60)


def test_stale_tampered_and_malformed_requests_fail() -> None:
    now = 1531420618
    assert not verify_slack_signature(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, now=now + 301)
    assert not verify_slack_signature(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, now=now - 301)
    assert verify_slack_signature(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, now=now + 300)
    assert not verify_slack_signature(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY + b" ", now=now)
    assert not verify_slack_signature("another-secret", DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, now=now)
    assert not verify_slack_signature(DOC_SECRET, None, DOC_SIGNATURE, DOC_BODY, now=now)
    assert not verify_slack_signature(DOC_SECRET, DOC_TIMESTAMP, "v1=" + DOC_SIGNATURE[3:], DOC_BODY, now=now)
    assert not verify_slack_signature(DOC_SECRET, "15314x0618", DOC_SIGNATURE, DOC_BODY, now=now)
