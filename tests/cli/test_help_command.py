"""``fastagent help [COMMAND [SUBCOMMAND]]`` through the real CLI process: the same text as
``--help``, a usage error (exit 2, one line) for a name that is not a command."""

from __future__ import annotations

from tests.conftest import RunCli


def test_help_prints_what_dash_dash_help_prints(run_cli: RunCli) -> None:
    for words in ((), ("chat",), ("sessions",), ("sessions", "list"), ("schedule", "cancel")):
        shown = run_cli("help", *words)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == run_cli(*words, "--help").stdout
    assert "help" in run_cli("--help").stdout  # listed with the other commands


def test_help_of_an_unknown_command_is_a_usage_error(run_cli: RunCli) -> None:
    unknown = run_cli("help", "nope")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "Error: no command 'nope' (fastagent --help lists them)" in unknown.stderr
    sub = run_cli("help", "sessions", "nope")
    assert sub.returncode == 2
    assert "Error: no command 'sessions nope' (fastagent sessions --help lists them)" in sub.stderr
    leaf = run_cli("help", "chat", "more")
    assert leaf.returncode == 2 and "fastagent chat takes no subcommand (so no 'more')" in leaf.stderr
    assert "Traceback" not in unknown.stderr + sub.stderr + leaf.stderr
