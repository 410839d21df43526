"""The GitHub webhook channel: :func:`github_channel` for ``channels/github.py``.

Verified deliveries -> the user's ``on(event)`` -> :class:`Intent` turns (:mod:`.ingress`); with
a token, tool approvals asked as comments and answered by ``/approve`` / ``/deny`` comments
(:mod:`.approvals`, through the REST client of :mod:`.api`).
"""

from fastagent_cli.channels.github.channel import GITHUB_SECRET_ENV, GithubChannel, github_channel
from fastagent_cli.channels.github.parse import MAX_WEBHOOK_BYTES, GithubEvent, Intent, sign_payload

__all__ = [
    "GITHUB_SECRET_ENV",
    "MAX_WEBHOOK_BYTES",
    "GithubChannel",
    "GithubEvent",
    "Intent",
    "github_channel",
    "sign_payload",
]
