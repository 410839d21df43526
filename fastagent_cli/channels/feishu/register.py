"""Registering the Feishu/Lark webhook (``register_webhook``, for ``dev --tunnel`` and ``deploy --run``):
wait for ``<public url>/health``, then PATCH the app's ``event.request_url`` to ``<public url>/<kind>``
through the application config API. A cloud whose config route answers 404 (Lark) means a manual
step; no credentials, or a URL that never answers, too: the outcome says which (``registered``,
``manual``, ``failed``) and the log names the URL to set by hand.
"""

from __future__ import annotations

import logging

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError
from fastagent_cli.channels.feishu.cloud import Cloud
from fastagent_cli.channels.kit.health import HEALTH_INTERVAL_S, HEALTH_TIMEOUT_S, wait_for_health
from fastagent_cli.errors import one_line

__all__ = ["register_request_url"]

log = logging.getLogger("fastagent.channel")


async def register_request_url(
    cloud: Cloud, public_url: str, app_id: str, app_secret: str, api_base_url: str | None
) -> str:
    request_url = f"{public_url.rstrip('/')}/{cloud.kind}"
    if not app_id or not app_secret:
        log.info(
            "%s set %s_APP_ID/_APP_SECRET, then register the Request URL %s",
            cloud.label,
            cloud.env_prefix,
            request_url,
        )
        return "manual"
    if not await wait_for_health(public_url.rstrip("/") + "/health", HEALTH_TIMEOUT_S, HEALTH_INTERVAL_S):
        log.error(
            "%s %s/health did not answer; set the Request URL by hand: %s",
            cloud.label,
            public_url,
            request_url,
        )
        return "failed"
    api = FeishuApi(cloud.kind, cloud.resolve_api_base(api_base_url), app_id, app_secret)
    try:
        await api.patch_config({"event": {"subscription_type": "webhook", "request_url": request_url}})
    except FeishuApiError as exc:
        if exc.status == 404:
            log.info(
                "%s this cloud has no config API: set the Request URL by hand in the console: %s",
                cloud.label,
                request_url,
            )
            return "manual"
        log.error(
            "%s registering the Request URL failed (%s); set it by hand: %s",
            cloud.label,
            one_line(str(exc), 300),
            request_url,
        )
        return "failed"
    finally:
        await api.aclose()
    log.info("%s Request URL registered: %s", cloud.label, request_url)
    return "registered"
