"""``fastagent models [search]``: the models a spec can name, as sorted ``provider/modelId`` lines:
the built-in catalog and, inside an agent, its ``models.json`` entries. Each line says whether
its provider is ready here (``key``: a credential was found; ``no key needed``; ``needs a
key``) and marks ``models.json`` entries. The spec is always the first column. A search that
matches nothing says so and exits 1 (a script can tell "no such model" from a list)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from fastagent_cli.cli.help_text import examples

if TYPE_CHECKING:
    from fastagent_cli.models.registry import ModelRegistry

__all__ = ["models"]

_STATUS = {0: "key", 1: "no key needed", 2: "needs a key"}
_JSON_STATUS = {0: "found", 1: "not needed", 2: "missing"}


@click.command(epilog=examples("models"))
@click.argument("search", required=False)
@click.option("-j", "--json", "as_json", is_flag=True, help="Print the matching models as JSON.")
def models(search: str | None, as_json: bool) -> None:
    """List the catalog's models and, inside an agent, its models.json entries (case-insensitive
    substring SEARCH), marking which providers have a key here. scripted/echo is always offline."""
    from fastagent_cli.assembly import login_target
    from fastagent_cli.auth.paths import global_auth_path
    from fastagent_cli.cli.model_picker import provider_choices
    from fastagent_cli.models.registry import ModelRegistry

    target = login_target(".")
    registry = ModelRegistry(target.models_json)
    specs = registry.specs(search)
    if not specs:
        from fastagent_cli.errors import ModelError

        providers = ", ".join(sorted(registry.providers))
        raise ModelError(
            f"no model matches {search!r} (providers: {providers}; models.json entries and "
            "any provider/model spec work too, e.g. scripted/echo)"
        )
    ranks = {
        c.provider.name: c.rank
        for c in provider_choices(registry, target.path, global_path=global_auth_path())
    }
    custom = {name for name, p in registry.providers.items() if p.custom}
    listed = _listed_in(registry)
    if not as_json:
        width = max(len(s) for s in specs)
        for spec in specs:
            provider = spec.partition("/")[0]
            marks = [
                m for m in (_STATUS[ranks.get(provider, 2)], "models.json" if spec in listed else "") if m
            ]
            click.echo(f"{spec:<{width}}  {' · '.join(marks)}".rstrip())
        return
    rows = []
    for spec in specs:
        info = registry.resolve(spec)
        rows.append(
            {
                "spec": spec,
                "provider": info.provider,
                "id": info.id,
                "api": info.api,
                "contextWindow": info.context_window,
                "maxTokens": info.max_tokens,
                "reasoning": info.reasoning,
                "input": list(info.input),
                "apiKeyEnv": list(info.api_key_env),
                "source": "models.json" if spec in listed or info.provider in custom else "catalog",
                "key": _JSON_STATUS[ranks.get(info.provider, 2)],
            }
        )
    click.echo(json.dumps(rows, indent=2))


def _listed_in(registry: ModelRegistry) -> set[str]:
    """The specs the agent's models.json lists (its own providers' and the ones it adds)."""
    path = registry.models_json
    if path is None:
        return set()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    out: set[str] = set()
    for name, raw in (doc.get("providers") or {}).items() if isinstance(doc, dict) else ():
        for model in (raw.get("models") or []) if isinstance(raw, dict) else []:
            if isinstance(model, dict) and isinstance(model.get("id"), str):
                out.add(f"{name}/{model['id']}")
    return out
