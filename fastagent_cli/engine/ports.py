"""What the engine is handed: ports, never directories.

* :data:`SystemPrompt`: ``() -> str``, evaluated once per turn (a directory agent re-reads its
  definition when a file changed).
* :data:`ToolSource`: ``async () -> Sequence[Tool]``, its twin for tools, awaited once per turn
  before the prompt is built; the first tool of a name wins. A source that also has
  ``aclose()`` (a directory's MCP servers) is closed with the agent.
* :class:`ModelPort`: which model a spec names, which client serves it, which key it uses
  (:class:`fastagent_cli.models.resolver.ModelResolver` is the implementation).
* the session store: :class:`fastagent_cli.sessions.store.SessionStore` (records and the lease).

Hosts never see these: they get the contract's ``Agent`` and the session port from assembly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from fastagent_cli.models.credentials import Credential
from fastagent_cli.models.types import ModelClient, ModelInfo
from fastagent_cli.tools.base import Tool

__all__ = ["ModelPort", "SystemPrompt", "ToolSource", "static_tools"]

SystemPrompt = Callable[[], str]
ToolSource = Callable[[], Awaitable[Sequence[Tool]]]


def static_tools(tools: Sequence[Tool]) -> ToolSource:
    """A tool source that always offers ``tools``."""
    fixed = tuple(tools)

    async def source() -> Sequence[Tool]:
        return fixed

    return source


class ModelPort(Protocol):
    def default(self) -> ModelInfo:
        """The agent's configured model (:class:`~fastagent_cli.errors.ModelError` if unknown)."""
        ...

    def resolve(self, spec: str) -> ModelInfo:
        """The model ``spec`` names (a ``:thinking`` suffix is ignored); ModelError when none."""
        ...

    def specs(self) -> list[str]:
        """The specs this deployment offers, sorted (what a model picker lists)."""
        ...

    def client_for(self, model: ModelInfo) -> ModelClient:
        """The wire client serving ``model`` (reused across turns)."""
        ...

    def credential(self, model: ModelInfo) -> Credential:
        """The key for ``model`` and where it came from, as it is now (no renewal, no network: for
        reports); ``.missing`` when one is needed and absent."""
        ...

    async def acquire(self, model: ModelInfo) -> Credential:
        """The key for a request right now (an expired subscription login is renewed first)."""
        ...

    async def aclose(self) -> None:
        """Close every client this port created."""
        ...
