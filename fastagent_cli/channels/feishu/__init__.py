"""The Feishu and Lark channels: webhook and WebSocket factories, the pieces a custom ``route``
reuses, and the send tools' functions."""

from fastagent_cli.channels.feishu.channel import (
    FeishuChannel,
    FeishuWebSocketChannel,
    feishu_channel,
    feishu_websocket_channel,
    lark_channel,
    lark_websocket_channel,
)
from fastagent_cli.channels.feishu.parse import FeishuRoute, default_feishu_route, feishu_envelope
from fastagent_cli.channels.feishu.send import feishu_send, lark_send

__all__ = [
    "FeishuChannel",
    "FeishuRoute",
    "FeishuWebSocketChannel",
    "default_feishu_route",
    "feishu_channel",
    "feishu_envelope",
    "feishu_send",
    "feishu_websocket_channel",
    "lark_channel",
    "lark_send",
    "lark_websocket_channel",
]
