"""The Slack webhook ingress: ``POST /slack`` checks (in the order
:mod:`~fastagent_cli.channels.slack.channel` documents), then the intake's acceptance."""

from __future__ import annotations

import logging

from aiohttp import web

from fastagent_cli.channels.kit.routes import ChannelRoutes, Redelivery, WebhookIngress
from fastagent_cli.channels.slack.approvals import INTERACTIVITY_ROUTE
from fastagent_cli.channels.slack.intake import SlackIntake
from fastagent_cli.channels.slack.verify import signed_body
from fastagent_cli.serving.body import json_object_or_400, text_response

__all__ = ["ROUTE", "SlackIngress"]

log = logging.getLogger("fastagent.channel")

ROUTE = "/slack"


class SlackIngress(WebhookIngress[SlackIntake]):
    """The webhook of one mounted channel, in front of its :class:`SlackIntake`."""

    route = ROUTE
    redelivery = Redelivery("[slack]", "event", "Slack will deliver it again")

    def __init__(self, intake: SlackIntake) -> None:
        super().__init__(intake)

    def routes(self) -> ChannelRoutes:
        routes = {ROUTE: self.receive, INTERACTIVITY_ROUTE: self.intake.approvals.handle}
        return ChannelRoutes(routes, start=self.intake.start, close=self.intake.aclose)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = await signed_body(request, self.intake.secret, "an event")
        if isinstance(raw, web.Response):
            return raw
        headers = request.headers
        envelope = json_object_or_400(raw)
        if isinstance(envelope, web.Response):
            return envelope
        if envelope.get("type") == "url_verification" and isinstance(envelope.get("challenge"), str):
            return web.json_response({"challenge": envelope["challenge"]})
        if envelope.get("type") != "event_callback":
            return web.Response(status=200)
        retry = headers.get("x-slack-retry-num")
        if retry:
            log.info(
                "[slack] Slack retry %s of event %s (%s)",
                retry,
                envelope.get("event_id"),
                headers.get("x-slack-retry-reason", "unknown reason"),
            )
        if not await self.intake.authenticated():
            log.error(
                "[slack] refusing to acknowledge event %s: authentication is unavailable",
                envelope.get("event_id"),
            )
            return text_response("slack authentication unavailable\n", 503)
        return await self.redelivery.acknowledge(self.intake.accept(envelope), envelope.get("event_id"))
