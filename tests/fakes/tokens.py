"""Token strings shaped like the real ones, for fakes: a Codex access token is a JWT carrying the
ChatGPT account id; a Copilot token is a ``;``-separated list naming its API host."""

from __future__ import annotations

import base64
import json
import time

__all__ = ["codex_jwt", "copilot_token"]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def codex_jwt(account: str | None = "acct-1234", *, marker: str = "a") -> str:
    """An unsigned JWT like the ChatGPT access token (``marker`` makes tokens distinguishable)."""
    claims: dict[str, object] = {"exp": int(time.time()) + 3600, "sub": f"user-{marker}"}
    if account is not None:
        claims["https://api.openai.com/auth"] = {"chatgpt_account_id": account, "chatgpt_plan_type": "plus"}
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.{_b64(marker.encode())}"


def copilot_token(proxy: str = "proxy.individual.githubcopilot.com", *, marker: str = "a") -> str:
    expires = int(time.time()) + 1800
    return f"tid={marker};exp={expires};sku=copilot_for_individuals;proxy-ep={proxy};8kp=1:{marker}"
