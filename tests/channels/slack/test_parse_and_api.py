"""Slack's pure pieces: which events act, mentions, Markdown chunks with balanced fences, and the
neutralised notification controls."""

from __future__ import annotations

from fastagent_cli.channels.slack.manifest import bot_events, bot_scopes
from fastagent_cli.channels.slack.markdown import chunk_markdown, sanitize_markdown
from fastagent_cli.channels.slack.parse import (
    default_slack_route,
    has_mention,
    is_human_message,
    mentions_user,
    slack_envelope,
    strip_mentions,
)


def test_which_events_act() -> None:
    base = {"type": "message", "channel": "C1", "user": "U1", "ts": "1.1", "text": "hi"}
    assert is_human_message(base)
    assert is_human_message({**base, "subtype": "file_share"}) and is_human_message(
        {**base, "subtype": "thread_broadcast"}
    )
    for changed in (
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"bot_id": "B1"},
        {"hidden": True},
    ):
        assert not is_human_message({**base, **changed})
    assert default_slack_route({"event": {**base, "channel_type": "im"}}) is not None
    assert default_slack_route({"event": {**base, "channel_type": "channel"}}) is None
    assert default_slack_route({"event": {**base, "type": "app_mention"}}) is not None


def test_mentions_and_the_envelope() -> None:
    assert mentions_user("<@UBOT|bot> stop", "UBOT") and not mentions_user("<@UBOTX> hi", "UBOT")
    assert (
        has_mention("ping <!here>")
        and has_mention("<!subteam^S1|@team> look")
        and not has_mention("a < b > c")
    )
    assert strip_mentions("<@UBOT|bot> stop").strip() == "stop"
    envelope = {
        "team_id": "T1",
        "event": {
            "type": "message",
            "channel": "C1",
            "channel_type": "channel",
            "user": "U1",
            "ts": "5.5",
            "text": "hey",
            "files": [{"id": "F1"}],
        },
    }
    assert slack_envelope(envelope) == (
        "[slack: team T1, channel C1 (group), msg 5.5, from user U1]\n"
        "[group chat — multiple people; recent discussion is sender-prefixed]\nhey\n[1 attached file]"
    )


def test_markdown_chunks_keep_fences_balanced_and_controls_are_neutralised() -> None:
    body = "intro\n\n```python\n" + "\n".join(f"line_{n} = {n}" for n in range(2000)) + "\n```\nafter"
    parts = chunk_markdown(body, 1000)
    assert len(parts) > 1 and all(len(p) <= 1000 for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert sanitize_markdown("hi <!channel> and <@U1|x>") == "hi &lt;!channel> and &lt;@U1|x>"


def test_scopes_and_events_by_mode() -> None:
    assert "channels:history" not in bot_scopes("mentions") and "channels:history" in bot_scopes("context")
    assert "message.channels" in bot_events("context") and "message.im" in bot_events("mentions")
