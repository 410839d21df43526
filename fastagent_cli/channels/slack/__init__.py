"""The Slack channel: :func:`slack_channel` for ``channels/slack.py``, the pieces a custom
``route`` reuses, and :func:`slack_send` for the scaffolded send tool."""

from fastagent_cli.channels.slack.api import SlackApi, SlackApiError, SlackTarget
from fastagent_cli.channels.slack.channel import SlackChannel, slack_channel
from fastagent_cli.channels.slack.parse import SlackRoute, default_slack_route, slack_envelope
from fastagent_cli.channels.slack.send import slack_send
from fastagent_cli.channels.slack.verify import sign_slack_request, verify_slack_signature

__all__ = [
    "SlackApi",
    "SlackApiError",
    "SlackChannel",
    "SlackRoute",
    "SlackTarget",
    "default_slack_route",
    "sign_slack_request",
    "slack_channel",
    "slack_envelope",
    "slack_send",
    "verify_slack_signature",
]
