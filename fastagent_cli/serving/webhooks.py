"""Announcing a ``--tunnel`` URL to the channels (feature S3).

Once the tunnel has a public URL, every route channel hears of it: one with a
``register_webhook(public_url)`` hook registers itself (Telegram calls ``setWebhook`` once the URL
answers ``/health``; GitHub prints the Payload URL to paste), and for any other route channel the
URLs of its routes are printed. Long connections need no webhook. The outcome of each hook
(``registered``, ``manual``, ``failed``) is logged; a dev server keeps serving whatever it is.
"""

from __future__ import annotations

import inspect
import logging
from collections import defaultdict

from fastagent_cli.errors import one_line
from fastagent_cli.serving.channels import LoadedChannels
from fastagent_cli.serving.router import parse_route_key

__all__ = ["announce_webhooks"]

log = logging.getLogger("fastagent.host")


async def announce_webhooks(public_url: str, loaded: LoadedChannels) -> None:
    base = public_url.rstrip("/")
    hooked = set()
    for file, hook in loaded.webhooks:
        hooked.add(file)
        try:
            outcome = hook(base)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception as exc:
            log.error(
                "[fastagent] %s: register_webhook raised %s",
                file,
                one_line(f"{type(exc).__name__}: {exc}", 300),
            )
            continue
        log.info("[fastagent] %s: webhook %s", file, outcome)
    unhooked: dict[str, list[str]] = defaultdict(list)
    for key, owner in loaded.route_owners.items():
        if owner not in hooked:
            unhooked[owner].append(base + parse_route_key(key).path)
    for file, urls in unhooked.items():
        log.info("[fastagent] %s: point its platform at %s", file, ", ".join(dict.fromkeys(urls)))
