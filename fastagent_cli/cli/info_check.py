"""``fastagent info --check``: every problem ``start`` would refuse or a turn would hit, one line each.

What it finds (read-only, like ``info``): a missing or unknown model, a broken ``models.json``, no
key for the model (a ``$VAR`` apiKey unset included), a ``$VAR`` apiKey of another ``models.json``
provider unset, a tool file that does not load, a config ``tools`` ref that cannot be imported, an
MCP server that does not start, a schedule file that is invalid, a channel file that does not
load (a channel without its token), an unusable state backend, definition files that cannot be
read. Warnings that do not stop anything (a shadowed tool, a skill's frontmatter) are not problems.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastagent_cli.errors import FastagentError

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface

__all__ = ["Problem", "find_problems"]


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str
    """``model``, ``models.json``, ``key``, ``tools``, ``mcp``, ``schedules``, ``channels``,
    ``state``, ``definition``."""
    message: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


def find_problems(surface: AgentSurface) -> list[Problem]:
    """Call after the MCP servers were probed (their failures are in ``surface.live``)."""
    found: list[Problem] = []
    if surface.registry_problem is not None:
        found.append(Problem("models.json", surface.registry_problem.message))
    if surface.model_problem is not None:
        found.append(Problem("model", surface.model_problem.message))
    else:
        found += _key(surface)
    found += _other_keys(surface)
    found += [Problem("tools", f.message) for f in surface.toolset.failures]
    if surface.toolset.error:
        found.append(Problem("tools", surface.toolset.error))
    found += [Problem("mcp", d) for d in surface.live.diagnostics()]
    found += [Problem("schedules", f.message) for f in surface.schedules.failures]
    found += _channels(surface)
    for problem in surface.problems():
        if problem is not surface.model_problem and problem.message != surface.toolset.error:
            found.append(Problem("state", problem.message))
    try:
        surface.prompt.snapshot()
    except FastagentError as exc:
        found.append(Problem("definition", exc.message))
    return found


def _key(surface: AgentSurface) -> list[Problem]:
    from fastagent_cli.models.credentials import missing_hint

    try:
        got = surface.credential()
    except FastagentError as exc:
        return [Problem("key", exc.message)]
    if got is None:
        return []
    model, credential = got
    if not credential.missing:
        return []
    return [Problem("key", f"no API key for provider {model.provider} ({model.spec}): {missing_hint(model)}")]


def _other_keys(surface: AgentSurface) -> list[Problem]:
    """``$VAR`` apiKeys of the agent's other ``models.json`` providers that are not set."""
    from fastagent_cli.models.credentials import env_reference

    try:
        got = surface.credential()
    except FastagentError:
        got = None
    current = got[0].provider if got is not None else None
    found = []
    for name, provider in sorted(surface.registry.providers.items()):
        if name == current or provider.api_key is None:  # only models.json sets an apiKey
            continue
        variable = env_reference(provider.api_key.strip())
        if variable is not None and not os.environ.get(variable):
            found.append(
                Problem(
                    "key",
                    f"{variable} is not set (models.json providers.{name} apiKey): "
                    f"a turn on {name}/... fails",
                )
            )
    return found


def _channels(surface: AgentSurface) -> list[Problem]:
    """Channel files that do not load, and first-party channels without a secret they need (what
    ``start`` refuses: ``telegram_channel needs the bot token``)."""
    from fastagent_cli.assembly import inspect_channels
    from fastagent_cli.deploy.facts import CHANNEL_SECRETS

    try:
        channels, failures = inspect_channels(surface.agent_dir)
    except FastagentError as exc:
        return [Problem("channels", exc.message)]
    found = [Problem("channels", failure) for failure in failures]
    for channel in channels:
        for spec in CHANNEL_SECRETS.get(channel.name, ()):
            needed = spec.required and not (spec.webhook_only and channel.long_connection)
            if needed and not os.environ.get(spec.name):
                found.append(
                    Problem("channels", f"channels/{channel.name}.py: {spec.name} is not set ({spec.hint})")
                )
    return found
