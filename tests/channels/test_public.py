"""What channel files import is pinned: ``fastagent_cli.channels.__all__`` changes only on purpose,
every name resolves, and importing the package itself loads no HTTP stack."""

from __future__ import annotations

import subprocess
import sys

import fastagent_cli.channels as channels

PUBLIC = [
    "ChannelFailure",
    "FeishuRoute",
    "GithubEvent",
    "Intent",
    "SlackRoute",
    "TelegramRoute",
    "default_error_message",
    "default_feishu_route",
    "default_slack_route",
    "default_telegram_route",
    "feishu_channel",
    "feishu_envelope",
    "feishu_send",
    "feishu_websocket_channel",
    "github_channel",
    "lark_channel",
    "lark_send",
    "lark_websocket_channel",
    "slack_channel",
    "slack_envelope",
    "slack_send",
    "telegram_channel",
    "telegram_envelope",
    "telegram_send",
]


def test_the_channel_api_is_pinned_and_resolves() -> None:
    assert channels.__all__ == PUBLIC
    for name in PUBLIC:
        assert getattr(channels, name) is not None
    assert callable(channels.github_channel) and callable(channels.telegram_channel)


def test_importing_the_package_is_cheap() -> None:
    code = "import sys, fastagent_cli.channels; print([m for m in ('aiohttp', 'httpx') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
