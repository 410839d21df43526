"""Slack request signatures (feature N1): ``v0`` HMAC-SHA256 over ``v0:<timestamp>:<raw body>``.

Slack signs every Events API request with the app's Signing Secret and sends the result as
``X-Slack-Signature: v0=<hex>`` next to ``X-Slack-Request-Timestamp`` (Unix seconds). A request is
authentic when the timestamp is within :data:`MAX_SIGNATURE_AGE_S` of now (a replayed capture is
refused) and the signature matches, compared in constant time over the exact bytes received.
:func:`signed_body` is that check at the door of both of Slack's routes (events, interactivity).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re

from aiohttp import web

from fastagent_cli.channels.kit.routes import MAX_SIGNATURE_AGE_S, timestamp_fresh
from fastagent_cli.serving.body import read_post_body, text_response

__all__ = ["MAX_SIGNATURE_AGE_S", "sign_slack_request", "signed_body", "verify_slack_signature"]

log = logging.getLogger("fastagent.channel")

_SIGNATURE = re.compile(r"^v0=[0-9a-fA-F]{64}$")


def sign_slack_request(signing_secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` value Slack sends for ``body`` at ``timestamp``."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(signing_secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


def verify_slack_signature(
    signing_secret: str, timestamp: str | None, signature: str | None, body: bytes, now: float | None = None
) -> bool:
    if (
        not timestamp
        or not signature
        or not _SIGNATURE.match(signature)
        or not timestamp_fresh(timestamp, now)
    ):
        return False
    expected = sign_slack_request(signing_secret, timestamp, body)
    return hmac.compare_digest(expected.encode("ascii"), signature.lower().encode("ascii"))


async def signed_body(request: web.BaseRequest, signing_secret: str, what: str) -> bytes | web.Response:
    """The raw body of a request Slack signed, or the answer to send instead (too large: 413;
    an invalid or stale signature: 401, logged as a rejected ``what``)."""
    raw = await read_post_body(request)
    if isinstance(raw, web.Response):
        return raw
    headers = request.headers
    if not verify_slack_signature(
        signing_secret, headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature"), raw
    ):
        log.warning("[slack] rejected %s with an invalid or stale X-Slack-Signature", what)
        return text_response("invalid signature\n", 401)
    return raw
