"""The Slack app manifest ``add slack`` creates and the dev tunnel updates (features N17, N18).

Mode-specific scopes and events: ``mentions`` is least privilege (DMs and @mentions);
``context`` adds the channel, private-channel and group-DM history streams the participant rule
and the context buffer read. The app has the Agent view (``agent_view``: native streams, suggested
prompts), the writable Messages tab, token rotation, and no Socket Mode.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "BASE_BOT_EVENTS",
    "BASE_BOT_SCOPES",
    "CONTEXT_BOT_SCOPES",
    "bot_events",
    "bot_scopes",
    "build_manifest",
]

BASE_BOT_SCOPES = (
    "app_mentions:read",
    "assistant:write",
    "chat:write",
    "files:read",
    "files:write",
    "im:history",
    "reactions:write",
)
CONTEXT_BOT_SCOPES = ("channels:history", "groups:history", "mpim:history")
BASE_BOT_EVENTS = ("app_context_changed", "app_home_opened", "app_mention", "message.im")
CONTEXT_BOT_EVENTS = ("message.channels", "message.groups", "message.mpim")


def bot_scopes(group_behavior: str) -> list[str]:
    return sorted(BASE_BOT_SCOPES + (CONTEXT_BOT_SCOPES if group_behavior == "context" else ()))


def bot_events(group_behavior: str) -> list[str]:
    return sorted(BASE_BOT_EVENTS + (CONTEXT_BOT_EVENTS if group_behavior == "context" else ()))


def _display_name(name: str) -> str:
    flat = re.sub(r"[^a-z0-9._-]+", "-", name.lower())
    return re.sub(r"^[^a-z0-9]+|[^a-z0-9]+$", "", flat)[:80] or "fastagent"


def build_manifest(
    name: str, group_behavior: str, *, request_url: str | None = None, redirect_url: str | None = None
) -> dict[str, Any]:
    title = name.strip()[:35] or "FastAgent"
    settings: dict[str, Any] = {
        "org_deploy_enabled": False,
        "socket_mode_enabled": False,
        "token_rotation_enabled": True,
    }
    if request_url:
        settings["event_subscriptions"] = {
            "request_url": request_url,
            "bot_events": bot_events(group_behavior),
        }
        if request_url.endswith("/slack"):  # tool approvals' buttons (channels/slack/approvals.py)
            settings["interactivity"] = {"is_enabled": True, "request_url": f"{request_url}/interactivity"}
    oauth: dict[str, Any] = {"scopes": {"bot": bot_scopes(group_behavior)}}
    if redirect_url:
        oauth["redirect_urls"] = [redirect_url]
    return {
        "display_information": {
            "name": title,
            "description": "A fastagent-powered internal workspace agent.",
            "background_color": "#111827",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": False,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "agent_view": {
                "agent_description": "A workspace agent powered by the files, skills and tools "
                "of its fastagent directory.",
                "suggested_prompts": [
                    {"title": "What can you do?", "message": "What can you help me with?"},
                    {
                        "title": "Summarize context",
                        "message": "Summarize the relevant context and propose next steps.",
                    },
                ],
            },
            "bot_user": {"display_name": _display_name(title), "always_online": False},
        },
        "oauth_config": oauth,
        "settings": settings,
    }
