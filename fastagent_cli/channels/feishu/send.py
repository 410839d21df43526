"""``feishu_send`` / ``lark_send``: what the scaffolded send tools call (features K16, O20).

Plain text (split at 100 KB) or, with ``markdown=True``, one Markdown card, to a ``chat_id``; for
turns no channel carries (schedules, wakes). Uses the channel's Open API client (token, retries).
"""

from __future__ import annotations

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuTarget
from fastagent_cli.channels.feishu.card import CARD_MARKDOWN_MAX_BYTES, final_card
from fastagent_cli.channels.feishu.cloud import FEISHU, LARK, Cloud
from fastagent_cli.channels.kit import send as kit_send

__all__ = ["feishu_send", "lark_send"]


async def _send(cloud: Cloud, chat_id: str, text: str, markdown: bool, api_base_url: str | None) -> str:
    app_id, secret = cloud.env("APP_ID"), cloud.env("APP_SECRET")
    if not app_id or not secret:
        raise ValueError(f"{cloud.env_prefix}_APP_ID and {cloud.env_prefix}_APP_SECRET are not set (in .env)")
    kit_send.check_text(text)
    api = FeishuApi(cloud.kind, cloud.resolve_api_base(api_base_url), app_id, secret)
    async with kit_send.sending(api):
        if markdown:
            if len(text.encode("utf-8")) > CARD_MARKDOWN_MAX_BYTES:
                raise ValueError("a Markdown card holds at most 20 KB; send plain text for longer messages")
            await api.send(chat_id, "interactive", final_card(text))
            return f"sent a Markdown card to chat {chat_id}"
        await api.send_text(FeishuTarget(chat_id), text)
        return f"sent a message to chat {chat_id}"


async def feishu_send(
    chat_id: str, text: str, *, markdown: bool = False, api_base_url: str | None = None
) -> str:
    return await _send(FEISHU, chat_id, text, markdown, api_base_url)


async def lark_send(
    chat_id: str, text: str, *, markdown: bool = False, api_base_url: str | None = None
) -> str:
    return await _send(LARK, chat_id, text, markdown, api_base_url)
