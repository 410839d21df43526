"""``slack_send``: what the scaffolded ``tools/slack_send.py`` tool calls (features K16, N19).

It delivers what no channel carries (a scheduled turn's report, a file). Text is standard Markdown
of at most :data:`~fastagent_cli.channels.slack.api.MAX_MARKDOWN` characters, posted as it is
(deliberate mentions such as ``<@U123>`` are the point of a send tool). A file goes through Slack's
external upload: ``files.getUploadURLExternal`` -> the bytes to ``upload_url`` ->
``files.completeUploadExternal`` with the channel (and thread). Delivery is at-least-once: when
Slack completed the upload but the answer was lost, an explicit retry may post it twice.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from fastagent_cli.channels.kit import send as kit_send
from fastagent_cli.channels.slack.api import SlackApi, SlackTarget
from fastagent_cli.channels.slack.markdown import MAX_MARKDOWN

__all__ = ["MAX_UPLOAD_BYTES", "slack_send"]

MAX_UPLOAD_BYTES = 1024 * 1024 * 1024


async def slack_send(
    channel: str,
    *,
    text: str | None = None,
    path: str | None = None,
    thread_ts: str | None = None,
    title: str | None = None,
    bot_token: str | None = None,
    api_base_url: str | None = None,
) -> str:
    """Send ``text`` or the file at ``path`` (exactly one) to ``channel``; a sentence saying what was sent."""
    token = kit_send.bot_token(bot_token, "SLACK_BOT_TOKEN", "the app's Bot User OAuth token, in .env")
    kit_send.exactly_one(text, path)
    api = SlackApi(token, api_base_url)
    async with kit_send.sending(api):
        if text is not None:
            kit_send.check_text(text)
            if len(text) > MAX_MARKDOWN:
                raise ValueError(
                    f"`text` is {len(text)} characters; Slack messages here take at most {MAX_MARKDOWN}"
                )
            await api.post(SlackTarget(channel, thread_ts), markdown=text)
            return f"sent a message to {channel}" + (f" (thread {thread_ts})" if thread_ts else "")
        return await _upload(api, channel, Path(str(path)), thread_ts, title)


async def _upload(api: SlackApi, channel: str, path: Path, thread_ts: str | None, title: str | None) -> str:
    content = await kit_send.read_upload(path)
    if not content:
        raise ValueError(f"{path.name} is empty; Slack refuses empty uploads")
    if len(content) > MAX_UPLOAD_BYTES:
        raise ValueError(f"{path.name} is over Slack's 1 GB upload limit")
    slot = await api.call(
        "files.getUploadURLExternal", {"filename": path.name, "length": len(content)}, get=True
    )
    upload_url, file_id = slot.get("upload_url"), slot.get("file_id")
    if not isinstance(upload_url, str) or not isinstance(file_id, str):
        raise RuntimeError("slack files.getUploadURLExternal answered without upload_url / file_id")
    async with httpx.AsyncClient(timeout=120.0) as client:
        try:
            response = await client.post(
                upload_url, content=content, headers={"content-type": "application/octet-stream"}
            )
        except httpx.HTTPError as exc:
            raise RuntimeError(f"slack file upload failed: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise RuntimeError(f"slack file upload failed: HTTP {response.status_code}")
    await api.call(
        "files.completeUploadExternal",
        {
            "files": [{"id": file_id, "title": title or path.name}],
            "channel_id": channel,
            "thread_ts": thread_ts,
        },
    )
    return f"sent {path.name} to {channel}"
