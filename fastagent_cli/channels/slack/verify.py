"""Slack request signatures (feature N1): ``v0`` HMAC-SHA256 over ``v0:<timestamp>:<raw body>``.

Slack signs every Events API request with the app's Signing Secret and sends the result as
``X-Slack-Signature: v0=<hex>`` next to ``X-Slack-Request-Timestamp`` (Unix seconds). A request is
authentic when the timestamp is within :data:`MAX_SIGNATURE_AGE_S` of now (a replayed capture is
refused) and the signature matches, compared in constant time over the exact bytes received.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from fastagent_cli.channels.kit.routes import MAX_SIGNATURE_AGE_S, timestamp_fresh

__all__ = ["MAX_SIGNATURE_AGE_S", "sign_slack_request", "verify_slack_signature"]

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
