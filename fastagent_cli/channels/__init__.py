"""First-party chat channels and the kit they stand on, importable by ``channels/*.py`` files.

::

    # channels/telegram.py
    from fastagent_cli.channels import telegram_channel

    channel = telegram_channel()

    # channels/github.py
    from fastagent_cli.channels import Intent, github_channel

    channel = github_channel(on=lambda event: [Intent(event.delivery_id, "Review it.")])

Channels speak only the Agent contract. Their state lives under ``<state root>/channels/<kind>/``
behind :class:`~fastagent_cli.state.channel_state.ChannelStateStore`. The shared mechanics are in
:mod:`fastagent_cli.channels.kit`. Names load on first use, so importing this package is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastagent_cli.channels.feishu import (
        FeishuRoute,
        default_feishu_route,
        feishu_channel,
        feishu_envelope,
        feishu_send,
        feishu_websocket_channel,
        lark_channel,
        lark_send,
        lark_websocket_channel,
    )
    from fastagent_cli.channels.github import GithubEvent, Intent, github_channel
    from fastagent_cli.channels.kit.invoke import ChannelFailure, default_error_message
    from fastagent_cli.channels.slack import (
        SlackRoute,
        default_slack_route,
        slack_channel,
        slack_envelope,
        slack_send,
    )
    from fastagent_cli.channels.telegram import (
        TelegramRoute,
        default_telegram_route,
        telegram_channel,
        telegram_envelope,
        telegram_send,
    )

__all__ = [
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

_HOME = {
    "ChannelFailure": "kit.invoke",
    "default_error_message": "kit.invoke",
    "GithubEvent": "github",
    "Intent": "github",
    "github_channel": "github",
    **dict.fromkeys(
        ("SlackRoute", "default_slack_route", "slack_channel", "slack_envelope", "slack_send"), "slack"
    ),
    **dict.fromkeys(
        (
            "FeishuRoute",
            "default_feishu_route",
            "feishu_channel",
            "feishu_envelope",
            "feishu_send",
            "feishu_websocket_channel",
            "lark_channel",
            "lark_send",
            "lark_websocket_channel",
        ),
        "feishu",
    ),
}


def __getattr__(name: str) -> Any:
    if name in __all__:
        module = importlib.import_module(f"fastagent_cli.channels.{_HOME.get(name, 'telegram')}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastagent_cli.channels' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
