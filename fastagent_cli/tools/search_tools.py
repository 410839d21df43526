"""``search_tools``: the built-in loader for deferred tools.

A deferred tool stays out of every request until this tool activates it mid-turn. The model
searches by keywords; every keyword must appear (case-insensitively) in a tool's name or
description. At most :data:`MAX_ACTIVATIONS` tools are activated by one search (activation is
permanent for the conversation), and a miss lists at most :data:`MAX_LISTED` inactive tools. A
query that is exactly a tool's name always matches that tool. The activating result carries the
names it added (``addedToolNames``) through the activation bridge, which also records them in the
session.

:func:`with_search_tool` mounts it when any tool is deferred. An agent's own ``search_tools``
wins; it is forced sequential (parallel loader calls would misattribute activations) and kept
active, each with a warning.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated

from pydantic import Field

from fastagent_cli.tools.base import Tool, ToolContext
from fastagent_cli.tools.define import define_tool

__all__ = ["MAX_ACTIVATIONS", "MAX_LISTED", "SEARCH_TOOLS", "make_search_tool", "with_search_tool"]

log = logging.getLogger("fastagent.tools")

SEARCH_TOOLS = "search_tools"
MAX_ACTIVATIONS = 5
MAX_LISTED = 10

DESCRIPTION = (
    "Discover and activate additional tools.\n"
    "Part of this agent's toolset is inactive until needed: search by keywords (e.g. what you are "
    "trying to do), and matching inactive tools are activated and become callable from that point on "
    "(if too many match, you get the candidates back — narrow the query, or query an exact tool "
    "name). ALWAYS search here before concluding a capability is missing."
)

Catalog = Callable[[], Mapping[str, Tool]]


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def search(query: str, ctx: ToolContext, catalog: Mapping[str, Tool]) -> str:
    """The loader's answer to ``query`` (activating through ``ctx.tools``)."""
    bridge = ctx.tools
    if bridge is None:
        return "tool activation is unavailable outside a conversation turn."
    tokens = [t for t in re.split(r"[^a-z0-9]+", query.lower()) if t]
    if not tokens:
        return f'"{query}" contains no searchable keywords — describe the capability you need.'
    registered = [name for name in bridge.registered() if name != SEARCH_TOOLS]
    active = set(bridge.active())

    def description(name: str) -> str:
        tool = catalog.get(name)
        return tool.description if tool is not None else ""

    def matches(name: str) -> bool:
        haystack = f"{name} {description(name)}".lower()
        return all(token in haystack for token in tokens)

    def describe(name: str) -> str:
        return f"{name} — {_first_line(description(name)).rstrip('.')}"

    wanted = query.strip().lower()
    exact = next((n for n in registered if n.lower() == wanted), None)
    active_hits = [n for n in registered if n in active and (n == exact or matches(n))]
    if exact is not None and exact not in active:
        inactive_hits = [exact]
    else:
        inactive_hits = [n for n in registered if n not in active and matches(n)]
    shown_active = active_hits[:MAX_LISTED]
    more_active = len(active_hits) - len(shown_active)
    active_note = (
        f"Already active (call directly): {'; '.join(describe(n) for n in shown_active)}"
        f"{f' … and {more_active} more' if more_active else ''}."
        if active_hits
        else ""
    )
    if not inactive_hits:
        if active_note:
            return active_note
        inactive = [n for n in registered if n not in active]
        if not inactive:
            return "All tools are already active — nothing to discover."
        listed = inactive[:MAX_LISTED]
        more = len(inactive) - len(listed)
        tail = f" … and {more} more — search with different keywords." if more else ""
        return f'No tools matched "{query}". Inactive tools: {"; ".join(describe(n) for n in listed)}{tail}'
    if len(inactive_hits) > MAX_ACTIVATIONS:
        listed = inactive_hits[:MAX_LISTED]
        more = len(inactive_hits) - len(listed)
        return (
            f'{len(inactive_hits)} inactive tools matched "{query}" — too many to activate at once '
            "(activation is permanent for this conversation). Narrow the query (or query an exact name). "
            f"Matches: {', '.join(listed)}{f' … and {more} more' if more else ''}."
            f"{f' {active_note}' if active_note else ''}"
        )
    added = bridge.activate(inactive_hits)
    if not added:
        return (
            f"Matched {', '.join(inactive_hits)} — already active (possibly activated by a concurrent call). "
            f"Call them directly.{f' {active_note}' if active_note else ''}"
        )
    raced = [n for n in inactive_hits if n not in added]
    activated = "; ".join(describe(n) for n in inactive_hits if n in added)
    raced_note = f" Already active: {', '.join(raced)}." if raced else ""
    tail = f" {active_note}" if active_note else ""
    return f"Activated: {activated}.{raced_note}{tail} These tools are callable now."


def make_search_tool(catalog: Catalog) -> Tool:
    """The built-in loader; ``catalog`` gives the registered tools by name (for descriptions)."""

    async def search_tools(
        query: Annotated[
            str,
            Field(
                min_length=1,
                description="keywords describing the capability you need (e.g. 'weather forecast')",
            ),
        ],
        ctx: ToolContext,
    ) -> str:
        return search(query, ctx, catalog())

    built = define_tool(search_tools, name=SEARCH_TOOLS, description=DESCRIPTION, sequential=True)
    return dataclasses.replace(built, source="builtin search_tools")


def with_search_tool(tools: Sequence[Tool], catalog: Catalog | None = None) -> tuple[list[Tool], list[str]]:
    """``tools`` plus the loader when any tool is deferred; returns ``(tools, warnings)``."""
    result = list(tools)
    if not any(t.deferred for t in result):
        return result, []
    index = next((i for i, t in enumerate(result) if t.name == SEARCH_TOOLS), None)
    if index is None:
        lookup = catalog or (lambda: {t.name: t for t in result})
        result.append(make_search_tool(lookup))
        return result, []
    warnings: list[str] = []
    authored = result[index]
    if authored.deferred:
        warnings.append(
            "search_tools is marked deferred — ignoring the marker: the loader must stay active, "
            "or no deferred tool could ever be activated"
        )
        authored = dataclasses.replace(authored, deferred=False)
    if not authored.sequential:
        warnings.append(
            "search_tools is not sequential — forcing it: parallel loader calls would misattribute "
            "activations"
        )
        authored = dataclasses.replace(authored, sequential=True)
    result[index] = authored
    for warning in warnings:
        log.warning("[fastagent] %s", warning)
    return result, warnings
