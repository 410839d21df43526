"""A Feishu (open.feishu.cn) bot for this agent over the WebSocket long connection (written by
`fastagent add feishu --ingress websocket`).

No public URL: fastagent connects out with FEISHU_APP_ID and FEISHU_APP_SECRET from .env (the console's
Events & Callbacks must use the long connection). Keep one process running (no scale-to-zero).
Direct messages are always answered; in groups an @mention, and bare replies in the threads the bot
answers while one person talks to it. Group behavior chosen at setup: {group_behavior}.

Options: route=(event -> FeishuRoute | None), direct_message_session / group_message_session
("threaded" or "continuous"), and on_error below.
"""

from __future__ import annotations

from fastagent_cli.channels import feishu_websocket_channel

channel = feishu_websocket_channel(
    # A development bot shows the real error; for a public bot delete this line.
    on_error=lambda failed: f"⚠️ {failed.details}",
)
