"""``fastagent add <what>``: add a part to an agent. ``add skill`` vendors a skill into ``skills/``;
``add github`` and ``add telegram`` put a chat channel in (``channels/<kind>.py``, its secret, and
for Telegram the ``telegram_send`` tool)."""

from __future__ import annotations

import click

from fastagent_cli.cli.common import dir_argument

__all__ = ["add", "github", "skill", "telegram"]


@click.group()
def add() -> None:
    """Add a part to the agent (skill, github, telegram)."""


@add.command()
@click.argument("source")
@dir_argument
@click.option("--update", is_flag=True, help="Replace the skill if the agent already has one of that name.")
def skill(source: str, directory: str, update: bool) -> None:
    """Copy a skill into the agent in DIR (default .) as skills/<name>/.

    SOURCE is a skill directory (./path), a name found in ~/.agents/skills or ~/.pi/agent/skills,
    or a git repository: a URL or a local repository (add //path/to/skill for a skill below its
    root, #ref for a branch or tag), or GitHub shorthand owner/repo/path/to/skill.
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


@add.command()
@dir_argument
def github(directory: str) -> None:
    """Add the GitHub webhook channel to the agent in DIR (default .): channels/github.py and a
    generated GITHUB_WEBHOOK_SECRET in .env."""
    _add_channel("github", directory)


@add.command()
@dir_argument
def telegram(directory: str) -> None:
    """Add the Telegram bot channel to the agent in DIR (default .): channels/telegram.py, the
    tools/telegram_send.py tool and a generated TELEGRAM_SECRET_TOKEN in .env."""
    _add_channel("telegram", directory)


_NEXT = {
    "github": [
        "edit {channel}: on(event) maps deliveries to turns (the example reviews opened pull requests)",
        "run `fastagent dev --tunnel{dir}`: it prints the Payload URL (https://<...>.trycloudflare.com/webhook)",
        "in the repository: Settings -> Webhooks -> Add webhook: that Payload URL, content type "
        "application/json, Secret: GITHUB_WEBHOOK_SECRET from {env}",
    ],
    "telegram": [
        "create a bot with @BotFather (/newbot) and put its token in {env}: TELEGRAM_BOT_TOKEN=...",
        "for groups, turn privacy mode off (@BotFather -> /setprivacy -> Disable) so the bot keeps context",
        "run `fastagent dev --tunnel{dir}`: it registers the webhook (setWebhook) once the tunnel answers",
        "the agent can send messages and files with the telegram_send tool (schedules, other chats)",
    ],
}


def _add_channel(kind: str, directory: str) -> None:
    from fastagent_cli.cli.common import say
    from fastagent_cli.definition.add_channel import add_channel
    from fastagent_cli.definition.placement import resolve_placement

    placement = resolve_placement(directory)
    added = add_channel(placement.agent_dir, kind)
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
    click.echo("Next:")
    for number, step in enumerate(_NEXT[kind], 1):
        click.echo(f"  {number}. " + step.format(channel=f"channels/{kind}.py", env=env, dir=where))
