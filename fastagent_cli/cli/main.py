"""Entry point. Start-up is a feature: ``--version`` answers before click is imported, and each
command module is imported only when that command runs (``--help`` lists commands from the table
in :data:`fastagent_cli.cli.COMMANDS` without importing them)."""

from __future__ import annotations

import os
import sys
from typing import Any

from fastagent_cli._version import __version__
from fastagent_cli.cli import COMMANDS

__all__ = ["COMMANDS", "main"]


def _use_color(stream: Any) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def report_error(message: str) -> None:
    prefix = "\x1b[1;31mError:\x1b[0m" if _use_color(sys.stderr) else "Error:"
    sys.stderr.write(f"{prefix} {message}\n")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-v"]):
        sys.stdout.write(f"fastagent {__version__}\n")
        raise SystemExit(0)
    raise SystemExit(run(args))


def skip_httpx_cli() -> None:
    """``import httpx`` also imports its own command-line client (``httpx._main``: rich, pygments,
    about 80 modules) unless that import fails, when httpx defines a stand-in ``httpx.main``.
    fastagent never runs httpx's CLI, so the command line blocks it (issue 35); library users'
    processes are left alone."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def run(args: list[str]) -> int:
    from fastagent_cli.heap import raise_young_threshold

    raise_young_threshold()  # start-up allocates much and frees little: fewer collections
    skip_httpx_cli()
    import click

    from fastagent_cli.cli.group import build_cli
    from fastagent_cli.errors import FastagentError, one_line

    cli = build_cli()
    try:
        cli.main(args=args, prog_name="fastagent", standalone_mode=False)
    except FastagentError as exc:
        report_error(one_line(exc.message))
        return exc.exit_code
    except click.UsageError as exc:
        exc.show()
        return 2
    except click.ClickException as exc:
        report_error(one_line(exc.format_message()))
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.stderr.write("\nAborted.\n")
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # never a traceback for users; FASTAGENT_DEBUG=1 shows one
        if os.environ.get("FASTAGENT_DEBUG"):
            raise
        report_error(
            f"internal error: {type(exc).__name__}: {one_line(str(exc))} "
            "(set FASTAGENT_DEBUG=1 for a traceback)"
        )
        return 1
    return 0


if __name__ == "__main__":
    main()
