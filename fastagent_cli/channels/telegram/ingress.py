"""The Telegram webhook ingress: ``POST /telegram`` checks (in the order
:mod:`~fastagent_cli.channels.telegram.channel` documents), then the intake's acceptance."""

from __future__ import annotations

import logging

from aiohttp import web

from fastagent_cli.channels.kit.routes import ChannelRoutes, acknowledge_when_durable, secret_matches
from fastagent_cli.channels.telegram.intake import TelegramIntake
from fastagent_cli.serving.body import json_object_or_400, read_body_or_413, refuse_method, text_response

__all__ = ["ROUTE", "TelegramIngress"]

log = logging.getLogger("fastagent.channel")

ROUTE = "/telegram"


class TelegramIngress:
    """The webhook of one mounted channel, in front of its :class:`TelegramIntake`."""

    def __init__(self, intake: TelegramIntake, secret: str) -> None:
        self.intake = intake
        self.secret = secret

    def routes(self) -> ChannelRoutes:
        return ChannelRoutes({ROUTE: self.handle}, start=self.intake.start, close=self.intake.aclose)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        refused = refuse_method(request)
        if refused is not None:
            return refused
        if not secret_matches(request.headers.get("x-telegram-bot-api-secret-token"), self.secret):
            return text_response("invalid secret token\n", 401)
        raw = await read_body_or_413(request)
        if isinstance(raw, web.Response):
            return raw
        update = json_object_or_400(raw)
        if isinstance(update, web.Response):
            return update
        return await acknowledge_when_durable(
            self.intake.accept(update),
            label="[telegram]",
            what="update",
            delivery=update.get("update_id"),
            again="Telegram will deliver it again",
        )
