"""``fastagent help [COMMAND [SUBCOMMAND]]``: a command's help, as ``--help`` prints it (the
spelling other agent CLIs use; ``fastagent help`` alone is ``fastagent --help``)."""

from __future__ import annotations

import click

from fastagent_cli.cli.help_text import examples

__all__ = ["help_command"]


@click.command("help", context_settings={"ignore_unknown_options": True}, epilog=examples("help"))
@click.argument("names", nargs=-1)
@click.pass_context
def help_command(ctx: click.Context, names: tuple[str, ...]) -> None:
    """Show the help of COMMAND (and SUBCOMMAND), or of fastagent itself."""
    root = ctx.find_root()
    command: click.Command = root.command
    parent = root
    path = [root.info_name or "fastagent"]
    for name in names:
        group = command if isinstance(command, click.Group) else None
        found = group.get_command(parent, name) if group is not None else None
        if found is None:
            where = " ".join(path)
            if group is None:
                raise click.UsageError(f"{where} takes no subcommand (so no {name!r})", ctx)
            wanted = " ".join((*path[1:], name))
            raise click.UsageError(f"no command {wanted!r} ({where} --help lists them)", ctx)
        parent = click.Context(found, info_name=name, parent=parent)
        command = found
        path.append(name)
    if command is root.command:
        parent = root
    click.echo(command.get_help(parent), color=ctx.color)
