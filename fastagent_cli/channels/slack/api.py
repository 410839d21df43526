"""The Slack Web API client the channel and ``slack_send`` share (features N9-N11, N14).

Every call goes through :meth:`SlackApi.call`, on the kit's transport
(:class:`~fastagent_cli.channels.kit.api.PlatformClient`): a bearer token from the channel's token
provider (rotated when due), :data:`API_TIMEOUT_S` end to end, and a rate-limited answer (HTTP
``429`` or ``error: ratelimited``) retried up to three times after Slack's ``Retry-After`` when that
is at most 30 s. A network failure or a ``5xx`` is retried only for the reads (``auth.test``,
``files.info``) or when the request never left: a message whose answer was lost may have been
posted. Success is the body's own ``ok: true``; every failure is a
:class:`~fastagent_cli.errors.ChannelApiError` (``SlackApiError`` here) naming the method, with
Slack's ``error`` as its ``code`` (and the scope it ``needed`` in its words).

Output is standard Markdown (``markdown_text``), cut into parts by
:mod:`~fastagent_cli.channels.slack.markdown`. Link unfurls are off. Private files download with the bot
token, from HTTPS Slack hosts only (``slack.com``, ``slack-files.com``, ``slack-edge.com`` and
their subdomains, or the configured API origin), following at most :data:`MAX_REDIRECTS`
redirects, capped at :data:`MAX_DOWNLOAD_BYTES` and :data:`DOWNLOAD_TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from fastagent_cli.channels.kit.api import Answer, PlatformClient, json_object
from fastagent_cli.channels.slack.markdown import chunk_markdown
from fastagent_cli.errors import ChannelApiError

__all__ = [
    "API_BASE_ENV",
    "DEFAULT_API_BASE",
    "MAX_DOWNLOAD_BYTES",
    "SlackApi",
    "SlackApiError",
    "SlackTarget",
    "native_unavailable",
    "resolve_api_base",
]

DEFAULT_API_BASE = "https://slack.com/api"
API_BASE_ENV = "SLACK_API_BASE_URL"
API_TIMEOUT_S = 30.0
DOWNLOAD_TIMEOUT_S = 120.0
MAX_REDIRECTS = 3
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
_NATIVE_UNAVAILABLE = {
    "channel_type_not_supported",
    "messages_tab_disabled",
    "method_deprecated",
    "missing_scope",
    "no_permission",
    "not_allowed_token_type",
    "unknown_method",
}
_READS = {"auth.test", "files.info"}
_SLACK_HOSTS = ("slack.com", "slack-files.com", "slack-edge.com")

TokenSource = Callable[[], Awaitable[str]]


def resolve_api_base(explicit: str | None = None) -> str:
    return (explicit or os.environ.get(API_BASE_ENV) or DEFAULT_API_BASE).rstrip("/")


SlackApiError = ChannelApiError
"""A failed Web API call (the kit's one error type): ``status`` 0, no HTTP answer; ``code``, Slack's
``error``."""


def native_unavailable(exc: ChannelApiError) -> bool:
    """A definitive "this app cannot stream here" (safe to fall back to a plain reply)."""
    return exc.code in _NATIVE_UNAVAILABLE


@dataclass(frozen=True, slots=True)
class SlackTarget:
    """Where a reply goes. Native streams in a channel (not a DM) name the recipient user and team."""

    channel_id: str
    thread_ts: str | None = None
    recipient_user_id: str | None = None
    recipient_team_id: str | None = None

    @property
    def is_dm(self) -> bool:
        return self.channel_id.startswith("D")


class SlackApi(PlatformClient):
    platform = "slack"

    def __init__(
        self,
        token: str | TokenSource,
        api_base_url: str | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(timeout=API_TIMEOUT_S, sleep=sleep)
        self._token: TokenSource = _constant(token) if isinstance(token, str) else token
        self.base = resolve_api_base(api_base_url)
        parts = urlsplit(self.base)
        self._origin = f"{parts.scheme}://{parts.netloc}"

    def read(self, response: httpx.Response) -> Answer:
        data = json_object(response.content)
        if response.status_code == 200 and data.get("ok") is True:
            return Answer(ok=True, data=data)
        error = str(data.get("error") or "") or None
        detail = "; ".join(
            [
                error or "the answer was not the expected Slack JSON",
                *([f"needed {data['needed']}"] if data.get("needed") else []),
                *[str(m) for m in (data.get("response_metadata") or {}).get("messages") or []],
            ]
        )
        return Answer(ok=False, description=detail, code=error, limited=error == "ratelimited")

    # --- the pipeline ---------------------------------------------------------------------------

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, get: bool = False
    ) -> dict[str, Any]:
        body = {k: v for k, v in (params or {}).items() if v is not None}
        url = f"{self.base}/{method}"

        async def send() -> httpx.Response:
            headers = {"authorization": f"Bearer {await self._token()}"}
            if get:
                return await self._client.get(url, params=body, headers=headers)
            return await self._client.post(url, json=body, headers=headers)

        return await self.request(method, send, idempotent=method in _READS)

    # --- messages -------------------------------------------------------------------------------

    async def auth_test(self) -> dict[str, Any]:
        return await self.call("auth.test")

    async def post(self, target: SlackTarget, *, text: str | None = None, markdown: str | None = None) -> str:
        data = await self.call(
            "chat.postMessage",
            {
                "channel": target.channel_id,
                "text": text,
                "markdown_text": markdown,
                "thread_ts": target.thread_ts,
                "unfurl_links": False,
                "unfurl_media": False,
            },
        )
        ts = data.get("ts")
        if not isinstance(ts, str):
            raise self.error("chat.postMessage", 200, "the answer carried no ts")
        return ts

    async def send_markdown(self, target: SlackTarget, markdown: str) -> str | None:
        """Post ``markdown`` as consecutive messages of at most :data:`MAX_MARKDOWN` characters."""
        first: str | None = None
        for part in chunk_markdown(markdown):
            ts = await self.post(target, markdown=part)
            first = first or ts
        return first

    async def update(
        self, channel: str, ts: str, *, text: str | None = None, markdown: str | None = None
    ) -> None:
        try:
            await self.call(
                "chat.update", {"channel": channel, "ts": ts, "text": text, "markdown_text": markdown}
            )
        except SlackApiError as exc:
            if exc.code != "message_not_modified":
                raise

    async def delete(self, channel: str, ts: str) -> None:
        await self.call("chat.delete", {"channel": channel, "ts": ts})

    # --- native streams -------------------------------------------------------------------------

    async def start_stream(
        self, target: SlackTarget, *, markdown: str | None = None, chunks: list[dict[str, Any]] | None = None
    ) -> str:
        if not target.thread_ts:
            raise self.error("chat.startStream", 0, "a native stream needs a parent thread")
        params: dict[str, Any] = {
            "channel": target.channel_id,
            "thread_ts": target.thread_ts,
            "markdown_text": markdown,
            "chunks": chunks,
            "task_display_mode": "timeline",
        }
        if not target.is_dm:
            if not target.recipient_user_id or not target.recipient_team_id:
                raise self.error("chat.startStream", 0, "a channel stream needs the recipient user and team")
            params["recipient_user_id"] = target.recipient_user_id
            params["recipient_team_id"] = target.recipient_team_id
        data = await self.call("chat.startStream", params)
        ts = data.get("ts")
        if not isinstance(ts, str):
            raise self.error("chat.startStream", 200, "the answer carried no ts")
        return ts

    async def append_stream(
        self,
        channel: str,
        ts: str,
        *,
        markdown: str | None = None,
        chunks: list[dict[str, Any]] | None = None,
    ) -> None:
        await self.call(
            "chat.appendStream", {"channel": channel, "ts": ts, "markdown_text": markdown, "chunks": chunks}
        )

    async def stop_stream(self, channel: str, ts: str, *, markdown: str | None = None) -> None:
        await self.call("chat.stopStream", {"channel": channel, "ts": ts, "markdown_text": markdown})

    async def set_status(self, target: SlackTarget, status: str) -> None:
        if target.thread_ts:
            await self.call(
                "assistant.threads.setStatus",
                {"channel_id": target.channel_id, "thread_ts": target.thread_ts, "status": status},
            )

    async def set_title(self, target: SlackTarget, title: str) -> None:
        if target.thread_ts:
            await self.call(
                "assistant.threads.setTitle",
                {"channel_id": target.channel_id, "thread_ts": target.thread_ts, "title": title},
            )

    async def react(self, channel: str, ts: str, name: str, *, remove: bool = False) -> None:
        method = "reactions.remove" if remove else "reactions.add"
        try:
            await self.call(method, {"channel": channel, "timestamp": ts, "name": name})
        except SlackApiError as exc:
            if exc.code not in ("already_reacted", "no_reaction"):
                raise

    # --- files ----------------------------------------------------------------------------------

    async def file_info(self, file_id: str) -> dict[str, Any]:
        data = await self.call("files.info", {"file": file_id}, get=True)
        info = data.get("file")
        if not isinstance(info, dict) or not info.get("id"):
            raise self.error("files.info", 200, f"the answer carried no file for {file_id}")
        return info

    def _trusted(self, url: str) -> str:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        same_origin = f"{parts.scheme}://{parts.netloc}" == self._origin
        slack = any(host == h or host.endswith("." + h) for h in _SLACK_HOSTS)
        if not same_origin and not (slack and parts.scheme == "https"):
            raise self.error("file download", 0, f"refusing a file URL outside Slack's HTTPS hosts ({host})")
        return url

    async def download(self, info: dict[str, Any], max_bytes: int = MAX_DOWNLOAD_BYTES) -> tuple[bytes, str]:
        """``(bytes, content type)`` of a private file (see the module doc for the guards)."""
        file_id = info.get("id") or "(unknown)"
        access = info.get("file_access")
        if access == "check_file_info":
            raise self.error("file download", 0, f"file {file_id} is not ready yet")
        if access == "access_denied":
            raise self.error("file download", 0, f"file {file_id} is not accessible to the app")
        url = info.get("url_private_download") or info.get("url_private")
        if not isinstance(url, str):
            kind = f"external ({info.get('external_type')})" if info.get("is_external") else info.get("mode")
            raise self.error("file download", 0, f"file {file_id} has no downloadable bytes ({kind})")
        if int(info.get("size") or 0) > max_bytes:
            raise self.error("file download", 0, f"file {file_id} is too large (max {max_bytes >> 20} MB)")
        current = self._trusted(url)
        async with self.downloading("file download", DOWNLOAD_TIMEOUT_S):
            for _ in range(MAX_REDIRECTS + 1):
                token = await self._token()
                headers = {"authorization": f"Bearer {token}"}
                async with self._client.stream("GET", current, headers=headers) as response:
                    if response.status_code in (301, 302, 303, 307, 308):
                        location = response.headers.get("location")
                        if not location:
                            raise self.error(
                                "file download", response.status_code, "a redirect without Location"
                            )
                        current = self._trusted(urljoin(current, location))
                        continue
                    if response.status_code != 200:
                        raise self.error("file download", response.status_code, "the file bytes were refused")
                    too_large = f"file {file_id} is too large (max {max_bytes >> 20} MB)"
                    data = await self.read_capped(response, "file download", max_bytes, too_large, 0)
                    return data, response.headers.get("content-type", "")
            raise self.error("file download", 0, f"more than {MAX_REDIRECTS} redirects")


def _constant(token: str) -> TokenSource:
    async def current() -> str:
        return token

    return current
