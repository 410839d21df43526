"""``fastagent models [search]``: the built-in catalog as sorted ``provider/modelId`` lines. A
search that matches nothing says so and exits 1 (a script can tell "no such model" from a list)."""

from __future__ import annotations

import json

import click

from fastagent_cli.cli.help_text import examples

__all__ = ["models"]


@click.command(epilog=examples("models"))
@click.argument("search", required=False)
@click.option("-j", "--json", "as_json", is_flag=True, help="Print the matching models as JSON.")
def models(search: str | None, as_json: bool) -> None:
    """List catalog models (case-insensitive substring SEARCH). scripted/echo is always offline."""
    from fastagent_cli.models.registry import ModelRegistry

    registry = ModelRegistry()
    specs = registry.specs(search)
    if not specs:
        from fastagent_cli.errors import ModelError

        providers = ", ".join(sorted(registry.providers))
        raise ModelError(
            f"no catalog model matches {search!r} (providers: {providers}; models.json entries and "
            "any provider/model spec work too, e.g. scripted/echo)"
        )
    if not as_json:
        for spec in specs:
            click.echo(spec)
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
            }
        )
    click.echo(json.dumps(rows, indent=2))
