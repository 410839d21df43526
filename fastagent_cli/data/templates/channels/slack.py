"""A Slack app for this agent (written by `fastagent add slack`).

fastagent mounts POST /slack (Slack's HTTP Events API) for this file. It reads SLACK_BOT_TOKEN and
SLACK_SIGNING_SECRET from .env, and with token rotation SLACK_BOT_REFRESH_TOKEN, SLACK_CLIENT_ID,
SLACK_CLIENT_SECRET and SLACK_BOT_TOKEN_EXPIRES_AT (`fastagent add slack` writes them all).
DMs and @mentions are answered in a thread on the ask; that thread is the session.
`fastagent dev --tunnel` points an onboarded app's Request URL at the tunnel.

Options: group_behavior ("context": bare replies in threads the agent takes part in, and the
channel's discussion as context; "mentions": DMs and @mentions only), rendering ("native" Agent
streams, or "classic" edited messages), ai_disclaimer="...", welcome="..." or False,
reaction_ack=False, route=(envelope -> SlackRoute | None), and on_error below.
"""

from __future__ import annotations

from fastagent_cli.channels import slack_channel

channel = slack_channel(
    group_behavior="{group_behavior}",
    # A development app shows the real error; for a shared workspace delete this line: users then
    # read a neutral message and the details stay in the server log.
    on_error=lambda failed: f"⚠️ {failed.details}",
)
