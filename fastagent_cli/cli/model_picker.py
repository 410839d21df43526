"""The first-run model picker: when nothing names a model and a terminal is attached.

Commands read the directory through :func:`read_agent`, which calls :func:`ensure_model` on what
it read, then open it::

    surface = read_agent(directory, model=model, sessions_dir=..., auth_path=..., no_input=...)
    opened = open_agent(surface)

When ``--model``, ``FASTAGENT_MODEL`` or the config's ``model`` names one, it returns at once and
shows nothing. Otherwise, with ``--no-input`` or without a terminal (stdin and
stdout), it raises the one-line :data:`~fastagent_cli.assembly.MISSING_MODEL` error. With a
terminal it lists the whole catalog: providers that already have a credential first (annotated
with its source, e.g. ``ready — OPENAI_API_KEY``), then the offline scripted models
(``scripted/demo`` when the agent has ``scripts/demo.json``, as ``init`` creates it, and
``scripted/echo``), then local servers that need no key (Ollama, llama.cpp: they must be running),
then the rest. Enter takes the first entry: a ready provider's model, else the offline demo, which
always answers. Picking a model whose provider has no key runs ``login`` inline (into the agent's
credential file); the choice is written into ``fastagent.toml`` keeping its comments, named on the
surface, and the command goes on (nothing is read again).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fastagent_cli.cli.common import say
from fastagent_cli.errors import CredentialError, ModelError
from fastagent_cli.models.registry import ModelRegistry, ProviderInfo, parse_spec

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface

__all__ = ["ProviderChoice", "ensure_model", "offline_specs", "pick_model", "provider_choices", "read_agent"]

READY, NO_KEY, NEEDS_KEY = 0, 1, 2
OFFLINE_SPEC = "scripted/echo"
DEMO_SPEC = "scripted/demo"


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
    registry: ModelRegistry,
    auth_path: Path | None,
    env: Mapping[str, str] | None = None,
    global_path: Path | None = None,
) -> list[ProviderChoice]:
    """Every provider with models, ready ones first (catalog order within each group)."""
    from fastagent_cli.models.credentials import credential_files, read_auth_file, resolve_credential

    for path in credential_files(auth_path, global_path):
        read_auth_file(path)  # a broken credential file is one clear error, not one per provider
    out: list[ProviderChoice] = []
    for provider in registry.providers.values():
        if not provider.models:
            continue
        sample = next(iter(provider.models.values()))
        try:
            credential = resolve_credential(sample, auth_path, env, global_path)
        except CredentialError as exc:
            out.append(ProviderChoice(provider, NEEDS_KEY, f"needs a key ({exc.message})"))
            continue
        if not credential.needed:
            out.append(ProviderChoice(provider, NO_KEY, "no key needed (the server must be running)"))
        elif credential.key:
            label = credential.source.split(" (", 1)[0]  # "stored credential (<path>)" -> short form
            if credential.path is not None and credential.path != auth_path:
                label += f" in {credential.path}"
            out.append(ProviderChoice(provider, READY, f"ready — {label}"))
        else:
            wanted = " or ".join(provider.api_key_env) or ("a login" if provider.oauth else "an API key")
            out.append(ProviderChoice(provider, NEEDS_KEY, f"needs {wanted} — login runs next"))
    return sorted(out, key=lambda c: c.rank)


def offline_specs(agent_dir: Path) -> list[str]:
    """The scripted models that answer offline here: the agent's demo script, then ``echo``."""
    demo = agent_dir / "scripts" / "demo.json"
    return [DEMO_SPEC, OFFLINE_SPEC] if demo.is_file() else [OFFLINE_SPEC]


def _render(choices: list[ProviderChoice], config_path: Path, offline: list[str]) -> list[str]:
    """Print the numbered catalog, compact (models in columns) so ready providers stay on screen:
    ready providers, the offline scripted models, keyless local servers, then the rest."""
    from rich.columns import Columns
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    console = Console(file=sys.stdout, highlight=False)
    console.print(f"[bold]No model is set.[/] Pick one for this agent (saved to {escape(str(config_path))}):")
    specs: list[str] = []
    styles = {READY: "green", NO_KEY: "cyan", NEEDS_KEY: "yellow"}
    groups = [(c.provider.name, c.note, styles[c.rank], c.models) for c in choices if c.rank == READY]
    note = (
        "offline, no key: the demo script, or echo" if DEMO_SPEC in offline else "offline: echoes the prompt"
    )
    groups.append(("scripted", note, "green", offline))
    groups += [(c.provider.name, c.note, styles[c.rank], c.models) for c in choices if c.rank != READY]
    rows_left = console.height - 2  # the title above, the prompt below
    if _height(groups, console.width) > rows_left:
        groups = _folded(groups, console.width)  # providers that need a key: one row each
    for name, note, style, models in groups:
        console.print(Text.assemble((name, "bold"), " ", (note, style)))
        cells = []
        for spec in models:
            if spec.startswith("+"):
                cells.append(Text(spec, "dim"))
                continue
            specs.append(spec)
            cells.append(Text.assemble((f"{len(specs):>4}", "bold"), f" {spec}"))
        console.print(Columns(cells, padding=(0, 2), equal=True))
    return specs


_Group = tuple[str, str, str, list[str]]


def _per_row(models: list[str], width: int) -> int:
    cell = max((len(m) for m in models), default=1) + 5 + 2  # "  12 " + the spec + padding
    return max(1, width // cell)


def _height(groups: list[_Group], width: int) -> int:
    return sum(1 + -(-len(models) // _per_row(models, width)) for _, _, _, models in groups)


def _folded(groups: list[_Group], width: int) -> list[_Group]:
    """Groups of providers that need a key cut to one row, ending in ``+N more (type name/)``: the
    list fits a 40-row terminal; every model can still be typed (the prompt completes as you
    type)."""
    out: list[_Group] = []
    for name, note, style, models in groups:
        if style != "yellow" or len(models) <= 1:
            out.append((name, note, style, models))
            continue
        keep = max(1, _per_row(models, width) - 1)
        if keep >= len(models):
            out.append((name, note, style, models))
            continue
        more = f"+{len(models) - keep} more (type {name}/)"
        out.append((name, note, style, [*models[:keep], more]))
    return out


def pick_model(specs: list[str], registry: ModelRegistry, every: list[str] | None = None) -> str:
    """Ask until the answer is a list number, a catalog spec or any spec the registry resolves;
    the prompt completes (fuzzily, as the user types) from ``every`` spec, shown or folded."""
    import click

    from fastagent_cli.cli.login_cmd import ask

    while True:
        answer = ask(f"Model [1-{len(specs)} or provider/model, Enter for 1]: ", choices=every or specs)
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


def ensure_model(surface: AgentSurface, no_input: bool = False) -> None:
    """Make sure the surface names a model, asking on a terminal when nothing does.

    The choice is saved in ``fastagent.toml`` (then the config is its source), or, when the file
    could not be edited safely, used for this run as if passed with ``--model`` (a hint says what
    to add).
    """
    if surface.model_named:
        _warn_unlisted(surface)
        return  # --model, FASTAGENT_MODEL or the config names it: nothing to ask
    from fastagent_cli.assembly import MISSING_MODEL

    if no_input or not _terminal():
        raise ModelError(MISSING_MODEL)
    if surface.registry_problem is not None:
        raise surface.registry_problem  # a broken models.json: the picker cannot list it
    placement, registry, auth = surface.placement, surface.registry, surface.auth_path
    choices = provider_choices(registry, auth, global_path=surface.global_auth_path)
    offline = offline_specs(surface.agent_dir)
    spec = pick_model(_render(choices, placement.config_path, offline), registry, registry.specs())
    chosen = next((c for c in choices if c.provider.name == spec.partition("/")[0]), None)
    if chosen is not None and chosen.rank == NEEDS_KEY:
        from fastagent_cli.auth.store import AuthStore
        from fastagent_cli.cli.login_cmd import login_provider

        say(f"[fastagent] {spec} needs a credential for {chosen.provider.title} (it goes to {auth})")
        login_provider(chosen.provider, AuthStore(auth), registry)
    from fastagent_cli.cli.config_model import write_model

    if write_model(placement.config_path, spec):
        say(f'[fastagent] saved model = "{spec}" in {placement.config_path}')
        surface.choose_model(spec, "fastagent.toml")
        return
    say(f'[fastagent] hint: could not edit {placement.config_path} safely; add model = "{spec}" to it')
    surface.choose_model(spec, "--model")


def _warn_unlisted(surface: AgentSurface) -> None:
    """A spec a catalog provider does not list is likely a typo: say so before the first request
    (an unlisted id of a models.json provider is already the surface's model error)."""
    spec = surface.model_spec
    warning = surface.registry.unlisted_warning(spec) if spec is not None else None
    if warning is not None:
        say(f"[fastagent] warn: {warning}")


def read_agent(
    directory: str,
    *,
    model: str | None,
    sessions_dir: str | None,
    auth_path: str | None,
    no_input: bool,
) -> AgentSurface:
    """The command's one read of the agent directory, with a model named: when nothing names one,
    the first-run picker asks on a terminal (or the one-line missing-model error)."""
    from fastagent_cli.assembly import inspect_agent_dir

    surface = inspect_agent_dir(directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path)
    ensure_model(surface, no_input)
    return surface
