"""The first-run model picker: when nothing names a model and a terminal is attached.

Commands call :func:`ensure_model` before they open the agent::

    model = ensure_model(directory, model, no_input, auth_path=auth_path)
    opened = open_agent_dir(directory, model=model, auth_path=auth_path, ...)

When ``--model``, ``FASTAGENT_MODEL`` or the config's ``model`` names one, it returns ``model``
unchanged and shows nothing. Otherwise, with ``--no-input`` or without a terminal (stdin and
stdout), it raises the one-line :data:`~fastagent_cli.assembly.MISSING_MODEL` error. With a
terminal it lists the whole catalog, providers that already have a credential first (annotated
with its source, e.g. ``ready — OPENAI_API_KEY``), then providers that need no key, then the
rest; picking a model whose provider has no key runs ``login`` inline (into the agent's credential
file); the choice is written into ``fastagent.toml`` keeping its comments, and the command goes on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.cli.common import say
from fastagent_cli.errors import CredentialError, ModelError
from fastagent_cli.models.registry import ModelRegistry, ProviderInfo, parse_spec

__all__ = ["ProviderChoice", "ensure_model", "pick_model", "provider_choices"]

READY, NO_KEY, NEEDS_KEY = 0, 1, 2
OFFLINE_SPEC = "scripted/echo"


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    provider: ProviderInfo
    rank: int
    """0 ready (a credential was found), 1 needs no key, 2 needs a key (login runs inline)."""
    note: str

    @property
    def models(self) -> list[str]:
        """The provider's specs, its default model first."""
        ids = list(self.provider.models)
        default = self.provider.default_model
        if default in ids:
            ids.remove(default)
            ids.insert(0, default)
        return [f"{self.provider.name}/{model_id}" for model_id in ids]


def provider_choices(
    registry: ModelRegistry, auth_path: Path | None, env: Mapping[str, str] | None = None
) -> list[ProviderChoice]:
    """Every provider with models, ready ones first (catalog order within each group)."""
    from fastagent_cli.models.credentials import read_auth_file, resolve_credential

    if auth_path is not None:
        read_auth_file(auth_path)  # a broken credential file is one clear error, not one per provider
    out: list[ProviderChoice] = []
    for provider in registry.providers.values():
        if not provider.models:
            continue
        sample = next(iter(provider.models.values()))
        try:
            credential = resolve_credential(sample, auth_path, env)
        except CredentialError as exc:
            out.append(ProviderChoice(provider, NEEDS_KEY, f"needs a key ({exc.message})"))
            continue
        if credential.source == "not needed":
            out.append(ProviderChoice(provider, NO_KEY, "no key needed"))
        elif credential.key:
            label = credential.source.split(" (", 1)[0]  # "stored credential (<path>)" -> short form
            out.append(ProviderChoice(provider, READY, f"ready — {label}"))
        else:
            wanted = " or ".join(provider.api_key_env) or ("a login" if provider.oauth else "an API key")
            out.append(ProviderChoice(provider, NEEDS_KEY, f"needs {wanted} — login runs next"))
    return sorted(out, key=lambda c: c.rank)


def _render(choices: list[ProviderChoice], config_path: Path) -> list[str]:
    """Print the numbered catalog, compact (models in columns) so ready providers stay on screen."""
    from rich.columns import Columns
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    console = Console(file=sys.stdout, highlight=False)
    console.print(f"[bold]No model is set.[/] Pick one for this agent (saved to {escape(str(config_path))}):")
    specs: list[str] = []
    styles = {READY: "green", NO_KEY: "cyan", NEEDS_KEY: "yellow"}
    groups = [(c.provider.name, c.note, styles[c.rank], c.models) for c in choices]
    groups.append(("scripted", "offline test model (echoes the prompt)", "cyan", [OFFLINE_SPEC]))
    for name, note, style, models in groups:
        console.print(Text.assemble((name, "bold"), " ", (note, style)))
        cells = []
        for spec in models:
            specs.append(spec)
            cells.append(Text.assemble((f"{len(specs):>4}", "bold"), f" {spec}"))
        console.print(Columns(cells, padding=(0, 2), equal=True))
    return specs


def pick_model(specs: list[str], registry: ModelRegistry) -> str:
    """Ask until the answer is a list number, a catalog spec or any spec the registry resolves."""
    import click

    from fastagent_cli.cli.login_cmd import ask

    while True:
        answer = ask(f"Model [1-{len(specs)} or provider/model, Enter for 1]: ", choices=specs)
        if not answer:
            return specs[0]
        if answer.isdigit():
            if 1 <= int(answer) <= len(specs):
                return specs[int(answer) - 1]
            click.echo(f"No model number {answer}: pick 1-{len(specs)}.")
            continue
        try:
            info = registry.resolve(answer)
        except ModelError as exc:
            click.echo(exc.message)
            continue
        _, level = parse_spec(answer)
        return info.spec + (f":{level}" if level else "")


def _terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def ensure_model(
    directory: str | os.PathLike[str] = ".",
    model_flag: str | None = None,
    no_input: bool = False,
    *,
    auth_path: str | None = None,
) -> str | None:
    """Make sure a model is named; returns the ``model=`` to pass to ``open_agent_dir``.

    That is ``model_flag`` unchanged when something already names a model, ``None`` after the
    picker saved its choice in ``fastagent.toml`` (so the config is its source), or the chosen
    spec when the file could not be edited safely (a hint says what to add).
    """
    if model_flag:
        return model_flag  # the flag names the model: nothing to read or ask
    from fastagent_cli.assembly import MISSING_MODEL, resolve_model_spec
    from fastagent_cli.auth.paths import resolve_auth_path
    from fastagent_cli.definition.config import load_config
    from fastagent_cli.definition.dotenv import load_dotenv
    from fastagent_cli.definition.placement import resolve_placement
    from fastagent_cli.state.paths import resolve_state_root

    placement = resolve_placement(directory)
    load_dotenv(placement.agent_dir / ".env")
    config = load_config(placement.config_path)
    if resolve_model_spec(model_flag, config) is not None:
        return model_flag
    if no_input or not _terminal():
        raise ModelError(MISSING_MODEL)
    registry = ModelRegistry(placement.agent_dir / "models.json")
    state_root = resolve_state_root(placement.agent_dir, placement.workspace)
    auth = resolve_auth_path(auth_path, state_root, placement.workspace)
    choices = provider_choices(registry, auth)
    spec = pick_model(_render(choices, placement.config_path), registry)
    chosen = next((c for c in choices if c.provider.name == spec.partition("/")[0]), None)
    if chosen is not None and chosen.rank == NEEDS_KEY:
        from fastagent_cli.auth.store import AuthStore
        from fastagent_cli.cli.login_cmd import login_provider

        say(f"[fastagent] {spec} needs a credential for {chosen.provider.title} (it goes to {auth})")
        login_provider(chosen.provider, AuthStore(auth), registry)
    from fastagent_cli.cli.config_model import write_model

    if write_model(placement.config_path, spec):
        say(f'[fastagent] saved model = "{spec}" in {placement.config_path}')
        return None
    say(f'[fastagent] hint: could not edit {placement.config_path} safely; add model = "{spec}" to it')
    return spec
