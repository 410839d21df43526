"""Send a message to a Lark (open.larksuite.com) chat through the bot (written by `fastagent add lark`).

For turns no channel delivers (a schedule, a wake-up); in a chat turn the channel already sends the
answer. Needs LARK_APP_ID and LARK_APP_SECRET in .env.
"""

from __future__ import annotations

from fastagent_cli import tool


@tool
async def lark_send(chat_id: str, text: str, markdown: bool = False) -> str:
    """Send plain text, or with markdown=True one Markdown card, to a lark chat by its chat id.

    Use it for a turn no channel is carrying (a scheduled or self-scheduled turn: name the chat id in
    its prompt). Do not use it to answer the current turn: the channel already delivers your answer,
    so calling it too would post it twice. In a chat turn the chat id is on the [lark: chat ...] line.

    Args:
        chat_id: The target chat id (oc_...).
        text: The message.
        markdown: Send a Markdown card instead of plain text.
    """
    from fastagent_cli.channels import lark_send as send

    return await send(chat_id, text, markdown=markdown)
