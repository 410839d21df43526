"""``github_channel(on=...)``: the factory ``channels/github.py`` calls, and its options.

::

    # channels/github.py
    from fastagent_cli.channels import Intent, github_channel

    def on(event):
        if event.event == "pull_request" and event.action == "opened":
            pr = event.payload["pull_request"]
            return [Intent(session=event.delivery_id, text=f"Review PR #{pr['number']}.")]
        return []

    channel = github_channel(on=on)

The secret is ``secret=`` or ``GITHUB_WEBHOOK_SECRET``, read when the channel is mounted; an empty
one is an error then (importing the file needs no secret, so ``deploy`` can inspect it). The token
(``token=`` or ``GITHUB_TOKEN``, optional) lets the channel ask tool approvals as comments and read
the answers (:mod:`.approvals`); ``api_url=`` or ``GITHUB_API_URL`` points it at GitHub Enterprise
Server. The webhook itself is :mod:`.ingress`, imported only when the channel is mounted.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from fastagent_cli.channels.github.parse import ROUTE, On
from fastagent_cli.channels.kit.routes import ChannelRoutes
from fastagent_cli.errors import ServeError

__all__ = ["GITHUB_SECRET_ENV", "GithubChannel", "github_channel"]

log = logging.getLogger("fastagent.channel")

GITHUB_SECRET_ENV = "GITHUB_WEBHOOK_SECRET"
_TOKEN_ENV = "GITHUB_TOKEN"


class GithubChannel:
    """``channel(ctx)`` mounts ``/webhook``; ``register_webhook(url)`` prints the Payload URL."""

    kind = "github"

    def __init__(
        self, on: On, secret: str | None = None, token: str | None = None, api_url: str | None = None
    ) -> None:
        if not callable(on):
            raise TypeError("github_channel(on=...) needs a function event -> [Intent(session, text)]")
        self.on = on
        self.secret = secret
        self.token = token
        self.api_url = api_url

    def __call__(self, ctx: Any) -> ChannelRoutes:
        secret = self.secret if self.secret is not None else os.environ.get(GITHUB_SECRET_ENV, "")
        if not secret:
            raise ServeError(
                f"github_channel needs a webhook secret: set {GITHUB_SECRET_ENV} in .env (an empty secret "
                "would accept forged deliveries)"
            )
        from fastagent_cli.channels.github.ingress import GithubIngress

        token = self.token if self.token is not None else os.environ.get(_TOKEN_ENV, "")
        return GithubIngress(ctx, secret, self.on, token.strip(), self.api_url).routes()

    def register_webhook(self, public_url: str) -> str:
        """GitHub webhooks are set by a person: print what to paste; the outcome is ``manual``."""
        log.info(
            "[github] set the repository webhook (Settings -> Webhooks -> Add webhook): Payload URL %s%s, "
            "content type application/json, secret: the value of %s",
            public_url.rstrip("/"),
            ROUTE,
            GITHUB_SECRET_ENV,
        )
        return "manual"


def github_channel(
    *, on: On, secret: str | None = None, token: str | None = None, api_url: str | None = None
) -> GithubChannel:
    """The GitHub channel (see the module doc). ``secret`` defaults to ``GITHUB_WEBHOOK_SECRET``,
    ``token`` to ``GITHUB_TOKEN``, ``api_url`` to ``GITHUB_API_URL`` (else ``https://api.github.com``)."""
    return GithubChannel(on, secret, token, api_url)
