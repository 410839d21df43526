"""The network half of ``fastagent add slack|feishu|lark``: onboarding the platform app.

Slack: the App Manifest API + OAuth install (:mod:`fastagent_cli.channels.slack.onboard`), or
``--replace-config``. Feishu: scan-to-create, scopes for context-aware groups, and for webhook
ingress the Verification Token capture. Lark: a guided credential paste (its app-creation flow is
broken upstream), validated with a tenant token. A public URL for the platform to reach comes from
a Quick Tunnel; ``FASTAGENT_SETUP_TUNNEL=off`` uses 127.0.0.1 directly (a platform or fake on this
machine). Credentials go to ``.env`` the moment they exist, so a re-run resumes.
"""

from __future__ import annotations

import os
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path

import click

from fastagent_cli.cli.common import say

__all__ = ["onboard_feishu", "onboard_lark", "onboard_slack_app", "replace_slack_config"]


def _open(url: str) -> None:
    if os.environ.get("FASTAGENT_NO_BROWSER") or not os.environ.get("DISPLAY") and os.name != "nt":
        return
    try:
        webbrowser.open(url)
    except Exception:
        pass


def _ask_secret(prompt: str) -> str:
    if not os.isatty(0):
        raise click.UsageError(
            f"{prompt}: no terminal to ask on (set it in the environment, or use --no-onboard)"
        )
    answer: str = click.prompt(prompt, hide_input=True)
    return answer


async def _public_url(port: int) -> tuple[str, Callable[[], Awaitable[None]]] | None:
    local = f"http://127.0.0.1:{port}"
    if os.environ.get("FASTAGENT_SETUP_TUNNEL", "").lower() == "off":

        async def nothing() -> None:
            return None

        return local, nothing
    from fastagent_cli.serving.tunnel import Tunnel

    tunnel = Tunnel(port)
    url = await tunnel.open()
    if url is None:
        await tunnel.close()
        return None
    say(f"[fastagent] temporary setup URL: {url}")
    return url, tunnel.close


def _env_writer(agent_dir: Path) -> Callable[[dict[str, str]], None]:
    from fastagent_cli.definition.add_channel import set_env_values

    def write(values: dict[str, str]) -> None:
        set_env_values(agent_dir, values)
        click.echo(f"  .env: set {', '.join(values)}")

    return write


def _state_root(agent_dir: Path) -> Path:
    from fastagent_cli.state.paths import resolve_state_root

    return resolve_state_root(agent_dir)


async def onboard_slack_app(agent_dir: Path, group_behavior: str) -> str:
    from fastagent_cli.channels.slack.onboard import OnboardIO, onboard_slack

    io = OnboardIO(click.echo, _ask_secret, _env_writer(agent_dir), _open, _public_url)
    return await onboard_slack(_state_root(agent_dir), agent_dir.name, group_behavior, io)


async def replace_slack_config(agent_dir: Path) -> None:
    from fastagent_cli.channels.slack.onboard import OnboardIO, replace_config_tokens

    io = OnboardIO(click.echo, _ask_secret, _env_writer(agent_dir), _open, _public_url)
    await replace_config_tokens(_state_root(agent_dir), io)


def _dotenv(agent_dir: Path) -> dict[str, str]:
    from fastagent_cli.definition.dotenv import parse_dotenv

    try:
        return parse_dotenv((agent_dir / ".env").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


async def _finish_feishu(
    agent_dir: Path, kind: str, app_id: str, secret: str, ingress: str, group_behavior: str
) -> None:
    from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError
    from fastagent_cli.channels.feishu.cloud import cloud_of
    from fastagent_cli.channels.feishu.onboard import (
        CONTEXT_SCOPES,
        capture_verification_token,
        request_scopes,
    )

    cloud = cloud_of(kind)
    prefix = cloud.env_prefix
    api = FeishuApi(kind, cloud.resolve_api_base(), app_id, secret)
    try:
        await api.tenant_token()
        if group_behavior == "context":
            try:
                await request_scopes(api, CONTEXT_SCOPES)
                click.echo(
                    f"  requested {', '.join(CONTEXT_SCOPES)} (a tenant admin approves them in the console)"
                )
            except FeishuApiError as exc:
                say(f"[fastagent] note: add {', '.join(CONTEXT_SCOPES)} under Permissions by hand ({exc})")
        if ingress == "webhook" and not _dotenv(agent_dir).get(f"{prefix}_VERIFICATION_TOKEN"):
            try:
                token = await capture_verification_token(api, kind, _public_url)
            except (FeishuApiError, Exception) as exc:
                say(
                    f"[fastagent] note: could not capture the Verification Token ({exc}); copy it "
                    "from the console "
                    f"(Events & Callbacks) into .env as {prefix}_VERIFICATION_TOKEN"
                )
            else:
                _env_writer(agent_dir)({f"{prefix}_VERIFICATION_TOKEN": token})
    except FeishuApiError as exc:
        raise click.ClickException(f"the {kind} app credentials do not work: {exc}") from None
    finally:
        await api.aclose()


async def onboard_feishu(agent_dir: Path, ingress: str, group_behavior: str) -> None:
    from fastagent_cli.channels.feishu.cloud import FEISHU
    from fastagent_cli.channels.feishu.onboard import register_app

    env = _dotenv(agent_dir)
    app_id, secret = env.get("FEISHU_APP_ID", ""), env.get("FEISHU_APP_SECRET", "")
    if app_id and secret:
        click.echo(f"  resuming with app {app_id} from .env")
    else:
        app_id, secret, brand = await register_app(FEISHU, agent_dir.name, click.echo, _open)
        _env_writer(agent_dir)({"FEISHU_APP_ID": app_id, "FEISHU_APP_SECRET": secret})
        if brand == "lark":
            say(
                "[fastagent] note: this tenant is on Lark: use `fastagent add lark` with these "
                "credentials instead"
            )
    await _finish_feishu(agent_dir, "feishu", app_id, secret, ingress, group_behavior)


async def onboard_lark(agent_dir: Path, ingress: str, group_behavior: str) -> None:
    env = _dotenv(agent_dir)
    app_id = env.get("LARK_APP_ID") or os.environ.get("LARK_APP_ID", "")
    secret = env.get("LARK_APP_SECRET") or os.environ.get("LARK_APP_SECRET", "")
    if not (app_id and secret):
        click.echo(
            "Create a custom app at https://open.larksuite.com/app (bot capability on), then "
            "paste its credentials."
        )
        app_id = app_id or _ask_secret("Lark App ID (cli_...)")
        secret = secret or _ask_secret("Lark App Secret")
        _env_writer(agent_dir)({"LARK_APP_ID": app_id, "LARK_APP_SECRET": secret})
    await _finish_feishu(agent_dir, "lark", app_id, secret, ingress, group_behavior)
