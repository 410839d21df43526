"""Send a message or a file to a Slack channel through the app (written by `fastagent add slack`).

For turns no channel delivers (a schedule, a wake-up) and for files; in a chat turn the channel
already sends the answer. Needs SLACK_BOT_TOKEN in .env.
"""

from __future__ import annotations

from fastagent_cli import tool


@tool
async def slack_send(
    channel: str, text: str | None = None, path: str | None = None, thread_ts: str | None = None
) -> str:
    """Send to a Slack channel or DM: a standard-Markdown message (at most 10 000 characters) or one
    local file. Exactly one of text / path.

    Use it for a turn no channel is carrying (a scheduled or self-scheduled turn: name the channel id
    in its prompt) or for a file. Do not use it to answer the current turn: the Slack channel already
    delivers your answer, so calling it too would post it twice. In a chat turn the channel id and
    thread are on the [slack: ...] line.

    Args:
        channel: The channel or DM id (C..., G..., D...).
        text: The message, in standard Markdown (<@U123> mentions a user).
        path: The absolute path of a local file to upload instead of text.
        thread_ts: The thread to post in, from the [slack: ...] line.
    """
    from fastagent_cli.channels import slack_send as send

    return await send(channel, text=text, path=path, thread_ts=thread_ts)
