"""``fastagent init [dir]``: scaffold an agent that runs at once.

The agent goes to ``<dir>/fastagent/`` (``--agent-dir NAME`` renames it), or into ``<dir>`` itself
with ``--flat`` (existing files are kept). ``--minimal`` leaves out the example tool. ``--model``
writes the model into ``fastagent.toml``; without it the agent starts on the offline demo model
``scripted/demo``, the one model ``init`` can prove works (it ships the script), so ``chat``,
``start`` and ``dev`` run at once; a comment in the file says how to switch. A key in the
environment is only suggested, never written: it is unverified, may belong to another project,
and a committed agent would depend on this shell. All or nothing: a failure leaves no file.
"""

from __future__ import annotations

from pathlib import Path

import click

from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import UsageError

__all__ = ["init"]


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when it is inside it, else absolute."""
    absolute = path.resolve()
    try:
        rel = absolute.relative_to(Path.cwd().resolve())
    except ValueError:
        return str(absolute)
    return str(rel) if str(rel) != "." else "."


def _quote(text: str) -> str:
    return text if text and all(c.isalnum() or c in "._/-~" for c in text) else f"'{text}'"


@click.command(epilog=examples("init"))
@click.argument("directory", required=False, default=".", metavar="[DIR]")
@click.option("--minimal", is_flag=True, help="Leave out the example tool (tools/fetch_url.py).")
@click.option(
    "--agent-dir", "agent_dir", metavar="NAME", help="Name of the agent directory (default fastagent)."
)
@click.option("--flat", is_flag=True, help="Make DIR itself the agent, keeping every existing file.")
@click.option("-m", "--model", "model", metavar="SPEC", help='Write model = "SPEC" into fastagent.toml.')
def init(directory: str, minimal: bool, agent_dir: str | None, flat: bool, model: str | None) -> None:
    """Create an agent in DIR (default .): persona, an example skill and tool, fastagent.toml."""
    if flat and agent_dir is not None:
        raise UsageError("--flat and --agent-dir cannot be combined (--flat makes DIR itself the agent)")
    if model is not None:
        _check_model(model)
    from fastagent_cli.definition.scaffold import scaffold

    result = scaffold(directory, agent_dirname=agent_dir, flat=flat, minimal=minimal, model=model)
    where = _shown(result.agent_dir)
    click.echo(f"Created an agent in {where} (workspace {_shown(result.workspace)}):")
    for rel in result.created:
        click.echo(f"  + {rel}")
    for rel in result.kept:
        note = " (added .fastagent/ and .env)" if rel in result.patched else ""
        click.echo(f"  = {rel} (kept, already there){note}")
    target = _quote(_shown(result.workspace))
    suffix = "" if target == "." else f" {target}"
    click.echo("Next:")
    if model is None:
        click.echo(f'  fastagent invoke "hello"{suffix}   # the offline demo model: no key, no network')
        click.echo(f"  fastagent chat{suffix}")
        config = _shown(result.agent_dir / "fastagent.toml")
        click.echo(
            f'  switch to a real model: set model = "provider/model" in {config} '
            f"(`fastagent models` lists them), then `fastagent login <provider>{suffix}`"
        )
        ready = _provider_with_a_key()
        if ready is not None:
            click.echo(f'  ({ready[1]} is set: model = "{ready[0]}" would use it)')
    else:
        click.echo(f'  fastagent invoke "hello"{suffix}')
    click.echo(f"  fastagent info{suffix}")


def _provider_with_a_key() -> tuple[str, str] | None:
    """``(default spec, variable)`` of the first catalog provider whose key is in the environment."""
    import os

    from fastagent_cli.models.registry import ModelRegistry

    for provider in ModelRegistry().providers.values():
        found = next((name for name in provider.api_key_env if os.environ.get(name)), None)
        if found is not None and provider.default_model and not provider.key_optional:
            return f"{provider.name}/{provider.default_model}", found
    return None


def _check_model(spec: str) -> None:
    if "/" not in spec or spec.startswith("/") or spec.endswith("/") or any(c.isspace() for c in spec):
        raise UsageError(f'--model takes "provider/model" (e.g. scripted/echo), not {spec!r}')
    from fastagent_cli.models.registry import ModelRegistry

    ModelRegistry().resolve(spec)  # an unknown model fails here, before anything is written
