"""``fastagent add <what>``: add a part to an agent. ``add skill`` vendors a skill into ``skills/``."""

from __future__ import annotations

import click

from fastagent_cli.cli.common import dir_argument

__all__ = ["add", "skill"]


@click.group()
def add() -> None:
    """Add a part to the agent (skill)."""


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
