"""The Telegram webhook ingress: ``POST /telegram`` checks (in the order
:mod:`~fastagent_cli.channels.telegram.channel` documents), then the intake's acceptance."""

from __future__ import annotations

import logging

from aiohttp import web

from fastagent_cli.channels.kit.routes import Redelivery, WebhookIngress, json_delivery, secret_matches
from fastagent_cli.channels.telegram.intake import TelegramIntake
from fastagent_cli.serving.body import refuse_method, text_response

__all__ = ["ROUTE", "TelegramIngress"]

log = logging.getLogger("fastagent.channel")

ROUTE = "/telegram"


class TelegramIngress(WebhookIngress[TelegramIntake]):
    """The webhook of one mounted channel, in front of its :class:`TelegramIntake`."""

    route = ROUTE
    redelivery = Redelivery("[telegram]", "update", "Telegram will deliver it again")

    def __init__(self, intake: TelegramIntake, secret: str) -> None:
        super().__init__(intake)
        self.secret = secret

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        refused = refuse_method(request)
        if refused is not None:
            return refused
        if not secret_matches(request.headers.get("x-telegram-bot-api-secret-token"), self.secret):
            return text_response("invalid secret token\n", 401)
        delivery = await json_delivery(request, method_checked=True)
        if isinstance(delivery, web.Response):
            return delivery
        _, update = delivery
        return await self.redelivery.acknowledge(self.intake.accept(update), update.get("update_id"))
