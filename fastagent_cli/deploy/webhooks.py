"""Webhook registration once the deployed agent has a public URL (``--run``).

Each route channel reports one of three facts: ``registered`` (its ``register_webhook(public_url)``
hook did it), ``manual`` (a person must paste the URL into the platform: GitHub always, any
channel without a hook), or ``failed`` (the hook raised or said so). Long connections have no
webhook. Every channel is attempted; then the manual steps are repeated (so they are not lost in
the output above) and any ``failed`` stops the deploy with a non-zero exit: the app itself is up,
and a re-run retries the registration.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Literal

from fastagent_cli.deploy.facts import DeployFacts
from fastagent_cli.errors import DeployError, one_line

__all__ = ["OUTCOMES", "Outcome", "register_webhooks"]

Outcome = Literal["registered", "manual", "failed"]
OUTCOMES: tuple[Outcome, ...] = ("registered", "manual", "failed")
_DEFAULT_PATHS = {
    "github": "/webhook",
    "telegram": "/telegram",
    "slack": "/slack",
    "feishu": "/feishu",
    "lark": "/lark",
}


def register_webhooks(facts: DeployFacts, public_url: str, say: Callable[[str], None], retry: str) -> None:
    """Register every route channel at ``public_url``; raises DeployError when one failed."""
    base = public_url.rstrip("/")
    manual: list[str] = []
    failed: list[str] = []
    for channel in facts.channels:
        if channel.long_connection:
            say(f"[fastagent] {channel.name}: long connection, no webhook to register")
            continue
        outcome = _register(channel.name, channel.register_webhook, base, say)
        say(f"[fastagent] {channel.name}: webhook {outcome}")
        if outcome == "manual":
            manual.append(channel.name)
        elif outcome == "failed":
            failed.append(channel.name)
    for name in manual:
        say(f"[fastagent] {name}: webhook registration needs a one-time manual step (see above)")
    if failed:
        raise DeployError(
            f"deploy stopped: webhook registration failed for: {', '.join(failed)}; the app itself deployed: "
            f"fix the error above, then {retry}"
        )


def _register(name: str, hook: object, base: str, say: Callable[[str], None]) -> Outcome:
    if hook is None:
        if name == "github":
            say(
                f"[fastagent] github: set the webhook in the repository (Settings -> Webhooks): "
                f"{base}/webhook"
            )
        elif name in _DEFAULT_PATHS:
            say(
                f"[fastagent] {name}: set the platform's webhook / request URL to "
                f"{base}{_DEFAULT_PATHS[name]}"
            )
        else:
            say(f"[fastagent] {name}: point its platform at {base}/<its route> (no register_webhook hook)")
        return "manual"
    if not callable(hook):
        say(f"[fastagent] {name}: register_webhook is not callable")
        return "failed"
    try:
        result = hook(base)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
    except Exception as exc:
        say(f"[fastagent] {name}: register_webhook raised {one_line(f'{type(exc).__name__}: {exc}', 300)}")
        return "failed"
    if result not in OUTCOMES:
        say(f"[fastagent] {name}: register_webhook returned {result!r}, not one of {', '.join(OUTCOMES)}")
        return "failed"
    return result  # type: ignore[no-any-return]


async def _awaited(awaitable: object) -> object:
    return await awaitable  # type: ignore[misc]
