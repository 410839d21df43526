"""Slack App Configuration access: the owner-local onboarding document (``<state root>/channels/
slack/onboarding.json``, 0600) holding the configuration token pair, the token rotated
(``tooling.tokens.rotate``) before it expires, and one call to the App Configuration API.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from fastagent_cli.channels.kit.api import Answer, PlatformClient, json_object
from fastagent_cli.channels.kit.document import StateDocument
from fastagent_cli.errors import ChannelApiError
from fastagent_cli.state.channel_state import FileChannelState, channel_home

__all__ = [
    "API_TIMEOUT_S",
    "CONFIG_TOKEN_LIFETIME_S",
    "Onboarding",
    "SlackConfigError",
    "config_call",
    "current_config_token",
    "update_manifest",
    "open_onboarding",
]

API_TIMEOUT_S = 30.0
CONFIG_TOKEN_LIFETIME_S = 11 * 3600  # Slack's are 12 h; rotate before the edge


SlackConfigError = ChannelApiError
"""A failed App Configuration call (the kit's one error type; ``code``: Slack's ``error``; ``status``
0: no answer arrived, so the call may or may not have happened)."""


class _ConfigApi(PlatformClient):
    """The App Configuration API (``apps.manifest.*``, ``tooling.tokens.rotate``, ``oauth.v2.access``)."""

    platform = "slack"

    def read(self, response: httpx.Response) -> Answer:
        data = json_object(response.content)
        if response.status_code == 200 and data.get("ok") is True:
            return Answer(ok=True, data=data)
        fields = "; ".join(
            f"{e.get('pointer', 'manifest')}: {e.get('message', 'invalid')}"
            for e in data.get("errors") or []
            if isinstance(e, dict)
        )
        code = str(data.get("error") or f"http_{response.status_code}")
        detail = code + (f" — {fields}" if fields else "") if data else f"{code} — the answer was not JSON"
        return Answer(ok=False, description=detail, code=code, limited=code == "ratelimited")

    async def call(self, url: str, body: dict[str, Any], token: str | None) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        method = url.rsplit("/", 1)[-1]
        return await self.request(method, lambda: self._client.post(url, json=body, headers=headers))


def _valid(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("version") == 1
        and value.get("groupBehavior") in ("context", "mentions")
        and isinstance(value.get("configToken"), str)
        and isinstance(value.get("configRefreshToken"), str)
        and isinstance(value.get("configTokenExpiresAt"), int | float)
    )


@dataclass(slots=True)
class Onboarding:
    """The onboarding document of one state root."""

    document: StateDocument
    store: FileChannelState

    @property
    def state(self) -> dict[str, Any] | None:
        value = self.document.value
        return dict(value) if isinstance(value, dict) else None

    async def save(self, state: dict[str, Any]) -> None:
        await self.document.set(state)

    async def aclose(self) -> None:
        await self.document.aclose()
        await self.store.aclose()


async def open_onboarding(state_root: Path) -> Onboarding:
    store = FileChannelState(channel_home(state_root, "slack"))
    document = StateDocument(store, "onboarding", label="[slack]", check=_valid)
    await document.open()
    return Onboarding(document, store)


async def config_call(
    api_base: str, method: str, body: dict[str, Any], token: str | None = None
) -> dict[str, Any]:
    """One App Configuration call on the kit's transport; its answer. Raises :class:`SlackConfigError`."""
    api = _ConfigApi(timeout=API_TIMEOUT_S)
    try:
        return await api.call(f"{api_base}/{method}", body, token)
    finally:
        await api.aclose()


async def current_config_token(onboarding: Onboarding, api_base: str) -> str:
    """The configuration access token, rotated first when it expires within 5 minutes."""
    state = onboarding.state
    assert state is not None
    if state["configTokenExpiresAt"] > (time.time() + 300) * 1000:
        return str(state["configToken"])
    rotated = await config_call(
        api_base, "tooling.tokens.rotate", {"refresh_token": state["configRefreshToken"]}
    )
    if not isinstance(rotated.get("token"), str) or not isinstance(rotated.get("refresh_token"), str):
        raise SlackConfigError(
            "slack", "tooling.tokens.rotate", 200, "incomplete_answer", "incomplete_answer"
        )
    state.update(
        configToken=rotated["token"],
        configRefreshToken=rotated["refresh_token"],
        configTokenExpiresAt=int(rotated.get("exp") or time.time() + CONFIG_TOKEN_LIFETIME_S) * 1000,
    )
    await onboarding.save(state)
    return str(state["configToken"])


async def update_manifest(api_base: str, app_id: str, manifest: dict[str, Any], token: str) -> None:
    """``apps.manifest.update``: the app's whole manifest replaced by ``manifest``."""
    await config_call(
        api_base, "apps.manifest.update", {"app_id": app_id, "manifest": json.dumps(manifest)}, token
    )
