"""The Feishu/Lark webhook ingress: ``POST /<kind>`` checks (O3-O5, in the order
:mod:`~fastagent_cli.channels.feishu.channel` documents), then the intake's acceptance."""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from fastagent_cli.channels.feishu.approvals import CARD_ACTION
from fastagent_cli.channels.feishu.crypto import DecryptError, decrypt_event, secrets_match, verify_signature
from fastagent_cli.channels.feishu.intake import FeishuIntake
from fastagent_cli.channels.kit.routes import Redelivery, WebhookIngress, json_delivery, timestamp_fresh
from fastagent_cli.serving.body import text_response

__all__ = ["FeishuIngress"]

log = logging.getLogger("fastagent.channel")


class FeishuIngress(WebhookIngress[FeishuIntake]):
    """The webhook of one mounted channel (``POST /feishu`` or ``/lark``), in front of its
    :class:`FeishuIntake`."""

    def __init__(self, intake: FeishuIntake, token: str, encrypt_key: str | None) -> None:
        super().__init__(intake)
        self.token = token
        self.key = encrypt_key
        self.label = intake.label
        self.prefix = intake.cloud.env_prefix
        self.route = f"/{intake.kind}"
        self.redelivery = Redelivery(self.label, "event", "it will be pushed again")

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        delivery = await json_delivery(request)
        if isinstance(delivery, web.Response):
            return delivery
        raw, outer = delivery
        if isinstance(outer.get("encrypt"), str):
            if not self.key:
                log.error(
                    "%s an encrypted event arrived but no encrypt key is set: set %s_ENCRYPT_KEY",
                    self.label,
                    self.prefix,
                )
                return text_response("encrypt key not configured\n", 400)
            signature = request.headers.get("x-lark-signature", "")
            timestamp = request.headers.get("x-lark-request-timestamp", "")
            nonce = request.headers.get("x-lark-request-nonce", "")
            if signature and not (
                timestamp_fresh(timestamp) and verify_signature(self.key, timestamp, nonce, signature, raw)
            ):
                log.warning("%s rejected an event with an invalid or stale X-Lark-Signature", self.label)
                return text_response("invalid signature\n", 401)
            try:
                envelope = json.loads(decrypt_event(self.key, outer["encrypt"]))
            except (DecryptError, ValueError):
                return text_response("invalid encrypted payload\n", 400 if signature else 401)
            if not isinstance(envelope, dict):
                return text_response("invalid encrypted payload\n", 400)
            if not signature and envelope.get("type") != "url_verification":
                log.warning("%s rejected an unsigned encrypted event", self.label)
                return text_response("invalid signature\n", 401)
        else:
            if self.key:
                log.warning("%s rejected a plaintext event while an encrypt key is set", self.label)
                return text_response("plaintext events not accepted\n", 401)
            envelope = outer
        header: dict[str, Any] = envelope["header"] if isinstance(envelope.get("header"), dict) else {}
        token = envelope.get("token") if isinstance(envelope.get("token"), str) else header.get("token")
        if not secrets_match(token if isinstance(token, str) else None, self.token):
            log.warning(
                "%s rejected an event: verification token mismatch (check %s_VERIFICATION_TOKEN)",
                self.label,
                self.prefix,
            )
            return text_response("invalid token\n", 401)
        if envelope.get("type") == "url_verification" and isinstance(envelope.get("challenge"), str):
            log.info("%s answered the url_verification challenge", self.label)
            return web.json_response({"challenge": envelope["challenge"]})
        if header.get("event_type") == CARD_ACTION:  # an approval card's button (checked as above)
            return web.json_response(await self.intake.approvals.on_action(envelope.get("event") or {}))
        if header.get("event_type") != "im.message.receive_v1":
            return web.Response(status=200)
        return await self.redelivery.acknowledge(
            self.intake.accept(envelope.get("event") or {}), header.get("event_id")
        )
