"""Every command's ``--help`` as a user reads it: an example at the foot, summaries that are whole
sentences, the short flags of ``llm``-style tools, and no in-house jargon."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from fastagent_cli.cli.group import build_cli
from fastagent_cli.cli.help_text import EXAMPLES
from tests.conftest import RunCli


def command_paths() -> Iterator[tuple[str, ...]]:
    cli = build_cli()
    ctx = click.Context(cli)

    def walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, (*path, name))

    yield from walk(cli, ())


PATHS = list(command_paths())


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "fastagent")
def test_every_help_has_an_example_and_no_jargon(run_cli: RunCli, path: tuple[str, ...]) -> None:
    done = run_cli(*path, "--help")
    assert done.returncode == 0, done.stderr
    foot = done.stdout.split("\n  Examples:\n", 1)
    assert len(foot) == 2, f"no examples in `fastagent {' '.join(path)} --help`"
    examples = [line.strip() for line in foot[1].splitlines() if line.strip()]
    assert examples and all(line.startswith(("fastagent ", "git ", "PORT=")) for line in examples), examples
    assert all(f"fastagent {' '.join(path)}".strip() in line for line in examples) or not path, examples
    assert not re.search(r"\bpi's\b|\bthe original\b|\(pi\b", done.stdout), done.stdout
    cut = [line for line in done.stdout.splitlines()[1:] if line.rstrip().endswith("...")]
    assert not cut, cut  # a summary cut mid-sentence


def test_the_examples_table_has_no_stale_entry() -> None:
    assert set(EXAMPLES) == {" ".join(p) for p in PATHS}


def test_short_flags(run_cli: RunCli, tmp_path: object) -> None:
    for path, flags in (
        (("invoke",), ("-m, --model", "-s, --session", "-c, --continue", "-j, --json")),
        (("chat",), ("-m, --model", "-s, --session", "-c, --continue", "-j, --json")),
        (("models",), ("-j, --json",)),
        (("schedule", "list"), ("-j, --json",)),
        (("init",), ("-m, --model",)),
    ):
        shown = run_cli(*path, "-h").stdout
        for flag in flags:
            assert flag in shown, (path, flag)
    assert run_cli("-v").stdout.startswith("fastagent ")


def test_invoke_takes_the_short_flags(make_agent: object, run_cli: RunCli) -> None:
    agent = make_agent()  # type: ignore[operator]
    first = run_cli("invoke", "one", str(agent), "-s", "s1", "-m", "scripted/echo")
    assert first.stdout == "echo: one\n", first.stderr
    again = run_cli("invoke", "two", str(agent), "-c", "-j")
    assert '"session":"s1"' in again.stdout.splitlines()[0]
