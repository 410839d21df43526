"""A Feishu (open.feishu.cn) bot for this agent over a webhook
(written by `fastagent add feishu --ingress webhook`).

fastagent mounts POST /feishu for this file. It reads FEISHU_APP_ID, FEISHU_APP_SECRET and
FEISHU_VERIFICATION_TOKEN (and FEISHU_ENCRYPT_KEY when the console sets an Encrypt Key) from .env.
`fastagent dev --tunnel` registers the Request URL. Direct messages are always answered; in groups an
@mention, and bare replies in the threads the bot answers while one person talks to it.
Group behavior chosen at setup: {group_behavior}.

Options: route=(event -> FeishuRoute | None), direct_message_session / group_message_session
("threaded" or "continuous"), and on_error below.
"""

from __future__ import annotations

from fastagent_cli.channels import feishu_channel

channel = feishu_channel(
    # A development bot shows the real error; for a public bot delete this line.
    on_error=lambda failed: f"⚠️ {failed.details}",
)
