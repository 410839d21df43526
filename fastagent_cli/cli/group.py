"""The click group: commands are resolved from :data:`~fastagent_cli.cli.COMMANDS` on demand,
and a mistyped command gets a suggestion instead of running."""

from __future__ import annotations

import difflib
import importlib
from typing import TYPE_CHECKING

import click

from fastagent_cli._version import __version__
from fastagent_cli.cli import COMMANDS
from fastagent_cli.cli.common import log_format_option
from fastagent_cli.cli.help_text import examples

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

__all__ = ["LazyGroup", "build_cli"]


class LazyGroup(click.Group):
    def __init__(self, *args: object, lazy: dict[str, tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.lazy.get(cmd_name)
        if entry is None:
            return None
        module_name, _, attr = entry[0].partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{entry[0]} is not a click command")
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in self.lazy:
            close = difflib.get_close_matches(name, list(self.lazy), n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise click.UsageError(f"unknown command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Command names from the table (completing them imports no command module), then options."""
        from click.shell_completion import CompletionItem

        items = [
            CompletionItem(name, help=self.lazy[name][1])
            for name in sorted(self.lazy)
            if name.startswith(incomplete)
        ]
        return items + click.Command.shell_complete(self, ctx, incomplete)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy[name][1]) for name in sorted(self.lazy)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def build_cli() -> click.Group:
    @click.group(
        cls=LazyGroup,
        lazy=COMMANDS,
        context_settings={"help_option_names": ["-h", "--help"]},
        invoke_without_command=False,
        epilog=examples(""),
    )
    @log_format_option
    @click.version_option(
        __version__, "-v", "--version", prog_name="fastagent", message="%(prog)s %(version)s"
    )
    def cli() -> None:
        """fastagent: turn an agent directory into a live service.

        An agent is a directory holding fastagent.toml (plus persona.md, AGENTS.md, skills/,
        tools/, channels/, schedules/). Run `fastagent <command> --help` for a command's options.
        """

    return cli
