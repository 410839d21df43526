"""The Slack channel: ``POST /slack`` (HTTP Events API) -> durable turn -> a threaded answer.

::

    # channels/slack.py
    from fastagent_cli.channels import slack_channel

    channel = slack_channel(group_behavior="context")   # SLACK_* from .env

Checks, in order (features N1, N2): a method other than POST is ``405 "POST only\\n"``; a body over
1 MiB is ``413 "payload too large\\n"``; a missing, stale (over 5 minutes) or wrong ``v0`` signature
is ``401 "invalid signature\\n"``; a body that is not a JSON object is ``400 "invalid json\\n"``;
``url_verification`` answers ``{"challenge": ...}``; any type but ``event_callback`` is ``200``; when
the bot token does not work (``auth.test`` failed) the answer is ``503 "slack authentication
unavailable\\n"`` so Slack delivers again later. Everything else is ``200`` once what it causes is
durable (a failed write is a ``500``: Slack retries, with ``X-Slack-Retry-Num``):

* a message already seen or pending (Slack's retries; ``app_mention`` and ``message.*`` for the same
  message) is dropped: identity is ``(team, channel, ts)``;
* a DM and an ``app_mention`` are turns; in ``group_behavior="context"`` a bare reply in a thread
  where the agent answered and heard at most one human is a turn too (the participant rule), and
  any other human message in a channel joins the place's context buffer;
* a whole-message ``stop`` / ``cancel`` aborts the session's active run (``ctx.control``);
* the session is ``slack:<team>:<channel>:<thread root ts>`` and the answer goes in that thread;
* ``app_home_opened`` on the Messages tab sends a one-time welcome (``welcomed``).

State lives in ``<state root>/channels/slack/`` (``turns``, ``seen``, ``buffers``,
``thread-participants``, ``welcomed``, ``bot-auth``, ``files/``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from fastagent_cli.channels.kit.home import state_root_of
from fastagent_cli.channels.kit.invoke import OnError
from fastagent_cli.channels.kit.routes import ChannelRoutes, Route
from fastagent_cli.channels.slack.ingress import SlackIngress
from fastagent_cli.channels.slack.intake import SlackIntake
from fastagent_cli.channels.slack.runtime import DEFAULT_WELCOME, KIND
from fastagent_cli.errors import ServeError

__all__ = ["DEFAULT_WELCOME", "ENV", "SlackChannel", "slack_channel"]

ENV = {
    "bot_token": "SLACK_BOT_TOKEN",
    "signing_secret": "SLACK_SIGNING_SECRET",
    "bot_refresh_token": "SLACK_BOT_REFRESH_TOKEN",
    "client_id": "SLACK_CLIENT_ID",
    "client_secret": "SLACK_CLIENT_SECRET",
    "bot_token_expires_at": "SLACK_BOT_TOKEN_EXPIRES_AT",
}


class SlackChannel:
    """``channel(ctx)`` mounts ``/slack``; ``register_webhook(url)`` updates an onboarded app's
    Request URL through ``apps.manifest.update`` (else prints the URL to set)."""

    kind = KIND

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.agent_file: str | None = options.pop("_agent_file", None)
        self.state_root: Path | None = None

    def _setting(self, name: str) -> str:
        value = self.options.get(name)
        return str(value) if value is not None else os.environ.get(ENV[name], "")

    def __call__(self, ctx: Any) -> ChannelRoutes:
        bot_token, secret = self._setting("bot_token"), self._setting("signing_secret")
        if not bot_token:
            raise ServeError("slack_channel needs the bot token: set SLACK_BOT_TOKEN in .env (xoxb-...)")
        if not secret:
            raise ServeError(
                "slack_channel needs the signing secret: set SLACK_SIGNING_SECRET in .env "
                "(Basic Information -> App Credentials)"
            )
        self.state_root = state_root_of(ctx)
        return SlackIngress(SlackIntake(self, ctx, bot_token, secret)).routes()

    async def register_webhook(self, public_url: str) -> str:
        from fastagent_cli.channels.slack.register import register_request_url

        return await register_request_url(public_url, self._state_root_for_registration(), self.options)

    def _state_root_for_registration(self) -> Path | None:
        if self.state_root is not None:
            return self.state_root
        if self.agent_file is None:
            return None
        from fastagent_cli.state.paths import resolve_state_root

        try:
            return resolve_state_root(Path(self.agent_file).resolve().parent.parent)
        except Exception:
            return None


def slack_channel(
    *,
    bot_token: str | None = None,
    signing_secret: str | None = None,
    bot_refresh_token: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    bot_token_expires_at: int | None = None,
    group_behavior: str = "context",
    rendering: str = "native",
    ai_disclaimer: str | None = None,
    welcome: str | bool = True,
    reaction_ack: bool | tuple[str, str] = True,
    route: Route | None = None,
    on_error: OnError | None = None,
    api_base_url: str | None = None,
    direct_message_session: Any = None,
    group_message_session: Any = None,
) -> SlackChannel:
    """The Slack channel (see the module doc). Credentials default to the ``SLACK_*`` variables, read
    when the channel is mounted. ``group_behavior``: ``"context"`` (bare replies in threads the agent
    takes part in, and buffered discussion) or ``"mentions"`` (DMs and @mentions only).
    ``rendering``: ``"native"`` (Agent streams) or ``"classic"`` (one edited message).
    ``welcome``: the first-DM greeting (``False``: none). ``reaction_ack``: 👀 then ✅ on the asking
    message (``False``: none; or ``(processing, completed)`` emoji names). ``route(envelope)``
    returns a :class:`SlackRoute`, a dict or ``None`` and replaces the default policy entirely.
    ``api_base_url`` (or ``SLACK_API_BASE_URL``) points at another Web API server."""
    removed = [
        name
        for name, value in (
            ("direct_message_session", direct_message_session),
            ("group_message_session", group_message_session),
        )
        if value is not None
    ]
    if removed:
        raise ServeError(
            f"slack_channel no longer accepts {' / '.join(removed)}: an answer goes in a thread on the ask, "
            "and that thread is the session; remove the option"
        )
    if group_behavior not in ("context", "mentions"):
        raise ServeError(
            f'slack_channel group_behavior must be "context" or "mentions", not {group_behavior!r}'
        )
    if rendering not in ("native", "classic"):
        raise ServeError(f'slack_channel rendering must be "native" or "classic", not {rendering!r}')
    caller = sys._getframe(1).f_globals.get("__file__")
    return SlackChannel(
        bot_token=bot_token,
        signing_secret=signing_secret,
        bot_refresh_token=bot_refresh_token,
        client_id=client_id,
        client_secret=client_secret,
        bot_token_expires_at=bot_token_expires_at,
        group_behavior=group_behavior,
        rendering=rendering,
        ai_disclaimer=ai_disclaimer,
        welcome=welcome,
        reaction_ack=reaction_ack,
        route=route,
        on_error=on_error,
        api_base_url=api_base_url,
        _agent_file=caller if isinstance(caller, str) else None,
    )
