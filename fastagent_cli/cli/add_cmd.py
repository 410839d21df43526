"""``fastagent add <what>``: add a part to an agent. ``add skill`` vendors a skill into ``skills/``;
``add github`` and ``add telegram`` put a chat channel in (``channels/<kind>.py``, its secret, and
for Telegram the ``telegram_send`` tool)."""

from __future__ import annotations

from pathlib import Path

import click

from fastagent_cli.cli.common import dir_argument
from fastagent_cli.cli.help_text import examples

__all__ = ["add", "feishu", "github", "lark", "skill", "slack", "telegram"]


@click.group(epilog=examples("add"))
def add() -> None:
    """Add a part to the agent (skill, github, telegram, slack, feishu, lark)."""


@add.command(epilog=examples("add skill"), short_help="Copy a skill into the agent's skills/.")
@click.argument("source")
@dir_argument
@click.option("--update", is_flag=True, help="Replace the skill if the agent already has one of that name.")
def skill(source: str, directory: str, update: bool) -> None:
    """Copy a skill into the agent in DIR (default .) as skills/<name>/.

    SOURCE is a skill directory (./path), a name found in ~/.agents/skills (or ~/.pi/agent/skills,
    the pi coding agent's), or a git repository: a URL or a local repository (add //path/to/skill
    for a skill below its root, #ref for a branch or tag), or GitHub shorthand owner/repo/path.
    """
    from fastagent_cli.cli.common import say
    from fastagent_cli.definition.placement import resolve_placement
    from fastagent_cli.definition.vendor_skill import vendor_skill

    placement = resolve_placement(directory)
    added = vendor_skill(placement.agent_dir, source, update=update)
    rel = added.dest.relative_to(placement.agent_dir)
    verb = "Updated" if added.overwritten else "Added"
    click.echo(f"{verb} skill {added.name} in {placement.agent_dir / rel}")
    click.echo(f"  {added.description.strip().splitlines()[0]}")
    for diagnostic in added.diagnostics:
        say(f"[fastagent] warn: {diagnostic.path}: {diagnostic.message}")
    if added.has_scripts:
        say(f"[fastagent] note: {rel}/scripts/ holds code the agent may run: review it")
    say("[fastagent] the agent sees the skill on its next turn (no restart needed)")


@add.command(epilog=examples("add github"), short_help="Add the GitHub webhook channel.")
@dir_argument
def github(directory: str) -> None:
    """Add the GitHub webhook channel to the agent in DIR (default .): channels/github.py and a
    generated GITHUB_WEBHOOK_SECRET in .env."""
    _add_channel("github", directory)


@add.command(epilog=examples("add telegram"), short_help="Add the Telegram bot channel.")
@dir_argument
def telegram(directory: str) -> None:
    """Add the Telegram bot channel to the agent in DIR (default .): channels/telegram.py, the
    tools/telegram_send.py tool and a generated TELEGRAM_SECRET_TOKEN in .env."""
    _add_channel("telegram", directory)


_GROUP = click.option(
    "--group-behavior",
    type=click.Choice(["context", "mentions"]),
    default="context",
    show_default=True,
    help="context: bare replies in threads the agent takes part in and group discussion as context "
    "(more read access); mentions: DMs and @mentions only (least privilege).",
)
_INGRESS = click.option(
    "--ingress",
    type=click.Choice(["websocket", "webhook"]),
    default="websocket",
    show_default=True,
    help="websocket: a long connection, no public URL; webhook: POST /<kind> behind a public URL.",
)
_NO_ONBOARD = click.option("--no-onboard", is_flag=True, help="Only write the files; set the app up by hand.")


@add.command(epilog=examples("add slack"), short_help="Add the Slack channel and create its app.")
@dir_argument
@_GROUP
@_NO_ONBOARD
@click.option(
    "--replace-config", is_flag=True, help="Replace expired App Configuration tokens; the app is untouched."
)
def slack(directory: str, group_behavior: str, no_onboard: bool, replace_config: bool) -> None:
    """Add the Slack channel to the agent in DIR (default .): channels/slack.py, tools/slack_send.py,
    then create and install the app through Slack's manifest API (resumable)."""
    from fastagent_cli.cli.add_onboard import onboard_slack_app, replace_slack_config
    from fastagent_cli.cli.common import run_async
    from fastagent_cli.definition.placement import resolve_placement

    if replace_config:
        if no_onboard:
            raise click.UsageError("--replace-config and --no-onboard do not go together")
        run_async(replace_slack_config(resolve_placement(directory).agent_dir))
        return
    agent_dir = _add_channel("slack", directory, group_behavior=group_behavior, show_next=no_onboard)
    if not no_onboard:
        run_async(onboard_slack_app(agent_dir, group_behavior))
        click.echo("Next: run `fastagent dev --tunnel`; invite the app to the channels it should read.")


def _feishu_like(kind: str, directory: str, ingress: str, group_behavior: str, no_onboard: bool) -> None:
    from fastagent_cli.cli.add_onboard import onboard_feishu, onboard_lark
    from fastagent_cli.cli.common import run_async

    agent_dir = _add_channel(
        kind, directory, ingress=ingress, group_behavior=group_behavior, show_next=no_onboard
    )
    if no_onboard:
        return
    run_async((onboard_feishu if kind == "feishu" else onboard_lark)(agent_dir, ingress, group_behavior))
    console = "open.feishu.cn/app" if kind == "feishu" else "open.larksuite.com/app"
    mode = (
        "long connection"
        if ingress == "websocket"
        else "webhook (`fastagent dev --tunnel` registers the URL)"
    )
    click.echo(
        f"Next: in https://{console}: Events & Callbacks -> {mode}; create and publish a version; "
        "add the bot to a chat."
    )


@add.command(epilog=examples("add feishu"), short_help="Add the Feishu channel.")
@dir_argument
@_INGRESS
@_GROUP
@_NO_ONBOARD
def feishu(directory: str, ingress: str, group_behavior: str, no_onboard: bool) -> None:
    """Add the Feishu channel to the agent in DIR (default .): channels/feishu.py, tools/feishu_send.py,
    then create the app by scan-to-create (resumable)."""
    _feishu_like("feishu", directory, ingress, group_behavior, no_onboard)


@add.command(epilog=examples("add lark"), short_help="Add the Lark channel.")
@dir_argument
@_INGRESS
@_GROUP
@_NO_ONBOARD
def lark(directory: str, ingress: str, group_behavior: str, no_onboard: bool) -> None:
    """Add the Lark channel to the agent in DIR (default .): channels/lark.py, tools/lark_send.py, then
    a guided credential paste."""
    _feishu_like("lark", directory, ingress, group_behavior, no_onboard)


_NEXT = {
    "github": [
        "edit {channel}: on(event) maps deliveries to turns (the example reviews opened pull requests)",
        "run `fastagent dev --tunnel{dir}`: it prints the Payload URL (https://<...>.trycloudflare.com/webhook)",
        "in the repository: Settings -> Webhooks -> Add webhook: that Payload URL, content type "
        "application/json, Secret: GITHUB_WEBHOOK_SECRET from {env}",
        "for tool approvals as comments (/approve, /deny <reason>), put GITHUB_TOKEN into {env} "
        "(Issues and Pull requests: read and write)",
    ],
    "telegram": [
        "create a bot with @BotFather (/newbot) and put its token in {env}: TELEGRAM_BOT_TOKEN=...",
        "for groups, turn privacy mode off (@BotFather -> /setprivacy -> Disable) so the bot keeps context",
        "run `fastagent dev --tunnel{dir}`: it registers the webhook (setWebhook) once the tunnel answers",
        "the agent can send messages and files with the telegram_send tool (schedules, other chats)",
    ],
    "slack": [
        "create an app at https://api.slack.com/apps with the scopes and events README.md lists "
        "(Slack section)",
        "put SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET into {env}",
        "run `fastagent dev --tunnel{dir}` and set Event Subscriptions -> Request URL to <tunnel>/slack",
    ],
    "feishu": [
        "create a custom app at https://open.feishu.cn/app (bot on; scopes as README.md lists)",
        "put FEISHU_APP_ID / FEISHU_APP_SECRET (webhook: FEISHU_VERIFICATION_TOKEN) into {env}",
        "Events & Callbacks: subscribe im.message.receive_v1, pick the mode; publish a version",
    ],
    "lark": [
        "create a custom app at https://open.larksuite.com/app (bot on; scopes as README.md lists)",
        "put LARK_APP_ID / LARK_APP_SECRET (webhook: LARK_VERIFICATION_TOKEN) into {env}",
        "Events & Callbacks: subscribe im.message.receive_v1, pick the mode; publish a version",
    ],
}


def _add_channel(kind: str, directory: str, *, show_next: bool = True, **options: str) -> Path:
    from fastagent_cli.cli.common import say
    from fastagent_cli.definition.add_channel import add_channel
    from fastagent_cli.definition.placement import resolve_placement

    placement = resolve_placement(directory)
    added = add_channel(placement.agent_dir, kind, **options)
    click.echo(f"Added the {kind} channel to {placement.agent_dir}")
    for rel in added.created:
        click.echo(f"  created {rel}")
    for rel in added.kept:
        click.echo(f"  kept    {rel} (it exists; not overwritten)")
    for name in added.generated:
        click.echo(f"  .env: generated {name}")
    if added.example_added:
        click.echo(f"  .env.example: added {', '.join(added.example_added)}")
    if added.gitignore_patched:
        click.echo("  .gitignore: ignores .env")
    for rel in added.disabled:
        say(f"[fastagent] note: {rel} is also there (disabled); channels/{kind}.py is the enabled one")
    for name in added.in_environment:
        say(f"[fastagent] note: {name} is set in the environment, so .env was left alone; keep them in step")
    env = placement.agent_dir / ".env"
    where = "" if directory in (".", "") else f" {directory}"
    if show_next:
        click.echo("Next:")
        for number, step in enumerate(_NEXT[kind], 1):
            click.echo(f"  {number}. " + step.format(channel=f"channels/{kind}.py", env=env, dir=where))
    return placement.agent_dir
