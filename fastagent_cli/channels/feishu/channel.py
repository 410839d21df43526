"""The Feishu and Lark channels: a verified event -> durable turn -> a streaming card.

::

    # channels/feishu.py (webhook: POST /feishu)      # or WebSocket: no public URL needed
    from fastagent_cli.channels import feishu_channel  # feishu_websocket_channel
    channel = feishu_channel()                         # FEISHU_* from .env (LARK_* for lark_channel)

Webhook checks, in order (features O3-O5): non-POST ``405 "POST only\\n"``; over 1 MiB ``413
"payload too large\\n"``; not a JSON object ``400 "invalid json\\n"``; an ``{"encrypt": ...}`` body
without an Encrypt Key ``400 "encrypt key not configured\\n"``; a wrong ``X-Lark-Signature`` ``401
"invalid signature\\n"`` (an unsigned encrypted body is accepted only for ``url_verification``); a
body that does not decrypt ``400 "invalid encrypted payload\\n"``; a plaintext body while a key is set
``401 "plaintext events not accepted\\n"``; a wrong verification token ``401 "invalid token\\n"``.
``url_verification`` answers ``{"challenge": ...}``; only ``im.message.receive_v1`` is consumed
(others ``200``); a turn or buffered message is persisted, then ``200`` (a failed write is ``500``
and the platform pushes again). The WebSocket ingress (:mod:`~fastagent_cli.channels.feishu.ws`)
feeds the same acceptance and answers a failed write with a ``500`` frame.

Routing (O9): a direct message always; in a group an @mention of the bot (by its ``open_id``, from
``bot/v3/info``, cached in ``bot``; fail-closed until known); a bare message in a thread the agent
owns while it has heard at most one human there; other human group messages join the place's
context buffer; non-user senders never act. Sessions (seed): threaded roots by default, each
top-level ask ``<kind>:<message_id>`` answered with ``reply_in_thread``, continuations mapped back
(``owned-threads``), a new thread starting from its room; ``direct_message_session="continuous"`` /
``group_message_session="continuous"`` restore ``<kind>:<chat_id>`` and ``<kind>:<chat_id>:<thread_id>``.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict, Unpack

from fastagent_cli.channels.feishu.cloud import FEISHU, LARK, Cloud
from fastagent_cli.channels.feishu.ingress import FeishuIngress
from fastagent_cli.channels.feishu.intake import FeishuIntake
from fastagent_cli.channels.feishu.runtime import GROUP_CONTEXT_SCOPE
from fastagent_cli.channels.kit.home import state_root_of
from fastagent_cli.channels.kit.invoke import OnError
from fastagent_cli.channels.kit.routes import ChannelRoutes, Route
from fastagent_cli.errors import ServeError

__all__ = [
    "GROUP_CONTEXT_SCOPE",
    "FeishuChannel",
    "FeishuWebSocketChannel",
    "feishu_channel",
    "feishu_websocket_channel",
    "lark_channel",
    "lark_websocket_channel",
]


_MODES = ("threaded", "continuous")


def _options(factory: str, allowed: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The checked options of a factory (a keyword it does not take is a ``TypeError``, as for any
    function)."""
    unknown = sorted(set(options) - set(allowed.__optional_keys__))
    if unknown:
        raise TypeError(f"{factory}() got an unexpected keyword argument {unknown[0]!r}")
    for name in ("direct_message_session", "group_message_session"):
        if options.get(name) is not None and options[name] not in _MODES:
            raise ServeError(f'{name} must be "threaded" or "continuous", not {options[name]!r}')
    return options


class _Base:
    def __init__(self, cloud: Cloud, options: dict[str, Any]) -> None:
        self.cloud = cloud
        self.kind = cloud.kind
        self.options = options

    def _setting(self, name: str) -> str:
        value = self.options.get(name.lower())
        return str(value) if value is not None else self.cloud.env(name)

    def _credentials(self, factory: str) -> tuple[str, str]:
        app_id, secret = self._setting("APP_ID"), self._setting("APP_SECRET")
        if not app_id or not secret:
            raise ServeError(
                f"{factory} needs {self.cloud.env_prefix}_APP_ID and "
                f"{self.cloud.env_prefix}_APP_SECRET in .env "
                "(developer console -> Credentials & Basic Info)"
            )
        return app_id, secret


class FeishuChannel(_Base):
    """The webhook form: ``channel(ctx)`` mounts ``POST /<kind>``."""

    def __call__(self, ctx: Any) -> ChannelRoutes:
        factory = f"{self.kind}_channel"
        app_id, secret = self._credentials(factory)
        token = self._setting("VERIFICATION_TOKEN")
        if not token:
            raise ServeError(
                f"{factory} needs {self.cloud.env_prefix}_VERIFICATION_TOKEN in .env (console -> "
                "Events & Callbacks)"
            )
        self.state_root = state_root_of(ctx)
        intake = FeishuIntake(self.cloud, self.options, ctx, app_id, secret)
        return FeishuIngress(intake, token, self._setting("ENCRYPT_KEY") or None).routes()

    async def register_webhook(self, public_url: str) -> str:
        from fastagent_cli.channels.feishu.register import register_request_url

        return await register_request_url(
            self.cloud,
            public_url,
            self._setting("APP_ID"),
            self._setting("APP_SECRET"),
            self.options.get("api_base_url"),
        )


class FeishuWebSocketChannel(_Base):
    """The long-connection form: ``connect(ctx, stop)`` (no public URL, no webhook crypto)."""

    @property
    def name(self) -> str:
        return f"{self.kind} websocket"

    def connect(self, ctx: Any, stop: asyncio.Event) -> Any:
        from fastagent_cli.channels.feishu.ws import connect_long_connection

        app_id, secret = self._credentials(f"{self.kind}_websocket_channel")
        intake = FeishuIntake(self.cloud, self.options, ctx, app_id, secret)
        base = self.cloud.resolve_api_base(self.options.get("api_base_url"))
        return connect_long_connection(self.cloud.label, base, app_id, secret, intake, stop)


class _Options(TypedDict, total=False):
    """The options every Feishu/Lark factory takes (see the module doc)."""

    app_id: str | None
    app_secret: str | None
    route: Route | None
    on_error: OnError | None
    api_base_url: str | None
    direct_message_session: str | None
    group_message_session: str | None


class _WebhookOptions(_Options, total=False):
    """The webhook form's options: the two webhook secrets too."""

    verification_token: str | None
    encrypt_key: str | None


def feishu_channel(**options: Unpack[_WebhookOptions]) -> FeishuChannel:
    """Feishu over a webhook (``POST /feishu``); ``FEISHU_*`` from the environment when mounted."""
    return FeishuChannel(FEISHU, _options("feishu_channel", _WebhookOptions, dict(options)))


def lark_channel(**options: Unpack[_WebhookOptions]) -> FeishuChannel:
    """Lark over a webhook (``POST /lark``); ``LARK_*`` from the environment when mounted."""
    return FeishuChannel(LARK, _options("lark_channel", _WebhookOptions, dict(options)))


def feishu_websocket_channel(**options: Unpack[_Options]) -> FeishuWebSocketChannel:
    """Feishu over the WebSocket long connection (only ``FEISHU_APP_ID`` / ``FEISHU_APP_SECRET``)."""
    return FeishuWebSocketChannel(FEISHU, _options("feishu_websocket_channel", _Options, dict(options)))


def lark_websocket_channel(**options: Unpack[_Options]) -> FeishuWebSocketChannel:
    """Lark over the WebSocket long connection (only ``LARK_APP_ID`` / ``LARK_APP_SECRET``)."""
    return FeishuWebSocketChannel(LARK, _options("lark_websocket_channel", _Options, dict(options)))
